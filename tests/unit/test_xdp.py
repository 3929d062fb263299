# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""module_utils/xdp/_program_objects.py: ELF program listing, program selection, map entry encoding, attach plan;
and the xdp_prog module's detach path with a mocked run_command."""

from __future__ import annotations

import socket
import struct
from types import SimpleNamespace

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _command
from ansible_collections.xdplab.testbed.plugins.module_utils.xdp import _bpf
from ansible_collections.xdplab.testbed.plugins.module_utils.xdp import _program_objects as _xdp
from ansible_collections.xdplab.testbed.plugins.modules import xdp_prog

STT_FUNC, STT_OBJECT, STB_LOCAL, STB_GLOBAL = 2, 1, 0, 1
SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB = 1, 2, 3
AX, WA = 0x6, 0x3


def make_elf(sections, symbols, machine=_xdp.EM_BPF, endian="<", elf_class=2):
    """A relocatable ELF64 with the given (name, type, flags) sections and (name, bind, type,
    section name) symbols, laid out like clang's output (headers at the end)."""
    names = ["", *[s[0] for s in sections], ".symtab", ".strtab", ".shstrtab"]
    shstr = b"\0".join(n.encode() for n in names) + b"\0"
    name_off = {}
    off = 0
    for n in names:
        name_off.setdefault(n, off)
        off += len(n) + 1
    strtab = b"\0" + b"".join(s[0].encode() + b"\0" for s in symbols)
    sym = struct.Struct(endian + "IBBHQQ")
    symtab = sym.pack(0, 0, 0, 0, 0, 0)
    soff = 1
    index = {s[0]: i + 1 for i, s in enumerate(sections)}
    for name, bind, typ, sec in symbols:
        symtab += sym.pack(soff, (bind << 4) | typ, 0, index[sec], 0, 8)
        soff += len(name) + 1
    n_sec = len(sections)
    bodies = [b"\x95" + b"\0" * 7 for _dummy in sections] + [symtab, strtab, shstr]
    data = bytearray(64)
    offsets = []
    for b in bodies:
        offsets.append(len(data))
        data += b
    shoff = len(data)
    sh = struct.Struct(endian + "IIQQQQIIQQ")
    data += sh.pack(*[0] * 10)
    for i, (name, typ, flags) in enumerate(sections):
        data += sh.pack(name_off[name], typ, flags, 0, offsets[i], len(bodies[i]), 0, 0, 8, 0)
    data += sh.pack(name_off[".symtab"], SHT_SYMTAB, 0, 0, offsets[n_sec], len(symtab), n_sec + 2, 1, 8, sym.size)
    data += sh.pack(name_off[".strtab"], SHT_STRTAB, 0, 0, offsets[n_sec + 1], len(strtab), 0, 0, 1, 0)
    data += sh.pack(name_off[".shstrtab"], SHT_STRTAB, 0, 0, offsets[n_sec + 2], len(shstr), 0, 0, 1, 0)
    data[0:16] = b"\x7fELF" + bytes([elf_class, 1 if endian == "<" else 2, 1]) + b"\0" * 9
    struct.pack_into(endian + "HHIQQQIHHHHHH", data, 16, 1, machine, 1, 0, 0, shoff, 0, 64, 0, 0,
                     sh.size, n_sec + 4, n_sec + 3)
    return bytes(data)


DROP_LIKE = make_elf(
    [("xdp", SHT_PROGBITS, AX), (".text", SHT_PROGBITS, AX), (".maps", SHT_PROGBITS, WA),
     ("license", SHT_PROGBITS, WA)],
    [("xdp_drop", STB_GLOBAL, STT_FUNC, "xdp"), ("helper", STB_GLOBAL, STT_FUNC, ".text"),
     ("local_fn", STB_LOCAL, STT_FUNC, "xdp"), ("xdplab_stats", STB_GLOBAL, STT_OBJECT, ".maps"),
     ("_license", STB_GLOBAL, STT_OBJECT, "license")],
)
TWO = make_elf(
    [("xdp", SHT_PROGBITS, AX), ("tc", SHT_PROGBITS, AX)],
    [("xdp_a", STB_GLOBAL, STT_FUNC, "xdp"), ("tc_b", STB_GLOBAL, STT_FUNC, "tc")],
)


# ---- ELF ---------------------------------------------------------------------------------------

def test_elf_programs_lists_global_functions_of_program_sections_only():
    assert _xdp.elf_programs(DROP_LIKE) == [_xdp.ElfProgram("xdp_drop", "xdp")]


def test_elf_programs_big_endian_object():
    be = make_elf([("xdp", SHT_PROGBITS, AX)], [("xdp_be", STB_GLOBAL, STT_FUNC, "xdp")], endian=">")
    assert _xdp.elf_programs(be) == [_xdp.ElfProgram("xdp_be", "xdp")]


@pytest.mark.parametrize("data,needle", [
    (b"#!/bin/sh\necho not an object\n" * 4, "is not an ELF file"),
    (b"\x7fELF", "is not an ELF file"),
    (make_elf([("xdp", SHT_PROGBITS, AX)], [("f", STB_GLOBAL, STT_FUNC, "xdp")], machine=62),
     "is not a BPF ELF object (e_machine 62"),
    (make_elf([("xdp", SHT_PROGBITS, AX)], [("f", STB_GLOBAL, STT_FUNC, "xdp")], elf_class=1), "not a 64-bit"),
    (DROP_LIKE[:-40], "truncated or malformed"),
])
def test_elf_programs_rejects_what_is_not_a_bpf_object(data, needle):
    with pytest.raises(_xdp.XdpError, match="/some/file.o") as err:
        _xdp.elf_programs(data, "/some/file.o")
    assert needle in str(err.value)


def test_select_program_by_name_section_or_single():
    progs = _xdp.elf_programs(TWO)
    assert _xdp.select_program(progs, "two.o", program="xdp_a").name == "xdp_a"
    assert _xdp.select_program(progs, "two.o", section="xdp").name == "xdp_a"
    only = _xdp.elf_programs(DROP_LIKE)
    assert _xdp.select_program(only, "drop.o").name == "xdp_drop"


@pytest.mark.parametrize("kwargs,needle", [
    ({"program": "nope"}, "program 'nope' not found in two.o (programs: xdp_a (section xdp), tc_b (section tc))"),
    ({"section": "xdp.frags"}, "section 'xdp.frags' not found in two.o"),
    ({}, "two.o holds 2 programs"),
    ({"program": "tc_b"}, "program 'tc_b' in two.o is in section 'tc', not an XDP program"),
])
def test_select_program_errors_name_the_value(kwargs, needle):
    with pytest.raises(_xdp.XdpError) as err:
        _xdp.select_program(_xdp.elf_programs(TWO), "two.o", **kwargs)
    assert needle in str(err.value)


@pytest.mark.parametrize("section,kind", [("xdp", "xdp"), ("xdp.frags", "xdp"), ("xdp/devmap", "xdp"),
                                          ("tc", "sched_cls"), ("classifier", "sched_cls"), ("kprobe/x", "other")])
def test_prog_type_from_section(section, kind):
    assert _xdp.ElfProgram("f", section).prog_type == kind


# ---- map entries -------------------------------------------------------------------------------

IFINDEX = {"veth1": 7, "dut1": 12}


def ifindex_of(name):
    if name not in IFINDEX:
        raise _xdp.XdpError(f"interface {name!r} not found in this network namespace")
    return IFINDEX[name]


def test_devmap_entry_value_is_an_interface_name_or_number():
    enc = _xdp.encode_entry({"key": 0, "value": "veth1"}, "xdplab_redirect", 4, 4, ifindex_of)
    assert (enc.key, enc.value, enc.compare_len) == (b"\0\0\0\0", struct.pack("<I", 7), 4)
    assert _xdp.encode_entry({"key": 3, "value": "12"}, "m", 4, 8, ifindex_of).value == struct.pack("<Q", 12)
    assert _xdp.encode_entry({"key": 1, "value": 5}, "m", 4, 4, ifindex_of).key == struct.pack("<I", 1)


def test_flow_key_layout_matches_xdplab_h():
    key = {"src": "198.18.0.1", "dst": "198.18.0.2", "proto": "udp", "sport": 4000, "dport": 9}
    raw = _xdp.encode_flow_key(key)
    expected = (socket.inet_aton("198.18.0.1") + b"\0" * 12 + socket.inet_aton("198.18.0.2") + b"\0" * 12
                + struct.pack("!HH", 4000, 9) + bytes([17, 2]) + b"\0\0")
    assert raw == expected and len(raw) == 40
    v6 = _xdp.encode_flow_key({"src": "2001:db8::1", "dst": "2001:db8::2", "proto": 6})
    assert v6[:16] == socket.inet_pton(socket.AF_INET6, "2001:db8::1")
    assert v6[32:] == b"\0\0\0\0" + bytes([6, 10]) + b"\0\0"


def test_flow_value_and_cfg_layouts():
    key = {"src": "198.18.0.1", "dst": "198.18.0.2", "proto": "tcp"}
    enc = _xdp.encode_entry({"key": key, "value": {"action": "redirect", "interface": "dut1"}},
                            "xdplab_flows", 40, 24, ifindex_of)
    assert enc.value == struct.pack("=IIQQ", 4, 12, 0, 0) and enc.compare_len == 8
    cfg = _xdp.encode_entry({"key": 0, "value": "drop"}, "xdplab_flow_cfg", 4, 16, ifindex_of)
    assert cfg.value == struct.pack("=IIII", 1, 1, 0, 0)
    assert _xdp.decode_flow_counters(struct.pack("=IIQQ", 1, 0, 3, 180)) == {
        "action": 1, "ifindex": 0, "packets": 3, "bytes": 180}


@pytest.mark.parametrize("entry,map_name,sizes,needle", [
    ({"key": 0, "value": "nosuch0"}, "xdplab_redirect", (4, 4), "'nosuch0' not found"),
    ({"key": 2**32, "value": 1}, "m", (4, 4), "map m key 4294967296 does not fit"),
    ({"key": "zero", "value": 1}, "m", (4, 4), "map m key 'zero' is not an integer"),
    ({"key": {"src": "198.18.0.1"}, "value": 1}, "m", (4, 4), "dict keys are for xdplab_flows only"),
    ({"key": {"src": "198.18.0.300", "dst": "198.18.0.2", "proto": "udp"}, "value": "drop"},
     "xdplab_flows", (40, 24), "src '198.18.0.300' is not an IP address"),
    ({"key": {"src": "198.18.0.1", "dst": "2001:db8::2", "proto": "udp"}, "value": "drop"},
     "xdplab_flows", (40, 24), "not the same IP version"),
    ({"key": {"src": "198.18.0.1", "dst": "198.18.0.2", "proto": "sctpx"}, "value": "drop"},
     "xdplab_flows", (40, 24), "proto 'sctpx'"),
    ({"key": {"src": "198.18.0.1", "dst": "198.18.0.2", "proto": "udp", "dport": 70000}, "value": "drop"},
     "xdplab_flows", (40, 24), "dport 70000"),
    ({"key": {"src": "198.18.0.1", "dst": "198.18.0.2", "proto": "udp", "port": 1}, "value": "drop"},
     "xdplab_flows", (40, 24), "unknown fields ['port']"),
    ({"key": {"src": "198.18.0.1", "dst": "198.18.0.2", "proto": "udp"}, "value": "explode"},
     "xdplab_flows", (40, 24), "'explode' is not an XDP action"),
    ({"key": {"src": "198.18.0.1", "dst": "198.18.0.2", "proto": "udp"}, "value": "redirect"},
     "xdplab_flows", (40, 24), "action redirect needs an interface"),
    ({"key": 0, "value": "drop"}, "xdplab_flows", (40, 20), "sizes 40/20"),
    ({"key": 0}, "m", (4, 4), "needs key and value"),
])
def test_encode_entry_errors_name_the_value(entry, map_name, sizes, needle):
    with pytest.raises(_xdp.XdpError) as err:
        _xdp.encode_entry(entry, map_name, *sizes, ifindex_of)
    assert needle in str(err.value)


# ---- plan --------------------------------------------------------------------------------------

def test_plan_attach():
    drop = {"tag": "55bc38b694061edc", "name": "xdp_drop"}
    assert _xdp.plan_attach({}, "native", drop["tag"], "xdp_drop").attach is True
    same = _xdp.plan_attach({"native": drop}, "native", drop["tag"], "xdp_drop")
    assert (same.attach, same.detach_modes) == (False, ())
    other = _xdp.plan_attach({"native": drop}, "native", "b2ea855343e8e322", "xdp_pass")
    assert other.attach is True and "differs" in other.reason
    switch = _xdp.plan_attach({"generic": drop}, "native", drop["tag"], "xdp_drop")
    assert (switch.attach, switch.detach_modes) == (True, ("generic",))
    # same tag, different name (identical code) is another program
    assert _xdp.plan_attach({"native": drop}, "native", drop["tag"], "xdp_drop2").attach is True


# ---- module: detach path with mocked run_command ------------------------------------------------

class FakeModule:
    def __init__(self, check_mode=False, diff=False, rc=0):
        self.params = {"interface": "veth0", "object": None, "program": None, "section": None,
                       "mode": "native", "state": "detached", "map_entries": [], "ledger_dir": None,
                       "pin_dir": "/sys/fs/bpf/xdplab", "only_ours": False, "run_id": None}
        self.check_mode = check_mode
        self._diff = diff
        self.calls = []
        self.rc = rc

    def get_bin_path(self, name, required=False):
        return f"/usr/sbin/{name}"

    def run_command(self, argv, environ_update=None):
        self.calls.append((argv, environ_update))
        return self.rc, "", "" if self.rc == 0 else "Error: boom"

    def fail_json(self, **kw):
        raise SystemExit(kw)


@pytest.fixture
def attached_generic(monkeypatch):
    state = {"ids": {"generic": 41}}

    def attachment(ifindex, ipr=None):
        return _bpf.XdpAttachment(ifindex, "generic" if state["ids"] else None, state["ids"].get("generic"),
                                  dict(state["ids"]))

    monkeypatch.setattr(_bpf, "xdp_attachment", attachment)
    monkeypatch.setattr(_bpf, "prog_info", lambda pid: _bpf.ProgInfo(pid, 6, "55bc38b694061edc", "xdp_drop", [9]))
    return state


def test_detach_runs_bpftool_with_the_attached_mode(attached_generic):
    mod = FakeModule(diff=True)
    orig = mod.run_command

    def run(argv, environ_update=None):
        attached_generic["ids"] = {}
        return orig(argv, environ_update)

    mod.run_command = run
    res = xdp_prog.XdpProg(mod, SimpleNamespace()).detach(4)
    assert mod.calls == [(["/usr/sbin/bpftool", "net", "detach", "xdpgeneric", "dev", "veth0"],
                          _command.C_LOCALE)]
    assert res["changed"] is True
    assert res["diff"]["before"] == {"attached": True, "mode": "generic", "name": "xdp_drop",
                                     "tag": "55bc38b694061edc", "prog_id": 41}


def test_detach_check_mode_runs_nothing(attached_generic):
    mod = FakeModule(check_mode=True)
    res = xdp_prog.XdpProg(mod, SimpleNamespace()).detach(4)
    assert res["changed"] is True and mod.calls == []


def test_detach_failure_carries_rc_and_stderr(attached_generic):
    mod = FakeModule(rc=255)
    with pytest.raises(SystemExit) as err:
        xdp_prog.XdpProg(mod, SimpleNamespace()).detach(4)
    kw = err.value.args[0]
    assert kw["rc"] == 255 and kw["stderr"] == "Error: boom" and "veth0" in kw["msg"]


def test_detach_nothing_attached_is_unchanged(attached_generic):
    attached_generic["ids"] = {}
    mod = FakeModule()
    assert xdp_prog.XdpProg(mod, SimpleNamespace()).detach(4)["changed"] is False
    assert mod.calls == []


def test_in_bpffs_takes_the_innermost_mount(tmp_path):
    mounts = tmp_path / "mounts"
    mounts.write_text("sysfs /sys sysfs rw 0 0\nbpffs /sys/fs/bpf bpf rw 0 0\n"
                      "tmpfs /run tmpfs rw 0 0\nnone /run/xdplab/bpffs bpf rw 0 0\n"
                      "tmpfs /run/xdplab/bpffs/over tmpfs rw 0 0\n")
    assert _xdp.in_bpffs("/sys/fs/bpf/xdplab", str(mounts))
    assert _xdp.in_bpffs("/run/xdplab/bpffs/saved", str(mounts))
    assert not _xdp.in_bpffs("/run/xdplab/bpffs/over/x", str(mounts))
    assert not _xdp.in_bpffs("/sys/fs/bpfx", str(mounts))
    assert not _xdp.in_bpffs("/tmp/x", str(mounts))
