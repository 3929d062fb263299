# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""netns_topology and the testbed role against the real kernel: namespaces and veth pairs this test creates
(prefix h3t<pid>), read back with iproute2 and sysfs, traffic across them with real UDP sockets, and every
bad input checked to fail naming the value and to leave nothing behind (neither in /run/netns nor in the
root namespace)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import playbook_run
import pytest

pytestmark = pytest.mark.root

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MODULE = ROOT / "plugins" / "modules" / "netns_topology.py"
TAG = f"h3t{os.getpid() % 100000}"
_seq = itertools.count()

if os.geteuid() != 0:  # pragma: no cover
    pytest.fail("tests/integration/test_topology_live.py needs root (namespaces, veth)", pytrace=False)


# --------------------------------------------------------------------- helpers


def run_module(args: dict, check: bool = False, diff: bool = True) -> dict:
    """Run the module file as Ansible would (args file, JSON on stdout)."""
    payload = dict(args, _ansible_check_mode=check, _ansible_diff=diff)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump({"ANSIBLE_MODULE_ARGS": payload}, handle)
    try:
        env = dict(os.environ, PYTHONPATH=str(ROOT / ".collections"))
        proc = subprocess.run([sys.executable, str(MODULE), handle.name], capture_output=True, text=True,
                              env=env, timeout=120, check=False)
    finally:
        os.unlink(handle.name)
    try:
        out = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise AssertionError(f"module printed no JSON: rc={proc.returncode} {proc.stdout!r} {proc.stderr!r}") from None
    out["rc"] = proc.returncode
    return out


def ours_in_netns_list() -> list[str]:
    out = subprocess.run(["ip", "-j", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return sorted(n["name"] for n in json.loads(out or "[]") if n["name"].startswith(TAG))


def ours_in_root_links(ifnames: set[str]) -> list[str]:
    links = json.loads(subprocess.run(["ip", "-j", "link"], capture_output=True, text=True, check=True).stdout)
    return sorted(link["ifname"] for link in links if link["ifname"] in ifnames or link["ifname"].startswith(TAG))


def ip_json(ns: str, *args: str) -> list[dict]:
    out = subprocess.run(["ip", "-n", ns, "-j", *args], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def nsexec(ns: str, *argv: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", "netns", "exec", ns, *argv], capture_output=True, text=True, check=False, **kw)


@pytest.fixture
def names():
    """Unique namespace names for one test; everything of ours is removed afterwards, also on failure."""
    n = next(_seq)
    made = {k: f"{TAG}-{n}{k}" for k in ("gen", "dut", "sink")}
    yield made
    for ns in made.values():
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


def spec(names: dict, **link_over) -> dict:
    gen, dut, sink = names["gen"], names["dut"], names["sink"]
    first = {"name": "gen-dut", "mtu": 1500,
             "a": {"netns": gen, "ifname": "veth0", "address": ["198.18.0.1/24"]},
             "b": {"netns": dut, "ifname": "veth0", "address": ["198.18.0.2/24", "2001:db8:18::2/64"],
                   "mac": "02:00:5e:18:00:02"}}
    first.update(link_over)
    return {
        "namespaces": [gen, dut, sink],
        "links": [first,
                  {"name": "dut-sink", "mtu": 9000, "gro": True, "queues": 2,
                   "a": {"netns": dut, "ifname": "veth1", "address": ["198.18.1.1/24"]},
                   "b": {"netns": sink, "ifname": "veth0", "address": ["198.18.1.2/24"]}}],
        "sysctls": {dut: {"net.ipv4.ip_forward": 1}},
    }


UDP_ECHO = textwrap.dedent("""
    import socket, sys
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((sys.argv[1], 9999)); s.settimeout(5)
    print("ready", flush=True)
    data, peer = s.recvfrom(100)
    print(data.decode(), peer[0], flush=True)
""")
UDP_SEND = ("import socket, sys; "
            "socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'h3-ping', (sys.argv[1], 9999))")


def udp_across(src_ns: str, dst_ns: str, dst_ip: str) -> str:
    """Send one UDP datagram from src_ns to dst_ip in dst_ns with real sockets; returns what arrived."""
    with subprocess.Popen(["ip", "netns", "exec", dst_ns, sys.executable, "-c", UDP_ECHO, dst_ip],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as server:
        assert server.stdout.readline().strip() == "ready", server.stderr.read()
        sent = nsexec(src_ns, sys.executable, "-c", UDP_SEND, dst_ip)
        assert sent.returncode == 0, sent.stderr
        out, err = server.communicate(timeout=10)
    return out.strip() or err.strip()


# ----------------------------------------------------------------------- tests


def test_lifecycle_check_create_idempotent_drift_absent(names):
    args = spec(names)
    gen, dut, sink = names["gen"], names["dut"], names["sink"]

    dry = run_module(args, check=True)
    assert dry["rc"] == 0 and dry["changed"] is True, dry
    assert ours_in_netns_list() == [], "check mode created namespaces"
    assert "create_netns " + gen in dry["actions"]
    assert dry["diff"]["before"] == {} and set(dry["diff"]["after"]) == {gen, dut, sink}

    first = run_module(args)
    assert first["rc"] == 0 and first["changed"] is True, first
    assert ours_in_netns_list() == sorted([gen, dut, sink])

    # read back with iproute2/sysfs, independently of the module
    dut_links = {link["ifname"]: link for link in ip_json(dut, "addr")}
    assert set(dut_links) == {"lo", "veth0", "veth1"}
    assert "UP" in dut_links["lo"]["flags"]
    v0 = dut_links["veth0"]
    assert v0["address"] == "02:00:5e:18:00:02" and v0["mtu"] == 1500 and "UP" in v0["flags"]
    got = {f"{a['local']}/{a['prefixlen']}" for a in v0["addr_info"] if a.get("scope") != "link"}
    assert got == {"198.18.0.2/24", "2001:db8:18::2/64"}
    assert dut_links["veth1"]["mtu"] == 9000
    assert nsexec(dut, "cat", "/proc/sys/net/ipv4/ip_forward").stdout.strip() == "1"
    assert nsexec(gen, "cat", "/proc/sys/net/ipv4/ip_forward").stdout.strip() == "0"
    assert nsexec(sink, "ls", "/sys/class/net/veth0/queues").stdout.split() == ["rx-0", "rx-1", "tx-0", "tx-1"]
    gro = nsexec(sink, "ethtool", "-k", "veth0").stdout
    assert "generic-receive-offload: on" in gro
    assert "generic-receive-offload: off" in nsexec(gen, "ethtool", "-k", "veth0").stdout  # gro unset: untouched

    # the module's return agrees with the kernel and names the peers
    rv = first["namespaces"][dut]["links"]["veth0"]
    assert rv["ifindex"] == v0["ifindex"] and rv["mac"] == v0["address"]
    gen_v0 = ip_json(gen, "link", "show", "veth0")[0]
    assert rv["peer"] == {"netns": gen, "ifname": "veth0", "ifindex": gen_v0["ifindex"]}
    assert first["namespaces"][sink]["links"]["veth0"]["peer"]["netns"] == dut

    # real traffic across both links
    assert udp_across(gen, dut, "198.18.0.2") == "h3-ping 198.18.0.1"
    assert udp_across(sink, dut, "198.18.1.1") == "h3-ping 198.18.1.2"

    again = run_module(args)
    assert again["rc"] == 0 and again["changed"] is False and again["actions"] == [], again
    assert again["diff"]["before"] == again["diff"]["after"]
    assert again["namespaces"][dut]["links"]["veth0"]["ifindex"] == v0["ifindex"], "pair was recreated"

    # drift: only what differs is changed
    subprocess.run(["ip", "-n", dut, "link", "set", "veth0", "mtu", "4000"], check=True)
    subprocess.run(["ip", "-n", dut, "addr", "add", "198.18.5.5/24", "dev", "veth0"], check=True)
    subprocess.run(["ip", "-n", gen, "link", "set", "lo", "down"], check=True)
    fixed = run_module(args)
    assert fixed["changed"] is True
    assert sorted(fixed["actions"]) == sorted([f"lo_up {gen}", f"set_mtu {dut}/veth0 1500",
                                               f"del_addr {dut}/veth0 198.18.5.5/24"])
    assert fixed["diff"]["before"][dut]["links"]["veth0"]["mtu"] == 4000
    assert fixed["diff"]["after"][dut]["links"]["veth0"]["mtu"] == 1500
    assert ip_json(dut, "link", "show", "veth0")[0]["mtu"] == 1500
    assert run_module(args)["changed"] is False

    # absent: check mode removes nothing; then everything goes; then nothing to do
    absent = dict(args, state="absent")
    dry_absent = run_module(absent, check=True)
    assert dry_absent["changed"] is True and ours_in_netns_list() == sorted([gen, dut, sink])
    gone = run_module(absent)
    assert gone["rc"] == 0 and gone["changed"] is True, gone
    assert ours_in_netns_list() == []
    assert not any(os.path.lexists(f"/run/netns/{ns}") for ns in (gen, dut, sink))
    assert run_module(absent)["changed"] is False


def test_veth_ends_never_appear_in_the_root_namespace(names):
    """Unique interface names: if an end were created in the root namespace and moved, or left there on
    failure, the root namespace would show it."""
    gen, dut = names["gen"], names["dut"]
    a_if, b_if = f"{TAG}a", f"{TAG}b"
    args = {"namespaces": [gen, dut],
            "links": [{"a": {"netns": gen, "ifname": a_if}, "b": {"netns": dut, "ifname": b_if}}]}
    assert run_module(args)["changed"] is True
    assert ours_in_root_links({a_if, b_if}) == []
    assert [link["ifname"] for link in ip_json(gen, "link") if link["ifname"] != "lo"] == [a_if]
    run_module(dict(args, state="absent"))
    assert ours_in_netns_list() == []


def test_absent_removes_exactly_what_it_was_given(names):
    args = spec(names)
    assert run_module(args)["rc"] == 0
    only_sink = run_module({"namespaces": [names["sink"]], "state": "absent"})
    assert only_sink["changed"] is True
    assert ours_in_netns_list() == sorted([names["gen"], names["dut"]])
    # the dut end of dut-sink went with the sink namespace; gen-dut stays
    assert sorted(link["ifname"] for link in ip_json(names["dut"], "link")) == ["lo", "veth0"]
    # a link alone: its namespaces are not listed, so they stay; only the pair goes
    link_only = {"links": args["links"][:1], "state": "absent"}
    gone = run_module(link_only)
    assert gone["rc"] == 0 and gone["actions"] == [f"delete_veth {names['gen']}/veth0"], gone
    assert ours_in_netns_list() == sorted([names["gen"], names["dut"]])
    assert [link["ifname"] for link in ip_json(names["dut"], "link")] == ["lo"]
    assert [link["ifname"] for link in ip_json(names["gen"], "link")] == ["lo"]
    assert run_module(link_only)["changed"] is False


def test_wrong_peer_is_repaired(names):
    args = spec(names)
    gen, dut, sink = names["gen"], names["dut"], names["sink"]
    assert run_module(args)["rc"] == 0
    # replace dut/veth0 by a veth whose peer sits in sink (a miswired bed)
    subprocess.run(["ip", "-n", dut, "link", "del", "veth0"], check=True)
    subprocess.run(["ip", "-n", dut, "link", "add", "veth0", "type", "veth", "peer", "name", "stray", "netns", sink],
                   check=True)
    repaired = run_module(args)
    assert repaired["rc"] == 0 and repaired["changed"] is True, repaired
    assert f"delete_link {dut}/veth0" in repaired["actions"]
    assert repaired["namespaces"][dut]["links"]["veth0"]["peer"]["netns"] == gen
    assert "stray" not in {link["ifname"] for link in ip_json(sink, "link")}
    assert udp_across(gen, dut, "198.18.0.2") == "h3-ping 198.18.0.1"
    assert run_module(args)["changed"] is False


def _bad(names: dict, case: str) -> tuple[dict, str]:
    args = spec(names)
    first = args["links"][0]
    if case == "ifname_too_long":
        first["a"]["ifname"] = "x" * 16
        return args, "'" + "x" * 16 + "'"
    if case == "ifname_slash":
        first["b"]["ifname"] = "veth/0"
        return args, "'veth/0'"
    if case == "ifname_space":
        first["b"]["ifname"] = "veth 0"
        return args, "'veth 0'"
    if case == "netns_too_long":
        args["namespaces"].append(f"{TAG}-" + "n" * 40)
        return args, "n" * 40
    for bad, needle in (("netns_slash", "a/b"), ("netns_dotdot", "a..b"), ("netns_dash", "-x")):
        if case == bad:
            args["namespaces"].append(needle)
            return args, repr(needle)
    if case == "undefined_host":
        first["b"]["netns"] = names["dut"] + "t"
        return args, f"link gen-dut: end b names undefined host/namespace '{names['dut']}t'"
    if case == "bad_cidr":
        first["a"]["address"] = ["198.18.0.1/24", "198.18.0.300/24"]
        return args, "'198.18.0.300/24'"
    if case == "duplicate_ifname":
        args["links"][1]["a"]["ifname"] = "veth0"
        return args, f"interface 'veth0' in namespace '{names['dut']}'"
    if case == "mtu_low":
        first["mtu"] = 67
        return args, "mtu 67"
    if case == "mtu_high":
        first["mtu"] = 65536
        return args, "mtu 65536"
    if case == "sysctl_not_net":
        args["sysctls"] = {names["dut"]: {"kernel.sysrq": 1}}
        return args, "'kernel.sysrq'"
    raise AssertionError(case)


BAD_CASES = ["ifname_too_long", "ifname_slash", "ifname_space", "netns_too_long", "netns_slash", "netns_dotdot",
             "netns_dash", "undefined_host", "bad_cidr", "duplicate_ifname", "mtu_low", "mtu_high", "sysctl_not_net"]


@pytest.mark.parametrize("case", BAD_CASES)
def test_bad_input_fails_naming_the_value_and_creates_nothing(names, case):
    args, needle = _bad(names, case)
    before_root = ours_in_root_links({"veth0", "veth1"})
    out = run_module(args)
    assert out["rc"] != 0 and out.get("failed") is True, out
    assert needle in out["msg"], out["msg"]
    assert ours_in_netns_list() == [], f"{case} left namespaces behind"
    assert ours_in_root_links({"veth0", "veth1"}) == before_root


def test_kernel_failure_halfway_rolls_back(names):
    """A sysctl key that passes validation but does not exist fails after namespaces and pairs were made:
    the error names it and every namespace and veth this run created is gone."""
    args = spec(names)
    args["sysctls"] = {names["dut"]: {"net.ipv4.ip_forward": 1, "net.ipv4.h3_no_such_knob": 1}}
    out = run_module(args)
    assert out["rc"] != 0 and "net.ipv4.h3_no_such_knob" in out["msg"], out
    assert "rolled back" in out["msg"]
    assert ours_in_netns_list() == []


def test_rollback_keeps_what_existed_before(names):
    """Namespaces that existed before the failing run are kept; only the run's own creations go."""
    gen, dut = names["gen"], names["dut"]
    subprocess.run(["ip", "netns", "add", gen], check=True)
    args = {"namespaces": [gen, dut],
            "links": [{"a": {"netns": gen, "ifname": "veth0"}, "b": {"netns": dut, "ifname": "veth0"}}],
            "sysctls": {gen: {"net.ipv4.h3_no_such_knob": 1}}}
    out = run_module(args)
    assert out["rc"] != 0 and "h3_no_such_knob" in out["msg"]
    assert ours_in_netns_list() == [gen]
    assert [link["ifname"] for link in ip_json(gen, "link")] == ["lo"]


# ------------------------------------------------------------------- the role


def run_playbook(play: str, *extra: str) -> subprocess.CompletedProcess:
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False, dir="/tmp") as handle:
        handle.write(play)
    try:
        env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
                   ANSIBLE_CALLBACKS_ENABLED="ansible.posix.json", ANSIBLE_NOCOLOR="1")
        argv = [str(BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                "-e", f"ansible_python_interpreter={sys.executable}", handle.name, *extra]
        return playbook_run.run(argv,
                                capture_output=True, text=True, cwd=ROOT, env=env, timeout=300, check=False)
    finally:
        os.unlink(handle.name)


def task_results(proc: subprocess.CompletedProcess) -> dict[str, dict]:
    data = json.loads(proc.stdout)
    return {t["task"]["name"]: t["hosts"]["localhost"] for t in data["plays"][0]["tasks"]}


def ledger_entries(prefix: str, ledger: str = "/var/lib/xdplab/ledger") -> list[str]:
    """Ledger files naming a namespace of this prefix (the role's default ledger)."""
    out = []
    for path in sorted(Path(ledger).glob("netns-*.json")) if Path(ledger).is_dir() else []:
        if json.loads(path.read_text()).get("key", {}).get("name", "").startswith(prefix):
            out.append(path.name)
    return out


ROLE_PLAY = """
- name: Testbed role under test
  hosts: localhost
  gather_facts: false
  vars:
    testbed_netns_prefix: "{prefix}"
    testbed_bpffs_enabled: true
    testbed_bpffs_path: /run/xdplab/{prefix}bpffs
  roles:
    - role: xdplab.testbed.testbed
  post_tasks:
    - name: Published
      ansible.builtin.debug:
        var: testbed_by_host
"""


def test_role_build_idempotent_teardown():
    prefix = f"{TAG}r{next(_seq)}-"
    play = ROLE_PLAY.format(prefix=prefix)
    expected = sorted(prefix + h for h in ("gen", "dut", "sink"))
    try:
        dry = run_playbook(play, "--check")
        assert dry.returncode == 0, dry.stdout[-3000:] + dry.stderr
        assert [ns for ns in ours_in_netns_list() if ns.startswith(prefix)] == []

        first = run_playbook(play)
        assert first.returncode == 0, first.stdout[-3000:] + first.stderr
        stats = json.loads(first.stdout)["stats"]["localhost"]
        assert stats["changed"] >= 2 and stats["failures"] == 0
        assert [ns for ns in ours_in_netns_list() if ns.startswith(prefix)] == expected
        published = task_results(first)["Published"]["testbed_by_host"]
        dut_v0 = ip_json(prefix + "dut", "link", "show", "veth0")[0]
        assert published["dut"]["netns"] == prefix + "dut"
        assert published["dut"]["links"]["veth0"]["mac"] == dut_v0["address"]
        assert published["dut"]["links"]["veth0"]["ifindex"] == dut_v0["ifindex"]
        dut_v1 = ip_json(prefix + "dut", "link", "show", "veth1")[0]
        assert published["sink"]["links"]["veth0"]["peer"] == {
            "netns": prefix + "dut", "ifname": "veth1", "ifindex": dut_v1["ifindex"]}
        # defaults: GRO on every end (the veth XDP_TX/REDIRECT path), the 198.18/15 addresses
        assert "generic-receive-offload: on" in nsexec(prefix + "gen", "ethtool", "-k", "veth0").stdout
        assert udp_across(prefix + "sink", prefix + "dut", "198.18.1.1") == "h3-ping 198.18.1.2"
        mounts = Path("/proc/self/mounts").read_text()
        assert f" /run/xdplab/{prefix}bpffs bpf " in mounts

        second = run_playbook(play)
        assert second.returncode == 0
        assert json.loads(second.stdout)["stats"]["localhost"]["changed"] == 0, "second run changed something"

        down = run_playbook(play, "-e", "testbed_state=absent")
        assert down.returncode == 0, down.stdout[-3000:]
        assert [ns for ns in ours_in_netns_list() if ns.startswith(prefix)] == []
        assert f" /run/xdplab/{prefix}bpffs " not in Path("/proc/self/mounts").read_text()
    finally:
        for host in ("gen", "dut", "sink"):
            subprocess.run(["ip", "netns", "del", prefix + host], capture_output=True, check=False)
        subprocess.run(["umount", f"/run/xdplab/{prefix}bpffs"], capture_output=True, check=False)
        if os.path.isdir(f"/run/xdplab/{prefix}bpffs"):
            os.rmdir(f"/run/xdplab/{prefix}bpffs")


def test_role_undefined_host_is_named_and_nothing_is_created():
    prefix = f"{TAG}u{next(_seq)}-"
    play = ROLE_PLAY.format(prefix=prefix)
    links = json.dumps([{"name": "gen-dut", "a": {"host": "gen", "ifname": "veth0"},
                         "b": {"host": "dutt", "ifname": "veth0"}}])
    proc = run_playbook(play, "-e", json.dumps({"testbed_links": json.loads(links)}))
    assert proc.returncode != 0
    assert "link gen-dut: end b names undefined host 'dutt'" in proc.stdout
    assert [ns for ns in ours_in_netns_list() if ns.startswith(prefix)] == []
    assert ledger_entries(prefix) == [], "the ledger records namespaces that were never created"


def test_role_namespace_name_too_long_is_named():
    prefix = f"{TAG}l{next(_seq)}-" + "p" * 30
    proc = run_playbook(ROLE_PLAY.format(prefix=prefix))
    assert proc.returncode != 0
    assert f"'{prefix}gen'" in proc.stdout and "longer than 32" in proc.stdout
    assert [ns for ns in ours_in_netns_list() if ns.startswith(prefix)] == []
    assert ledger_entries(prefix) == [], "the ledger records namespaces that were never created"


LEDGER_MODULE = ROOT / "plugins" / "modules" / "ledger.py"


def run_ledger(args: dict) -> dict:
    global MODULE
    saved, MODULE = MODULE, LEDGER_MODULE
    try:
        return run_module(args, diff=False)
    finally:
        MODULE = saved


def test_namespaces_are_recorded_before_creation_and_found_ones_are_never_removed(names, tmp_path):
    """A namespace that existed before (with a process in it) is never deleted, by state=absent or by the
    ledger's cleanup: it is recorded as found, with what the run changed in it (here its loopback,
    brought up), and the cleanup puts that back. The one the module created is recorded with its inode
    and removed by the ledger's cleanup."""
    ledger = str(tmp_path / "ledger")
    found, made = names["gen"], names["dut"]
    subprocess.run(["ip", "netns", "add", found], check=True)
    sleeper = subprocess.Popen(["ip", "netns", "exec", found, "sleep", "300"])
    try:
        up = run_module({"namespaces": [found, made], "ledger_dir": ledger, "run_id": "20261201T000000Z-abcdef"})
        assert up["rc"] == 0 and up["changed"], up
        recorded = {e["key"]["name"]: e for e in (json.loads(p.read_text()) for p in Path(ledger).glob("netns-*.json"))}
        assert sorted(recorded) == sorted([found, made])
        assert not recorded[made].get("found") and recorded[made]["inode"] == os.stat(f"/run/netns/{made}").st_ino
        assert recorded[made]["run_id"] == "20261201T000000Z-abcdef"
        assert recorded[found]["found"] is True and recorded[found]["undo_found"] == {"lo_was_down": True}

        down = run_module({"namespaces": [found, made], "ledger_dir": ledger, "state": "absent"})
        assert down["rc"] == 0 and down["kept"] == [found], down
        assert found in ours_in_netns_list() and made not in ours_in_netns_list()
        assert sleeper.poll() is None, "a process in the namespace found in place was killed"
        assert [json.loads(p.read_text())["key"]["name"] for p in Path(ledger).glob("netns-*.json")] == [found]
        cleaned = run_ledger({"state": "cleaned", "dir": ledger})
        assert cleaned["rc"] == 0 and found in ours_in_netns_list() and sleeper.poll() is None, cleaned
        assert "UP" not in ip_json(found, "link", "show", "lo")[0]["flags"]
        assert list(Path(ledger).glob("netns-*.json")) == []

        # Created again, then replaced behind the ledger's back by a namespace of the same name: the
        # cleanup leaves the newcomer alone and says why.
        assert run_module({"namespaces": [made], "ledger_dir": ledger})["rc"] == 0
        subprocess.run(["ip", "netns", "del", made], check=True)
        subprocess.run(["ip", "netns", "add", made], check=True)
        cleaned = run_ledger({"state": "cleaned", "dir": ledger})
        assert cleaned["rc"] == 0 and made in ours_in_netns_list(), cleaned
        assert any("other inode" in k for k in cleaned["kept"]), cleaned
        subprocess.run(["ip", "netns", "del", made], check=True)

        # Created by the module, cleaned by the ledger: gone.
        assert run_module({"namespaces": [made], "ledger_dir": ledger})["rc"] == 0
        cleaned = run_ledger({"state": "cleaned", "dir": ledger})
        assert cleaned["rc"] == 0 and made not in ours_in_netns_list(), cleaned
        assert found in ours_in_netns_list() and sleeper.poll() is None
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_spec_failing_halfway_leaves_no_ledger_entry(names, tmp_path):
    ledger = str(tmp_path / "ledger")
    # A sysctl the namespace lacks fails only after the namespace was created and recorded: the
    # rollback removes both.
    out = run_module({"namespaces": [names["gen"]], "ledger_dir": ledger,
                      "sysctls": {names["gen"]: {"net.ipv4.no_such_knob": "1"}}})
    assert out["rc"] != 0 and "rolled back what this run created" in out["msg"], out
    assert names["gen"] not in ours_in_netns_list()
    assert list(Path(ledger).glob("*.json")) == []


def _found_view(ns: str) -> dict:
    links = {link["ifname"]: link for link in ip_json(ns, "addr", "show") if link["ifname"] != "lo"}
    gro = {name: nsexec(ns, "ethtool", "-k", name).stdout.split("generic-receive-offload: ")[1].split()[0]
           for name in links}
    return {name: {"mtu": link["mtu"], "address": link["address"], "up": "UP" in link["flags"], "gro": gro[name],
                   "addrs": sorted(f"{a['local']}/{a['prefixlen']}" for a in link["addr_info"]
                                   if a.get("scope") != "link")}
            for name, link in links.items()} | {"forward": nsexec(ns, "sysctl", "-n", "net.ipv4.ip_forward").stdout}


def test_what_a_run_changes_in_namespaces_found_in_place_is_put_back(names, tmp_path):
    """Two namespaces found in place, joined by a veth pair of their own with other settings than the spec
    asks for (GRO off, MTU 1400, another address, down, forwarding off). The module records each change
    before making it, and adds a link of its own into them; state=absent keeps their pair, and the
    ledger's cleanup deletes only the link it made and puts every setting back."""
    ledger = str(tmp_path / "ledger")
    gen, dut, sink = names["gen"], names["dut"], names["sink"]
    for ns in (gen, dut):
        subprocess.run(["ip", "netns", "add", ns], check=True)
    subprocess.run(["ip", "-n", gen, "link", "add", "veth0", "type", "veth", "peer", "name", "veth0", "netns", dut],
                   check=True)
    subprocess.run(["ip", "-n", gen, "link", "set", "veth0", "mtu", "1400"], check=True)
    subprocess.run(["ip", "-n", dut, "link", "set", "veth0", "mtu", "1400", "address", "02:00:00:00:00:99"], check=True)
    subprocess.run(["ip", "-n", gen, "addr", "add", "10.99.0.1/24", "dev", "veth0"], check=True)
    assert nsexec(gen, "ethtool", "-K", "veth0", "gro", "off").returncode == 0
    before = {ns: _found_view(ns) for ns in (gen, dut)}
    up = run_module(dict(spec(names), ledger_dir=ledger, run_id="20261201T000000Z-abcdef"))
    assert up["rc"] == 0 and up["changed"], up
    assert _found_view(gen)["veth0"]["addrs"] == ["198.18.0.1/24"] and _found_view(dut)["forward"].strip() == "1"
    assert _found_view(dut)["veth1"]["gro"] == "on"

    down = run_module(dict(spec(names), ledger_dir=ledger, state="absent"))
    assert down["rc"] == 0 and gen in ours_in_netns_list() and dut in ours_in_netns_list(), down
    assert sorted(down["kept"]) == sorted([gen, dut]), down
    assert "veth0" in {link["ifname"] for link in ip_json(gen, "link", "show")}
    assert sink not in ours_in_netns_list()  # created by the run: gone, with the dut-sink link
    cleaned = run_ledger({"state": "cleaned", "dir": ledger})
    assert cleaned["rc"] == 0 and not cleaned.get("failed_entries"), cleaned
    assert {ns: _found_view(ns) for ns in (gen, dut)} == before
    assert list(Path(ledger).glob("*.json")) == []


def test_an_interface_found_in_place_is_never_deleted(names, tmp_path):
    """The spec's gen-dut link ends at dut/veth0, but there a veth of someone else's, paired elsewhere:
    the module refuses to delete it, names it, and nothing is changed."""
    ledger = str(tmp_path / "ledger")
    gen, dut = names["gen"], names["dut"]
    subprocess.run(["ip", "netns", "add", dut], check=True)
    subprocess.run(["ip", "-n", dut, "link", "add", "veth0", "type", "veth", "peer", "name", "other0"], check=True)
    out = run_module({"namespaces": [gen, dut], "ledger_dir": ledger,
                      "links": [{"name": "gen-dut", "a": {"netns": gen, "ifname": "veth0"},
                                 "b": {"netns": dut, "ifname": "veth0"}}]})
    assert out["rc"] != 0 and "'veth0' in namespace" in out["msg"] and dut in out["msg"], out
    assert "was there before" in out["msg"]
    assert {link["ifname"] for link in ip_json(dut, "link", "show")} == {"lo", "veth0", "other0"}
    assert gen not in ours_in_netns_list()
    assert list(Path(ledger).glob("*.json")) == []
    assert "UP" not in ip_json(dut, "link", "show", "lo")[0]["flags"]
