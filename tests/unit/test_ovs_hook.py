# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""xdp_flow's Open vSwitch variant: the ovs-dpctl flow built from a flow dict, the parsers of
`ovs-dpctl dump-dps` and `show` (real output of the lab DUT's Debian openvswitch-switch 3.1), the DUT
counter reading the datapath's lookup hits, and packet_hook type=ovs against a simulated ovs-dpctl: the
ledger entry written before the datapath is made, a foreign datapath refused, a second run changing
nothing, absent removing only what the ledger names."""

from __future__ import annotations

import json
import os

import pytest
from _fixtures import read_fixture
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _command
from ansible_collections.xdplab.testbed.plugins.module_utils.state import _ledger
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._dut_counters import (
    CounterError,
    check_spec,
    describe,
    make_reader,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.xdp import _hooks
from ansible_collections.xdplab.testbed.plugins.modules import packet_hook

UDP_FLOW = {"src": "198.18.0.1", "dst": "198.18.0.2", "proto": "udp", "sport": 9, "dport": 9}


def fixture(name: str) -> str:
    return read_fixture(f"ovs/{name}")


# -- pure logic -----------------------------------------------------------------------------------

def test_flow_of_one_udp_flow_is_a_megaflow_on_port_1():
    assert _hooks.ovs_flow(UDP_FLOW) == ("in_port(1),eth(),eth_type(0x0800),"
                                         "ipv4(src=198.18.0.1,dst=198.18.0.2,proto=17,frag=no),udp(src=9,dst=9)")


def test_flow_ipv6_and_no_flow():
    assert _hooks.ovs_flow({"dst": "2001:db8::2", "proto": "tcp"}, port_no=3) == (
        "in_port(3),eth(),eth_type(0x86dd),ipv6(dst=2001:db8::2,proto=6,frag=no),tcp()")
    assert _hooks.ovs_flow(None) == "in_port(1),eth(),eth_type(0x0800),ipv4(frag=no)"


@pytest.mark.parametrize(("flow", "msg"), [
    ({"src": "198.18.0.1),drop(", "proto": "udp"}, "is not an IP address"),
    ({"sport": 9}, "need proto"),
    ({"proto": "sctp"}, "proto must be one of"),
    ({"src": "198.18.0.1", "dst": "2001:db8::1"}, "different IP families"),
    ({"proto": "udp", "dport": 70000}, "port number"),
    ({"port": 1}, "unknown keys"),
])
def test_bad_flows_are_refused_naming_the_value(flow, msg):
    with pytest.raises((_hooks.HookError, ValueError), match=msg):
        _hooks.ovs_flow(flow)


@pytest.mark.parametrize("name", ["", "a" * 16, "-x", "dp;rm", "dp x", "../dp"])
def test_bad_datapath_names_are_refused(name):
    with pytest.raises(ValueError, match="ovs datapath"):
        _hooks.ovs_datapath(name)


def test_dump_dps_and_show_of_the_lab_dut():
    assert _hooks.ovs_datapaths(fixture("dump-dps.txt")) == ["xdplab-ovs"]
    assert _hooks.ovs_datapaths("") == []
    shown = _hooks.ovs_show(fixture("show.txt"))
    assert shown["ports"] == {0: "xdplab-ovs", 1: "igb0"}
    assert (shown["hit"], shown["missed"], shown["lost"]) == tuple(json.loads(fixture("show-counts.json")))


def test_the_drop_flow_is_found_in_the_lab_duts_dump_flows():
    dump = fixture("dump-flows.txt")  # the flow ovs_flow makes, after 7 packets matched it
    assert _hooks.ovs_has_drop_flow(dump, _hooks.ovs_flow(UDP_FLOW))
    assert not _hooks.ovs_has_drop_flow(dump, _hooks.ovs_flow({**UDP_FLOW, "dport": 90}))
    assert not _hooks.ovs_has_drop_flow(dump.replace("actions:drop", "actions:2"), _hooks.ovs_flow(UDP_FLOW))
    assert not _hooks.ovs_has_drop_flow("", _hooks.ovs_flow(UDP_FLOW))


def test_show_without_a_lookups_line_is_an_error():
    with pytest.raises(_hooks.HookError, match="lookups"):
        _hooks.ovs_show("ovs-dpctl: opening datapath (No such device)\n")


def test_counter_reads_the_datapaths_hits():
    calls = []
    hits = iter([10, 10, 2510])

    def run(argv):
        calls.append(argv)
        return 0, f"system@xdplab-ovs:\n  lookups: hit:{next(hits)} missed:3 lost:3\n  flows: 1\n", ""
    spec = {"type": "ovs"}
    read = make_reader(spec, run_command=run)
    assert read() == 10 and read() == 2510
    assert calls[0] == ["ovs-dpctl", "show", "xdplab-ovs"]
    assert describe(check_spec(spec)) == "lookup hits of Open vSwitch datapath xdplab-ovs"


def test_counter_errors_name_the_datapath():
    with pytest.raises(CounterError, match="datapath xdplab-ovs: .*No such device"):
        make_reader({"type": "ovs"}, run_command=lambda argv: (1, "", "ovs-dpctl: No such device"))
    with pytest.raises(CounterError, match="'dp;x'"):
        check_spec({"type": "ovs", "datapath": "dp;x"})


def test_ledger_entry_of_a_datapath():
    entry = _ledger.check_entry("ovs", {"datapath": "xdplab-ovs"}, "xdplab-dut")
    assert entry == {"kind": "ovs", "key": {"datapath": "xdplab-ovs"}, "netns": "xdplab-dut"}
    with pytest.raises(_ledger.LedgerError, match="datapath"):
        _ledger.check_entry("ovs", {"datapath": "x" * 20})
    # undone with what lives on interfaces, before the namespaces
    plan = _ledger.teardown_plan([("n", {"kind": "netns", "key": {"name": "other"}}),
                                  ("o", entry), ("x", {"kind": "xdp", "key": {"interface": "i"}})])
    assert [p for p, _e in plan] == ["x", "o", "n"]


# -- packet_hook type=ovs against a simulated ovs-dpctl -------------------------------------------

class Failed(Exception):
    pass


class World:
    """The datapaths ovs-dpctl would show: {name: {"ports": {no: name}, "flows": [flow]}}."""

    def __init__(self, datapaths=None):
        self.dps = datapaths or {}


class FakeModule:
    def __init__(self, tmp_path, world: World, check_mode=False, **params):
        self.params = {"type": "ovs", "interface": "igb0", "state": "present", "datapath": "xdplab-ovs",
                       "flow": dict(UDP_FLOW), "ledger_dir": str(tmp_path / "ledger"), "run_id": None,
                       "object": None, "section": "tc", "pref": 1, "handle": 1, "table": "xdplab_bench",
                       "counter": "xdplab_dropped", "hook": "prerouting", **params}
        self.check_mode = check_mode
        self.world = world
        self.calls: list[list[str]] = []
        self.ledger_at_call: list[list[str]] = []

    def get_bin_path(self, name, required=False):
        return f"/usr/bin/{name}"

    def fail_json(self, **kw):
        raise Failed(kw["msg"])

    def run_command(self, argv, data=None, environ_update=None, binary_data=False):
        assert environ_update == _command.C_LOCALE
        self.calls.append(argv[1:])
        ledger = self.params["ledger_dir"]
        self.ledger_at_call.append(sorted(os.listdir(ledger)) if os.path.isdir(ledger) else [])
        cmd, dps = argv[1], self.world.dps
        if cmd == "dump-dps":
            return 0, "".join(f"system@{n}\n" for n in dps), ""
        if cmd == "show":
            dp = dps[argv[2]]
            ports = "".join(f"  port {no}: {name}\n" for no, name in sorted(dp["ports"].items()))
            return 0, f"system@{argv[2]}:\n  lookups: hit:0 missed:0 lost:0\n  flows: {len(dp['flows'])}\n{ports}", ""
        if cmd == "add-dp":
            dps[argv[2]] = {"ports": {0: argv[2]}, "flows": []}
        elif cmd == "add-if":
            name, _sep, opt = argv[3].partition(",port_no=")
            dps[argv[2]]["ports"][int(opt)] = name
        elif cmd == "add-flow":
            assert argv[4] == ""  # an empty action list: drop
            dps[argv[2]]["flows"].append(argv[3])
        elif cmd == "del-flows":
            dps[argv[2]]["flows"] = []
        elif cmd == "dump-flows":
            return 0, "".join(f"{f}, packets:0, bytes:0, used:never, actions:drop\n" for f in dps[argv[2]]["flows"]), ""
        elif cmd == "del-dp":
            del dps[argv[2]]
        return 0, "", ""


@pytest.fixture
def hook_world(monkeypatch, tmp_path):
    monkeypatch.setattr(packet_hook, "current_netns_name", lambda: "host")
    monkeypatch.setattr(packet_hook.Hook, "vswitchd_running", staticmethod(lambda: False))
    monkeypatch.setattr(packet_hook.os.path, "exists",
                        lambda p, _real=os.path.exists: p == "/sys/class/net/igb0" or _real(p))
    return tmp_path


def run_hook(tmp_path, world, **params):
    module = FakeModule(tmp_path, world, **params)
    hook = packet_hook.Hook(module)
    result = hook.ovs_present() if module.params["state"] == "present" else hook.ovs_absent()
    return module, result


def test_present_records_the_datapath_before_making_it_then_changes_nothing(hook_world):
    world = World()
    module, result = run_hook(hook_world, world)
    assert result["changed"] and result["created"] == ["datapath", "flow"]
    flow = _hooks.ovs_flow(UDP_FLOW)
    assert module.calls == [["dump-dps"], ["add-dp", "xdplab-ovs"], ["add-if", "xdplab-ovs", "igb0,port_no=1"],
                            ["add-flow", "xdplab-ovs", flow, ""]]
    entry = _ledger.check_entry("ovs", {"datapath": "xdplab-ovs"})
    assert module.ledger_at_call[1] == [_ledger.entry_id(entry)]  # recorded before add-dp ran
    assert world.dps["xdplab-ovs"] == {"ports": {0: "xdplab-ovs", 1: "igb0"}, "flows": [flow]}
    module, again = run_hook(hook_world, world)
    assert not again["changed"] and [c[0] for c in module.calls] == ["dump-dps", "show", "dump-flows"]
    # another flow asked: only the flow changes
    module, other = run_hook(hook_world, world, flow={"dst": "198.18.0.9", "proto": "udp"})
    assert other["created"] == ["flow"] and [c[0] for c in module.calls[-2:]] == ["del-flows", "add-flow"]
    assert world.dps["xdplab-ovs"]["flows"] == [_hooks.ovs_flow({"dst": "198.18.0.9", "proto": "udp"})]


def test_check_mode_changes_nothing(hook_world):
    world = World()
    module, result = run_hook(hook_world, world, check_mode=True)
    assert result["changed"] and module.calls == [["dump-dps"]] and world.dps == {}
    assert not os.path.isdir(module.params["ledger_dir"]) or not os.listdir(module.params["ledger_dir"])


def test_a_datapath_of_someone_else_is_refused_and_left_alone(hook_world):
    world = World({"xdplab-ovs": {"ports": {0: "xdplab-ovs", 1: "eth5"}, "flows": ["in_port(1) x"]}})
    before = json.dumps(world.dps, sort_keys=True)
    with pytest.raises(_hooks.HookError, match="xdplab-ovs exists and this collection did not make it"):
        run_hook(hook_world, world)
    module, result = run_hook(hook_world, world, state="absent")
    assert not result["changed"] and module.calls == []
    assert json.dumps(world.dps, sort_keys=True) == before


def test_absent_deletes_only_the_recorded_datapath(hook_world):
    world = World({"ovs-system": {"ports": {0: "ovs-system"}, "flows": []}})
    run_hook(hook_world, world)
    module, result = run_hook(hook_world, world, state="absent")
    assert result == {"changed": True, "created": [], "removed": ["datapath"]}
    assert list(world.dps) == ["ovs-system"] and os.listdir(module.params["ledger_dir"]) == []


def test_vswitchd_running_is_refused(hook_world, monkeypatch):
    monkeypatch.setattr(packet_hook.Hook, "vswitchd_running", staticmethod(lambda: True))
    with pytest.raises(_hooks.HookError, match="ovs-vswitchd runs on this host"):
        run_hook(hook_world, World())


def test_a_missing_kernel_module_says_so(hook_world):
    class NoModule(FakeModule):
        def run_command(self, argv, data=None, environ_update=None, binary_data=False):
            return 1, "", "ovs-dpctl: Generic Netlink family 'ovs_datapath' does not exist.\n"
    module = NoModule(hook_world, World())
    with pytest.raises(Failed, match="does not exist.*modprobe openvswitch"):
        packet_hook.Hook(module).ovs_present()
