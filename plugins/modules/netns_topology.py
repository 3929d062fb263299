#!/usr/bin/python
# Copyright: (c) 2026, xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

# ruff: noqa: E402  (Ansible module layout: DOCUMENTATION before the imports)

DOCUMENTATION = r"""
module: netns_topology
short_description: Network namespaces joined by veth pairs, with addresses, MTU, MAC and link state
version_added: 0.1.0
description:
  - Creates or removes named network namespaces (as C(ip netns add) does, under C(/run/netns)) and veth pairs
    whose ends are created directly in their namespaces (nothing ever appears in the namespace the module runs in).
  - Sets addresses, MTU, MAC, GRO and link state, brings the loopback up in every namespace, and sets per-namespace
    C(net.*) sysctls.
  - Idempotent, it reads the live state through netlink (pyroute2) and changes only what differs. A pair whose ends
    exist but are not each other's veth peer (or have another queue count) is deleted and created again.
  - The whole spec is validated before anything changes; a kernel error halfway rolls back the namespaces and
    pairs this call created.
author:
  - xdplab.testbed contributors (!UNKNOWN)
requirements:
  - pyroute2 >= 0.9.1
  - root (CAP_NET_ADMIN, CAP_SYS_ADMIN)
  - ethtool netlink in the kernel (CONFIG_ETHTOOL_NETLINK), only when O(links[].gro) is set
options:
  namespaces:
    description:
      - Names of the network namespaces. At most 32 bytes (they become file names under C(/run/netns) and appear
        in inventories and logs), no C(/), no C(..), no NUL or whitespace, no leading C(-).
      - With O(state=absent) these namespaces are deleted, with every interface in them.
    type: list
    elements: str
    default: []
  links:
    description:
      - veth pairs. With O(state=present) each end names a namespace from O(namespaces).
      - With O(state=absent) the pairs are deleted; their ends may name namespaces not in O(namespaces),
        which then stay (only the pair goes).
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: Label used in messages and results. Default C(<a.netns>:<a.ifname>-<b.netns>:<b.ifname>).
        type: str
      mtu:
        description: MTU of both ends, 68..65535. Unset leaves it as it is (1500 for a new pair).
        type: int
      queues:
        description:
          - Number of RX and TX queues of both ends, fixed when the pair is created (1..256). Unset leaves
            existing pairs alone and creates new ones with the kernel default (1).
        type: int
      gro:
        description:
          - GRO on both ends. On a veth, GRO on makes the receiving end run NAPI, so frames sent by
            C(XDP_TX) or C(XDP_REDIRECT) from the peer are received even when no XDP program is attached to
            the receiving end (otherwise they are dropped). Unset leaves it as it is (off for a new pair).
        type: bool
      a:
        description: One end.
        type: dict
        required: true
        suboptions: &end
          netns:
            description: Namespace of this end; with O(state=present) it must be listed in O(namespaces).
            type: str
            required: true
          ifname:
            description: Interface name, at most 15 bytes (IFNAMSIZ), no C(/), C(:) or whitespace.
            type: str
            required: true
          address:
            description:
              - Addresses in CIDR form (C(198.18.0.1/24), C(2001:db8::1/64)), a string or a list.
              - When given, the end has exactly these addresses (IPv6 link-local ones are left alone);
                when unset, addresses are not touched.
            type: list
            elements: str
          mac:
            description: Unicast MAC address. Unset keeps the kernel's random one.
            type: str
      b:
        description: The other end.
        type: dict
        required: true
        suboptions: *end
  sysctls:
    description:
      - Per-namespace sysctls, a dict of namespace to a dict of key and value.
      - Only C(net.*) keys (the per-namespace ones) are accepted, e.g. C(net.ipv4.ip_forward).
      - Ignored with O(state=absent).
    type: dict
    default: {}
  state:
    description:
      - V(present) creates and sets everything; V(absent) deletes exactly the given namespaces and the given links
        (a link whose namespace is deleted goes with it).
    type: str
    choices: [present, absent]
    default: present
  ledger_dir:
    description:
      - The state ledger directory. When given, every namespace this module creates is recorded there
        before it is created (then with its inode), so that C(xdplab.testbed.ledger state=cleaned) can remove
        it after a killed run.
      - A namespace that already existed (found in place) is never removed. Before the module changes
        anything in it, its entry (marked C(found), with its inode) records what undoing that needs, namely the
        interfaces made in it, and the previous address list, MTU, MAC, GRO, link and loopback state and
        sysctl values of its own interfaces; C(xdplab.testbed.ledger state=cleaned) puts them back.
        Deleting an interface found in such a namespace (one in the way of the spec's link) is refused
        before anything is changed, naming it.
      - With O(state=absent), only namespaces recorded as created are deleted, and only the veth pairs a
        run of ours made; the others are kept and listed in RV(kept).
    type: path
  run_id:
    description: Run id written into the ledger entries (with O(ledger_dir)).
    type: str
extends_documentation_fragment:
  - xdplab.testbed.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details: before/after of the namespaces and links named in the spec.
notes:
  - Runs where the namespaces live; in the virtual test bed that is the controller (C(localhost)).
  - Module results are read from the kernel after the change, so MACs chosen by the kernel and ifindexes are
    available to later tasks.
seealso:
  - plugin: xdplab.testbed.netns
    plugin_type: connection
"""

EXAMPLES = r"""
- name: Generator and DUT joined by one veth pair
  xdplab.testbed.netns_topology:
    namespaces: [xdplab-gen, xdplab-dut]
    links:
      - name: gen-dut
        mtu: 1500
        gro: true
        a: {netns: xdplab-gen, ifname: veth0, address: 198.18.0.1/24}
        b: {netns: xdplab-dut, ifname: veth0, address: [198.18.0.2/24], mac: "02:00:00:00:00:02"}
    sysctls:
      xdplab-dut: {net.ipv4.ip_forward: 1}
  register: topo

- name: Use the DUT end's MAC and ifindex
  ansible.builtin.debug:
    msg: "{{ topo.namespaces['xdplab-dut'].links.veth0.mac }} {{ topo.namespaces['xdplab-dut'].links.veth0.ifindex }}"

- name: Remove both namespaces and everything in them
  xdplab.testbed.netns_topology:
    namespaces: [xdplab-gen, xdplab-dut]
    state: absent
"""

RETURN = r"""
kept:
  description:
    - With O(ledger_dir) and O(state=absent), the namespaces (C(name)) and veth ends (C(netns/ifname)) left
      in place because no run of ours created them.
  returned: always
  type: list
  elements: str
  sample: [xdplab-dut]
namespaces:
  description:
    - Per namespace of the spec, read from the kernel after the change (before it, in check mode).
    - C(links) has every interface of the namespace but C(lo).
  returned: always
  type: dict
  sample:
    xdplab-dut:
      exists: true
      links:
        veth0:
          ifindex: 2
          mac: "02:00:00:00:00:02"
          mtu: 1500
          up: true
          kind: veth
          addresses: ["198.18.0.2/24"]
          peer: {netns: xdplab-gen, ifname: veth0, ifindex: 2}
actions:
  description: The changes made (or, in check mode, that would be made), in order.
  returned: always
  type: list
  elements: str
  sample: ["create_netns xdplab-gen", "create_veth xdplab-gen/veth0 End(netns='xdplab-dut', ...)"]
"""

import errno
import os
import traceback
from typing import Any

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _netns_switch, _validate
from ansible_collections.xdplab.testbed.plugins.module_utils.state import _ledger
from ansible_collections.xdplab.testbed.plugins.module_utils.testbed._topology import (
    Action,
    Topology,
    TopologyError,
    found_undo,
    keep_foreign,
    normalize,
    plan,
    view_desired,
    view_live,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning._ethtool_netlink import EthtoolError, EthtoolNetlink

try:
    from pyroute2 import IPRoute
    from pyroute2 import netns as pyr_netns
    from pyroute2.netlink.exceptions import NetlinkError
except ImportError:
    PYROUTE2_IMPORT_ERROR: str | None = traceback.format_exc()
    IPRoute = NetlinkError = pyr_netns = None  # type: ignore[assignment,misc]
else:
    PYROUTE2_IMPORT_ERROR = None

NETNS_RUN_DIR = "/run/netns"
IFF_UP = 0x1
RT_SCOPE_LINK = 253


def netns_path(name: str) -> str:
    return os.path.join(NETNS_RUN_DIR, name)


def netns_exists(name: str) -> bool:
    # A namespace is an nsfs bind mount; a leftover plain file is not one.
    return os.path.ismount(netns_path(name))


class Kernel:
    """rtnetlink per namespace (one socket each), ethtool netlink for GRO, procfs for sysctls."""

    def __init__(self) -> None:
        self._ipr: dict[str, Any] = {}

    def ipr(self, ns: str):
        if ns not in self._ipr:
            # flags=0: never create the namespace as a side effect of opening a socket in it.
            self._ipr[ns] = IPRoute(netns=ns, flags=0)
        return self._ipr[ns]

    def forget(self, ns: str) -> None:
        sock = self._ipr.pop(ns, None)
        if sock is not None:
            sock.close()

    def close(self) -> None:
        for ns in list(self._ipr):
            self.forget(ns)

    # ---------------------------------------------------------------- reading

    def read(self, topo: Topology) -> dict[str, Any]:
        live: dict[str, Any] = {}
        present = [ns for ns in topo.referenced if netns_exists(ns)]
        for ns in topo.referenced:
            live[ns] = self._read_ns(ns, present, topo) if ns in present else None
        return live

    def _nsids(self, ns: str, present: list[str]) -> dict[int, str]:
        """nsid (as seen from ns) -> name, for the other namespaces of the spec."""
        out: dict[int, str] = {}
        for other in present:
            if other == ns:
                continue
            fd = os.open(netns_path(other), os.O_RDONLY)
            try:
                got = self.ipr(ns).get_netnsid(fd=fd) or {}
            finally:
                os.close(fd)
            if got.get("nsid") is not None and got["nsid"] >= 0:
                out[got["nsid"]] = other
        return out

    def _read_ns(self, ns: str, present: list[str], topo: Topology) -> dict[str, Any]:
        ipr = self.ipr(ns)
        links: dict[str, Any] = {}
        by_index: dict[int, str] = {}
        raw_peer: dict[str, tuple[int | None, int | None]] = {}
        lo_up = False
        for msg in ipr.link("dump"):
            name = msg.get("ifname")
            up = bool(msg["flags"] & IFF_UP)
            if name == "lo":
                lo_up = up
                continue
            by_index[msg["index"]] = name
            links[name] = {
                "ifindex": msg["index"],
                "kind": msg.get(("linkinfo", "kind")),
                "mac": (msg.get("address") or "").lower(),
                "mtu": msg.get("mtu"),
                "up": up,
                "queues": msg.get("num_rx_queues"),
                "addresses": [],
                "peer": None,
            }
            raw_peer[name] = (msg.get("link"), msg.get("link_netnsid"))
        for msg in ipr.addr("dump"):
            name = by_index.get(msg["index"])
            if name is None or msg["scope"] == RT_SCOPE_LINK:
                continue
            links[name]["addresses"].append(f"{msg.get('address')}/{msg['prefixlen']}")
        nsids = self._nsids(ns, present) if any(v[1] is not None for v in raw_peer.values()) else {}
        for name, (peer_index, peer_nsid) in raw_peer.items():
            if links[name]["kind"] != "veth" or not peer_index:
                continue
            if peer_nsid is None:
                peer_ns, peer_name = ns, by_index.get(peer_index)
            else:
                peer_ns = nsids.get(peer_nsid)
                peer_name = self._ifname(peer_ns, peer_index) if peer_ns else None
            if peer_ns and peer_name:
                links[name]["peer"] = {"netns": peer_ns, "ifname": peer_name}
                links[name]["peer_ifindex"] = peer_index
        for link in topo.links:
            if link.gro is None:
                continue
            for end in link.ends:
                if end.netns == ns and end.ifname in links:
                    links[end.ifname]["gro"] = self.read_gro(ns, end.ifname)
        sysctls = {key: self.read_sysctl(ns, key) for key in topo.sysctls.get(ns, {})}
        return {"lo_up": lo_up, "links": links, "sysctls": sysctls}

    def _ifname(self, ns: str, index: int) -> str | None:
        found = self.ipr(ns).link("get", index=index)
        return found[0].get("ifname") if found else None

    def _in_netns(self, ns: str, func):
        """Run func() with this thread in namespace ns (procfs /proc/sys/net follows the caller's namespace)."""
        return _netns_switch.call_in_netns(ns, func, NETNS_RUN_DIR)

    def read_sysctl(self, ns: str, key: str) -> str | None:
        path = "/proc/sys/" + _validate.sysctl_path(key)

        def read() -> str | None:
            try:
                with open(path, encoding="ascii") as handle:
                    return handle.read().strip()
            except FileNotFoundError:
                return None

        return self._in_netns(ns, read)

    def write_sysctl(self, ns: str, key: str, value: str) -> None:
        path = "/proc/sys/" + _validate.sysctl_path(key)

        def write() -> None:
            if not os.path.exists(path):
                raise TopologyError(f"sysctl {key!r} does not exist in namespace {ns!r} ({path})")
            with open(path, "w", encoding="ascii") as handle:
                handle.write(value)

        self._in_netns(ns, write)

    def read_gro(self, ns: str, ifname: str) -> bool | None:
        with EthtoolNetlink(netns=ns) as eth:
            try:
                return eth.get_features(ifname)["active"].get("rx-gro")
            except EthtoolError as exc:
                if exc.code == errno.ENODEV:  # listed a moment ago, going with its peer's namespace now
                    return None
                raise

    def write_gro(self, ns: str, ifname: str, value: bool) -> None:
        with EthtoolNetlink(netns=ns) as eth:
            eth.set_features(ifname, {"rx-gro": value})

    # ---------------------------------------------------------------- writing

    def index(self, ns: str, ifname: str) -> int:
        found = self.ipr(ns).link_lookup(ifname=ifname)
        if not found:
            raise TopologyError(f"interface {ifname!r} vanished from namespace {ns!r}")
        return found[0]

    def apply(self, action: Action, undo: list[tuple[str, str, str | None]]) -> None:
        op, ns, ifname, value = action.op, action.netns, action.ifname, action.value
        if op == "create_netns":
            if os.path.lexists(netns_path(ns)):  # stale file, not a mount (read() said the namespace is absent)
                os.unlink(netns_path(ns))
            pyr_netns.create(ns)
            undo.append(("netns", ns, None))
        elif op == "lo_up":
            self.ipr(ns).link("set", index=self.index(ns, "lo"), state="up")
        elif op == "create_veth":
            link = action.link
            extra = {} if link.queues is None else {"num_tx_queues": link.queues, "num_rx_queues": link.queues}
            with IPRoute() as here:
                here.link("add", ifname=ifname, kind="veth", net_ns_fd=netns_path(ns),
                          peer={"ifname": value.ifname, "net_ns_fd": netns_path(value.netns), **extra}, **extra)
            undo.append(("link", ns, ifname))
        elif op in ("delete_link", "delete_veth"):
            try:
                self.ipr(ns).link("del", index=self.index(ns, ifname))
            except (TopologyError, NetlinkError) as exc:  # already gone with its peer
                if isinstance(exc, NetlinkError) and exc.code != errno.ENODEV:
                    raise
        elif op == "set_mac":
            self.ipr(ns).link("set", index=self.index(ns, ifname), address=value)
        elif op == "set_mtu":
            self.ipr(ns).link("set", index=self.index(ns, ifname), mtu=value)
        elif op == "set_up":
            self.ipr(ns).link("set", index=self.index(ns, ifname), state="up")
        elif op in ("add_addr", "del_addr"):
            address, prefixlen = value.split("/")
            self.ipr(ns).addr("add" if op == "add_addr" else "del", index=self.index(ns, ifname),
                              address=address, prefixlen=int(prefixlen))
        elif op == "set_gro":
            self.write_gro(ns, ifname, value)
        elif op == "sysctl":
            self.write_sysctl(ns, ifname, value)
        elif op == "delete_netns":
            self.forget(ns)
            pyr_netns.remove(ns)
        else:  # pragma: no cover - plan() only emits the ops above
            raise TopologyError(f"unknown action {op!r}")

    def rollback(self, undo: list[tuple[str, str, str | None]]) -> list[str]:
        """Delete what this run created, newest first; returns what could not be removed."""
        left: list[str] = []
        for kind, ns, ifname in reversed(undo):
            try:
                if kind == "link":
                    if netns_exists(ns):
                        found = self.ipr(ns).link_lookup(ifname=ifname)
                        if found:
                            self.ipr(ns).link("del", index=found[0])
                else:
                    self.forget(ns)
                    if netns_exists(ns):
                        pyr_netns.remove(ns)
            except Exception as exc:  # keep undoing the rest; report what stayed
                left.append(f"{kind} {ns}/{ifname or ''}: {exc}")
        return left


def check_found(actions: list[Action], found: set[str], live: dict[str, Any], recorded: dict[str, dict]) -> None:
    """Run found_undo over the whole plan first: what it refuses (deleting an interface that was there
    before) fails the task before any change."""
    undo = {ns: (recorded.get(ns) or {}).get("undo_found") or {} for ns in found}
    for action in actions:
        if action.netns in found and action.op not in ("create_netns", "delete_netns"):
            undo[action.netns] = found_undo(action, live, undo[action.netns])


def record_found(ledger: str, entry: dict, action: Action, live: dict[str, Any], run_id: str | None) -> None:
    """Before acting in a namespace found in place: its ledger entry (``found``, its inode, and what
    undoing needs, from _topology.found_undo) gains this action's part. ``ledger state=cleaned`` then
    puts back what was changed and deletes only what was made, and never the namespace."""
    doc = _ledger.read(ledger, entry)
    saved = (doc or {}).get("undo_found") or {}
    undo = found_undo(action, live, saved)  # refuses to delete what was there before
    if doc is None:
        _ledger.record(ledger, entry, run_id, found=True, inode=os.stat(netns_path(action.netns)).st_ino,
                       undo_found=undo)
    elif undo != saved:
        _ledger.annotate(os.path.join(ledger, _ledger.entry_id(entry)), undo_found=undo)


def report(live: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for ns, state in live.items():
        if state is None:
            out[ns] = {"exists": False, "links": {}}
            continue
        links = {}
        for name, cur in state["links"].items():
            entry = {k: cur[k] for k in ("ifindex", "mac", "mtu", "up", "kind", "addresses")}
            entry["peer"] = None
            if cur.get("peer"):
                entry["peer"] = dict(cur["peer"], ifindex=cur.get("peer_ifindex"))
            if "gro" in cur:
                entry["gro"] = cur["gro"]
            links[name] = entry
        out[ns] = {"exists": True, "links": links}
        if state.get("sysctls"):
            out[ns]["sysctls"] = state["sysctls"]
    return out


END_SPEC = dict(
    netns=dict(type="str", required=True),
    ifname=dict(type="str", required=True),
    address=dict(type="list", elements="str"),
    mac=dict(type="str"),
)


ARGUMENT_SPEC = dict(
    namespaces=dict(type="list", elements="str", default=[]),
    links=dict(
        type="list",
        elements="dict",
        default=[],
        options=dict(
            name=dict(type="str"),
            mtu=dict(type="int"),
            queues=dict(type="int"),
            gro=dict(type="bool"),
            a=dict(type="dict", required=True, options=END_SPEC),
            b=dict(type="dict", required=True, options=END_SPEC),
        ),
    ),
    sysctls=dict(type="dict", default={}),
    state=dict(type="str", choices=["present", "absent"], default="present"),
    ledger_dir=dict(type="path"),
    run_id=dict(type="str"),
)


def _planned(module: AnsibleModule, topo: Topology, live: dict[str, Any]):
    """The plan, narrowed by the ledger: with state=absent only what a run of ours made is deleted.
    Returns (actions, kept, namespaces found in place)."""
    state, ledger = module.params["state"], module.params["ledger_dir"]
    actions = plan(topo, live, state)
    kept: list[str] = []
    recorded = ({e["key"]["name"]: e for _dummy, e in _ledger.entries(ledger) if e["kind"] == "netns"}
                if ledger else {})
    ours = {name for name, e in recorded.items() if not e.get("found")}
    # Namespaces that exist and that no run of ours created: what is done in them is recorded first.
    found = {ns for ns in topo.namespaces if live.get(ns) is not None and ns not in ours} if ledger else set()
    if ledger and state == "absent":
        actions, kept = keep_foreign(actions, recorded, ours)
    check_found(actions, found, live, recorded)  # refusals before anything is changed (check mode too)
    return actions, kept, found


def _apply(module: AnsibleModule, kernel: Kernel, actions: list[Action], found: set[str], live: dict[str, Any],
           undo: list, at: list) -> None:
    """Each action in turn, its ledger entry written before it acts; ``at[0]`` is the one under way."""
    ledger = module.params["ledger_dir"]
    for current in actions:
        at[0] = current
        entry = _ledger.check_entry("netns", {"name": current.netns}) if ledger else None
        if entry and current.netns in found and current.op not in ("create_netns", "delete_netns"):
            record_found(ledger, entry, current, live, module.params["run_id"])  # before acting
        if entry and current.op == "create_netns":
            path, _created = _ledger.record(ledger, entry, module.params["run_id"])  # before acting
        kernel.apply(current, undo)
        if entry and current.op == "create_netns":
            _ledger.annotate(path, inode=os.stat(netns_path(current.netns)).st_ino)
        elif entry and current.op == "delete_netns":
            _ledger.forget(ledger, entry)
            _ledger.forget_inside(ledger, current.netns)
    at[0] = None


def _fail_rolled_back(module: AnsibleModule, kernel: Kernel, undo: list, current: Action | None,
                      exc: Exception) -> None:
    """Undo what this task created, forget the ledger entries of namespaces rolled back, fail naming
    the action that failed and what could not be undone."""
    left = kernel.rollback(undo)
    kernel.close()
    ledger = module.params["ledger_dir"]
    for kind, ns, _ifname in undo if ledger else []:
        if kind == "netns" and not os.path.lexists(netns_path(ns)):  # rolled back: nothing to undo later
            _ledger.forget(ledger, _ledger.check_entry("netns", {"name": ns}))
    where = f" at '{current.describe()}'" if current is not None else ""
    msg = f"netns_topology failed{where}: {exc}"
    if undo:
        msg += "; rolled back what this run created" + (f", except: {'; '.join(left)}" if left else "")
    module.fail_json(msg=msg, exception=traceback.format_exc())


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    if PYROUTE2_IMPORT_ERROR:
        module.fail_json(msg=missing_required_lib("pyroute2"), exception=PYROUTE2_IMPORT_ERROR)
    state = module.params["state"]
    try:
        topo = normalize(module.params["namespaces"], module.params["links"],
                         module.params["sysctls"] if state == "present" else {},
                         ends_in_namespaces=state == "present")
    except TopologyError as exc:
        module.fail_json(msg=str(exc))

    kernel = Kernel()
    undo: list[tuple[str, str, str | None]] = []
    at: list[Action | None] = [None]
    try:
        live = kernel.read(topo)
        actions, kept, found = _planned(module, topo, live)
        result: dict[str, Any] = {"changed": bool(actions), "actions": [a.describe() for a in actions],
                                  "kept": kept}
        before = view_live(topo, live)
        if module.check_mode or not actions:
            after = view_desired(topo, live, state) if actions else before
            result["namespaces"] = report(live)
        else:
            _apply(module, kernel, actions, found, live, undo, at)
            kernel.close()  # sockets of deleted/recreated namespaces are stale
            new = kernel.read(topo)
            after = view_live(topo, new)
            result["namespaces"] = report(new)
        if module._diff:
            result["diff"] = {"before": before, "after": after}
        kernel.close()
        module.exit_json(**result)
    except Exception as exc:
        _fail_rolled_back(module, kernel, undo, at[0], exc)


if __name__ == "__main__":
    main()
