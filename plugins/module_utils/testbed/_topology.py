# Copyright: (c) 2026, xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Topology spec validation and planning for the netns_topology module.

PRIVATE to the xdplab.testbed collection: no stability promise outside it.

Pure logic only (no kernel access): ``normalize()`` turns module options into a validated ``Topology``
(every bad value raises ``TopologyError`` naming it, before anything is changed), ``plan()`` compares it
with a live snapshot (read by the module through netlink) and returns the actions that make the live state
match, and ``view()`` renders either side in the same shape for diffs.

Live snapshot shape (what the module reads)::

    {netns: None (absent) | {"lo_up": bool,
                             "sysctls": {key: str},
                             "links": {ifname: {"ifindex": int, "kind": str | None, "mac": str, "mtu": int,
                                                "up": bool, "addresses": [cidr, ...], "queues": int,
                                                "gro": bool | None,
                                                "peer": {"netns": str, "ifname": str} | None}}}}
"""

from __future__ import annotations

import copy
import ipaddress
import re
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.xdplab.testbed.plugins.module_utils.common import _validate

MTU_MIN = 68  # IPv4 minimum; veth accepts 68..65535 (ETH_MAX_MTU)
MTU_MAX = 65535
QUEUES_MAX = 256
_MAC_RE = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}\Z")


class TopologyError(ValueError):
    """A bad spec value; the message names it."""


@dataclass(frozen=True)
class End:
    netns: str
    ifname: str
    addresses: tuple[str, ...] | None  # canonical CIDRs; None = leave the addresses alone
    mac: str | None


@dataclass(frozen=True)
class Link:
    name: str
    a: End
    b: End
    mtu: int | None
    queues: int | None
    gro: bool | None

    @property
    def ends(self) -> tuple[End, End]:
        return (self.a, self.b)


@dataclass(frozen=True)
class Topology:
    namespaces: tuple[str, ...]
    links: tuple[Link, ...]
    sysctls: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def referenced(self) -> tuple[str, ...]:
        """The namespaces to read: those listed, then those only named by link ends."""
        extra = (e.netns for link in self.links for e in link.ends)
        return tuple(dict.fromkeys((*self.namespaces, *extra)))


@dataclass(frozen=True)
class Action:
    """One change. ``op`` is one of OPS; ``netns``/``ifname`` locate it; ``value`` carries the new setting."""

    op: str
    netns: str
    ifname: str | None = None
    value: Any = None
    link: Link | None = None

    def describe(self) -> str:
        where = f"{self.netns}/{self.ifname}" if self.ifname else self.netns
        return f"{self.op} {where}" + ("" if self.value is None else f" {self.value}")


OPS = (
    "delete_link",  # remove a conflicting interface (wrong kind/peer/queues) before creating the pair
    "create_netns",
    "lo_up",
    "create_veth",
    "set_mac",
    "set_mtu",
    "set_gro",
    "del_addr",
    "add_addr",
    "set_up",
    "sysctl",
    "delete_veth",  # state=absent
    "delete_netns",  # state=absent
)


# ---------------------------------------------------------------- validation


def check_netns_name(name: Any, where: str = "namespace") -> str:
    """The collection's one namespace-name rule (_validate.netns_name), as a TopologyError."""
    try:
        return _validate.netns_name(name, where)
    except _validate.ValidationError as exc:
        raise TopologyError(str(exc)) from None


def check_ifname(name: Any, where: str) -> str:
    """The collection's one interface-name rule (_validate.ifname), as a TopologyError."""
    try:
        return _validate.ifname(name, where)
    except _validate.ValidationError as exc:
        raise TopologyError(str(exc)) from None


def check_cidr(value: Any, where: str) -> str:
    """Canonical 'address/prefixlen'; a bare address or a network address with host bits is refused."""
    if not isinstance(value, str) or "/" not in value:
        raise TopologyError(f"{where}: address {value!r} is not in CIDR form (e.g. 198.18.0.1/24)")
    try:
        iface = ipaddress.ip_interface(value.strip())
    except ValueError as exc:
        raise TopologyError(f"{where}: address {value!r} is not a valid CIDR ({exc})") from None
    if iface.ip == iface.network.network_address and iface.network.prefixlen < iface.max_prefixlen - 1:
        raise TopologyError(f"{where}: address {value!r} is a network address, not a host address")
    return f"{iface.ip.compressed}/{iface.network.prefixlen}"


def check_mac(value: Any, where: str) -> str:
    mac = str(value).strip().lower().replace("-", ":")
    if not _MAC_RE.match(mac):
        raise TopologyError(f"{where}: MAC address {value!r} is not of the form 02:00:00:00:00:01")
    if int(mac[:2], 16) & 1:
        raise TopologyError(f"{where}: MAC address {value!r} is multicast (low bit of the first octet set)")
    if mac == "00:00:00:00:00:00":
        raise TopologyError(f"{where}: MAC address {value!r} is all zeros")
    return mac


def _check_int(value: Any, lo: int, hi: int, what: str, where: str) -> int | None:
    if value is None:
        return None
    try:
        number = int(value)
        if isinstance(value, bool) or (isinstance(value, float) and number != value):
            raise ValueError
    except (TypeError, ValueError):
        raise TopologyError(f"{where}: {what} {value!r} is not an integer") from None
    if not lo <= number <= hi:
        raise TopologyError(f"{where}: {what} {value!r} is out of range {lo}..{hi}")
    return number


def check_sysctl_key(key: Any, where: str) -> str:
    """Only net.* keys are per network namespace; anything else would change the whole machine."""
    if not isinstance(key, str) or not key:
        raise TopologyError(f"{where}: sysctl {key!r} must be a non-empty string")
    try:
        dotted = _validate.sysctl_dotted(key)  # sysctl(8)'s forms: net.ipv4.conf.eth0/1.x = net/ipv4/conf/eth0.1/x
    except _validate.ValidationError as exc:
        raise TopologyError(f"{where}: {exc}") from None
    if not dotted.startswith("net."):
        raise TopologyError(f"{where}: sysctl {key!r} is not a per-namespace net.* key")
    return dotted


def _end(raw: Any, link_name: str, side: str, namespaces: set[str] | None) -> End:
    where = f"link {link_name}: end {side}"
    if not isinstance(raw, dict):
        raise TopologyError(f"{where} must be a dict with netns and ifname, got {raw!r}")
    unknown = set(raw) - {"netns", "ifname", "address", "mac"}
    if unknown:
        raise TopologyError(f"{where}: unknown key(s) {sorted(unknown)}")
    netns = check_netns_name(raw.get("netns"), where)
    if namespaces is not None and netns not in namespaces:
        raise TopologyError(f"{where} names undefined host/namespace {netns!r} (not in namespaces)")
    ifname = check_ifname(raw.get("ifname"), where)
    addresses = raw.get("address")
    if addresses is not None:
        if isinstance(addresses, str):
            addresses = [addresses]
        if not isinstance(addresses, list):
            raise TopologyError(f"{where}: address {addresses!r} must be a CIDR string or a list of them")
        addresses = tuple(dict.fromkeys(check_cidr(a, where) for a in addresses))
    mac = raw.get("mac")
    return End(netns, ifname, addresses, None if mac in (None, "") else check_mac(mac, where))


def normalize(
    namespaces: list[Any] | None,
    links: list[Any] | None,
    sysctls: dict[str, Any] | None = None,
    ends_in_namespaces: bool = True,
) -> Topology:
    """Validate the whole spec (raising on the first bad value) and return it in canonical form.

    ``ends_in_namespaces``: link ends must name a namespace of ``namespaces`` (state present). For state absent
    it is False: ``namespaces`` lists what to delete, and a link may be removed from namespaces that stay.
    """
    names: list[str] = []
    for name in namespaces or []:
        check_netns_name(name)
        if name in names:
            raise TopologyError(f"namespace {name!r} is listed twice")
        names.append(name)
    known = set(names)
    seen_if: dict[tuple[str, str], str] = {}
    seen_names: set[str] = set()
    out: list[Link] = []
    for index, raw in enumerate(links or []):
        if not isinstance(raw, dict):
            raise TopologyError(f"links[{index}] must be a dict with a and b, got {raw!r}")
        unknown = set(raw) - {"name", "a", "b", "mtu", "queues", "gro"}
        if unknown:
            raise TopologyError(f"links[{index}]: unknown key(s) {sorted(unknown)}")
        for side in ("a", "b"):
            if not isinstance(raw.get(side), dict):
                raise TopologyError(f"links[{index}]: end {side} {raw.get(side)!r} must be a dict with netns, ifname")
        name = raw.get("name") or (
            f"{raw['a'].get('netns')}:{raw['a'].get('ifname')}-{raw['b'].get('netns')}:{raw['b'].get('ifname')}"
        )
        if name in seen_names:
            raise TopologyError(f"link name {name!r} is used twice")
        seen_names.add(name)
        a = _end(raw["a"], name, "a", known if ends_in_namespaces else None)
        b = _end(raw["b"], name, "b", known if ends_in_namespaces else None)
        for end in (a, b):
            key = (end.netns, end.ifname)
            if key in seen_if:
                raise TopologyError(
                    f"link {name}: interface {end.ifname!r} in namespace {end.netns!r} is already used by link"
                    f" {seen_if[key]}"
                )
            seen_if[key] = name
        mtu = _check_int(raw.get("mtu"), MTU_MIN, MTU_MAX, "mtu", f"link {name}")
        queues = _check_int(raw.get("queues"), 1, QUEUES_MAX, "queues", f"link {name}")
        gro = raw.get("gro")
        if gro is not None and not isinstance(gro, bool):
            raise TopologyError(f"link {name}: gro {gro!r} must be true, false or unset")
        out.append(Link(name, a, b, mtu, queues, gro))
    clean_sysctls: dict[str, dict[str, str]] = {}
    for netns, settings in (sysctls or {}).items():
        where = f"sysctls[{netns!r}]"
        if netns not in known:
            raise TopologyError(f"{where}: names undefined namespace {netns!r} (not in namespaces)")
        if not isinstance(settings, dict):
            raise TopologyError(f"{where} must be a dict of key: value, got {settings!r}")
        clean_sysctls[netns] = {}
        for key, value in settings.items():
            if isinstance(value, bool):
                value = int(value)
            if not isinstance(value, (str, int)) or any(c in str(value) for c in "\n\0"):
                raise TopologyError(f"{where}: value {value!r} of {key!r} must be a string or an integer")
            clean_sysctls[netns][check_sysctl_key(key, where)] = str(value).strip()
    return Topology(tuple(names), tuple(out), clean_sysctls)


# ------------------------------------------------------------------ planning


def _pair_ok(link: Link, live: dict[str, Any]) -> bool:
    """Both ends exist in their namespaces as one veth pair with the requested queue count."""
    got = [((live.get(e.netns) or {}).get("links") or {}).get(e.ifname) for e in link.ends]
    if not all(got):
        return False
    for here, there in ((link.a, link.b), (link.b, link.a)):
        state = live[here.netns]["links"][here.ifname]
        if state.get("kind") != "veth" or state.get("peer") != {"netns": there.netns, "ifname": there.ifname}:
            return False
        if link.queues is not None and state.get("queues") != link.queues:
            return False
    return True


def _drop(work: dict[str, Any], netns: str, ifname: str) -> None:
    """Remove an interface and, as the kernel does for a veth, its peer from a working snapshot."""
    state = (work.get(netns) or {}).get("links") or {}
    gone = state.pop(ifname, None)
    peer = (gone or {}).get("peer")
    if peer:
        ((work.get(peer["netns"]) or {}).get("links") or {}).pop(peer["ifname"], None)


def _plan_present(topo: Topology, live: dict[str, Any]) -> list[Action]:
    actions: list[Action] = []
    for ns in topo.namespaces:
        state = live.get(ns)
        if state is None:
            actions += [Action("create_netns", ns), Action("lo_up", ns)]
        elif not state.get("lo_up"):
            actions.append(Action("lo_up", ns))
    # Deleting a wrong end also deletes its veth peer, which may be an end of another link of the spec:
    # track deletions on a working copy so no interface is deleted twice. (A good pair never loses an end
    # this way: its ends are each other's peers, and an interface belongs to one link only.)
    work = copy.deepcopy(live)
    fresh: set[str] = set()
    for link in topo.links:
        if _pair_ok(link, live):
            continue
        fresh.add(link.name)
        for e in link.ends:
            if ((work.get(e.netns) or {}).get("links") or {}).get(e.ifname):
                actions.append(Action("delete_link", e.netns, e.ifname, link=link))
                _drop(work, e.netns, e.ifname)
    for link in topo.links:
        if link.name in fresh:
            actions.append(Action("create_veth", link.a.netns, link.a.ifname, value=link.b, link=link))
        for e in link.ends:
            cur = {} if link.name in fresh else live[e.netns]["links"][e.ifname]
            if e.mac and cur.get("mac") != e.mac:
                actions.append(Action("set_mac", e.netns, e.ifname, e.mac, link))
            if link.mtu is not None and cur.get("mtu") != link.mtu:
                actions.append(Action("set_mtu", e.netns, e.ifname, link.mtu, link))
            if link.gro is not None and cur.get("gro") != link.gro:
                actions.append(Action("set_gro", e.netns, e.ifname, link.gro, link))
            if e.addresses is not None:
                have = list(cur.get("addresses") or [])
                actions += [Action("del_addr", e.netns, e.ifname, a, link) for a in have if a not in e.addresses]
                actions += [Action("add_addr", e.netns, e.ifname, a, link) for a in e.addresses if a not in have]
            if not cur.get("up"):
                actions.append(Action("set_up", e.netns, e.ifname, True, link))
    for ns, settings in topo.sysctls.items():
        have = (live.get(ns) or {}).get("sysctls") or {}
        for key, value in settings.items():
            if _sysctl_norm(have.get(key)) != _sysctl_norm(value):
                actions.append(Action("sysctl", ns, key, value))
    return actions


def _sysctl_norm(value: str | None) -> str | None:
    return None if value is None else " ".join(str(value).split())


def _plan_absent(topo: Topology, live: dict[str, Any]) -> list[Action]:
    actions: list[Action] = []
    doomed = {ns for ns in topo.namespaces if live.get(ns) is not None}
    for link in topo.links:
        # Deleting one end of a veth deletes its peer; a namespace deletion takes its veths with it.
        if link.a.netns in doomed or link.b.netns in doomed:
            continue
        for e in link.ends:
            if ((live.get(e.netns) or {}).get("links") or {}).get(e.ifname):
                actions.append(Action("delete_veth", e.netns, e.ifname, link=link))
                break
    actions += [Action("delete_netns", ns) for ns in topo.namespaces if ns in doomed]
    return actions


# -------------------------------------------------------------------- namespaces found in place

def found_undo(action: Action, live: dict[str, Any], saved: dict[str, Any]) -> dict[str, Any]:
    """What undoing ``action`` needs, for a namespace this collection did not create (found in place).

    ``saved`` is what the namespace's ledger entry already holds (``links_created``, ``links``,
    ``lo_was_down``, ``sysctls``); the result is ``saved`` plus this action's part. A value already saved
    is kept (it is the one from before the first run), and an interface this collection created needs
    nothing (it goes as a whole). Deleting an interface that was there before is refused: undo could
    not bring it back. Raises TopologyError naming the interface."""
    out = copy.deepcopy(saved)
    created = set(out.get("links_created") or [])
    op, ns, ifname, value = action.op, action.netns, action.ifname, action.value
    if op in ("delete_link", "delete_veth"):
        if ifname not in created:
            raise TopologyError(f"interface {ifname!r} in namespace {ns!r} was there before this collection came "
                                "(the namespace is not one it created): it is not deleted; rename the link's end "
                                "or remove that interface yourself")
        return out
    if op == "create_veth":
        out["links_created"] = sorted(created | {ifname})
        return out
    if op == "lo_up":
        out.setdefault("lo_was_down", True)
        return out
    if op == "sysctl":
        have = ((live.get(ns) or {}).get("sysctls") or {}).get(ifname)
        out.setdefault("sysctls", {}).setdefault(ifname, have)
        return out
    cur = ((live.get(ns) or {}).get("links") or {}).get(ifname)
    if ifname in created or cur is None:  # ours, or made by this very run (it was not there when read)
        return out
    link = out.setdefault("links", {}).setdefault(ifname, {})
    if op in ("set_mac", "set_mtu", "set_gro"):
        field_ = op[len("set_"):]
        link.setdefault(field_, cur.get(field_))
    elif op == "set_up":
        link.setdefault("up", bool(cur.get("up")))
    elif op == "add_addr":
        if value in link.get("addresses_removed", []):
            link["addresses_removed"].remove(value)
        else:
            link.setdefault("addresses_added", [])
            if value not in link["addresses_added"]:
                link["addresses_added"].append(value)
    elif op == "del_addr":
        if value in link.get("addresses_added", []):
            link["addresses_added"].remove(value)
        else:
            link.setdefault("addresses_removed", [])
            if value not in link["addresses_removed"]:
                link["addresses_removed"].append(value)
    return out


def keep_foreign(actions: list[Action], recorded: dict[str, dict], ours: set[str]) -> tuple[list[Action], list[str]]:
    """state=absent with a ledger: only what a run of ours made is deleted.

    ``recorded`` maps a namespace to its ledger entry, ``ours`` names the namespaces a run of ours
    created. A namespace not ours is kept; a veth is deleted only when one of its ends is in a namespace
    of ours or its entry says it was created there (``undo_found.links_created``). Returns (the actions
    left, what was kept: ``netns`` or ``netns/ifname``)."""
    kept = sorted({a.netns for a in actions if a.op == "delete_netns" and a.netns not in ours})
    actions = [a for a in actions if not (a.op == "delete_netns" and a.netns in kept)]

    def made_by_us(a: Action) -> bool:
        ends = a.link.ends if a.link is not None else ()
        made = {e.netns: ((recorded.get(e.netns) or {}).get("undo_found") or {}).get("links_created", ())
                for e in ends}
        return any(e.netns in ours or e.ifname in made[e.netns] for e in ends)
    kept += sorted(f"{a.netns}/{a.ifname}" for a in actions if a.op == "delete_veth" and not made_by_us(a))
    return [a for a in actions if a.op != "delete_veth" or made_by_us(a)], kept


def plan(topo: Topology, live: dict[str, Any], state: str = "present") -> list[Action]:
    """Actions, in execution order, that bring ``live`` to ``topo`` (present) or remove it (absent)."""
    if state == "present":
        return _plan_present(topo, live)
    if state == "absent":
        return _plan_absent(topo, live)
    raise TopologyError(f"state {state!r} is not present or absent")


# -------------------------------------------------------------------- views


def view_live(topo: Topology, live: dict[str, Any]) -> dict[str, Any]:
    """The part of the live state the spec talks about, for diff 'before'/'after'."""
    out: dict[str, Any] = {}
    for ns in topo.referenced:
        state = live.get(ns)
        if state is None:
            continue
        links = {}
        for link in topo.links:
            for here in link.ends:
                cur = (state.get("links") or {}).get(here.ifname) if here.netns == ns else None
                if cur is None:
                    continue
                links[here.ifname] = {
                    "peer": cur.get("peer"),
                    "mtu": cur.get("mtu"),
                    "mac": cur.get("mac"),
                    "addresses": sorted(cur.get("addresses") or []),
                    "up": bool(cur.get("up")),
                }
                if link.gro is not None:
                    links[here.ifname]["gro"] = cur.get("gro")
        out[ns] = {"links": links}
        if topo.sysctls.get(ns):
            out[ns]["sysctls"] = {k: (state.get("sysctls") or {}).get(k) for k in topo.sysctls[ns]}
    return out


def view_desired(topo: Topology, live: dict[str, Any], state: str = "present") -> dict[str, Any]:
    """What view_live() will show once the plan is applied (unknowns, e.g. a random MAC, kept from live)."""
    if state == "absent":
        after = view_live(topo, live)
        for ns in topo.namespaces:
            after.pop(ns, None)
        for link in topo.links:
            for e in link.ends:
                after.get(e.netns, {}).get("links", {}).pop(e.ifname, None)
        return after
    before = view_live(topo, live)
    out: dict[str, Any] = {}
    for ns in topo.namespaces:
        out[ns] = {"links": {}}
        if topo.sysctls.get(ns):
            out[ns]["sysctls"] = dict(topo.sysctls[ns])
    for link in topo.links:
        fresh = not _pair_ok(link, live)
        for here, there in ((link.a, link.b), (link.b, link.a)):
            old = {} if fresh else before.get(here.netns, {}).get("links", {}).get(here.ifname, {})
            entry = {
                "peer": {"netns": there.netns, "ifname": there.ifname},
                "mtu": link.mtu if link.mtu is not None else old.get("mtu", 1500),
                "mac": here.mac or old.get("mac", "(random)"),
                "addresses": sorted(here.addresses) if here.addresses is not None else old.get("addresses", []),
                "up": True,
            }
            if link.gro is not None:
                entry["gro"] = link.gro
            out[here.netns]["links"][here.ifname] = entry
    return out
