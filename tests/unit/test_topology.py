# SPDX-License-Identifier: GPL-3.0-or-later
"""netns_topology pure logic: spec validation (every bad value named) and the plan = diff(desired, live).

A small simulator applies a plan to a fake live snapshot the way the kernel would (deleting one veth end
deletes its peer, deleting a namespace deletes its interfaces), so convergence is checked as a property:
after applying plan(spec, live), planning again must return nothing.
"""

from __future__ import annotations

import copy
import itertools

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.testbed._topology import (
    Action,
    End,
    Link,
    TopologyError,
    found_undo,
    keep_foreign,
    normalize,
    plan,
    view_desired,
    view_live,
)
from hypothesis import given, settings
from hypothesis import strategies as st

NS = ["t-gen", "t-dut", "t-sink"]


def spec_links(**over):
    links = [
        {"name": "gen-dut", "mtu": 1500,
         "a": {"netns": "t-gen", "ifname": "veth0", "address": "198.18.0.1/24"},
         "b": {"netns": "t-dut", "ifname": "veth0", "address": ["198.18.0.2/24"], "mac": "02:00:00:00:00:02"}},
        {"name": "dut-sink", "mtu": 1500, "gro": True,
         "a": {"netns": "t-dut", "ifname": "veth1", "address": "198.18.1.1/24"},
         "b": {"netns": "t-sink", "ifname": "veth0", "address": "198.18.1.2/24"}},
    ]
    for key, value in over.items():
        links[0][key] = value
    return links


# ------------------------------------------------------------------ simulator

_ifindex = itertools.count(100)
_macs = itertools.count(1)


def simulate(live, actions):
    """Apply actions to a copy of live like the kernel would; returns the new snapshot."""
    live = copy.deepcopy(live)

    def links(ns):
        return live[ns]["links"]

    def delete(ns, ifname):
        gone = links(ns).pop(ifname)
        peer = gone.get("peer")
        if peer and live.get(peer["netns"]):
            live[peer["netns"]]["links"].pop(peer["ifname"], None)

    for act in actions:
        assert isinstance(act, Action)
        if act.op == "create_netns":
            assert live.get(act.netns) is None, f"{act.netns} created twice"
            live[act.netns] = {"lo_up": False, "links": {}, "sysctls": {}}
        elif act.op == "lo_up":
            live[act.netns]["lo_up"] = True
        elif act.op == "create_veth":
            peer = act.value
            assert act.ifname not in links(act.netns), "create over an existing name (EEXIST)"
            assert peer.ifname not in links(peer.netns), "create over an existing name (EEXIST)"
            queues = act.link.queues or 1
            ends = [(act.netns, act.ifname), (peer.netns, peer.ifname)]
            for here, there in (ends, ends[::-1]):
                live[here[0]]["links"][here[1]] = {
                    "ifindex": next(_ifindex), "kind": "veth", "mac": f"0e:00:00:00:00:{next(_macs) % 256:02x}",
                    "mtu": 1500, "up": False, "addresses": [], "queues": queues, "gro": False,
                    "peer": {"netns": there[0], "ifname": there[1]},
                }
        elif act.op in ("delete_link", "delete_veth"):
            if act.ifname in links(act.netns):
                delete(act.netns, act.ifname)
        elif act.op == "set_mac":
            links(act.netns)[act.ifname]["mac"] = act.value
        elif act.op == "set_mtu":
            links(act.netns)[act.ifname]["mtu"] = act.value
        elif act.op == "set_gro":
            links(act.netns)[act.ifname]["gro"] = act.value
        elif act.op == "set_up":
            links(act.netns)[act.ifname]["up"] = True
        elif act.op == "add_addr":
            assert act.value not in links(act.netns)[act.ifname]["addresses"]
            links(act.netns)[act.ifname]["addresses"].append(act.value)
        elif act.op == "del_addr":
            links(act.netns)[act.ifname]["addresses"].remove(act.value)
        elif act.op == "sysctl":
            live[act.netns]["sysctls"][act.ifname] = act.value
        elif act.op == "delete_netns":
            live[act.netns] = None
        else:
            raise AssertionError(f"unknown op {act.op}")
    return live


def empty_live(names=None):
    return {ns: None for ns in (NS if names is None else names)}


# ----------------------------------------------------------------- validation


@pytest.mark.parametrize("namespaces,links,needle", [
    (["a" * 33], [], "'" + "a" * 33 + "'"),
    (["x/y"], [], "'x/y'"),
    (["..hidden"], [], "'..hidden'"),
    (["-n"], [], "'-n'"),
    (["nul\0"], [], "'nul\\x00'"),
    (["sp ace"], [], "'sp ace'"),
    ([""], [], "''"),
    (["t-gen", "t-gen"], [], "'t-gen' is listed twice"),
])
def test_bad_namespace_names_are_named(namespaces, links, needle):
    with pytest.raises(TopologyError) as err:
        normalize(namespaces, links)
    assert needle in str(err.value)


def test_namespace_name_limit_is_32_bytes():
    assert normalize(["n" * 32], []).namespaces == ("n" * 32,)
    with pytest.raises(TopologyError, match="33 bytes, longer than 32"):
        normalize(["n" * 33], [])
    # bytes, not characters: 17 two-byte characters are 34 bytes
    with pytest.raises(TopologyError, match="34 bytes, longer than 32"):
        normalize(["é" * 17], [])


def test_undefined_host_in_link_end():
    links = spec_links()
    links[0]["b"]["netns"] = "t-dutt"
    with pytest.raises(TopologyError) as err:
        normalize(NS, links)
    assert "link gen-dut: end b names undefined host/namespace 't-dutt'" in str(err.value)


@pytest.mark.parametrize("ifname,needle", [
    ("a" * 16, "longer than 15 (IFNAMSIZ)"),
    ("ve/th", "'ve/th'"),
    ("ve th", "'ve th'"),
    ("veth\t0", "'veth\\t0'"),
    ("", "''"),
])
def test_bad_ifnames_are_named(ifname, needle):
    links = spec_links()
    links[1]["a"]["ifname"] = ifname
    with pytest.raises(TopologyError) as err:
        normalize(NS, links)
    assert needle in str(err.value)
    assert "link dut-sink: end a" in str(err.value)


def test_ifname_of_15_bytes_is_fine():
    links = spec_links()
    links[0]["a"]["ifname"] = "a" * 15
    assert normalize(NS, links).links[0].a.ifname == "a" * 15


@pytest.mark.parametrize("address,needle", [
    ("198.18.0.300/24", "'198.18.0.300/24'"),
    ("198.18.0.1", "'198.18.0.1' is not in CIDR form"),
    ("198.18.0.1/33", "'198.18.0.1/33'"),
    ("198.18.0.0/24", "'198.18.0.0/24' is a network address"),
    ("2001:db8::zz/64", "'2001:db8::zz/64'"),
    ("banana/24", "'banana/24'"),
])
def test_bad_cidr_is_named(address, needle):
    links = spec_links()
    links[0]["b"]["address"] = ["198.18.0.2/24", address]
    with pytest.raises(TopologyError) as err:
        normalize(NS, links)
    assert needle in str(err.value)


def test_cidr_is_canonical_and_deduplicated():
    links = spec_links()
    links[0]["a"]["address"] = ["2001:DB8:0::1/64", "198.18.0.1/24", "198.18.0.1/24"]
    assert normalize(NS, links).links[0].a.addresses == ("2001:db8::1/64", "198.18.0.1/24")


def test_duplicate_ifname_in_one_namespace():
    links = spec_links()
    links[1]["a"]["ifname"] = "veth0"  # t-dut/veth0 already used by gen-dut
    with pytest.raises(TopologyError) as err:
        normalize(NS, links)
    assert "interface 'veth0' in namespace 't-dut' is already used by link gen-dut" in str(err.value)


def test_same_ifname_in_different_namespaces_is_fine():
    assert len(normalize(NS, spec_links()).links) == 2


@pytest.mark.parametrize("mtu,ok", [(67, False), (68, True), (1500, True), (65535, True), (65536, False),
                                    (0, False), (-1, False), ("9000", True), ("jumbo", False), (True, False)])
def test_mtu_range(mtu, ok):
    if ok:
        assert normalize(NS, spec_links(mtu=mtu)).links[0].mtu == int(mtu)
    else:
        with pytest.raises(TopologyError) as err:
            normalize(NS, spec_links(mtu=mtu))
        assert f"mtu {mtu!r}" in str(err.value)


@pytest.mark.parametrize("mac", ["01:00:5e:00:00:01", "02:00:00:00:00", "zz:00:00:00:00:01", "00:00:00:00:00:00"])
def test_bad_mac_is_named(mac):
    links = spec_links()
    links[0]["a"]["mac"] = mac
    with pytest.raises(TopologyError) as err:
        normalize(NS, links)
    assert repr(mac) in str(err.value)


def test_mac_is_normalized():
    links = spec_links()
    links[0]["a"]["mac"] = "02-AB-00-00-00-01"
    assert normalize(NS, links).links[0].a.mac == "02:ab:00:00:00:01"


@pytest.mark.parametrize("sysctls,needle", [
    ({"t-dut": {"kernel.panic": 1}}, "'kernel.panic' is not a per-namespace net.* key"),
    ({"t-dut": {"net..x": 1}}, "'net..x'"),
    ({"t-nope": {"net.ipv4.ip_forward": 1}}, "undefined namespace 't-nope'"),
    ({"t-dut": {"net.ipv4.ip_forward": [1]}}, "[1]"),
])
def test_bad_sysctls_are_named(sysctls, needle):
    with pytest.raises(TopologyError) as err:
        normalize(NS, spec_links(), sysctls)
    assert needle in str(err.value)


def test_sysctl_slash_form_and_bool_values():
    topo = normalize(NS, [], {"t-dut": {"net/ipv4/ip_forward": True}})
    assert topo.sysctls == {"t-dut": {"net.ipv4.ip_forward": "1"}}


def test_unknown_keys_and_duplicate_link_names():
    links = spec_links()
    links[0]["colour"] = "red"
    with pytest.raises(TopologyError, match=r"links\[0\]: unknown key\(s\) \['colour'\]"):
        normalize(NS, links)
    links = spec_links()
    links[1]["name"] = "gen-dut"
    with pytest.raises(TopologyError, match="link name 'gen-dut' is used twice"):
        normalize(NS, links)


def test_default_link_name_names_both_ends():
    links = spec_links()
    del links[0]["name"]
    assert normalize(NS, links).links[0].name == "t-gen:veth0-t-dut:veth0"


# -------------------------------------------------------------------- planning


def test_plan_from_nothing_creates_everything_in_order():
    topo = normalize(NS, spec_links(), {"t-dut": {"net.ipv4.ip_forward": 1}})
    actions = plan(topo, empty_live())
    ops = [a.op for a in actions]
    assert ops.count("create_netns") == 3 and ops.count("lo_up") == 3
    assert ops.count("create_veth") == 2
    # every namespace exists before any pair is created, and sysctls come last
    assert max(i for i, o in enumerate(ops) if o == "create_netns") < ops.index("create_veth")
    assert ops[-1] == "sysctl" and actions[-1].value == "1"
    assert [a.value for a in actions if a.op == "set_mac"] == ["02:00:00:00:00:02"]
    assert sorted(a.value for a in actions if a.op == "add_addr") == [
        "198.18.0.1/24", "198.18.0.2/24", "198.18.1.1/24", "198.18.1.2/24"]
    # GRO only where the spec asks (dut-sink), on both of its ends
    assert sorted((a.netns, a.ifname) for a in actions if a.op == "set_gro") == [
        ("t-dut", "veth1"), ("t-sink", "veth0")]


def test_plan_converges_and_second_plan_is_empty():
    topo = normalize(NS, spec_links(), {"t-dut": {"net.ipv4.ip_forward": 1}})
    live = simulate(empty_live(), plan(topo, empty_live()))
    assert plan(topo, live) == []
    assert view_live(topo, live) == view_desired(topo, live)


def test_view_desired_predicts_the_result_of_a_fresh_build():
    topo = normalize(NS, spec_links())
    live0 = empty_live()
    predicted = view_desired(topo, live0)
    after = view_live(topo, simulate(live0, plan(topo, live0)))
    # MACs the kernel picks are unknown beforehand
    for view in (predicted, after):
        for ns in view.values():
            for link in ns["links"].values():
                if link["mac"] != "02:00:00:00:00:02":
                    link["mac"] = "?"
    assert predicted == after


def test_plan_changes_only_what_differs():
    topo = normalize(NS, spec_links())
    live = simulate(empty_live(), plan(topo, empty_live()))
    live["t-dut"]["links"]["veth0"]["mtu"] = 9000
    live["t-dut"]["links"]["veth0"]["addresses"].append("198.18.7.7/24")
    live["t-gen"]["links"]["veth0"]["up"] = False
    live["t-sink"]["lo_up"] = False
    actions = plan(topo, live)
    assert sorted(a.describe() for a in actions) == sorted([
        "set_mtu t-dut/veth0 1500",
        "del_addr t-dut/veth0 198.18.7.7/24",
        "set_up t-gen/veth0 True",
        "lo_up t-sink",
    ])
    assert plan(topo, simulate(live, actions)) == []


def test_addresses_unset_are_left_alone():
    links = spec_links()
    del links[0]["a"]["address"]
    topo = normalize(NS, links)
    live = simulate(empty_live(), plan(topo, empty_live()))
    live["t-gen"]["links"]["veth0"]["addresses"] = ["203.0.113.9/24"]
    assert plan(topo, live) == []


def test_wrong_peer_is_recreated():
    topo = normalize(NS, spec_links())
    live = simulate(empty_live(), plan(topo, empty_live()))
    # t-gen/veth0 now a veth whose peer is somewhere else; t-dut/veth0 a stray non-veth
    live["t-gen"]["links"]["veth0"]["peer"] = {"netns": "t-sink", "ifname": "other"}
    live["t-dut"]["links"]["veth0"]["kind"] = "dummy"
    live["t-dut"]["links"]["veth0"]["peer"] = None
    actions = plan(topo, live)
    assert [a.describe() for a in actions if a.op in ("delete_link", "create_veth")][:2] == [
        "delete_link t-gen/veth0", "delete_link t-dut/veth0"]
    assert plan(topo, simulate(live, actions)) == []


def test_queue_mismatch_recreates_the_pair_once():
    topo = normalize(NS, spec_links(queues=4))
    live = simulate(empty_live(), plan(topo, empty_live()))
    live["t-gen"]["links"]["veth0"]["queues"] = 1
    live["t-dut"]["links"]["veth0"]["queues"] = 1
    actions = plan(topo, live)
    # deleting one end deletes the peer: one delete, not two
    assert [a.describe() for a in actions if a.op == "delete_link"] == ["delete_link t-gen/veth0"]
    assert plan(topo, simulate(live, actions)) == []


def test_a_wrong_end_whose_peer_belongs_to_another_link_is_deleted_once():
    """t-dut/veth0 (spec: peer t-gen/veth0) is really the peer of t-sink/veth0, which the spec wants paired
    with t-dut/veth1: deleting t-dut/veth0 takes t-sink/veth0 with it, so that one is not deleted again,
    and both pairs are created."""
    topo = normalize(NS, spec_links())
    live = simulate(empty_live(), plan(topo, empty_live()))
    live["t-dut"]["links"]["veth0"]["peer"] = {"netns": "t-sink", "ifname": "veth0"}
    live["t-sink"]["links"]["veth0"]["peer"] = {"netns": "t-dut", "ifname": "veth0"}
    live["t-gen"]["links"].pop("veth0")
    live["t-dut"]["links"].pop("veth1")
    actions = plan(topo, live)
    assert [a.describe() for a in actions if a.op == "delete_link"] == ["delete_link t-dut/veth0"]
    assert [a.ifname for a in actions if a.op == "create_veth"] == ["veth0", "veth1"]
    assert plan(topo, simulate(live, actions)) == []


def test_absent_removes_exactly_what_it_names():
    topo = normalize(NS, spec_links())
    live = simulate(empty_live(), plan(topo, empty_live()))
    only_sink = normalize(["t-sink"], [])
    actions = plan(only_sink, live, "absent")
    assert [a.describe() for a in actions] == ["delete_netns t-sink"]
    # links whose namespaces go with them need no deletion of their own
    gen_dut = normalize(["t-gen", "t-dut"], spec_links()[:1])
    assert [a.describe() for a in plan(gen_dut, live, "absent")] == ["delete_netns t-gen", "delete_netns t-dut"]
    after = simulate(live, plan(topo, live, "absent"))
    assert all(after[ns] is None for ns in NS)
    assert plan(topo, after, "absent") == []


def test_absent_of_a_link_alone_keeps_the_namespaces():
    topo = normalize(NS, spec_links())
    live = simulate(empty_live(), plan(topo, empty_live()))
    # links only (state absent): their namespaces need not be listed, and stay; one delete per pair
    link_only = normalize([], spec_links(), ends_in_namespaces=False)
    assert link_only.referenced == ("t-gen", "t-dut", "t-sink")
    actions = plan(link_only, live, "absent")
    assert [a.describe() for a in actions] == ["delete_veth t-gen/veth0", "delete_veth t-dut/veth1"]
    after = simulate(live, actions)
    assert all(after[ns] is not None for ns in NS)
    assert all(not after[ns]["links"] for ns in NS)


def test_link_ends_must_be_listed_only_for_present():
    with pytest.raises(TopologyError, match="undefined host/namespace 't-gen'"):
        normalize([], spec_links())
    # absent: validated all the same
    links = spec_links()
    links[0]["a"]["ifname"] = "x" * 16
    with pytest.raises(TopologyError, match="longer than 15"):
        normalize([], links, ends_in_namespaces=False)


def test_sysctl_compare_ignores_whitespace():
    topo = normalize(["t-dut"], [], {"t-dut": {"net.ipv4.ip_local_port_range": "1024 65000"}})
    live = {"t-dut": {"lo_up": True, "links": {}, "sysctls": {"net.ipv4.ip_local_port_range": "1024\t65000"}}}
    assert plan(topo, live) == []
    live["t-dut"]["sysctls"]["net.ipv4.ip_local_port_range"] = "1024\t60999"
    assert [a.op for a in plan(topo, live)] == ["sysctl"]


def test_unknown_state_is_named():
    with pytest.raises(TopologyError, match="'gone'"):
        plan(normalize(NS, []), empty_live(), "gone")


# ------------------------------------------------------------ property: convergence

_field = st.sampled_from(["mtu", "up", "addr_extra", "addr_missing", "mac", "gone", "peer", "lo", "ns_gone"])


@settings(max_examples=150, deadline=None)
@given(mutations=st.lists(st.tuples(_field, st.sampled_from(NS), st.sampled_from(["veth0", "veth1"])),
                          max_size=6))
def test_any_drift_converges_in_one_plan(mutations):
    topo = normalize(NS, spec_links(), {"t-dut": {"net.ipv4.ip_forward": 1}})
    live = simulate(empty_live(), plan(topo, empty_live()))
    for what, ns, ifname in mutations:
        state = live.get(ns)
        if state is None:
            continue
        cur = state["links"].get(ifname)
        if what == "ns_gone":
            live[ns] = None
            for other in NS:  # its veths die with it, and so do their peers' pairs
                for name, link in list((live.get(other) or {"links": {}})["links"].items()):
                    if (link.get("peer") or {}).get("netns") == ns:
                        live[other]["links"].pop(name)
        elif what == "lo":
            state["lo_up"] = False
        elif cur is None:
            continue
        elif what == "mtu":
            cur["mtu"] = 9000
        elif what == "up":
            cur["up"] = False
        elif what == "addr_extra":
            cur["addresses"].append("203.0.113.1/24")
        elif what == "addr_missing":
            cur["addresses"] = []
        elif what == "mac":
            cur["mac"] = "02:ff:ff:ff:ff:ff"
        elif what == "gone":
            peer = cur.get("peer")
            state["links"].pop(ifname)
            if peer and live.get(peer["netns"]):
                live[peer["netns"]]["links"].pop(peer["ifname"], None)
        elif what == "peer":
            cur["peer"] = {"netns": "elsewhere", "ifname": "x"}
    after = simulate(live, plan(topo, live))
    assert plan(topo, after) == []
    assert view_live(topo, after) == view_desired(topo, after)


# ---- namespaces found in place: what undoing each change needs --------------------------------

def _found_live():
    return {"lab": {"lo_up": False, "sysctls": {"net.ipv4.ip_forward": "0"},
                    "links": {"eth1": {"mtu": 1400, "mac": "02:00:00:00:00:99", "gro": False, "up": False,
                                       "addresses": ["10.0.0.1/24"]}}}}


def test_found_undo_keeps_the_first_value_seen_and_pairs_address_changes():
    live = _found_live()
    undo = {}
    for action in [Action("lo_up", "lab"), Action("set_mtu", "lab", "eth1", 1500),
                   Action("set_gro", "lab", "eth1", True), Action("set_mac", "lab", "eth1", "02:00:00:00:00:01"),
                   Action("del_addr", "lab", "eth1", "10.0.0.1/24"), Action("add_addr", "lab", "eth1", "198.18.0.1/24"),
                   Action("set_up", "lab", "eth1", True), Action("sysctl", "lab", "net.ipv4.ip_forward", "1"),
                   Action("create_veth", "lab", "veth9")]:
        undo = found_undo(action, live, undo)
    assert undo == {"lo_was_down": True, "sysctls": {"net.ipv4.ip_forward": "0"}, "links_created": ["veth9"],
                    "links": {"eth1": {"mtu": 1400, "gro": False, "mac": "02:00:00:00:00:99", "up": False,
                                       "addresses_removed": ["10.0.0.1/24"], "addresses_added": ["198.18.0.1/24"]}}}
    # a second run over the already changed namespace: the values from before the first run stay, and
    # an address taken away and given back is no change at all
    live["lab"]["links"]["eth1"].update(mtu=1500, addresses=["198.18.0.1/24"])
    again = found_undo(Action("set_mtu", "lab", "eth1", 9000), live, undo)
    assert again["links"]["eth1"]["mtu"] == 1400
    back = found_undo(Action("add_addr", "lab", "eth1", "10.0.0.1/24"), live, undo)
    assert "10.0.0.1/24" not in back["links"]["eth1"]["addresses_removed"]
    assert undo["links"]["eth1"]["addresses_removed"] == ["10.0.0.1/24"]  # the input is not changed


def test_found_undo_refuses_to_delete_what_was_there_and_lets_ours_go():
    with pytest.raises(TopologyError, match="interface 'eth1' in namespace 'lab' was there before"):
        found_undo(Action("delete_link", "lab", "eth1"), _found_live(), {})
    assert found_undo(Action("delete_link", "lab", "veth9"), _found_live(), {"links_created": ["veth9"]}) == {
        "links_created": ["veth9"]}
    # settings of an interface made by this run (absent when the namespace was read) need no undo
    assert found_undo(Action("set_mtu", "lab", "veth9", 1500), _found_live(), {}) == {}


@pytest.mark.parametrize("key", ["net/ipv4/conf/eth0.1/rp_filter", "net.ipv4.conf.eth0/1.rp_filter"])
def test_sysctl_of_a_vlan_interface_maps_to_its_own_directory(key):
    """A VLAN interface eth0.1 has /proc/sys/net/ipv4/conf/eth0.1/; sysctl(8) writes its name with '/'
    separators, or dotted with the component's '.' as '/'. Never net/ipv4/conf/eth0/1/rp_filter."""
    from ansible_collections.xdplab.testbed.plugins.module_utils.common import _validate

    topo = normalize(NS, [], {"t-dut": {key: 1}})
    assert topo.sysctls == {"t-dut": {"net.ipv4.conf.eth0/1.rp_filter": "1"}}
    assert _validate.sysctl_path(key) == "net/ipv4/conf/eth0.1/rp_filter"
    assert _validate.sysctl_path("net.core.somaxconn") == "net/core/somaxconn"
    for bad in ("net/ipv4/conf/../x", "net..x", "net.ipv4.conf.eth0 1.x", "", "/net/x", "net.x."):
        with pytest.raises(_validate.ValidationError, match="is not a sysctl name"):
            _validate.sysctl_path(bad)


def _veth(a_ns, a_if, b_ns, b_if):
    link = Link(name="l", a=End(a_ns, a_if, None, None), b=End(b_ns, b_if, None, None), mtu=None, queues=None,
                gro=None)
    return Action("delete_veth", a_ns, a_if, link=link)


def test_keep_foreign_deletes_only_what_a_run_of_ours_made():
    actions = [_veth("ours", "veth0", "theirs", "veth0"),       # an end in a namespace of ours
               _veth("theirs", "made0", "other", "x0"),          # recorded as created in theirs
               _veth("theirs", "was0", "other", "y0"),           # there before: kept
               Action("delete_netns", "ours"), Action("delete_netns", "theirs")]
    recorded = {"ours": {}, "theirs": {"found": True, "undo_found": {"links_created": ["made0"]}}}
    left, kept = keep_foreign(actions, recorded, {"ours"})
    assert [a.describe() for a in left] == ["delete_veth ours/veth0", "delete_veth theirs/made0",
                                            "delete_netns ours"]
    assert kept == ["theirs", "theirs/was0"]


def test_keep_foreign_with_everything_ours_keeps_nothing():
    actions = [_veth("a", "v0", "b", "v0"), Action("delete_netns", "a"), Action("delete_netns", "b")]
    assert keep_foreign(actions, {}, {"a", "b"}) == (actions, [])
