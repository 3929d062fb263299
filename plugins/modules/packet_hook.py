#!/usr/bin/python
# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: packet_hook
short_description: A tc (cls_bpf), nftables or Open vSwitch drop hook on the DUT, recorded in the ledger first
version_added: "0.2.0"
description:
  - Puts the datapath hooks that the bench compares with XDP on an interface, and takes them away again,
    touching only what it made.
  - V(tc) adds a cls_bpf direct-action filter from a compiled object on the interface's clsact ingress,
    adding the clsact qdisc only when the interface has none; a filter of someone else's at the same
    preference and handle is refused, never replaced.
  - V(nft) loads a table that counts (a named counter) and drops everything arriving on the interface, at
    the inet prerouting hook (priority raw) or the netdev ingress hook; a table of that family and name that
    this collection did not make (the host's firewall) is refused, never replaced.
  - V(ovs) makes an Open vSwitch kernel datapath of its own with C(ovs-dpctl) (no ovs-vswitchd), adds the
    interface as its port and installs one flow, O(flow) (every IP packet of the port when unset), whose
    action is drop; the datapath's lookup hits count the dropped packets. That is the kernel's flow table
    on its own, the datapath the flow offload work compares XDP with. A datapath of that name that this
    collection did not make is refused, and so is a host where ovs-vswitchd runs (its datapaths are its own;
    ovs-dpctl(8) says not to change them beside it).
  - Before acting, the module records in the state ledger what undoing needs (whether it created the clsact
    qdisc, the filter's preference and handle, the table, the datapath), so that C(xdplab.testbed.ledger state=cleaned)
    removes exactly that after a killed run. V(absent) removes only what the ledger says it made.
  - Every name is checked before anything runs, and reaches the nftables ruleset or the tc command line only
    in a form they cannot read as anything else.
author:
  - xdplab.testbed contributors (!UNKNOWN)
requirements:
  - pyroute2 (reading qdiscs and filters)
  - tc (iproute2), nft (nftables), ovs-dpctl (openvswitch-switch) and the kernel's openvswitch module
extends_documentation_fragment:
  - xdplab.testbed.attributes
  - xdplab.testbed.object_ledger
attributes:
  check_mode:
    support: full
    details: Reads the interface's qdiscs, filters and tables and reports what it would do.
  diff_mode:
    support: none
    details: Reports C(created) and C(removed) instead.
options:
  type:
    description: The hook.
    type: str
    choices: [tc, nft, ovs]
    required: true
  interface:
    description: The interface, in the network namespace the module runs in.
    type: str
    required: true
  state:
    description: V(present) makes the hook; V(absent) removes what the ledger says this collection made.
    type: str
    choices: [present, absent]
    default: present
  object:
    description: With O(type=tc) and O(state=present), the compiled BPF object holding the cls_bpf program.
    type: path
  section:
    description: With O(type=tc), the ELF section of the program.
    type: str
    default: tc
  pref:
    description: With O(type=tc), the filter's preference.
    type: int
    default: 1
  handle:
    description: With O(type=tc), the filter's handle.
    type: int
    default: 1
  table:
    description: With O(type=nft), the table name.
    type: str
    default: xdplab_bench
  counter:
    description: With O(type=nft), the name of the counter of dropped packets.
    type: str
    default: xdplab_dropped
  datapath:
    description: With O(type=ovs), the datapath's name (also the name of its local port, an interface).
    type: str
    default: xdplab-ovs
  flow:
    description:
      - With O(type=nft), drop (and count) only this flow's packets; the others pass. Unset drops everything
        arriving on O(interface).
      - With O(type=ovs), the datapath's one flow; unset, every IP packet of O(interface). Packets that miss
        it go to the datapath's upcall, which has no listener, and are counted as lost.
    type: dict
    suboptions:
      src:
        description: Source IP address.
        type: str
      dst:
        description: Destination IP address.
        type: str
      proto:
        description: Transport protocol; needed with a port.
        type: str
        choices: [udp, tcp]
      sport:
        description: Source port.
        type: int
      dport:
        description: Destination port.
        type: int
  hook:
    description: With O(type=nft), V(prerouting) (family inet, priority raw) or V(ingress) (family netdev).
    type: str
    choices: [prerouting, ingress]
    default: prerouting
"""

EXAMPLES = r"""
- name: Drop with tc (cls_bpf) on the DUT port
  xdplab.testbed.packet_hook:
    type: tc
    interface: veth0
    object: /var/lib/xdplab/xdp/tc_drop.o

- name: Drop with nftables on the DUT port
  xdplab.testbed.packet_hook:
    type: nft
    interface: veth0
    hook: prerouting

- name: Drop one UDP flow with nftables at the netdev ingress hook
  xdplab.testbed.packet_hook:
    type: nft
    interface: veth0
    hook: ingress
    table: xdplab_scenarios
    counter: dropped
    flow: {src: 198.18.0.1, dst: 198.18.0.2, proto: udp, sport: 9, dport: 9}
- name: Drop one UDP flow in Open vSwitch's kernel datapath
  xdplab.testbed.packet_hook:
    type: ovs
    interface: igb0
    flow: {src: 198.18.0.1, dst: 198.18.0.2, proto: udp, sport: 9, dport: 9}
- name: Take the tc hook away again
  xdplab.testbed.packet_hook:
    type: tc
    interface: veth0
    state: absent
"""

RETURN = r"""
created:
  description: What the module made (V(clsact), V(filter), V(table), V(datapath), V(flow)).
  returned: always
  type: list
  elements: str
  sample: [clsact, filter]
removed:
  description: What the module removed.
  returned: always
  type: list
  elements: str
family:
  description: With O(type=nft), the table's family.
  returned: when O(type=nft)
  type: str
  sample: inet
ovs_flow:
  description: With O(type=ovs), the datapath flow as given to ovs-dpctl.
  returned: when O(type=ovs)
  type: str
  sample: in_port(1),eth(),eth_type(0x0800),ipv4(src=198.18.0.1,dst=198.18.0.2,proto=17,frag=no),udp(src=9,dst=9)
"""

import json
import os
import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _command, _process_identity, _validate
from ansible_collections.xdplab.testbed.plugins.module_utils.state import _ledger
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning._plan_and_snapshots import current_netns_name
from ansible_collections.xdplab.testbed.plugins.module_utils.xdp import _hooks
from ansible_collections.xdplab.testbed.plugins.module_utils.xdp._program_objects import XdpError, elf_programs

try:
    from pyroute2 import IPRoute
except ImportError:
    IPRoute = None


class Hook:
    def __init__(self, module: AnsibleModule) -> None:
        self.module = module
        self.p = module.params
        here = current_netns_name()
        self.netns = None if here == "host" else here

    def run(self, argv: list[str], what: str, data: str | None = None, hint: str = "") -> str:
        """Run argv; on failure fail naming `what`, the tool's message and `hint` (what to check)."""
        try:
            return _command.run(self.module, argv, what=what, data=data, binary_data=data is not None)[1]
        except _command.CommandError as exc:
            self.module.fail_json(**dict(exc.fail_kwargs(), msg=f"{exc}{hint}"))
            raise

    def entry(self) -> dict:
        key = {"interface": self.p["interface"]}
        if self.p["type"] == "nft":
            key = {"family": self.family, "table": self.p["table"]}
        elif self.p["type"] == "ovs":
            key = {"datapath": self.p["datapath"]}
        return _ledger.check_entry(self.p["type"], key, self.netns)

    def recorded(self) -> dict | None:
        path = os.path.join(self.p["ledger_dir"], _ledger.entry_id(self.entry()))
        try:
            with open(path, encoding="utf-8") as fh:
                return json.load(fh)
        except FileNotFoundError:
            return None

    # -- tc ------------------------------------------------------------------------------------
    def tc_state(self) -> tuple[bool, list[_hooks.TcFilter]]:
        with IPRoute() as ipr:
            found = ipr.link_lookup(ifname=self.p["interface"])
            if not found:
                self.module.fail_json(msg=f"interface {self.p['interface']!r} not found in this network namespace")
            qdiscs = ipr.get_qdiscs(index=found[0])
            has = any(q.get_attr("TCA_KIND") == "clsact" for q in qdiscs)
            filters = []
            if has:
                for f in ipr.get_filters(index=found[0], parent=_hooks.CLSACT_INGRESS):
                    if not f["handle"]:
                        continue  # the chain/preference header, not a filter
                    opts = f.get_attr("TCA_OPTIONS")
                    name = opts.get_attr("TCA_BPF_NAME") if opts is not None and hasattr(opts, "get_attr") else None
                    filters.append(_hooks.TcFilter(f["info"] >> 16, f["handle"], f.get_attr("TCA_KIND"), name))
        return has, filters

    def tc_present(self) -> dict:
        obj = self.p["object"]
        if not obj or not os.path.isfile(obj):
            raise _hooks.HookError(f"object {obj!r} not found (type=tc needs the compiled cls_bpf object)")
        with open(obj, "rb") as fh:
            progs = [p for p in elf_programs(fh.read(), obj) if p.section == self.p["section"]]
        if len(progs) != 1:
            raise _hooks.HookError(f"{obj}: {len(progs)} programs in section {self.p['section']!r}, need one")
        has, filters = self.tc_state()
        # tc names a cls_bpf filter "<object file>:[<section>]".
        plan = _hooks.tc_plan(has, filters, self.p["pref"], self.p["handle"],
                              f"{os.path.basename(obj)}:[{self.p['section']}]")
        created = (["clsact"] if plan.add_clsact else []) + (["filter"] if plan.add_filter else [])
        if created and not self.module.check_mode:
            before = self.recorded()
            made_clsact = plan.add_clsact or bool(before and before.get("created_clsact"))
            path, fresh = _ledger.record(self.p["ledger_dir"], self.entry(), self.p["run_id"],  # before acting
                                         created_clsact=made_clsact, pref=self.p["pref"], handle=self.p["handle"])
            if not fresh:
                _ledger.annotate(path, created_clsact=made_clsact, pref=self.p["pref"], handle=self.p["handle"])
            tc = self.module.get_bin_path("tc", required=True)
            if plan.add_clsact:
                self.run([tc, "qdisc", "add", "dev", self.p["interface"], "clsact"], "adding the clsact qdisc")
            self.run([tc, "filter", "add", "dev", self.p["interface"], "ingress", "pref", str(self.p["pref"]),
                      "handle", str(self.p["handle"]), "bpf", "da", "obj", obj, "sec", self.p["section"]],
                     f"adding the cls_bpf filter of {obj}")
        return {"changed": bool(created), "created": created, "removed": []}

    def tc_absent(self) -> dict:
        entry = self.recorded()
        if entry is None:
            return {"changed": False, "created": [], "removed": []}
        removed = []
        has, filters = self.tc_state()
        pref, handle = entry.get("pref", self.p["pref"]), entry.get("handle", self.p["handle"])
        tc = self.module.get_bin_path("tc", required=True)
        ours = [f for f in filters if f.pref == pref and f.handle == handle]
        if ours:
            removed.append("filter")
            if not self.module.check_mode:
                self.run([tc, "filter", "del", "dev", self.p["interface"], "ingress", "pref", str(pref),
                          "handle", str(handle), "bpf"], "removing the cls_bpf filter")
        left = [f for f in filters if f not in ours]
        if has and _hooks.tc_undo(bool(entry.get("created_clsact")), left):
            removed.append("clsact")
            if not self.module.check_mode:
                self.run([tc, "qdisc", "del", "dev", self.p["interface"], "clsact"], "removing the clsact qdisc")
        if not self.module.check_mode:
            _ledger.forget(self.p["ledger_dir"], self.entry())
        return {"changed": True, "created": [], "removed": removed}

    # -- nft -----------------------------------------------------------------------------------
    def nft_tables(self) -> set[tuple[str, str]]:
        nft = self.module.get_bin_path("nft", required=True)
        data = json.loads(self.run([nft, "-j", "list", "tables"], "listing the nftables tables") or "{}")
        return {(t["table"]["family"], t["table"]["name"]) for t in data.get("nftables", []) if "table" in t}

    def nft_present(self) -> dict:
        flow = {k: v for k, v in (self.p["flow"] or {}).items() if v is not None}
        self.family, ruleset = _hooks.nft_ruleset(self.p["table"], self.p["counter"], self.p["hook"],
                                                  self.p["interface"], flow)
        exists = (self.family, self.p["table"]) in self.nft_tables()
        if exists and self.recorded() is None:
            raise _hooks.HookError(f"nftables table {self.family} {self.p['table']} exists and this collection did "
                                   "not make it (another tool's or the host's firewall): choose another table name")
        if exists:
            return {"changed": False, "created": [], "removed": [], "family": self.family}
        if not self.module.check_mode:
            _ledger.record(self.p["ledger_dir"], self.entry(), self.p["run_id"])  # before acting
            self.run([self.module.get_bin_path("nft", required=True), "-f", "-"], "loading the nftables table",
                     data=ruleset)
        return {"changed": True, "created": ["table"], "removed": [], "family": self.family}

    def nft_absent(self) -> dict:
        self.family = "netdev" if self.p["hook"] == "ingress" else "inet"
        _validate.nft_name(self.p["table"], "table")
        if self.recorded() is None:
            return {"changed": False, "created": [], "removed": [], "family": self.family}
        removed = []
        if (self.family, self.p["table"]) in self.nft_tables():
            removed.append("table")
            if not self.module.check_mode:
                self.run([self.module.get_bin_path("nft", required=True), "delete", "table", self.family,
                          self.p["table"]], "removing the nftables table")
        if not self.module.check_mode:
            _ledger.forget(self.p["ledger_dir"], self.entry())
        return {"changed": True, "created": [], "removed": removed, "family": self.family}

    # -- ovs -----------------------------------------------------------------------------------
    def ovs_dpctl(self, *args: str, what: str, hint: str = "") -> str:
        return self.run([self.module.get_bin_path("ovs-dpctl", required=True), *args], what, hint=hint)

    @staticmethod
    def vswitchd_running() -> bool:
        return bool(_process_identity.pids_by_comm("ovs-vswitchd"))

    def ovs_datapaths(self) -> list[str]:
        hint = " (if the kernel's openvswitch is missing: modprobe openvswitch, or a kernel with CONFIG_OPENVSWITCH)"
        return _hooks.ovs_datapaths(self.ovs_dpctl("dump-dps", what="listing the Open vSwitch datapaths", hint=hint))

    def ovs_present(self) -> dict:
        dp = _hooks.ovs_datapath(self.p["datapath"])
        flow = _hooks.ovs_flow({k: v for k, v in (self.p["flow"] or {}).items() if v is not None})
        if not os.path.exists(os.path.join("/sys/class/net", self.p["interface"])):
            raise _hooks.HookError(f"interface {self.p['interface']!r} not found in this network namespace")
        if self.vswitchd_running():
            raise _hooks.HookError("ovs-vswitchd runs on this host: its datapaths are its own, and ovs-dpctl must not "
                                   "make or change datapaths beside it (ovs-dpctl(8)); stop it or use another DUT")
        exists = dp in self.ovs_datapaths()
        recorded = self.recorded()
        if exists and recorded is None:
            raise _hooks.HookError(f"Open vSwitch datapath {dp} exists and this collection did not make it: choose "
                                   "another datapath name")
        created = []
        if exists:
            ports = _hooks.ovs_show(self.ovs_dpctl("show", dp, what=f"reading datapath {dp}"))["ports"]
            if ports.get(_hooks.OVS_PORT_NO) != self.p["interface"]:
                raise _hooks.HookError(f"Open vSwitch datapath {dp} has port {_hooks.OVS_PORT_NO} "
                                       f"{ports.get(_hooks.OVS_PORT_NO)!r}, not {self.p['interface']!r}: take it "
                                       "away first (state=absent)")
            flows = self.ovs_dpctl("dump-flows", dp, what=f"listing the flows of datapath {dp}")
            if not _hooks.ovs_has_drop_flow(flows, flow):
                created = ["flow"]
        else:
            created = ["datapath", "flow"]
        if created and not self.module.check_mode:
            if not exists:
                _ledger.record(self.p["ledger_dir"], self.entry(), self.p["run_id"],  # before acting
                               interface=self.p["interface"])
                self.ovs_dpctl("add-dp", dp, what=f"creating the Open vSwitch datapath {dp}")
                self.ovs_dpctl("add-if", dp, f"{self.p['interface']},port_no={_hooks.OVS_PORT_NO}",
                               what=f"adding {self.p['interface']} to datapath {dp}")
            else:
                self.ovs_dpctl("del-flows", dp, what=f"removing the other flows of datapath {dp}")
            # An empty action list drops. (ovs-dpctl's word "drop" asks for the kernel's explicit drop
            # action, which the lab's 6.12 kernel refused with EOPNOTSUPP.)
            self.ovs_dpctl("add-flow", dp, flow, "", what=f"installing the drop flow in datapath {dp}")
        return {"changed": bool(created), "created": created, "removed": [], "ovs_flow": flow}

    def ovs_absent(self) -> dict:
        dp = _hooks.ovs_datapath(self.p["datapath"])
        if self.recorded() is None:
            return {"changed": False, "created": [], "removed": []}
        removed = []
        if dp in self.ovs_datapaths():
            removed.append("datapath")
            if not self.module.check_mode:
                self.ovs_dpctl("del-dp", dp, what=f"removing the Open vSwitch datapath {dp}")
        if not self.module.check_mode:
            _ledger.forget(self.p["ledger_dir"], self.entry())
        return {"changed": True, "created": [], "removed": removed}


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            type=dict(type="str", choices=["tc", "nft", "ovs"], required=True),
            interface=dict(type="str", required=True),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            object=dict(type="path"),
            section=dict(type="str", default="tc"),
            pref=dict(type="int", default=1),
            handle=dict(type="int", default=1),
            table=dict(type="str", default="xdplab_bench"),
            counter=dict(type="str", default="xdplab_dropped"),
            hook=dict(type="str", choices=["prerouting", "ingress"], default="prerouting"),
            datapath=dict(type="str", default=_hooks.OVS_DEFAULT_DATAPATH),
            flow=dict(type="dict", options=dict(
                src=dict(type="str"), dst=dict(type="str"), proto=dict(type="str", choices=["udp", "tcp"]),
                sport=dict(type="int"), dport=dict(type="int"))),
            ledger_dir=dict(type="path", default=_ledger.DEFAULT_DIR),
            run_id=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if IPRoute is None and p["type"] == "tc":
        module.fail_json(msg=missing_required_lib("pyroute2"))
    try:
        _validate.ifname(p["interface"])
        for name in ("pref", "handle"):
            if not 1 <= p[name] <= 0xFFFF:
                raise _hooks.HookError(f"{name} must be 1..65535, got {p[name]!r}")
        if p["type"] == "tc" and not p["section"].replace("/", "").replace("_", "").isalnum():
            raise _hooks.HookError(f"section {p['section']!r} is not an ELF section name")
        hook = Hook(module)
        if p["type"] == "tc":
            result = hook.tc_present() if p["state"] == "present" else hook.tc_absent()
        elif p["type"] == "ovs":
            result = hook.ovs_present() if p["state"] == "present" else hook.ovs_absent()
        else:
            result = hook.nft_present() if p["state"] == "present" else hook.nft_absent()
    except (_hooks.HookError, _validate.ValidationError, _ledger.LedgerError, XdpError) as exc:
        module.fail_json(msg=str(exc), interface=p["interface"])
    except Exception as exc:  # noqa: BLE001 - one top-level handler, reported with traceback
        module.fail_json(msg=f"packet_hook {p['type']} {p['state']}: {exc}", exception=traceback.format_exc())
    module.exit_json(interface=p["interface"], **result)


if __name__ == "__main__":
    main()
