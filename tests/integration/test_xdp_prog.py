# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Real XDP: files/xdp compiled with clang, attached with the xdp_prog module inside namespaces this
test creates (h1<pid>...), packets sent with AF_PACKET, counters read through _bpf."""

from __future__ import annotations

import atexit
import glob
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.xdp import _bpf
from ansible_collections.xdplab.testbed.plugins.module_utils.xdp import _program_objects as _xdp

pytestmark = pytest.mark.root

ROOT = Path(__file__).resolve().parents[2]
COLLECTIONS = ROOT / ".collections"
MODULE = ROOT / "plugins" / "modules" / "xdp_prog.py"
SRC = ROOT / "files" / "xdp"
PROGRAMS = ["xdp_drop", "xdp_pass", "xdp_tx", "xdp_redirect", "xdp_flow", "tc_drop"]
_seq = itertools.count()

if os.geteuid() != 0:  # pragma: no cover
    pytest.fail("tests/integration/test_xdp_prog.py needs root (namespaces, XDP)", pytrace=False)

# Runs inside a namespace: sends frames on one interface (AF_PACKET), optionally listens on another
# for frames carrying the marker, prints JSON {"sent": n, "seen": [[dst_mac, src_mac], ...]}.
SENDER = r"""
import json, socket, struct, sys, time
spec = json.loads(sys.argv[1])
marker = spec["marker"].encode()

def mac(iface):
    with open(f"/sys/class/net/{iface}/address") as f:
        return bytes.fromhex(f.read().strip().replace(":", ""))

def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b)//2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF

def frame(f):
    l4 = struct.pack("!HHHH", f["sport"], f["dport"], 8 + len(marker), 0) + marker
    proto = {"udp": 17, "tcp": 6}[f.get("proto", "udp")]
    if proto == 6:
        l4 = struct.pack("!HHIIBBHHH", f["sport"], f["dport"], 1, 0, 0x50, 0x02, 1024, 0, 0) + marker
    if ":" in f["dst"]:
        l3 = struct.pack("!IHBB", 0x60000000, len(l4), proto, 64)
        l3 += socket.inet_pton(socket.AF_INET6, f["src"]) + socket.inet_pton(socket.AF_INET6, f["dst"])
        etype = 0x86DD
    else:
        h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), 1, 0, 64, proto, 0,
                        socket.inet_aton(f["src"]), socket.inet_aton(f["dst"]))
        l3 = h[:10] + struct.pack("!H", csum(h)) + h[12:]
        etype = 0x0800
    tags = b"".join(struct.pack("!HH", 0x8100, v) for v in f.get("vlans", []))
    return f["dst_mac"] + f["src_mac"] + tags + struct.pack("!H", etype) + l3 + l4

tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
tx.bind((spec["iface"], 0))
rx = None
if spec.get("sniff"):
    rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    rx.bind((spec["sniff"], 0))
    rx.settimeout(0.05)
sent = 0
for f in spec["frames"]:
    f["src_mac"] = mac(spec["iface"])
    f["dst_mac"] = bytes.fromhex(f["dst_mac"].replace(":", "")) if "dst_mac" in f else mac(spec["peer"])
    data = frame(f)
    for _ in range(f.get("count", 1)):
        tx.send(data)
        sent += 1
seen = []
end = time.time() + float(spec.get("wait", 0.5))
while rx is not None and time.time() < end:
    try:
        data, addr = rx.recvfrom(4096)
    except socket.timeout:
        continue
    if addr[2] == socket.PACKET_OUTGOING or marker not in data:
        continue
    seen.append([data[0:6].hex(":"), data[6:12].hex(":")])
if rx is None:
    time.sleep(float(spec.get("wait", 0.3)))
print(json.dumps({"sent": sent, "seen": seen}))
"""


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, check=check)


@pytest.fixture(scope="session")
def objs(tmp_path_factory) -> Path:
    """Every files/xdp/*.bpf.c compiled with the real clang, through the role's Makefile."""
    out = tmp_path_factory.mktemp("h1-xdp-build")
    r = sh("make", "-s", "-C", str(SRC), f"OUT={out}", check=False)
    assert r.returncode == 0, r.stderr
    return out


class Netns:
    """A namespace with veth pairs h1a<->h1b (and h1c<->h1d), IPv6 off so the kernel stays quiet."""

    def __init__(self, pairs: int = 1) -> None:
        self.name = f"h1{os.getpid()}-{next(_seq)}"
        sh("ip", "netns", "add", self.name)
        self.exec("sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
        for a, b in (("h1a", "h1b"), ("h1c", "h1d"))[:pairs]:
            sh("ip", "-n", self.name, "link", "add", a, "type", "veth", "peer", "name", b)
            sh("ip", "-n", self.name, "link", "set", a, "up")
            sh("ip", "-n", self.name, "link", "set", b, "up")

    def exec(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
        return sh("ip", "netns", "exec", self.name, *argv, check=check)

    def xdp_prog(self, check: bool = False, diff: bool = False, **args) -> dict:
        return run_module(["ip", "netns", "exec", self.name], args, check, diff)

    def send(self, iface: str, peer: str, frames: list[dict], sniff: str | None = None) -> dict:
        spec = {"iface": iface, "peer": peer, "frames": frames, "sniff": sniff, "marker": f"h1mark{os.getpid()}"}
        r = self.exec(sys.executable, "-c", SENDER, json.dumps(spec))
        return json.loads(r.stdout)

    def attachment(self, iface: str) -> dict:
        code = ("import json,sys; sys.path.insert(0, sys.argv[1]);"
                "from ansible_collections.xdplab.testbed.plugins.module_utils.xdp import _bpf;"
                "a = _bpf.xdp_attachment(sys.argv[2]); print(json.dumps(a.prog_ids))")
        return json.loads(self.exec(sys.executable, "-c", code, str(COLLECTIONS), iface).stdout)

    def delete(self) -> None:
        sh("ip", "netns", "del", self.name, check=False)


# The module records what it attaches in a ledger; these tests keep theirs out of the host's.
LEDGER = tempfile.mkdtemp(prefix="xdplab-test-ledger-")
atexit.register(shutil.rmtree, LEDGER, ignore_errors=True)
# The module's private bpffs mount points (tempfile, so $TMPDIR) go here, where only these tests look:
# runs of the module by the other pytest-xdist worker's tests come and go in /tmp meanwhile.
MODULE_TMP = tempfile.mkdtemp(prefix="xdplab-test-tmp-")
atexit.register(shutil.rmtree, MODULE_TMP, ignore_errors=True)


def run_module(prefix: list[str], args: dict, check: bool = False, diff: bool = False) -> dict:
    args = {"ledger_dir": LEDGER, **args}
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="h1-args-", delete=False) as f:
        json.dump({"ANSIBLE_MODULE_ARGS": {**args, "_ansible_check_mode": check, "_ansible_diff": diff}}, f)
    try:
        env = {**os.environ, "PYTHONPATH": str(COLLECTIONS), "TMPDIR": MODULE_TMP}
        r = subprocess.run([*prefix, sys.executable, str(MODULE), f.name], capture_output=True, text=True, env=env,
                           check=False)
    finally:
        os.unlink(f.name)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    assert lines, f"no JSON from the module: rc={r.returncode} stdout={r.stdout!r} stderr={r.stderr!r}"
    return json.loads(lines[-1])


@pytest.fixture
def ns():
    n = Netns(pairs=1)
    yield n
    n.delete()


@pytest.fixture
def ns2():
    n = Netns(pairs=2)
    yield n
    n.delete()


def stats(prog_id: int) -> dict[str, int]:
    return {k: v["packets"] for k, v in _bpf.read_stats(prog_id=prog_id).items()}


def leftovers() -> set[str]:
    return set(glob.glob(os.path.join(MODULE_TMP, "xdplab-bpffs-*")))


UDP4 = {"src": "198.18.0.1", "dst": "198.18.0.2", "sport": 4000, "dport": 9}


# ---- build -------------------------------------------------------------------------------------

def test_every_source_compiles_to_one_program_with_the_stats_map(objs):
    for name in PROGRAMS:
        path = objs / f"{name}.o"
        progs = _xdp.elf_programs(path.read_bytes(), str(path))
        assert [p.name for p in progs] == [name]
        assert progs[0].prog_type == ("sched_cls" if name.startswith("tc_") else "xdp")
        # map names are in the ELF symbol table
        assert b"xdplab_stats\0" in path.read_bytes()


def test_make_rebuilds_only_when_sources_change(objs, tmp_path):
    out = tmp_path / "o"
    assert sh("make", "-s", "-C", str(SRC), f"OUT={out}").returncode == 0
    # nothing to do now: `make -q` exits 0 (this is what the role's changed detection relies on)
    assert sh("make", "-q", "-C", str(SRC), f"OUT={out}", check=False).returncode == 0
    os.utime(out / "xdp_drop.o", (1, 1))  # older than its source: must be rebuilt
    assert sh("make", "-q", "-C", str(SRC), f"OUT={out}", check=False).returncode == 1


# ---- attach, idempotence, counters, detach ------------------------------------------------------

@pytest.mark.parametrize("mode", ["native", "generic"])
@pytest.mark.parametrize("program,action", [("xdp_drop", "drop"), ("xdp_pass", "pass"), ("xdp_tx", "tx")])
def test_attach_count_detach(objs, ns, program, action, mode):
    obj = str(objs / f"{program}.o")
    if action == "tx":  # a frame sent back into a veth is only received if its peer runs XDP (NAPI on)
        assert ns.xdp_prog(interface="h1a", object=str(objs / "xdp_pass.o"))["changed"] is True
    first = ns.xdp_prog(interface="h1b", object=obj, mode=mode)
    assert first.get("failed") is None, first
    assert first["changed"] is True
    assert (first["name"], first["mode"]) == (program, mode)
    assert len(first["tag"]) == 16 and first["maps"]["xdplab_stats"] > 0
    assert ns.attachment("h1b") == {mode: first["prog_id"]}
    # the tag is the kernel's, and the one bpftool reports
    assert _bpf.prog_info(first["prog_id"]).tag == first["tag"]

    again = ns.xdp_prog(interface="h1b", object=obj, mode=mode)
    assert again["changed"] is False
    assert again["prog_id"] == first["prog_id"]

    before = stats(first["prog_id"])
    res = ns.send("h1a", "h1b", [{**UDP4, "count": 7}], sniff="h1a")
    after = stats(first["prog_id"])
    delta = {k: after[k] - before[k] for k in after}
    assert delta[action] == 7, delta
    assert sum(delta.values()) == 7, delta
    if action == "tx":  # bounced back to h1a with the MACs swapped
        mac_a = ns.exec("cat", "/sys/class/net/h1a/address").stdout.strip()
        mac_b = ns.exec("cat", "/sys/class/net/h1b/address").stdout.strip()
        assert res["seen"].count([mac_a, mac_b]) == 7, res
    else:
        assert res["seen"] == []

    gone = ns.xdp_prog(interface="h1b", state="detached", diff=True)
    assert gone["changed"] is True
    assert gone["diff"]["before"]["prog_id"] == first["prog_id"]
    assert ns.attachment("h1b") == {}
    assert ns.xdp_prog(interface="h1b", state="detached")["changed"] is False


def test_replace_program_and_switch_mode(objs, ns):
    drop = ns.xdp_prog(interface="h1b", object=str(objs / "xdp_drop.o"), mode="native")
    passed = ns.xdp_prog(interface="h1b", object=str(objs / "xdp_pass.o"), mode="native", diff=True)
    assert passed["changed"] is True and passed["prog_id"] != drop["prog_id"]
    assert passed["diff"]["before"]["tag"] == drop["tag"]
    assert passed["diff"]["after"]["tag"] == passed["tag"] != drop["tag"]
    generic = ns.xdp_prog(interface="h1b", object=str(objs / "xdp_pass.o"), mode="generic")
    assert generic["changed"] is True and generic["mode"] == "generic"
    assert ns.attachment("h1b") == {"generic": generic["prog_id"]}


def test_check_mode_reports_but_attaches_nothing(objs, ns):
    before = leftovers()
    res = ns.xdp_prog(check=True, diff=True, interface="h1b", object=str(objs / "xdp_drop.o"))
    assert res.get("changed") is True, res  # a failed run says why (it failed once in a full CI run)
    assert res["tag"] and res["prog_id"] is None
    assert res["diff"]["before"] == {"attached": False}
    assert res["diff"]["after"]["name"] == "xdp_drop"
    assert ns.attachment("h1b") == {}
    real = ns.xdp_prog(interface="h1b", object=str(objs / "xdp_drop.o"))
    assert real["tag"] == res["tag"]
    assert ns.xdp_prog(check=True, interface="h1b", object=str(objs / "xdp_drop.o"))["changed"] is False
    assert ns.xdp_prog(check=True, interface="h1b", state="detached")["changed"] is True
    assert ns.attachment("h1b") == {"native": real["prog_id"]}
    assert leftovers() == before


def test_host_namespace_leaves_no_mount_or_pin(objs):
    """Outside `ip netns exec` the private bpffs is mounted in the host's mount namespace: it must go."""
    pid = os.getpid() % 100000
    a, b = f"h1{pid}x", f"h1{pid}y"
    sh("ip", "link", "add", a, "type", "veth", "peer", "name", b)
    try:
        sh("ip", "link", "set", a, "up")
        sh("ip", "link", "set", b, "up")
        res = run_module([], {"interface": b, "object": str(objs / "xdp_drop.o"), "mode": "generic"})
        assert res["changed"] is True and res["mode"] == "generic"
        assert "xdplab-bpffs" not in Path("/proc/self/mountinfo").read_text()
        assert not leftovers()
        assert run_module([], {"interface": b, "state": "detached"})["changed"] is True
    finally:
        sh("ip", "link", "del", a, check=False)


# ---- redirect and flow table -------------------------------------------------------------------

def test_redirect_moves_packets_to_the_other_interface(objs, ns2):
    # h1a -> h1b (xdp_redirect) -> h1c ~> h1d (xdp_pass: a veth target needs XDP on its peer)
    sink = ns2.xdp_prog(interface="h1d", object=str(objs / "xdp_pass.o"))
    entries = [{"map": "xdplab_redirect", "key": 0, "value": "h1c"}]
    red = ns2.xdp_prog(interface="h1b", object=str(objs / "xdp_redirect.o"), map_entries=entries)
    assert red["changed"] is True, red
    assert red["map_entries_changed"] == [{"map": "xdplab_redirect", "key": "00000000"}]
    assert set(red["maps"]) == {"xdplab_stats", "xdplab_redirect"}
    again = ns2.xdp_prog(interface="h1b", object=str(objs / "xdp_redirect.o"), map_entries=entries)
    assert again["changed"] is False and again["map_entries_changed"] == []

    s0, d0 = stats(red["prog_id"]), stats(sink["prog_id"])
    res = ns2.send("h1a", "h1b", [{**UDP4, "count": 9}], sniff="h1d")
    s1, d1 = stats(red["prog_id"]), stats(sink["prog_id"])
    assert s1["redirect"] - s0["redirect"] == 9
    assert d1["pass"] - d0["pass"] == 9
    assert len(res["seen"]) == 9

    # pointing the devmap elsewhere is a change of the entry only (same program)
    moved = ns2.xdp_prog(interface="h1b", object=str(objs / "xdp_redirect.o"),
                         map_entries=[{"map": "xdplab_redirect", "key": 0, "value": "h1a"}])
    assert moved["changed"] is True and moved["prog_id"] == red["prog_id"]


def test_flow_table_hits_misses_and_entry_counters(objs, ns):
    flows = [
        {"map": "xdplab_flows", "key": {**UDP4, "proto": "udp"}, "value": "drop"},
        {"map": "xdplab_flows", "key": {"src": "198.18.0.1", "dst": "198.18.0.2", "proto": "tcp",
                                        "sport": 5000, "dport": 80}, "value": "tx"},
        {"map": "xdplab_flows", "key": {"src": "2001:db8::1", "dst": "2001:db8::2", "proto": "udp",
                                        "sport": 7, "dport": 7}, "value": {"action": "drop"}},
        {"map": "xdplab_flow_cfg", "key": 0, "value": "pass"},
    ]
    res = ns.xdp_prog(interface="h1b", object=str(objs / "xdp_flow.o"), mode="generic", map_entries=flows)
    assert res["changed"] is True and len(res["map_entries_changed"]) == 4, res
    again = ns.xdp_prog(interface="h1b", object=str(objs / "xdp_flow.o"), mode="generic", map_entries=flows)
    assert again["changed"] is False

    before = stats(res["prog_id"])
    ns.send("h1a", "h1b", [
        {**UDP4, "count": 3},                                                   # hit: drop
        {"src": "198.18.0.1", "dst": "198.18.0.2", "proto": "tcp", "sport": 5000, "dport": 80, "count": 2},  # tx
        {"src": "2001:db8::1", "dst": "2001:db8::2", "sport": 7, "dport": 7, "vlans": [100], "count": 5},  # v6 in VLAN
        {**UDP4, "dport": 10, "count": 4},                                      # miss: pass
    ])
    after = stats(res["prog_id"])
    delta = {k: after[k] - before[k] for k in after}
    assert delta == {"aborted": 0, "drop": 8, "pass": 4, "tx": 2, "redirect": 0}

    # per-entry counters (atomic, in the hash value) and the per-CPU hit/miss counters
    fd = _bpf.map_fd_by_id(res["maps"]["xdplab_flows"])
    try:
        key = _xdp.encode_flow_key({**UDP4, "proto": "udp"})
        val = _xdp.decode_flow_counters(_bpf.lookup(fd, key, _xdp.FLOW_VAL.size))
        assert (val["action"], val["packets"]) == (1, 3)
        assert len(list(_bpf.keys(fd, _xdp.FLOW_KEY.size))) == 3
    finally:
        os.close(fd)
    fd = _bpf.map_fd_by_id(res["maps"]["xdplab_flow_cnt"])
    try:
        hits, misses = (_bpf.sum_counters(_bpf.lookup_percpu(fd, i.to_bytes(4, "little"), 16)) for i in (0, 1))
        assert (hits["packets"], misses["packets"]) == (10, 4)
    finally:
        os.close(fd)

    # the miss action is configuration too: switch it to drop
    cfg = ns.xdp_prog(interface="h1b", object=str(objs / "xdp_flow.o"), mode="generic",
                      map_entries=[{"map": "xdplab_flow_cfg", "key": 0, "value": "drop"}])
    assert cfg["changed"] is True
    before = stats(res["prog_id"])
    ns.send("h1a", "h1b", [{**UDP4, "dport": 11, "count": 2}])
    assert stats(res["prog_id"])["drop"] - before["drop"] == 2


# ---- tc_drop and the tc side of _bpf -----------------------------------------------------------

def test_tc_drop_counts_on_ingress(objs, ns):
    ns.exec("tc", "qdisc", "add", "dev", "h1b", "clsact")
    ns.exec("tc", "filter", "add", "dev", "h1b", "ingress", "bpf", "direct-action",
            "obj", str(objs / "tc_drop.o"), "sec", "tc")
    code = ("import json,sys; sys.path.insert(0, sys.argv[1]);"
            "from ansible_collections.xdplab.testbed.plugins.module_utils.xdp import _bpf;"
            "print(json.dumps([_bpf.tc_ingress_prog_ids('h1b'), _bpf.read_tc_stats('h1b')]))")
    ids, s0 = json.loads(ns.exec(sys.executable, "-c", code, str(COLLECTIONS)).stdout)
    assert len(ids) == 1 and _bpf.prog_info(ids[0]).name == "tc_drop"
    ns.send("h1a", "h1b", [{**UDP4, "count": 6}])
    _ids, s1 = json.loads(ns.exec(sys.executable, "-c", code, str(COLLECTIONS)).stdout)
    assert s1["drop"]["packets"] - s0["drop"]["packets"] == 6
    assert s1["drop"]["bytes"] > s0["drop"]["bytes"]


# ---- bad input ---------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def not_bpf(tmp_path_factory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("h1-bad")
    text = d / "notes.o"
    text.write_text("not an object\n")
    return {"text": str(text), "x86": shutil.which("true") or "/bin/true"}


@pytest.mark.parametrize("case", [
    "interface", "mode", "missing", "text", "x86", "program", "section", "tc", "map", "map_iface", "flow_key",
])
def test_bad_input_names_the_value_and_leaves_nothing(objs, ns, not_bpf, case):
    good = {"interface": "h1b", "object": str(objs / "xdp_drop.o")}
    args, expect = {
        "interface": ({**good, "interface": "h1nope"}, "h1nope"),
        "mode": ({**good, "mode": "turbo"}, "turbo"),
        "missing": ({**good, "object": "/nonexistent/h1.o"}, "/nonexistent/h1.o"),
        "text": ({**good, "object": not_bpf["text"]}, not_bpf["text"]),
        "x86": ({**good, "object": not_bpf["x86"]}, not_bpf["x86"]),
        "program": ({**good, "program": "xdp_h1nope"}, "xdp_h1nope"),
        "section": ({**good, "section": "xdp.h1nope"}, "xdp.h1nope"),
        "tc": ({**good, "object": str(objs / "tc_drop.o")}, "tc_drop"),
        "map": ({**good, "map_entries": [{"map": "h1_nomap", "key": 0, "value": 1}]}, "h1_nomap"),
        "map_iface": ({"interface": "h1b", "object": str(objs / "xdp_redirect.o"),
                       "map_entries": [{"map": "xdplab_redirect", "key": 0, "value": "h1gone"}]}, "h1gone"),
        "flow_key": ({"interface": "h1b", "object": str(objs / "xdp_flow.o"),
                      "map_entries": [{"map": "xdplab_flows", "key": {"src": "198.18.0.999", "dst": "198.18.0.2",
                                                                      "proto": "udp"}, "value": "drop"}]},
                     "198.18.0.999"),
    }[case]
    before = leftovers()
    res = ns.xdp_prog(**args)
    assert res.get("failed") is True, res
    assert expect in res["msg"], res["msg"]
    assert ns.attachment("h1b") == {}
    assert leftovers() == before


def test_via_ansible(objs, ns):
    """The module through ansible itself (collection resolved by ansible.cfg), in the namespace."""
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_DEPRECATION_WARNINGS": "False",
           "ANSIBLE_STDOUT_CALLBACK": "json", "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1"}
    argv = ["ip", "netns", "exec", ns.name, str(ROOT / ".venv" / "bin" / "ansible"), "localhost",
            "-m", "xdplab.testbed.xdp_prog", "-a",
            f"interface=h1b object={objs / 'xdp_pass.o'} mode=generic ledger_dir={LEDGER}"]
    r = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    out, _end = json.JSONDecoder().raw_decode(r.stdout[r.stdout.index("{"):])  # after profile_tasks' banner
    res = out["plays"][0]["tasks"][0]["hosts"]["localhost"]
    assert res["changed"] is True and res["name"] == "xdp_pass"
    assert ns.attachment("h1b") == {"generic": res["prog_id"]}


LEDGER_MODULE = ROOT / "plugins" / "modules" / "ledger.py"


@pytest.fixture
def bpffs(tmp_path):
    """A bpffs outside /sys (visible inside `ip netns exec`, which remounts /sys), for the pins."""
    path = tmp_path / "bpffs"
    path.mkdir()
    sh("mount", "-t", "bpf", "xdplab-test-bpffs", str(path))
    yield path
    sh("umount", str(path), check=False)


def foreign_pass(ns: Netns, objs: Path) -> int:
    """xdp_pass attached with iproute2 behind the collection's back: someone else's program."""
    ns.exec("ip", "link", "set", "dev", "h1b", "xdpgeneric", "obj", str(objs / "xdp_pass.o"), "sec", "xdp")
    ids = ns.attachment("h1b")
    assert list(ids) == ["generic"]
    return ids["generic"]


def test_a_program_found_in_place_is_kept_and_attached_again(ns, objs, bpffs, tmp_path):
    ledger = str(tmp_path / "ledger")
    theirs = foreign_pass(ns, objs)
    args = {"interface": "h1b", "object": str(objs / "xdp_drop.o"), "mode": "generic", "ledger_dir": ledger,
            "pin_dir": str(bpffs / "saved")}
    ours = ns.xdp_prog(**args)
    assert ours["changed"] and ours["name"] == "xdp_drop" and ours["prog_id"] != theirs, ours
    entry = json.loads(next(Path(ledger).glob("xdp-*.json")).read_text())
    assert [(p["prog_id"], p["name"], p["mode"]) for p in entry["previous"]] == [(theirs, "xdp_pass", "generic")]
    assert os.path.exists(entry["previous"][0]["pin"])

    back = ns.xdp_prog(interface="h1b", state="detached", only_ours=True, ledger_dir=ledger)
    assert back["changed"] and back["restored"] == ["xdp_pass"], back
    assert ns.attachment("h1b") == {"generic": theirs}, "the program found in place was not put back as it was"
    assert list(Path(ledger).glob("*.json")) == [] and not os.listdir(bpffs / "saved")

    # Attached again, then the run is killed: the ledger's cleanup puts theirs back too.
    ns.xdp_prog(**args)
    cleaned = _run_ledger(ns, ledger)
    assert not cleaned.get("failed"), cleaned
    assert ns.attachment("h1b") == {"generic": theirs}
    assert not os.listdir(bpffs / "saved")


def _run_ledger(ns: Netns, ledger: str) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"ANSIBLE_MODULE_ARGS": {"state": "cleaned", "dir": ledger}}, f)
    try:
        env = {**os.environ, "PYTHONPATH": str(COLLECTIONS)}
        r = subprocess.run(["ip", "netns", "exec", ns.name, sys.executable, str(LEDGER_MODULE), f.name],
                           capture_output=True, text=True, env=env, check=False)
    finally:
        os.unlink(f.name)
    return json.loads([ln for ln in r.stdout.splitlines() if ln.startswith("{")][-1])


def test_a_program_found_in_place_is_never_replaced_when_it_cannot_be_kept(ns, objs, tmp_path):
    theirs = foreign_pass(ns, objs)
    out = ns.xdp_prog(interface="h1b", object=str(objs / "xdp_drop.o"), mode="generic",
                      ledger_dir=str(tmp_path / "ledger"), pin_dir=str(tmp_path / "not-a-bpffs"))
    assert out.get("failed") and "did not attach and could not keep" in out["msg"], out
    assert ns.attachment("h1b") == {"generic": theirs}
    assert not (tmp_path / "ledger").exists() or not list((tmp_path / "ledger").glob("*.json"))


def test_cleanup_of_interfaces_leaves_someone_elses_program(ns, objs, tmp_path):
    theirs = foreign_pass(ns, objs)
    out = ns.xdp_prog(interface="h1b", state="detached", only_ours=True, ledger_dir=str(tmp_path / "ledger"))
    assert out["changed"] is False and ns.attachment("h1b") == {"generic": theirs}
