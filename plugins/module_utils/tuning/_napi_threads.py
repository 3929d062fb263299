# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Threaded NAPI of a port: its kthreads, their CPU and run time. Private to the xdplab.testbed collection.

With ``/sys/class/net/<dev>/threaded`` at 1 the kernel polls the port's NAPI instances in kthreads named
``napi/<dev>-<napi id>`` (the name cut to 15 characters, as every task name) instead of in softirq on
whichever CPU raised it. On veth that moves the DUT's receive path off the sender's CPU; pinned to a CPU
the generator does not use, its run time is the DUT's alone (``/proc/<tid>/schedstat``, first field:
nanoseconds on a CPU).
"""

from __future__ import annotations

import os

TASK_COMM_LEN = 15  # characters of a task name (TASK_COMM_LEN 16 with its NUL)


class NapiError(ValueError):
    """A port or CPU that threaded NAPI cannot be set up with; the message names it."""


def comm_prefix(interface: str) -> str:
    """The start of the names of ``interface``'s NAPI kthreads, as /proc shows them."""
    return f"napi/{interface}-"[:TASK_COMM_LEN]


def napi_threads(interface: str, proc: str = "/proc") -> dict[int, str]:
    """{tid: name} of the kthreads whose name says they poll ``interface``'s NAPI (any namespace's
    device of that name: kthreads belong to no network namespace)."""
    prefix, out = comm_prefix(interface), {}
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            with open(os.path.join(proc, entry, "comm"), encoding="utf-8", errors="replace") as fh:
                name = fh.read().strip()
        except OSError:
            continue  # gone meanwhile
        if name.startswith(prefix):
            out[int(entry)] = name
    return out


def threaded_path(interface: str, root: str = "/sys/class/net") -> str:
    return os.path.join(root, interface, "threaded")


def read_threaded(interface: str, root: str = "/sys/class/net") -> str:
    """The port's ``threaded`` value as the kernel prints it (0, 1, ...)."""
    try:
        with open(threaded_path(interface, root), encoding="ascii") as fh:
            return fh.read().strip()
    except FileNotFoundError:
        raise NapiError(f"interface {interface!r} has no {threaded_path(interface, root)} (no such port, or "
                        "a kernel without threaded NAPI)") from None


def write_threaded(interface: str, value: str, root: str = "/sys/class/net") -> None:
    with open(threaded_path(interface, root), "w", encoding="ascii") as fh:
        fh.write(f"{value}\n")


def pick_cpu(allowed: set[int], avoid: list[int]) -> int:
    """The highest allowed CPU outside ``avoid`` (the generator's)."""
    free = sorted(set(allowed) - set(avoid))
    if not free:
        raise NapiError(f"no CPU left for the NAPI thread: allowed {sorted(allowed)}, the generator uses {avoid}")
    return free[-1]


def thread_runtime_ns(tid: int, proc: str = "/proc") -> int | None:
    """Nanoseconds ``tid`` ran on a CPU (schedstat's first field); None once it is gone."""
    try:
        with open(os.path.join(proc, str(tid), "schedstat"), encoding="ascii") as fh:
            return int(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def restore_affinity(interface: str, affinity: dict[str, list[int]], proc: str = "/proc") -> None:
    """Put back the CPUs of the kthreads found pinned otherwise ({tid: cpus}), those still alive and still
    named as the port's NAPI kthreads (a tid taken by another task since is left alone)."""
    alive = napi_threads(interface, proc)
    for tid, cpus in affinity.items():
        if int(tid) in alive:
            try:
                os.sched_setaffinity(int(tid), set(cpus))
            except OSError:
                continue  # gone meanwhile


def thread_cpus(tid: int) -> list[int]:
    """The CPUs ``tid`` may run on; [] once it is gone."""
    try:
        return sorted(os.sched_getaffinity(tid))
    except OSError:
        return []
