# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure logic behind the xdp_prog module. Private to the xdplab.testbed collection.

- ``elf_programs``: the BPF programs (function name, ELF section) of an object file, read from its
  symbol table without loading it, so a bad object or a program name that is not in it is refused
  before anything touches the kernel;
- ``select_program``: pick one by function name or section;
- ``encode_entry``: turn a ``map_entries`` item ({map, key, value}) into key/value bytes for the map,
  with the layouts of files/xdp/xdplab.h for the flow table maps;
- ``plan``: what to do given what is attached and what is asked.
"""

from __future__ import annotations

import ipaddress
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

ELF_MAGIC = b"\x7fELF"
EM_BPF = 247
SHT_SYMTAB = 2
SHF_EXECINSTR = 0x4
STT_FUNC = 2
STB_GLOBAL = 1

XDP_ACTION_CODES = {"aborted": 0, "drop": 1, "pass": 2, "tx": 3, "redirect": 4}
MODES = {"native": "xdpdrv", "generic": "xdpgeneric", "offload": "xdpoffload"}


def in_bpffs(path: str, mounts: str = "/proc/self/mounts") -> bool:
    """Whether `path` lies in a mounted bpffs (the innermost mount point above it is of type bpf)."""
    path = os.path.realpath(path)
    best, fstype = "", None
    with open(mounts, encoding="utf-8") as fh:
        for line in fh:
            fields = line.split()
            if len(fields) < 3:
                continue
            point = fields[1].encode().decode("unicode_escape")
            if (path == point or path.startswith(point.rstrip("/") + "/")) and len(point) >= len(best):
                best, fstype = point, fields[2]
    return fstype == "bpf"


# Map layouts of files/xdp/xdplab.h.
FLOW_KEY = struct.Struct("=16s16s2s2sBBH")  # struct xdplab_flow_key (ports in network byte order)
FLOW_VAL = struct.Struct("=IIQQ")  # struct xdplab_flow_val {action, ifindex, packets, bytes}
FLOW_CFG = struct.Struct("=IIII")  # struct xdplab_flow_cfg {miss_action, flags, miss_ifindex, pad}
FLOW_CFG_VALID = 1
AF_INET, AF_INET6 = 2, 10
IP_PROTOS = {"tcp": 6, "udp": 17, "icmp": 1, "icmpv6": 58}


class XdpError(ValueError):
    """Bad input for xdp_prog; the message names the bad value."""


@dataclass(frozen=True)
class ElfProgram:
    name: str
    section: str

    @property
    def prog_type(self) -> str:
        """Program type the section name gives libbpf (only the ones xdplab cares about)."""
        sec = self.section
        if sec == "xdp" or sec.startswith(("xdp/", "xdp.")):
            return "xdp"
        if sec in ("tc", "classifier") or sec.startswith(("tc/", "classifier/", "tc.")):
            return "sched_cls"
        return "other"


def elf_programs(data: bytes, path: str = "object") -> list[ElfProgram]:
    """Programs of a BPF ELF object: global functions in executable sections other than .text."""
    if len(data) < 64 or data[:4] != ELF_MAGIC:
        raise XdpError(f"{path} is not an ELF file")
    if data[4] != 2:
        raise XdpError(f"{path} is not a 64-bit ELF file, so not a BPF object")
    endian = {1: "<", 2: ">"}.get(data[5])
    if endian is None:
        raise XdpError(f"{path}: bad ELF data encoding {data[5]}")
    (e_machine,) = struct.unpack_from(endian + "H", data, 18)
    if e_machine != EM_BPF:
        raise XdpError(f"{path} is not a BPF ELF object (e_machine {e_machine}, expected {EM_BPF})")
    e_shoff, = struct.unpack_from(endian + "Q", data, 40)
    e_shentsize, e_shnum, e_shstrndx = struct.unpack_from(endian + "HHH", data, 58)
    sh = struct.Struct(endian + "IIQQQQIIQQ")
    if e_shentsize != sh.size or e_shoff + e_shnum * sh.size > len(data) or e_shstrndx >= e_shnum:
        raise XdpError(f"{path}: truncated or malformed ELF section table")
    sections = [sh.unpack_from(data, e_shoff + i * sh.size) for i in range(e_shnum)]

    def cstr(table_off: int, table_size: int, off: int) -> str:
        if off >= table_size:
            return ""
        start = table_off + off
        end = data.find(b"\0", start, table_off + table_size)
        return data[start:end if end >= 0 else table_off + table_size].decode(errors="replace")

    shstr = sections[e_shstrndx]
    names = [cstr(shstr[4], shstr[5], s[0]) for s in sections]
    sym = struct.Struct(endian + "IBBHQQ")
    progs: list[ElfProgram] = []
    for s in sections:
        if s[1] != SHT_SYMTAB:
            continue
        strtab = sections[s[6]] if s[6] < e_shnum else None
        if strtab is None or s[4] + s[5] > len(data):
            raise XdpError(f"{path}: malformed ELF symbol table")
        for off in range(s[4], s[4] + s[5] - sym.size + 1, sym.size):
            st_name, st_info, _other, st_shndx, _value, _size = sym.unpack_from(data, off)
            if st_info & 0xF != STT_FUNC or st_info >> 4 != STB_GLOBAL or not 0 < st_shndx < e_shnum:
                continue
            sec = sections[st_shndx]
            if not sec[2] & SHF_EXECINSTR or names[st_shndx] == ".text":
                continue
            progs.append(ElfProgram(cstr(strtab[4], strtab[5], st_name), names[st_shndx]))
    return progs


def select_program(progs: list[ElfProgram], path: str, program: str | None = None,
                   section: str | None = None) -> ElfProgram:
    """The one XDP program asked for (by function name or section; or the only one)."""
    listing = ", ".join(f"{p.name} (section {p.section})" for p in progs) or "none"
    if program is not None:
        found = [p for p in progs if p.name == program]
        if not found:
            raise XdpError(f"program {program!r} not found in {path} (programs: {listing})")
    elif section is not None:
        found = [p for p in progs if p.section == section]
        if not found:
            raise XdpError(f"section {section!r} not found in {path} (programs: {listing})")
        if len(found) > 1:
            raise XdpError(f"section {section!r} of {path} holds several programs ({listing}): name one "
                           "with program")
    else:
        found = progs
        if len(found) != 1:
            raise XdpError(f"{path} holds {len(found)} programs ({listing}): name one with program or section")
    prog = found[0]
    if prog.prog_type != "xdp":
        raise XdpError(f"program {prog.name!r} in {path} is in section {prog.section!r}, not an XDP program")
    return prog


# ---- map entries -------------------------------------------------------------------------------

def _int_bytes(value: int, size: int, what: str) -> bytes:
    if isinstance(value, bool) or not isinstance(value, int):
        raise XdpError(f"{what} {value!r} is not an integer")
    if size not in (1, 2, 4, 8) or not 0 <= value < 1 << (8 * size):
        raise XdpError(f"{what} {value!r} does not fit the map's {size}-byte field")
    return value.to_bytes(size, "little")


def _action(value: Any, what: str) -> int:
    if isinstance(value, str) and value.lower() in XDP_ACTION_CODES:
        return XDP_ACTION_CODES[value.lower()]
    if isinstance(value, int) and not isinstance(value, bool) and value in XDP_ACTION_CODES.values():
        return value
    raise XdpError(f"{what} {value!r} is not an XDP action ({', '.join(XDP_ACTION_CODES)})")


def _port(value: Any, what: str) -> int:
    if value is None:
        return 0
    try:
        port = int(value)
    except (TypeError, ValueError):
        raise XdpError(f"{what} {value!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise XdpError(f"{what} {value!r} is not a port number")
    return port


def encode_flow_key(key: Any) -> bytes:
    """struct xdplab_flow_key from {src, dst, proto, sport, dport}."""
    if not isinstance(key, dict):
        raise XdpError(f"flow key {key!r} must be a dict with src, dst, proto, sport, dport")
    unknown = set(key) - {"src", "dst", "proto", "sport", "dport"}
    if unknown:
        raise XdpError(f"flow key has unknown fields {sorted(unknown)} (src, dst, proto, sport, dport)")
    addrs = []
    for f in ("src", "dst"):
        if f not in key:
            raise XdpError(f"flow key {key!r} lacks {f}")
        try:
            addrs.append(ipaddress.ip_address(str(key[f])))
        except ValueError:
            raise XdpError(f"flow key {f} {key[f]!r} is not an IP address") from None
    if addrs[0].version != addrs[1].version:
        raise XdpError(f"flow key src {key['src']!r} and dst {key['dst']!r} are not the same IP version")
    proto = key.get("proto")
    if isinstance(proto, str) and proto.lower() in IP_PROTOS:
        proto_num = IP_PROTOS[proto.lower()]
    elif isinstance(proto, int) and not isinstance(proto, bool) and 0 <= proto <= 255:
        proto_num = proto
    else:
        raise XdpError(f"flow key proto {proto!r} is not a protocol ({', '.join(IP_PROTOS)} or 0-255)")
    family = AF_INET if addrs[0].version == 4 else AF_INET6
    sport = _port(key.get("sport"), "flow key sport")
    dport = _port(key.get("dport"), "flow key dport")
    return FLOW_KEY.pack(addrs[0].packed.ljust(16, b"\0"), addrs[1].packed.ljust(16, b"\0"),
                         sport.to_bytes(2, "big"), dport.to_bytes(2, "big"), proto_num, family, 0)


def _action_target(value: Any, what: str, ifindex_of: Callable[[str], int]) -> tuple[int, int]:
    """(action, ifindex) from "drop" or {action, interface | ifindex}."""
    if not isinstance(value, dict):
        value = {"action": value}
    unknown = set(value) - {"action", "interface", "ifindex"}
    if unknown:
        raise XdpError(f"{what} has unknown fields {sorted(unknown)} (action, interface, ifindex)")
    action = _action(value.get("action"), f"{what} action")
    ifindex = 0
    if value.get("interface") is not None:
        ifindex = ifindex_of(str(value["interface"]))
    elif value.get("ifindex") is not None:
        ifindex = int.from_bytes(_int_bytes(value["ifindex"], 4, f"{what} ifindex"), "little")
    if action == XDP_ACTION_CODES["redirect"] and not ifindex:
        raise XdpError(f"{what} {value!r}: action redirect needs an interface or ifindex")
    return action, ifindex


@dataclass(frozen=True)
class EncodedEntry:
    map: str
    key: bytes
    value: bytes
    compare_len: int  # leading value bytes that hold configuration (the rest are counters)


def encode_entry(entry: Any, map_name: str, key_size: int, value_size: int,
                 ifindex_of: Callable[[str], int]) -> EncodedEntry:
    """Key/value bytes of one map_entries item for a map with the given sizes.

    key: an integer, or for xdplab_flows a dict {src, dst, proto, sport, dport}.
    value: an integer; an interface name (its ifindex); for xdplab_flows and xdplab_flow_cfg an
    action name or {action, interface | ifindex}.
    """
    key, value = entry.get("key"), entry.get("value")
    if key is None or value is None:
        raise XdpError(f"map entry {entry!r} needs key and value")
    if map_name == "xdplab_flows":
        if key_size != FLOW_KEY.size or value_size != FLOW_VAL.size:
            raise XdpError(f"map xdplab_flows has key/value sizes {key_size}/{value_size}, "
                           f"expected {FLOW_KEY.size}/{FLOW_VAL.size}")
        action, ifindex = _action_target(value, "xdplab_flows value", ifindex_of)
        return EncodedEntry(map_name, encode_flow_key(key), FLOW_VAL.pack(action, ifindex, 0, 0), 8)
    if isinstance(key, dict):
        raise XdpError(f"map {map_name} key {key!r}: dict keys are for xdplab_flows only")
    kbytes = _int_bytes(key, key_size, f"map {map_name} key")
    if map_name == "xdplab_flow_cfg":
        if value_size != FLOW_CFG.size:
            raise XdpError(f"map xdplab_flow_cfg has value size {value_size}, expected {FLOW_CFG.size}")
        action, ifindex = _action_target(value, "xdplab_flow_cfg value", ifindex_of)
        return EncodedEntry(map_name, kbytes, FLOW_CFG.pack(action, FLOW_CFG_VALID, ifindex, 0), FLOW_CFG.size)
    if isinstance(value, str):
        if value.isdigit():
            value = int(value)
        else:
            value = ifindex_of(value)
    vbytes = _int_bytes(value, value_size, f"map {map_name} value")
    return EncodedEntry(map_name, kbytes, vbytes, value_size)


def decode_flow_counters(value: bytes) -> dict[str, int]:
    action, ifindex, packets, nbytes = FLOW_VAL.unpack(value[:FLOW_VAL.size])
    return {"action": action, "ifindex": ifindex, "packets": packets, "bytes": nbytes}


# ---- plan --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Plan:
    attach: bool  # (re)attach the new program in the asked mode
    detach_modes: tuple[str, ...]  # modes to detach first (another mode holds a program)
    reason: str


def plan_attach(current: dict[str, dict[str, Any]], mode: str, tag: str, name: str) -> Plan:
    """current: {mode: {"tag", "name", ...}} of every attached program."""
    others = tuple(m for m in current if m != mode)
    have = current.get(mode)
    if have is None:
        return Plan(True, others, f"no program attached in {mode} mode")
    if have.get("tag") != tag or have.get("name") != name:
        return Plan(True, others, f"attached {have.get('name')} tag {have.get('tag')} differs from {name} tag {tag}")
    if others:
        return Plan(False, others, f"other modes attached: {', '.join(others)}")
    return Plan(False, (), "same program and mode attached")
