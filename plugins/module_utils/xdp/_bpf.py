# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Minimal bpf(2) access through ctypes. Private to the xdplab.testbed collection.

No process is spawned: the DUT counter sampler calls this at 10 Hz during benchmarks.
What it offers:

- program and map file descriptors by id (``prog_fd_by_id``, ``map_fd_by_id``) or by pinned path
  (``obj_get``), program and map information (``prog_info``, ``map_info``);
- element lookup/update/delete and key iteration, per-CPU lookup (``lookup_percpu``), with the number
  of possible CPUs from /sys/devices/system/cpu/possible;
- the counters of the ``xdplab_stats`` map contract (files/xdp/xdplab.h): ``read_stats`` for one shot,
  ``StatsReader`` for a sampler that keeps the map open; both find the map through the program
  attached to an interface (XDP via IFLA_XDP, or a cls_bpf filter on the ingress hook via TCA_BPF_ID),
  or take a program id.

BPF object ids are global (not per network namespace), so an id resolved inside a namespace can be
read from anywhere.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import os
import platform
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field

from ansible_collections.xdplab.testbed.plugins.module_utils.common import _validate

try:
    from pyroute2 import IPRoute

    HAS_PYROUTE2 = True
    PYROUTE2_IMPORT_ERROR: str | None = None
except ImportError as exc:  # pragma: no cover - depends on the environment
    HAS_PYROUTE2 = False
    PYROUTE2_IMPORT_ERROR = str(exc)

# bpf(2) commands (linux/bpf.h enum bpf_cmd).
BPF_MAP_LOOKUP_ELEM = 1
BPF_MAP_UPDATE_ELEM = 2
BPF_MAP_DELETE_ELEM = 3
BPF_MAP_GET_NEXT_KEY = 4
BPF_OBJ_GET = 7
BPF_PROG_GET_NEXT_ID = 11
BPF_PROG_GET_FD_BY_ID = 13
BPF_MAP_GET_FD_BY_ID = 14
BPF_OBJ_GET_INFO_BY_FD = 15
BPF_PROG_TEST_RUN = 10

BPF_ANY = 0
BPF_TAG_SIZE = 8
BPF_OBJ_NAME_LEN = 16

_SYSCALL_NR = {"x86_64": 321, "aarch64": 280, "armv7l": 386, "ppc64le": 361, "s390x": 351, "riscv64": 280}

# XDP action codes = indices of the xdplab_stats map.
XDP_ACTIONS = ("aborted", "drop", "pass", "tx", "redirect")
STATS_MAP = "xdplab_stats"
_COUNTER = struct.Struct("=QQ")  # struct xdplab_counter {__u64 packets; __u64 bytes;}

# Program and map type names (subset of enum bpf_prog_type / bpf_map_type).
PROG_TYPES = {0: "unspec", 1: "socket_filter", 2: "kprobe", 3: "sched_cls", 4: "sched_act", 6: "xdp"}
MAP_TYPES = {1: "hash", 2: "array", 3: "prog_array", 5: "percpu_hash", 6: "percpu_array", 9: "lru_hash",
             14: "devmap", 16: "cpumap", 17: "xskmap", 25: "devmap_hash"}

# Netlink constants for the tc filter dump.
TC_H_INGRESS_PARENT = 0xFFFFFFF2  # clsact/ingress: TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_INGRESS)
TCA_OPTIONS = 2
TCA_BPF_ID = 11


class BpfError(OSError):
    """A bpf(2) call failed; ``errno`` and ``strerror`` are set, ``what`` says which call."""

    def __init__(self, err: int, what: str) -> None:
        super().__init__(err, f"{what}: {os.strerror(err)}")
        self.what = what


class _ProgInfo(ctypes.Structure):
    # Leading part of struct bpf_prog_info; the kernel copies min(info_len, its size).
    _fields_ = [
        ("type", ctypes.c_uint32),
        ("id", ctypes.c_uint32),
        ("tag", ctypes.c_uint8 * BPF_TAG_SIZE),
        ("jited_prog_len", ctypes.c_uint32),
        ("xlated_prog_len", ctypes.c_uint32),
        ("jited_prog_insns", ctypes.c_uint64),
        ("xlated_prog_insns", ctypes.c_uint64),
        ("load_time", ctypes.c_uint64),
        ("created_by_uid", ctypes.c_uint32),
        ("nr_map_ids", ctypes.c_uint32),
        ("map_ids", ctypes.c_uint64),
        ("name", ctypes.c_char * BPF_OBJ_NAME_LEN),
        ("ifindex", ctypes.c_uint32),
        ("gpl_compatible", ctypes.c_uint32),
    ]


class _MapInfo(ctypes.Structure):
    # Leading part of struct bpf_map_info.
    _fields_ = [
        ("type", ctypes.c_uint32),
        ("id", ctypes.c_uint32),
        ("key_size", ctypes.c_uint32),
        ("value_size", ctypes.c_uint32),
        ("max_entries", ctypes.c_uint32),
        ("map_flags", ctypes.c_uint32),
        ("name", ctypes.c_char * BPF_OBJ_NAME_LEN),
        ("ifindex", ctypes.c_uint32),
    ]


class _ProgRunInfo(ctypes.Structure):
    # struct bpf_prog_info up to its run-time statistics (run_time_ns, run_cnt: counted only while the
    # kernel.bpf_stats_enabled sysctl is 1). Every pointer stays 0, so the kernel copies no arrays.
    _fields_ = [
        ("head", ctypes.c_uint8 * 88),  # type .. gpl_compatible (_ProgInfo, padded to 8 bytes)
        ("netns_dev", ctypes.c_uint64),
        ("netns_ino", ctypes.c_uint64),
        ("nr_jited_ksyms", ctypes.c_uint32),
        ("nr_jited_func_lens", ctypes.c_uint32),
        ("jited_ksyms", ctypes.c_uint64),
        ("jited_func_lens", ctypes.c_uint64),
        ("btf_id", ctypes.c_uint32),
        ("func_info_rec_size", ctypes.c_uint32),
        ("func_info", ctypes.c_uint64),
        ("nr_func_info", ctypes.c_uint32),
        ("nr_line_info", ctypes.c_uint32),
        ("line_info", ctypes.c_uint64),
        ("jited_line_info", ctypes.c_uint64),
        ("nr_jited_line_info", ctypes.c_uint32),
        ("line_info_rec_size", ctypes.c_uint32),
        ("jited_line_info_rec_size", ctypes.c_uint32),
        ("nr_prog_tags", ctypes.c_uint32),
        ("prog_tags", ctypes.c_uint64),
        ("run_time_ns", ctypes.c_uint64),
        ("run_cnt", ctypes.c_uint64),
    ]


@dataclass
class ProgInfo:
    id: int
    type: int
    tag: str  # 16 hex digits, as bpftool prints it
    name: str
    map_ids: list[int] = field(default_factory=list)

    @property
    def type_name(self) -> str:
        return PROG_TYPES.get(self.type, str(self.type))


@dataclass
class MapInfo:
    id: int
    type: int
    name: str
    key_size: int
    value_size: int
    max_entries: int
    map_flags: int = 0

    @property
    def type_name(self) -> str:
        return MAP_TYPES.get(self.type, str(self.type))


_libc = None
_nr = None


def _syscall(cmd: int, attr: ctypes.Structure | ctypes.Array, what: str) -> int:
    global _libc, _nr
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        machine = platform.machine()
        if machine not in _SYSCALL_NR:
            raise OSError(errno.ENOSYS, f"bpf(2) syscall number unknown for machine {machine!r}")
        _nr = _SYSCALL_NR[machine]
    ret = _libc.syscall(ctypes.c_long(_nr), ctypes.c_int(cmd), ctypes.byref(attr), ctypes.c_uint(ctypes.sizeof(attr)))
    if ret < 0:
        raise BpfError(ctypes.get_errno(), what)
    return ret


def _attr(fmt: str, *values: int) -> ctypes.Array:
    """A zeroed 128-byte union bpf_attr with ``values`` packed at its start."""
    buf = (ctypes.c_char * 128)()
    struct.pack_into(fmt, buf, 0, *values)
    return buf


def _addr(buf: ctypes.Array | ctypes.Structure) -> int:
    return ctypes.addressof(buf)


# ---- file descriptors and information ----------------------------------------------------------

def prog_fd_by_id(prog_id: int) -> int:
    return _syscall(BPF_PROG_GET_FD_BY_ID, _attr("=III", prog_id, 0, 0), f"prog fd of id {prog_id}")


def map_fd_by_id(map_id: int) -> int:
    return _syscall(BPF_MAP_GET_FD_BY_ID, _attr("=III", map_id, 0, 0), f"map fd of id {map_id}")


def obj_get(path: str) -> int:
    """File descriptor of a pinned BPF object (program or map) on a bpffs."""
    cpath = ctypes.create_string_buffer(os.fsencode(path))
    return _syscall(BPF_OBJ_GET, _attr("=QII", _addr(cpath), 0, 0), f"pinned object {path}")


def prog_test_run(fd: int, data: bytes, repeat: int) -> tuple[int, int]:
    """BPF_PROG_TEST_RUN of a program on one frame in repeat mode (no live frames): (return value,
    average duration per run in ns as the kernel measured it)."""
    if repeat < 1:
        raise ValueError(f"repeat must be >= 1, got {repeat!r}")
    buf = ctypes.create_string_buffer(data, len(data))
    attr = _attr("=IIIIQQII", fd, 0, len(data), 0, _addr(buf), 0, repeat, 0)
    _syscall(BPF_PROG_TEST_RUN, attr, "prog test run")
    retval, duration = struct.unpack_from("=I", attr, 4)[0], struct.unpack_from("=I", attr, 36)[0]
    return retval, duration


def _info(fd: int, info: ctypes.Structure, what: str) -> None:
    _syscall(BPF_OBJ_GET_INFO_BY_FD, _attr("=IIQ", fd, ctypes.sizeof(info), _addr(info)), what)


def prog_info_fd(fd: int) -> ProgInfo:
    info = _ProgInfo()
    _info(fd, info, "prog info")
    nr = info.nr_map_ids
    ids = (ctypes.c_uint32 * max(nr, 1))()
    if nr:
        info = _ProgInfo(nr_map_ids=nr, map_ids=_addr(ids))
        _info(fd, info, "prog info")
        nr = min(nr, info.nr_map_ids)
    return ProgInfo(
        id=info.id,
        type=info.type,
        tag=bytes(info.tag).hex(),
        name=info.name.decode(errors="replace"),
        map_ids=[ids[i] for i in range(nr)],
    )


def prog_info(prog_id: int) -> ProgInfo:
    fd = prog_fd_by_id(prog_id)
    try:
        return prog_info_fd(fd)
    finally:
        os.close(fd)


def prog_run_stats_fd(fd: int) -> tuple[int, int]:
    """(run_time_ns, run_cnt) of a program: its run-time statistics, which move only while
    kernel.bpf_stats_enabled is 1 (bpftool prog show prints them as run_time_ns and run_cnt)."""
    info = _ProgRunInfo()
    _info(fd, info, "prog run statistics")
    return int(info.run_time_ns), int(info.run_cnt)


def map_info_fd(fd: int) -> MapInfo:
    info = _MapInfo()
    _info(fd, info, "map info")
    return MapInfo(
        id=info.id,
        type=info.type,
        name=info.name.decode(errors="replace"),
        key_size=info.key_size,
        value_size=info.value_size,
        max_entries=info.max_entries,
        map_flags=info.map_flags,
    )


def map_info(map_id: int) -> MapInfo:
    fd = map_fd_by_id(map_id)
    try:
        return map_info_fd(fd)
    finally:
        os.close(fd)


def prog_maps(prog_id: int) -> dict[str, MapInfo]:
    """The maps a program uses, by name."""
    return {m.name: m for m in (map_info(i) for i in prog_info(prog_id).map_ids)}


def prog_ids() -> Iterator[int]:
    """Ids of all loaded programs."""
    cur = 0
    while True:
        attr = _attr("=III", cur, 0, 0)
        try:
            _syscall(BPF_PROG_GET_NEXT_ID, attr, "next prog id")
        except BpfError as exc:
            if exc.errno == errno.ENOENT:
                return
            raise
        cur = struct.unpack_from("=I", attr, 4)[0]
        yield cur


# ---- elements ----------------------------------------------------------------------------------

def lookup(fd: int, key: bytes, value_size: int) -> bytes | None:
    """Value bytes at ``key``, or None if there is no such element. ``value_size`` is the whole
    buffer the kernel fills (for per-CPU maps: ``percpu_value_size``)."""
    k = ctypes.create_string_buffer(key, len(key))
    v = ctypes.create_string_buffer(value_size)
    try:
        _syscall(BPF_MAP_LOOKUP_ELEM, _attr("=IIQQQ", fd, 0, _addr(k), _addr(v), 0), "map lookup")
    except BpfError as exc:
        if exc.errno == errno.ENOENT:
            return None
        raise
    return v.raw


def update(fd: int, key: bytes, value: bytes, flags: int = BPF_ANY) -> None:
    k = ctypes.create_string_buffer(key, len(key))
    v = ctypes.create_string_buffer(value, len(value))
    _syscall(BPF_MAP_UPDATE_ELEM, _attr("=IIQQQ", fd, 0, _addr(k), _addr(v), flags), "map update")


def delete(fd: int, key: bytes) -> bool:
    """Delete ``key``; False if it was not there."""
    k = ctypes.create_string_buffer(key, len(key))
    try:
        _syscall(BPF_MAP_DELETE_ELEM, _attr("=IIQQ", fd, 0, _addr(k), 0), "map delete")
    except BpfError as exc:
        if exc.errno == errno.ENOENT:
            return False
        raise
    return True


def keys(fd: int, key_size: int) -> Iterator[bytes]:
    cur: ctypes.Array | None = None
    nxt = ctypes.create_string_buffer(key_size)
    while True:
        attr = _attr("=IIQQ", fd, 0, _addr(cur) if cur is not None else 0, _addr(nxt))
        try:
            _syscall(BPF_MAP_GET_NEXT_KEY, attr, "map next key")
        except BpfError as exc:
            if exc.errno == errno.ENOENT:
                return
            raise
        yield nxt.raw
        cur = ctypes.create_string_buffer(nxt.raw, key_size)


# ---- per-CPU values ----------------------------------------------------------------------------

POSSIBLE_CPUS = "/sys/devices/system/cpu/possible"


@functools.lru_cache(maxsize=4)
def possible_cpus(path: str = POSSIBLE_CPUS) -> int:
    """Number of possible CPUs: how many values a per-CPU map lookup returns (cached)."""
    with open(path, encoding="ascii") as f:
        cpus = _validate.cpulist(f.read(), path)
    if not cpus:
        raise _validate.ValidationError(f"{path}: no CPU in it")
    return len(cpus)


def percpu_value_size(value_size: int, ncpus: int) -> int:
    return ((value_size + 7) // 8 * 8) * ncpus


def split_percpu(raw: bytes, value_size: int, ncpus: int) -> list[bytes]:
    """One value per CPU out of a per-CPU lookup buffer (each slot rounded up to 8 bytes)."""
    slot = (value_size + 7) // 8 * 8
    if len(raw) < slot * ncpus:
        raise ValueError(f"per-CPU buffer of {len(raw)} bytes, expected {slot * ncpus}")
    return [raw[i * slot:i * slot + value_size] for i in range(ncpus)]


def lookup_percpu(fd: int, key: bytes, value_size: int, ncpus: int | None = None) -> list[bytes] | None:
    ncpus = ncpus or possible_cpus()
    raw = lookup(fd, key, percpu_value_size(value_size, ncpus))
    return None if raw is None else split_percpu(raw, value_size, ncpus)


def sum_counters(values: list[bytes]) -> dict[str, int]:
    """Sum per-CPU ``struct xdplab_counter`` values."""
    packets = total = 0
    for v in values:
        p, b = _COUNTER.unpack_from(v)
        packets += p
        total += b
    return {"packets": packets, "bytes": total}


# ---- finding the attached program --------------------------------------------------------------

def _require_pyroute2() -> None:
    if not HAS_PYROUTE2:
        raise ImportError(f"pyroute2 is required to find attached programs: {PYROUTE2_IMPORT_ERROR}")


def _ifindex(ipr, interface: int | str) -> int:
    if isinstance(interface, int):
        return interface
    found = ipr.link_lookup(ifname=interface)
    if not found:
        raise LookupError(f"interface {interface!r} not found")
    return found[0]


@dataclass
class XdpAttachment:
    ifindex: int
    mode: str | None  # native | generic | offload | multi | None (nothing attached)
    prog_id: int | None  # the program of `mode` (for multi: the native one, else generic, else hw)
    prog_ids: dict[str, int] = field(default_factory=dict)  # mode -> prog id, every attached one


_XDP_ATTACHED = {"xdp": "native", "xdpgeneric": "generic", "xdpoffload": "offload", "xdpmulti": "multi",
                 1: "native", 2: "generic", 3: "offload", 4: "multi"}


def xdp_attachment_from_attrs(ifindex: int, attrs: dict) -> XdpAttachment:
    """Build an XdpAttachment out of the IFLA_XDP attributes (name -> value) of a link."""
    mode = _XDP_ATTACHED.get(attrs.get("IFLA_XDP_ATTACHED"))
    ids = {}
    for name, key in (("native", "IFLA_XDP_DRV_PROG_ID"), ("generic", "IFLA_XDP_SKB_PROG_ID"),
                      ("offload", "IFLA_XDP_HW_PROG_ID")):
        if attrs.get(key):
            ids[name] = attrs[key]
    if mode in ("native", "generic", "offload") and attrs.get("IFLA_XDP_PROG_ID"):
        ids.setdefault(mode, attrs["IFLA_XDP_PROG_ID"])
    prog_id = None
    if mode == "multi":
        prog_id = ids.get("native") or ids.get("generic") or ids.get("offload")
    elif mode:
        prog_id = ids.get(mode)
    return XdpAttachment(ifindex=ifindex, mode=mode, prog_id=prog_id, prog_ids=ids)


def xdp_attachment(interface: int | str, ipr=None) -> XdpAttachment:
    """What XDP program(s) an interface of the current network namespace has, via IFLA_XDP."""
    _require_pyroute2()
    own = ipr is None
    ipr = ipr or IPRoute()
    try:
        idx = _ifindex(ipr, interface)
        link = ipr.get_links(idx)[0]
        xdp = link.get_attr("IFLA_XDP")
        attrs = dict(xdp["attrs"]) if xdp else {}
        return xdp_attachment_from_attrs(idx, attrs)
    finally:
        if own:
            ipr.close()


def parse_nlas(buf: bytes) -> list[tuple[int, bytes]]:
    """(type, payload) pairs of a run of netlink attributes (4-byte aligned)."""
    out = []
    off = 0
    while off + 4 <= len(buf):
        length, typ = struct.unpack_from("=HH", buf, off)
        if length < 4 or off + length > len(buf):
            break
        out.append((typ & 0x3FFF, bytes(buf[off + 4:off + length])))
        off += (length + 3) & ~3
    return out


def tc_bpf_id_from_options(raw_options: bytes) -> int | None:
    """The TCA_BPF_ID out of a raw TCA_OPTIONS attribute (header included) of a cls_bpf filter."""
    for typ, payload in parse_nlas(raw_options):
        if typ == TCA_OPTIONS:
            for sub, data in parse_nlas(payload):
                if sub == TCA_BPF_ID and len(data) >= 4:
                    return struct.unpack_from("=I", data)[0]
    return None


def tc_ingress_prog_ids(interface: int | str, ipr=None) -> list[int]:
    """Ids of the cls_bpf programs on the clsact ingress hook of an interface, in filter order.
    pyroute2 0.9 does not decode TCA_BPF_ID, so it is read from the raw attribute bytes."""
    _require_pyroute2()
    own = ipr is None
    ipr = ipr or IPRoute()
    try:
        idx = _ifindex(ipr, interface)
        ids = []
        for msg in ipr.get_filters(index=idx, parent=TC_H_INGRESS_PARENT):
            if msg.get_attr("TCA_KIND") != "bpf":
                continue
            opts = msg.get_attr("TCA_OPTIONS")
            if opts is None:
                continue
            raw = bytes(opts.data[opts.offset:opts.offset + opts.length])
            pid = tc_bpf_id_from_options(raw)
            if pid:
                ids.append(pid)
        return ids
    finally:
        if own:
            ipr.close()


# ---- xdplab_stats ------------------------------------------------------------------------------

class StatsReader:
    """Keeps the ``xdplab_stats`` map of one program open and reads it summed over CPUs.

    ``StatsReader(prog_id=N)``, ``StatsReader(interface="eth0")`` (the XDP program attached there),
    ``StatsReader(interface="eth0", hook="tc")`` (the first cls_bpf program on its ingress).
    Use as a context manager or call ``close()``.
    """

    def __init__(self, interface: int | str | None = None, *, prog_id: int | None = None,
                 hook: str = "xdp") -> None:
        if (interface is None) == (prog_id is None):
            raise ValueError("give exactly one of interface or prog_id")
        if prog_id is None:
            prog_id = find_prog_id(interface, hook)
        self.prog_id = prog_id
        self._fd = self._prog_fd = -1
        stats = prog_maps(prog_id).get(STATS_MAP)
        if stats is None:
            raise LookupError(f"program id {prog_id} has no {STATS_MAP} map")
        if stats.key_size != 4 or stats.value_size != _COUNTER.size or stats.max_entries < len(XDP_ACTIONS):
            raise LookupError(f"{STATS_MAP} of program id {prog_id} does not follow the contract "
                              f"(key {stats.key_size}, value {stats.value_size}, entries {stats.max_entries})")
        self.map_id = stats.id
        self.ncpus = possible_cpus()
        self._fd = map_fd_by_id(stats.id)
        self._keys = [struct.pack("=I", i) for i in range(len(XDP_ACTIONS))]

    def read(self) -> dict[str, dict[str, int]]:
        out = {}
        for name, key in zip(XDP_ACTIONS, self._keys, strict=True):
            values = lookup_percpu(self._fd, key, _COUNTER.size, self.ncpus)
            out[name] = sum_counters(values) if values else {"packets": 0, "bytes": 0}
        return out

    def packets_by_cpu(self) -> list[int]:
        """Packets of every action, per possible CPU (which CPUs ran the program)."""
        out = [0] * self.ncpus
        for key in self._keys:
            for cpu, value in enumerate(lookup_percpu(self._fd, key, _COUNTER.size, self.ncpus) or []):
                out[cpu] += _COUNTER.unpack_from(value)[0]
        return out

    def run_stats(self) -> tuple[int, int]:
        """(run_time_ns, run_cnt) of the program (prog_run_stats_fd), its fd kept open."""
        if self._prog_fd < 0:
            self._prog_fd = prog_fd_by_id(self.prog_id)
        return prog_run_stats_fd(self._prog_fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self._prog_fd >= 0:
            os.close(self._prog_fd)
            self._prog_fd = -1

    def __enter__(self) -> StatsReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ProgRuns:
    """The run-time statistics of a program attached to an interface (``find_prog_id``), whatever its
    maps: ``run_stats()`` is (run_time_ns, run_cnt), its fd kept open. Call ``close()`` when done."""

    def __init__(self, interface: int | str, hook: str = "xdp") -> None:
        self.prog_id = find_prog_id(interface, hook)
        self._prog_fd = prog_fd_by_id(self.prog_id)

    def run_stats(self) -> tuple[int, int]:
        return prog_run_stats_fd(self._prog_fd)

    def close(self) -> None:
        if self._prog_fd >= 0:
            os.close(self._prog_fd)
            self._prog_fd = -1


def find_prog_id(interface: int | str, hook: str = "xdp") -> int:
    """Id of the program attached to ``interface`` on ``hook`` (xdp, or tc for clsact ingress)."""
    if hook == "xdp":
        att = xdp_attachment(interface)
        if att.prog_id is None:
            raise LookupError(f"no XDP program attached to interface {interface!r}")
        return att.prog_id
    if hook == "tc":
        ids = tc_ingress_prog_ids(interface)
        if not ids:
            raise LookupError(f"no cls_bpf program on the ingress of interface {interface!r}")
        return ids[0]
    raise ValueError(f"unknown hook {hook!r} (xdp or tc)")


def read_stats(interface: int | str | None = None, *, prog_id: int | None = None,
               hook: str = "xdp") -> dict[str, dict[str, int]]:
    """``{"aborted"|"drop"|"pass"|"tx"|"redirect": {"packets": n, "bytes": n}}`` summed over CPUs,
    from the ``xdplab_stats`` map of the program attached to ``interface`` (ifindex or name, in the
    current network namespace) on ``hook`` ("xdp" or "tc"), or of program ``prog_id``."""
    with StatsReader(interface, prog_id=prog_id, hook=hook) as reader:
        return reader.read()


def read_tc_stats(interface: int | str) -> dict[str, dict[str, int]]:
    """``read_stats`` of the first cls_bpf program on the clsact ingress of ``interface``."""
    return read_stats(interface, hook="tc")
