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
