# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The DUT's other datapath hooks compared with XDP: a cls_bpf filter on tc's clsact ingress and an
nftables drop table. Pure logic of the packet_hook module: names checked, rulesets built, plans made.

PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.

Every name that reaches an nftables ruleset or a tc command line is checked first by the collection's
validators (common._validate), so a value can never add a statement, a rule or an option.
"""

from __future__ import annotations

from dataclasses import dataclass

from ansible_collections.xdplab.testbed.plugins.module_utils.common import _validate

NFT_FAMILIES = ("inet", "netdev")
NFT_HOOKS = ("prerouting", "ingress")
# clsact's ingress parent, TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_INGRESS).
CLSACT_INGRESS = 0xFFFFFFF2


class HookError(ValueError):
    """A foreign object in the way, or a bad hook; the message names it. (Bad names raise
    _validate.ValidationError.)"""


FLOW_PROTOS = ("udp", "tcp")


def nft_flow_match(flow: dict | None) -> str:
    """The nftables match of one flow ({src, dst, proto, sport, dport}, every key optional but proto
    when a port is given), each value checked; "" for no flow (match everything)."""
    if not flow:
        return ""
    unknown = sorted(set(flow) - {"src", "dst", "proto", "sport", "dport"})
    if unknown:
        raise HookError(f"flow has unknown keys {unknown}: use src, dst, proto, sport, dport")
    parts = []
    addrs = [(k, _validate.ip_address(flow[k], f"flow {k}")) for k in ("src", "dst") if flow.get(k) is not None]
    families = {":" in a for _dummy, a in addrs}
    if len(families) > 1:
        raise HookError(f"flow src and dst are of different IP families: {dict(addrs)}")
    for key, addr in addrs:
        parts.append(f"{'ip6' if ':' in addr else 'ip'} {'saddr' if key == 'src' else 'daddr'} {addr}")
    proto = flow.get("proto")
    ports = [(k, flow[k]) for k in ("sport", "dport") if flow.get(k) is not None]
    if proto is None and ports:
        raise HookError(f"flow ports {dict(ports)} need proto ({', '.join(FLOW_PROTOS)})")
    if proto is not None and proto not in FLOW_PROTOS:
        raise HookError(f"flow proto must be one of {', '.join(FLOW_PROTOS)}, got {proto!r}")
    for key, port in ports:
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 0xFFFF:
            raise HookError(f"flow {key} must be a port number 0..65535, got {port!r}")
        parts.append(f"{proto} {key} {port}")
    if proto is not None and not ports:
        parts.append(f"meta l4proto {proto}")
    return " ".join(parts) + " "


def nft_ruleset(table: str, counter: str, hook: str, interface: str, flow: dict | None = None) -> tuple[str, str]:
    """(family, ruleset) of a table that counts and drops what arrives on `interface`: everything, or
    only the packets of `flow` (nft_flow_match).

    hook 'prerouting': family inet, priority raw (the classic netfilter drop); 'ingress': family
    netdev, the device's ingress hook, before the stack.
    """
    _validate.nft_name(table, "table")
    _validate.nft_name(counter, "counter")
    _validate.ifname(interface)
    match = nft_flow_match(flow)
    if hook == "ingress":
        return "netdev", (
            f"table netdev {table} {{\n"
            f"  counter {counter} {{ }}\n"
            f"  chain ingress {{\n"
            f'    type filter hook ingress device "{interface}" priority -500; policy accept;\n'
            f'    {match}counter name "{counter}" drop\n'
            f"  }}\n"
            f"}}\n")
    if hook == "prerouting":
        return "inet", (
            f"table inet {table} {{\n"
            f"  counter {counter} {{ }}\n"
            f"  chain prerouting {{\n"
            f"    type filter hook prerouting priority raw; policy accept;\n"
            f'    iifname "{interface}" {match}counter name "{counter}" drop\n'
            f"  }}\n"
            f"}}\n")
    raise HookError(f"nftables hook must be one of {', '.join(NFT_HOOKS)}, got {hook!r}")


@dataclass(frozen=True)
class TcFilter:
    pref: int
    handle: int
    kind: str
    name: str | None = None


@dataclass(frozen=True)
class TcPlan:
    add_clsact: bool
    add_filter: bool
    reason: str


def tc_plan(has_clsact: bool, filters: list[TcFilter], pref: int, handle: int, name: str) -> TcPlan:
    """What to add for our cls_bpf filter at (pref, handle) named `name` (tc's "<object>:[<section>]").

    A filter already at that pref and handle that is not ours (another kind, or another program) is
    someone else's: refused, never replaced.
    """
    same = [f for f in filters if f.pref == pref and f.handle == handle]
    if same:
        f = same[0]
        if f.kind != "bpf" or f.name != name:
            raise HookError(f"tc ingress filter pref {pref} handle {handle:#x} is already taken by a {f.kind} "
                            f"filter {f.name or ''!s} that this collection did not add: choose another pref/handle")
        return TcPlan(False, False, "present")
    return TcPlan(not has_clsact, True, "clsact added" if not has_clsact else "filter added")


def tc_undo(created_clsact: bool, filters_left: list[TcFilter]) -> bool:
    """Whether to delete the clsact qdisc after our filter went: only if we created it and nobody
    else's filter hangs on it."""
    return created_clsact and not filters_left


# -- Open vSwitch's kernel datapath ---------------------------------------------------------------
# ovs-dpctl (Debian's openvswitch-switch) drives the kernel datapath directly, with no ovs-vswitchd:
# a datapath of our own, the interface as its port, and one flow whose action list is empty (drop).
# That is the kernel's flow table on its own, what the flow offload work compares XDP with.
OVS_DEFAULT_DATAPATH = "xdplab-ovs"
# The port number the interface gets in our datapath (0 is the datapath's own local port).
OVS_PORT_NO = 1
_IP_PROTO = {"udp": 17, "tcp": 6}


def ovs_datapath(name: str) -> str:
    """A datapath name: the kernel names the datapath's local port after it, so it is an interface name."""
    return _validate.ifname(name, "ovs datapath")


def ovs_flow(flow: dict | None, port_no: int = OVS_PORT_NO) -> str:
    """The ovs-dpctl flow of one IPv4/IPv6 flow ({src, dst, proto, sport, dport}, as nft_flow_match)
    arriving on port `port_no`; fields left out are wildcarded (a megaflow, as ovs-vswitchd installs),
    so an empty flow matches every IP packet of the port."""
    nft_flow_match(flow)  # the same checks, the same messages
    flow = {k: v for k, v in (flow or {}).items() if v is not None}
    addrs = {k: _validate.ip_address(flow[k], f"flow {k}") for k in ("src", "dst") if k in flow}
    v6 = any(":" in a for a in addrs.values())
    l3 = [f"{k}={a}" for k, a in addrs.items()]
    proto = flow.get("proto")
    if proto:
        l3.append(f"proto={_IP_PROTO[proto]}")
    # The kernel takes a transport key only with the IP protocol exact and the packet not a later fragment.
    l3.append("frag=no")
    parts = [f"in_port({int(port_no)})", "eth()", f"eth_type({'0x86dd' if v6 else '0x0800'})",
             f"{'ipv6' if v6 else 'ipv4'}({','.join(l3)})"]
    ports = [f"{'src' if k == 'sport' else 'dst'}={flow[k]}" for k in ("sport", "dport") if k in flow]
    if proto:
        parts.append(f"{proto}({','.join(ports)})")
    return ",".join(parts)


def ovs_datapaths(dump_dps: str) -> list[str]:
    """The datapath names of `ovs-dpctl dump-dps` (lines 'system@name')."""
    names = []
    for line in dump_dps.splitlines():
        line = line.strip()
        if line:
            names.append(line.split("@", 1)[1] if "@" in line else line)
    return names


def ovs_has_drop_flow(dump: str, flow: str) -> bool:
    """Whether `ovs-dpctl dump-flows DP` lists exactly `flow` (as given to add-flow) with an empty action list,
    which dump-flows prints as `actions:drop`."""
    return any(line.startswith(flow + ", ") and line.rstrip().endswith(" actions:drop") for line in dump.splitlines())


def ovs_show(text: str) -> dict:
    """`ovs-dpctl show DP`: {'hit', 'missed', 'lost'} of the lookups line and {'ports': {no: name}}.
    Raises HookError when the lookups line is missing (not a datapath's output)."""
    out: dict = {"ports": {}}
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("lookups:"):
            for field in line.split()[1:]:
                name, _sep, value = field.partition(":")
                if name in ("hit", "missed", "lost") and value.isdigit():
                    out[name] = int(value)
        elif line.startswith("port ") and ":" in line:
            number, _sep, rest = line[5:].partition(":")
            if number.strip().isdigit() and rest.split():
                out["ports"][int(number)] = rest.split()[0]
    if "hit" not in out:
        raise HookError(f"no 'lookups: hit:' line in ovs-dpctl show output: {text[:200]!r}")
    return out
