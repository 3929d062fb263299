# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Process identity, and signals sent only to the process meant. Private to the xdplab.testbed collection.

A pid alone names whatever process has it now: after the process exits, or after a reboot, it may be
anyone's. The collection therefore records a process as its identity - pid, start time (clock ticks
since boot, field 22 of /proc/PID/stat) and the boot id (/proc/sys/kernel/random/boot_id) - and signals
it only through ``send()``, which

- refuses pid 1, pid 0 and negative pids (process groups), this process itself and its ancestors;
- opens a pidfd first, then checks start time and boot id against the record, then signals through
  the pidfd, so the pid cannot be reused between the check and the signal;
- returns False (and signals nothing) when the process is gone or is another process now.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

_BOOT_ID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")


class ProcessIdentityError(ValueError):
    """An identity that cannot be checked, or a pid that is never signalled; the message names it."""


def boot_id(proc: str = "/proc") -> str:
    with open(f"{proc}/sys/kernel/random/boot_id", encoding="ascii") as fh:
        return fh.read().strip()


_MACHINE_ID_RE = re.compile(r"^[0-9a-f]{32}\Z")


def machine_id(paths: tuple[str, ...] = ("/etc/machine-id", "/var/lib/dbus/machine-id")) -> str | None:
    """This machine's id (machine-id(5)), None when it has none that is well formed. With the boot id it
    tells this machine's processes from those of a clone with the same hostname; a clone that kept the
    machine id still has a boot id of its own."""
    for path in paths:
        try:
            with open(path, encoding="ascii") as fh:
                text = fh.read(64).strip()
        except (OSError, UnicodeDecodeError):
            continue
        if _MACHINE_ID_RE.match(text):
            return text
    return None


def pids_by_comm(comm: str, proc: str = "/proc") -> list[int]:
    """The pids whose /proc/PID/comm is ``comm`` (a daemon found by name: irqbalance, ovs-vswitchd)."""
    pids = []
    for name in os.listdir(proc):
        if not name.isdigit():
            continue
        try:
            with open(os.path.join(proc, name, "comm"), encoding="utf-8") as fh:
                if fh.read().strip() == comm:
                    pids.append(int(name))
        except OSError:
            continue  # gone meanwhile
    return sorted(pids)


def _stat_fields(pid: int, proc: str) -> list[str] | None:
    try:
        with open(f"{proc}/{pid}/stat", encoding="ascii", errors="replace") as fh:
            text = fh.read()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # comm (field 2) may hold spaces and parentheses: split after the last ')'.
    return text[text.rindex(")") + 2:].split()


def start_time(pid: int, proc: str = "/proc") -> int | None:
    """Start time in clock ticks since boot of a live (non-zombie) pid, else None."""
    fields = _stat_fields(pid, proc)
    if fields is None or fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def ancestors(proc: str = "/proc") -> set[int]:
    """The pids of this process's parent, its parent, ... up to pid 1: never signalled (a stale record
    naming the ansible-playbook that runs us, or a shell around it, must not stop it)."""
    seen: set[int] = set()
    pid = os.getpid()
    while pid > 1 and pid not in seen:
        fields = _stat_fields(pid, proc)
        if fields is None:
            break
        pid = int(fields[1])
        seen.add(pid)
    return seen


def identity(pid: int, proc: str = "/proc") -> dict[str, Any] | None:
    """{"pid", "start", "boot_id"} of a live process, None when there is none with that pid."""
    check_pid(pid)
    start = start_time(pid, proc)
    if start is None:
        return None
    return {"pid": pid, "start": start, "boot_id": boot_id(proc)}


def check_pid(pid: Any, what: str = "pid") -> int:
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 1:
        raise ProcessIdentityError(f"{what} must be a process id > 1, got {pid!r}: pid 1, 0 and process groups "
                                   "are never signalled")
    return pid


def check_identity(ident: Any, what: str = "process") -> dict[str, Any]:
    """A recorded identity, complete and well formed; ProcessIdentityError naming it otherwise."""
    if not isinstance(ident, dict):
        raise ProcessIdentityError(f"{what}: identity must be a dict with pid, start and boot_id, got {ident!r}")
    check_pid(ident.get("pid"), f"{what} pid")
    start = ident.get("start")
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise ProcessIdentityError(f"{what}: start must be a start time in clock ticks, got {start!r}")
    if not isinstance(ident.get("boot_id"), str) or not _BOOT_ID_RE.match(ident["boot_id"]):
        raise ProcessIdentityError(f"{what}: boot_id must be a boot id (uuid), got {ident.get('boot_id')!r}")
    return ident


def same(ident: dict[str, Any], proc: str = "/proc") -> bool:
    """Whether the recorded process still runs: same boot, same pid, same start time."""
    check_identity(ident)
    if boot_id(proc) != ident["boot_id"]:
        return False
    return start_time(ident["pid"], proc) == ident["start"]


def send(ident: dict[str, Any], sig: int, proc: str = "/proc") -> bool:
    """Signal the recorded process if it is still that process; True when sent, False when it is gone
    (or the pid now belongs to another process). Raises ProcessIdentityError for pid <= 1, this process
    or a malformed identity."""
    check_identity(ident)
    pid = ident["pid"]
    if pid == os.getpid():
        raise ProcessIdentityError(f"refusing to signal this process itself (pid {pid})")
    if pid in ancestors(proc):
        raise ProcessIdentityError(f"refusing to signal pid {pid}: it is an ancestor of this process")
    pidfd = None
    if proc == "/proc" and hasattr(os, "pidfd_open"):
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            return False
        except OSError:
            pidfd = None  # kernel without pidfds: the check below is as close as we get
    try:
        if not same(ident, proc):
            return False
        try:
            if pidfd is not None:
                signal.pidfd_send_signal(pidfd, sig)
            else:
                os.kill(pid, sig)
        except ProcessLookupError:
            return False
        return True
    finally:
        if pidfd is not None:
            os.close(pidfd)


def stop(ident: dict[str, Any], first: int = signal.SIGTERM, timeout: float = 5.0, proc: str = "/proc") -> str:
    """``first``, then SIGKILL after ``timeout`` s: "gone" (nothing to signal), "stopped" or "killed"."""
    if not send(ident, first, proc):
        return "gone"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not same(ident, proc):
            return "stopped"
        time.sleep(0.02)
    if send(ident, signal.SIGKILL, proc):
        for _dummy in range(100):
            if not same(ident, proc):
                break
            time.sleep(0.02)
        return "killed"
    return "stopped"


# The gate a recorded child waits in: it holds the pid (and so the start time) the program will have,
# and runs nothing of the program until the parent says "g" on the pipe; end of file (the parent died
# or failed to record it) makes it exit without running the program.
_GATE = (
    "import os, sys\n"
    "fd = int(sys.argv[1])\n"
    "go = os.read(fd, 1) == b'g'\n"
    "os.close(fd)\n"
    "if not go:\n"
    "    os._exit(125)\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n"
)
GATE_REFUSED_RC = 125


def spawn_recorded(argv: list[str], record: Callable[[int], Any], **popen_kwargs: Any) -> subprocess.Popen:
    """Start argv so that ``record(pid)`` runs after the pid exists and before the program does.

    The state ledger records a process (pid + start time + boot id) *before* it acts: the child
    starts as a small gate that exec()s argv only once ``record`` has returned, keeping its pid and
    start time through the exec, so the entry names the very process. When ``record`` raises, the gate
    is told nothing, exits without running argv, is reaped, and the error propagates. Popen's own
    options (stdout, pass_fds, start_new_session, env, ...) pass through to the program."""
    if "preexec_fn" in popen_kwargs:
        raise ValueError("spawn_recorded: preexec_fn would run before the gate, not the program")
    extra_fds = tuple(popen_kwargs.pop("pass_fds", ()))
    rfd, wfd = os.pipe()
    try:
        try:
            proc = subprocess.Popen([sys.executable, "-c", _GATE, str(rfd), *argv],  # noqa: S603 - argv list
                                    pass_fds=(rfd, *extra_fds), **popen_kwargs)
        finally:
            os.close(rfd)
        try:
            record(proc.pid)
        except BaseException:
            os.close(wfd)
            wfd = -1
            proc.wait()
            raise
        os.write(wfd, b"g")
    finally:
        if wfd >= 0:
            os.close(wfd)
    return proc
