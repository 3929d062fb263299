# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.
#
# Kernel pktgen (/proc/net/pktgen), driven the way the kernel's samples/pktgen/functions.sh does:
#   check_spec(spec)          -> the spec with defaults, or PktgenError naming the bad value
#   commands(spec)            -> [(file, command)] in order: per thread rem_device_all + add_device,
#                                then the device settings (count, clone_skb, pkt_size, delay, burst,
#                                dst/src, dst_mac, UDP port ranges, flows, queue_map, flags)
#   Pktgen(pg_dir, io)        -> configure / start (blocking, for a duration, or in the background) /
#                                stop / results / reset; every pgset is checked against the file's
#                                "Result:" line (pg_ctrl/pg_thread/pg_set in functions.sh)
# The I/O is one small object (read, write), so unit tests run it against a fake /proc tree.
"""Kernel pktgen control: command planning, pgset with result checks, start/stop, per-device results."""

from __future__ import annotations

import errno
import ipaddress
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from ansible_collections.xdplab.testbed.plugins.module_utils.common import _process_identity as _proc
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _validate
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._output_parsers import ParseError, parse

__all__ = ["PG_DIR", "PktgenError", "check_spec", "device_names", "commands", "Pktgen", "cpu_times", "cpu_share"]

PG_DIR = "/proc/net/pktgen"
_MAC = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}\Z")
# Flags pktgen's "flag" command knows (net/core/pktgen.c pkt_flag_names + the NO_ forms it accepts).
FLAGS = ("IPV6", "IPSRC_RND", "IPDST_RND", "TXSIZE_RND", "UDPSRC_RND", "UDPDST_RND", "UDPCSUM", "NO_TIMESTAMP",
         "MPLS_RND", "QUEUE_MAP_RND", "QUEUE_MAP_CPU", "FLOW_SEQ", "IPSEC", "MACSRC_RND", "MACDST_RND",
         "VID_RND", "SVID_RND", "NODE_ALLOC", "SHARED")

DEFAULTS: dict[str, Any] = {
    "threads": [0], "count": 0, "duration": None, "pkt_size": 60, "burst": 1, "clone_skb": 0, "delay": 0,
    "dst": None, "dst_max": None, "src": None, "src_max": None, "dst_mac": None,
    "udp_src_min": None, "udp_src_max": None, "udp_dst_min": None, "udp_dst_max": None,
    "flows": 0, "flowlen": 0, "queue_map_min": None, "queue_map_max": None, "queue_map_cpu": False,
    "flags": [],
}


class PktgenError(RuntimeError):
    """pktgen unusable, a bad parameter, or a command the kernel rejected (with its own message)."""


class PktgenIO(Protocol):
    def read(self, path: str) -> str: ...
    def write(self, path: str, text: str) -> None: ...


class ProcIO:
    """The real /proc/net/pktgen: one write() per command, as `echo cmd > file` does."""

    def read(self, path: str) -> str:
        with open(path) as fh:
            return fh.read()

    def write(self, path: str, text: str) -> None:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)


def _int(spec: dict, key: str, lo: int, hi: int | None = None, allow_none: bool = False) -> None:
    v = spec.get(key)
    if v is None and allow_none:
        return
    if isinstance(v, bool) or not isinstance(v, int) or v < lo or (hi is not None and v > hi):
        rng = f">= {lo}" if hi is None else f"{lo}..{hi}"
        raise PktgenError(f"pktgen {key} must be an integer {rng}, got {v!r}")


def check_spec(spec: dict) -> dict:
    """Defaults filled in; a PktgenError naming the first bad value."""
    unknown = sorted(set(spec) - set(DEFAULTS) - {"interface"})
    if unknown:
        raise PktgenError(f"pktgen: unknown parameter(s) {', '.join(unknown)}")
    s = dict(DEFAULTS)
    s.update({k: v for k, v in spec.items() if v is not None})
    iface = s.get("interface")
    try:
        _validate.ifname(iface)
    except _validate.ValidationError as exc:
        raise PktgenError(f"pktgen interface must be a network device name: {exc}") from None
    threads = s["threads"]
    if (not isinstance(threads, list) or not threads or len(set(threads)) != len(threads)
            or any(isinstance(t, bool) or not isinstance(t, int) or not 0 <= t <= _validate.CPU_MAX for t in threads)):
        raise PktgenError(f"pktgen threads must be a non-empty list of distinct CPU numbers, got {threads!r}")
    _int(s, "count", 0)
    if s["duration"] is not None:
        if isinstance(s["duration"], bool) or not isinstance(s["duration"], (int, float)) or s["duration"] <= 0:
            raise PktgenError(f"pktgen duration must be a number of seconds > 0, got {s['duration']!r}")
    elif s["count"] == 0:
        raise PktgenError("pktgen count 0 (endless) needs a duration")
    _int(s, "pkt_size", 42, 65535)  # pktgen pads up to its own minimum; 42 = eth + ip + udp headers
    _int(s, "burst", 1, 65535)
    _int(s, "clone_skb", 0)
    _int(s, "delay", 0)
    _int(s, "flows", 0)
    _int(s, "flowlen", 0)
    for key in ("udp_src_min", "udp_src_max", "udp_dst_min", "udp_dst_max", "queue_map_min", "queue_map_max"):
        _int(s, key, 0, 65535, allow_none=True)
    for lo, hi in (("udp_src_min", "udp_src_max"), ("udp_dst_min", "udp_dst_max"),
                   ("queue_map_min", "queue_map_max"), ("dst", "dst_max"), ("src", "src_max")):
        if s[hi] is not None and s[lo] is None:
            raise PktgenError(f"pktgen {hi} needs {lo}")
    for key in ("dst", "dst_max", "src", "src_max"):
        if s[key] is not None:
            try:
                ipaddress.IPv4Address(s[key])
            except ValueError:
                raise PktgenError(f"pktgen {key} must be an IPv4 address, got {s[key]!r}") from None
    for lo, hi in (("udp_src_min", "udp_src_max"), ("udp_dst_min", "udp_dst_max"),
                   ("queue_map_min", "queue_map_max")):
        if s[hi] is not None and s[hi] < s[lo]:
            raise PktgenError(f"pktgen {hi} {s[hi]} is below {lo} {s[lo]}")
    for lo, hi in (("dst", "dst_max"), ("src", "src_max")):
        if s[hi] is not None and ipaddress.IPv4Address(s[hi]) < ipaddress.IPv4Address(s[lo]):
            raise PktgenError(f"pktgen {hi} {s[hi]} is below {lo} {s[lo]}")
    if s["dst_mac"] is not None and not _MAC.match(str(s["dst_mac"])):
        raise PktgenError(f"pktgen dst_mac must be a MAC address aa:bb:cc:dd:ee:ff, got {s['dst_mac']!r}")
    flags = s["flags"]
    if not isinstance(flags, list):
        raise PktgenError(f"pktgen flags must be a list, got {flags!r}")
    for f in flags:
        name = str(f)
        if name.removeprefix("!") not in FLAGS:
            raise PktgenError(f"pktgen flag {f!r} is unknown; known: {', '.join(FLAGS)}")
    return s


def device_names(spec: dict) -> list[tuple[int, str]]:
    """(thread, pktgen device name): DEV for one thread, DEV@THREAD for several (as the samples do)."""
    threads = spec["threads"]
    names = [(threads[0], spec["interface"])] if len(threads) == 1 else [
        (t, f"{spec['interface']}@{t}") for t in threads]
    for _t, name in names:
        try:
            _validate.pktgen_device(name, "pktgen device")
        except _validate.ValidationError as exc:
            raise PktgenError(str(exc)) from None
    return names


def commands(spec: dict) -> list[tuple[str, str]]:
    """The pgset sequence, as (file under /proc/net/pktgen, command), for a checked spec."""
    s = spec
    out: list[tuple[str, str]] = []
    for thread, dev in device_names(s):
        out += [(f"kpktgend_{thread}", "rem_device_all"), (f"kpktgend_{thread}", f"add_device {dev}")]
    for _thread, dev in device_names(s):
        cmds = [f"count {s['count'] if s['duration'] is None else 0}", f"clone_skb {s['clone_skb']}",
                f"pkt_size {s['pkt_size']}", f"delay {s['delay']}", f"burst {s['burst']}"]
        if s["dst"] is not None:
            if s["dst_max"] is not None:
                cmds += [f"dst_min {s['dst']}", f"dst_max {s['dst_max']}"]
            else:
                cmds.append(f"dst {s['dst']}")
        if s["src"] is not None:
            cmds += [f"src_min {s['src']}", f"src_max {s['src_max'] or s['src']}"]
        if s["dst_mac"] is not None:
            cmds.append(f"dst_mac {s['dst_mac']}")
        for side in ("src", "dst"):
            lo = s[f"udp_{side}_min"]
            if lo is not None:
                hi = s[f"udp_{side}_max"] if s[f"udp_{side}_max"] is not None else lo
                cmds += [f"udp_{side}_min {lo}", f"udp_{side}_max {hi}"]
        if s["flows"]:
            cmds += [f"flows {s['flows']}", f"flowlen {s['flowlen']}"]
        if s["queue_map_min"] is not None:
            qmax = s["queue_map_max"] if s["queue_map_max"] is not None else s["queue_map_min"]
            cmds += [f"queue_map_min {s['queue_map_min']}", f"queue_map_max {qmax}"]
        if s["queue_map_cpu"]:
            cmds.append("flag QUEUE_MAP_CPU")
        cmds += [f"flag {f}" for f in s["flags"]]
        out += [(dev, c) for c in cmds]
    return out


def cpu_times(stat_text: str) -> dict[str, int]:
    """The aggregate 'cpu' line of /proc/stat (USER_HZ ticks)."""
    for line in stat_text.splitlines():
        if line.startswith("cpu "):
            names = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
            vals = [int(x) for x in line.split()[1:9]]
            return dict(zip(names, vals, strict=False))
    raise PktgenError("no aggregate cpu line in /proc/stat")


def cpu_share(before: dict[str, int], after: dict[str, int]) -> dict[str, float]:
    """Percent of all CPUs' time between two cpu_times(): system (the kpktgend threads), softirq, busy."""
    delta = {k: after[k] - before[k] for k in before}
    total = sum(delta.values()) or 1
    return {"system_pct": round(100.0 * delta["system"] / total, 1),
            "softirq_pct": round(100.0 * delta["softirq"] / total, 1),
            "busy_pct": round(100.0 * (total - delta["idle"] - delta["iowait"]) / total, 1)}


_START = "import os, sys; fd = os.open(sys.argv[1], os.O_WRONLY); os.write(fd, b'start\\n')"


class Pktgen:
    """One pktgen session on /proc/net/pktgen (or a fake tree)."""

    def __init__(self, pg_dir: str = PG_DIR, io: PktgenIO | None = None) -> None:
        self.pg_dir = pg_dir
        self.io = io or ProcIO()
        self.log: list[str] = []

    def path(self, name: str) -> str:
        return os.path.join(self.pg_dir, name)

    def available(self) -> None:
        if not os.path.isdir(self.pg_dir) or not os.path.exists(self.path("pgctrl")):
            raise PktgenError(f"no {self.pg_dir}/pgctrl: this kernel has no pktgen (CONFIG_NET_PKTGEN, "
                              "module pktgen); on the virtual test bed it runs only in the QEMU-booted kernel")

    def threads(self) -> list[int]:
        return sorted(int(n.split("_", 1)[1]) for n in os.listdir(self.pg_dir)
                      if n.startswith("kpktgend_") and n.split("_", 1)[1].isdigit())

    def pgset(self, name: str, cmd: str) -> None:
        """Write one command; a refused write or a non-OK Result line fails naming both."""
        path = self.path(name)
        self.log.append(f"{name}: {cmd}")
        try:
            self.io.write(path, cmd + "\n")
        except OSError as exc:
            why = "not supported by this device/driver" if exc.errno == 524 else (
                os.strerror(exc.errno) if exc.errno else str(exc))
            raise PktgenError(f"pktgen refused {cmd!r} on {name}: {why} (errno {exc.errno} "
                              f"{errno.errorcode.get(exc.errno or 0, '?')})") from None
        if name == "pgctrl":
            return
        text = self.io.read(path)
        result = next((ln.split("Result:", 1)[1].strip() for ln in text.splitlines()
                       if ln.lstrip().startswith("Result:")), "")
        if not result.startswith("OK"):
            raise PktgenError(f"pktgen refused {cmd!r} on {name}: Result: {result or '(none)'}")

    def configure(self, spec: dict) -> None:
        missing = [t for t in spec["threads"] if not os.path.exists(self.path(f"kpktgend_{t}"))]
        if missing:
            raise PktgenError(f"pktgen thread(s) {missing} do not exist (kpktgend_N per online CPU: "
                              f"{self.threads()})")
        if not os.path.exists(f"/sys/class/net/{spec['interface']}") and self.pg_dir == PG_DIR:
            raise PktgenError(f"pktgen interface {spec['interface']!r} does not exist")
        self.pgset("pgctrl", "reset")
        for name, cmd in commands(spec):
            self.pgset(name, cmd)

    def start_blocking(self, duration: float | None, timeout: float) -> float:
        """pgctrl start (blocks until the counts are sent); with a duration, stop after it. Seconds run."""
        err: list[BaseException] = []

        def run() -> None:
            try:
                self.pgset("pgctrl", "start")
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                err.append(exc)

        t0 = time.monotonic()
        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        worker.join(duration if duration is not None else timeout)
        if worker.is_alive():
            self.pgset("pgctrl", "stop")
            worker.join(10)
            if duration is None:
                raise PktgenError(f"pktgen did not finish its count within {timeout:g} s (stopped)")
        if err:
            raise err[0]
        return time.monotonic() - t0

    def start_background(self, record: Callable[[int], Any] | None = None, devices: list[str] | None = None,
                         timeout: float = 30.0) -> int:
        """pgctrl start from a detached process (the write blocks while pktgen runs); its pid. With
        ``record``, ``record(pid)`` runs before that process writes anything (the state ledger's entry).
        With ``devices``, return only once the thread files list every one of them as running, so
        'started' means running even on a slow (emulated) CPU (a short count that already finished
        counts too); PktgenError if the starter fails first or ``timeout`` seconds pass (pktgen is
        then stopped)."""
        self.log.append("pgctrl: start (background)")
        proc = _proc.spawn_recorded([sys.executable, "-c", _START, self.path("pgctrl")],
                                    record or (lambda _pid: None), start_new_session=True,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if devices:
            deadline = time.monotonic() + timeout
            while not set(devices) <= set(self.running()):
                rc = proc.poll()
                if rc == 0:  # a short count already sent: started and finished
                    break
                if rc is not None:
                    raise PktgenError(f"pktgen's background start exited with status {rc} before "
                                      f"{', '.join(devices)} ran")
                if time.monotonic() > deadline:
                    self.pgset("pgctrl", "stop")
                    raise PktgenError(f"pktgen did not list {', '.join(devices)} as running within {timeout:g} s")
                time.sleep(0.05)
        return proc.pid

    def running(self) -> list[str]:
        """Devices pktgen runs now (the thread files' 'Running:' lines)."""
        out: list[str] = []
        for t in self.threads():
            for line in self.io.read(self.path(f"kpktgend_{t}")).splitlines():
                if line.startswith("Running:"):
                    out += line.split()[1:]
        return out

    def configured(self) -> list[str]:
        """Devices added to the threads (running or stopped)."""
        out: list[str] = []
        for t in self.threads():
            for line in self.io.read(self.path(f"kpktgend_{t}")).splitlines():
                if line.startswith(("Running:", "Stopped:")):
                    out += line.split()[1:]
        return out

    def results(self, devices: list[str]) -> dict:
        """Per-device results parsed by _parsers.parse('pktgen'); pps summed over the devices."""
        text = "".join(f"Device: {d}\n{self.io.read(self.path(d))}\n" for d in devices)
        try:
            parsed = parse("pktgen", text)
        except ParseError as exc:
            raise PktgenError(f"pktgen results: {exc}") from None
        parsed["raw"] = text
        return parsed

    def reset(self) -> None:
        self.pgset("pgctrl", "reset")
