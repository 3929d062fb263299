# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Queue IRQ discovery and CPU pinning strategies (private to xdplab.testbed).

This module is private to the xdplab.testbed collection: its API may change
without notice.

Everything takes ``sys_root`` / ``proc_root`` so tests can point it at a
fake tree (tmp_path) describing a multi-queue NIC on two NUMA nodes.
"""

from __future__ import annotations

import os
import re
from typing import Any

from ansible_collections.xdplab.testbed.plugins.module_utils.common import _process_identity, _validate

# IRQ names of MSI vectors that are not data queues.
_CONTROL_RE = re.compile(r"(config|misc|async|ctrl|control|adminq|admin|mbx|mailbox|fw|event|lsc|other|err)",
                         re.IGNORECASE)
STRATEGIES = ("sequential", "numa", "explicit")


class IrqError(ValueError):
    """Bad input or a missing feature; the message names the interface, IRQ or CPU."""


def parse_cpulist(text: str | int | list[int]) -> list[int]:
    """'0-3,8,10-11' (or an int, or a list) -> sorted unique CPU numbers (_validate.cpulist, bounded)."""
    try:
        return _validate.cpulist(text)
    except _validate.ValidationError as exc:
        raise IrqError(str(exc)) from None


def format_cpulist(cpus: list[int]) -> str:
    """[0,1,2,5] -> '0-2,5'."""
    out: list[str] = []
    cpus = sorted(set(cpus))
    i = 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(out)


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return None


def parse_interrupts(text: str) -> dict[int, str]:
    """/proc/interrupts -> {irq: action name} (numbered lines only; the name is the last field)."""
    out: dict[int, str] = {}
    for line in text.splitlines():
        m = re.match(r"\s*(\d+):\s+(.*)$", line)
        if not m:
            continue
        fields = m.group(2).split()
        if fields:
            out[int(m.group(1))] = fields[-1]
    return out


def online_cpus(sys_root: str = "/sys") -> list[int]:
    text = _read(os.path.join(sys_root, "devices/system/cpu/online"))
    if text is None:
        raise IrqError(f"cannot read {sys_root}/devices/system/cpu/online")
    return parse_cpulist(text)


def _msi_irqs(ifname: str, sys_root: str) -> list[int] | None:
    dev = os.path.join(sys_root, "class/net", ifname, "device")
    # virtio-net: the net device's parent is virtioN, whose parent PCI function has msi_irqs.
    for cand in (dev, os.path.join(dev, "..")):
        msi = os.path.join(cand, "msi_irqs")
        if os.path.isdir(msi):
            return sorted(int(n) for n in os.listdir(msi) if n.isdigit())
    return None


def _queue_index(name: str) -> int | None:
    m = re.search(r"(\d+)(?!.*\d)", name)
    return int(m.group(1)) if m else None


def find_queue_irqs(ifname: str, sys_root: str = "/sys", proc_root: str = "/proc") -> list[dict[str, Any]]:
    """Queue IRQs of an interface: [{"irq", "name", "queue"}] ordered by queue.

    MSI vectors of the device (sysfs ``msi_irqs``) minus control vectors, named
    from /proc/interrupts; without MSI, /proc/interrupts lines naming the interface.
    """
    if not os.path.exists(os.path.join(sys_root, "class/net", ifname)):
        raise IrqError(f"interface {ifname!r} does not exist")
    names = parse_interrupts(_read(os.path.join(proc_root, "interrupts")) or "")
    msi = _msi_irqs(ifname, sys_root)
    if msi:
        cands = [(irq, names.get(irq, "")) for irq in msi]
        cands = [(irq, name) for irq, name in cands if not _CONTROL_RE.search(name)]
    else:
        rx = re.compile(rf"(^|[^A-Za-z0-9]){re.escape(ifname)}([^A-Za-z0-9]|$)")
        cands = [(irq, name) for irq, name in names.items() if rx.search(name) and not _CONTROL_RE.search(name)]
    if not cands:
        raise IrqError(
            f"interface {ifname!r} has no queue IRQs (no MSI vectors in sysfs and no /proc/interrupts line naming it;"
            " virtual devices such as veth have none)")
    out = [{"irq": irq, "name": name, "queue": _queue_index(name)} for irq, name in cands]
    out.sort(key=lambda d: (d["queue"] if d["queue"] is not None else 1 << 30, d["irq"]))
    return out


def irq_names(proc_root: str = "/proc") -> dict[int, str]:
    """{irq: action name} of every numbered IRQ. /proc/interrupts is the host's whatever network
    namespace the reader is in, unlike /sys/class/net; with the names a snapshot saved, IRQ affinity can
    be restored from inside any namespace (an IRQ that now has another name is another device's)."""
    return parse_interrupts(_read(os.path.join(proc_root, "interrupts")) or "")


def numa_cpus(ifname: str, sys_root: str = "/sys") -> tuple[int | None, list[int] | None]:
    """(node, CPUs of the node) of the interface's device; (None, None) when unknown (-1 or absent)."""
    text = _read(os.path.join(sys_root, "class/net", ifname, "device/numa_node"))
    if text is None or int(text.strip()) < 0:
        return None, None
    node = int(text.strip())
    cpus = _read(os.path.join(sys_root, f"devices/system/node/node{node}/cpulist"))
    return node, parse_cpulist(cpus) if cpus else None


def plan_affinity(
    ifname: str,
    irqs: list[dict[str, Any]],
    strategy: str,
    online: list[int],
    start_cpu: int = 0,
    cpus: list[int] | None = None,
    node_cpus: list[int] | None = None,
    explicit: dict[Any, Any] | None = None,
) -> dict[int, list[int]]:
    """Desired {irq: [cpus]}.

    sequential: queue q -> q-th CPU of ``cpus`` (default: online) counting from ``start_cpu``, wrapping
    (vectors without a queue number count by position).
    numa: the same over the CPUs of the device's NUMA node (all online CPUs when the node is unknown).
    explicit: ``explicit`` maps a queue index or an IRQ name to a CPU list; queues not named are left alone.
    """
    if strategy not in STRATEGIES:
        raise IrqError(f"unknown strategy {strategy!r} (known: {', '.join(STRATEGIES)})")
    allowed = list(cpus) if cpus else list(online)
    offline = [c for c in allowed if c not in online]
    if offline:
        raise IrqError(f"{ifname}: CPU(s) {format_cpulist(offline)} are not online (online: {format_cpulist(online)})")
    if strategy == "explicit":
        return _plan_explicit(ifname, irqs, explicit or {}, online)
    if strategy == "numa" and node_cpus:
        local = [c for c in allowed if c in node_cpus]
        if not local:
            raise IrqError(f"{ifname}: none of CPUs {format_cpulist(allowed)} is on the device's NUMA node")
        allowed = local
    if start_cpu not in online:
        raise IrqError(f"{ifname}: start_cpu {start_cpu} is not online (online: {format_cpulist(online)})")
    later = [i for i, c in enumerate(allowed) if c >= start_cpu]
    first = later[0] if later else 0
    # Queue index decides the CPU, so the rx and tx vectors of one queue pair share it.
    return {d["irq"]: [allowed[(first + (i if d["queue"] is None else d["queue"])) % len(allowed)]]
            for i, d in enumerate(irqs)}


def _plan_explicit(ifname: str, irqs: list[dict[str, Any]], explicit: dict[Any, Any],
                   online: list[int]) -> dict[int, list[int]]:
    if not explicit:
        raise IrqError(f"{ifname}: strategy explicit needs a map of queue (or IRQ name) to CPUs")
    # A queue can have several vectors (igb: igb0-rx-0 and igb0-tx-0): a queue key pins all of them,
    # as the sequential strategy gives the rx and tx vectors of one queue pair the same CPU.
    by_queue: dict[int | None, list[dict[str, Any]]] = {}
    for d in irqs:
        by_queue.setdefault(d["queue"], []).append(d)
    by_name = {d["name"]: d for d in irqs}
    out: dict[int, list[int]] = {}
    for key, value in explicit.items():
        entries = [by_name[str(key)]] if str(key) in by_name else []
        if not entries and str(key).isdigit():
            entries = by_queue.get(int(key), [])
        if not entries:
            raise IrqError(
                f"{ifname}: map key {key!r} names no queue IRQ (queues: "
                f"{', '.join(sorted({str(d['queue']) for d in irqs}))}; names: {', '.join(by_name)})")
        wanted = parse_cpulist(value)
        bad = [c for c in wanted if c not in online]
        if not wanted or bad:
            raise IrqError(f"{ifname}: map {key!r} -> {value!r}: CPU(s) {format_cpulist(bad)} are not online")
        for entry in entries:
            out[entry["irq"]] = wanted
    return out


def read_affinity(irq: int, proc_root: str = "/proc") -> list[int]:
    text = _read(os.path.join(proc_root, "irq", str(irq), "smp_affinity_list"))
    if text is None:
        raise IrqError(f"IRQ {irq}: cannot read {proc_root}/irq/{irq}/smp_affinity_list")
    return parse_cpulist(text)


def write_affinity(irq: int, cpus: list[int], proc_root: str = "/proc") -> None:
    path = os.path.join(proc_root, "irq", str(irq), "smp_affinity_list")
    try:
        with open(path, "w", encoding="ascii") as fh:
            fh.write(format_cpulist(cpus) + "\n")
    except OSError as exc:
        raise IrqError(f"IRQ {irq}: writing {format_cpulist(cpus)} to {path} failed: {exc.strerror}") from exc


def irqbalance_pids(proc_root: str = "/proc") -> list[int]:
    return _process_identity.pids_by_comm("irqbalance", proc_root)


def read_irq_state(ifname: str, sys_root: str = "/sys", proc_root: str = "/proc") -> dict[str, str]:
    """{"<irq>": cpulist} of the queue IRQs: the irq_affinity part of the fingerprint (same shape as _envfacts)."""
    out = {}
    for d in find_queue_irqs(ifname, sys_root, proc_root):
        out[str(d["irq"])] = format_cpulist(read_affinity(d["irq"], proc_root))
    return out
