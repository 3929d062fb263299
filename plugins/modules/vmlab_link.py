#!/usr/bin/python
# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
---
module: vmlab_link
short_description: Join the test NICs of the lab in a box's guests, tap to tap
description:
  - Pairs the guests' test NICs by link name (each link joins exactly two guests' NICs of the same model
    and queue count) and joins the two host-side taps inside the lab namespace O(netns) as a straight
    wire, both ways, with a C(tc) ingress filter redirecting every frame to the peer tap (C(u32) match-all
    and C(mirred)). Nothing learns addresses or drops pause frames on the way, unlike a bridge.
  - The taps exist while their guests' QEMU processes run (M(xdplab.testbed.vmlab_guest) opens them);
    the wire goes with them.
  - Before it wires a tap the module records in the state ledger the preference its filter takes (it
    must be free, or hold the module's own earlier wire) and whether it creates the tap's clsact qdisc,
    so C(xdplab.testbed.ledger state=cleaned) takes the wire off a tap that outlived its run and leaves
    anyone else's filter alone.
version_added: "0.2.0"
author:
  - xdplab.testbed contributors (!UNKNOWN)
options:
  netns:
    description: The lab namespace holding the taps.
    type: str
    required: true
  lab_id:
    description: Lab number, as given to M(xdplab.testbed.vmlab_guest).
    type: int
    default: 1
  guests:
    description: The lab's guests, each with C(name), C(index) and C(nics) (C(model), C(name), C(link), C(queues)).
    type: list
    elements: dict
    required: true
extends_documentation_fragment:
  - xdplab.testbed.attributes
  - xdplab.testbed.object_ledger
attributes:
  check_mode:
    support: full
    details: Reads what is there and reports what it would start, link or remove; changes nothing.
  diff_mode:
    support: none
    details: No diff; the result names what changed.
requirements:
  - iproute2 (ip, tc) with the kernel's cls_u32 and act_mirred
"""

EXAMPLES = r"""
- name: Join the guests' test NICs
  xdplab.testbed.vmlab_link:
    netns: xdplab-vmlab
    guests:
      - {name: vmgen, index: 0, nics: [{model: igb, name: igb0, link: igb0}]}
      - {name: vmdut, index: 1, nics: [{model: igb, name: igb0, link: igb0}]}
"""

RETURN = r"""
pairs:
  description: The joined tap pairs.
  returned: always
  type: list
  elements: list
  sample: [[vl1g0n1, vl1g1n1]]
"""

import json
import traceback

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _command, _validate
from ansible_collections.xdplab.testbed.plugins.module_utils.state import _ledger
from ansible_collections.xdplab.testbed.plugins.module_utils.testbed import _vmlab_guests as _vmlab

# The wire's filter on each tap: one u32 match-all, alone at this preference. u32 shares its hash
# tables among all preferences of a qdisc, so a fixed handle could name someone else's filter: the
# preference is what the ledger entry names, and nothing else may be at it.
PREF = 1


def _wired(module: AnsibleModule, tc: str, netns: str, tap: str, peer: str) -> bool:
    rc, out, _dummy = _command.run(module, [tc, "-n", netns, "filter", "show", "dev", tap, "ingress"], ok=None)
    return rc == 0 and f"Redirect to device {peer}" in out


def _tc_json(module: AnsibleModule, argv: list[str]) -> list[dict]:
    rc, out, err = _command.run(module, argv, ok=None)
    if rc != 0:
        module.fail_json(msg=f"cannot read {' '.join(argv[3:])}", rc=rc, stdout=out, stderr=err, cmd=argv)
    try:
        return json.loads(out or "[]")
    except ValueError:
        module.fail_json(msg=f"{' '.join(argv)} printed no JSON", rc=rc, stdout=out, stderr=err, cmd=argv)
        raise


def _prepare(module: AnsibleModule, tc: str, netns: str, tap: str) -> list[list[str]]:
    """Record the tap's ledger entry, before the wire is made (our preference, and the clsact qdisc if
    we make it); return the commands that clear a stale wire of ours first. A filter of someone else
    at our preference is refused, naming it."""
    p = module.params
    entry = _ledger.check_entry("tc", {"interface": tap}, netns)
    previous = _ledger.read(p["ledger_dir"], entry)
    qdiscs = _tc_json(module, [tc, "-n", netns, "-j", "qdisc", "show", "dev", tap])
    at_pref = [f for f in _tc_json(module, [tc, "-n", netns, "-j", "filter", "show", "dev", tap, "ingress"])
               if f.get("pref") == PREF]
    ours = bool(previous and previous.get("pref") == PREF and previous.get("filter") == "u32")
    if at_pref and not ours:
        module.fail_json(msg=f"{tap} in {netns} has a filter at preference {PREF} that vmlab_link did not make "
                             f"(its ledger has no entry for it): {at_pref!r}; not touched")
    found_clsact = any(q.get("kind") == "clsact" for q in qdiscs)
    made_clsact = not found_clsact or bool(previous and previous.get("created_clsact"))
    undo = dict(created_clsact=made_clsact, pref=PREF, filter="u32")
    path, fresh = _ledger.record(p["ledger_dir"], entry, p["run_id"], **undo)
    if not fresh:
        _ledger.annotate(path, **undo)
    return [[tc, "-n", netns, "filter", "del", "dev", tap, "ingress", "pref", str(PREF), "u32"]] if at_pref else []


ARGUMENT_SPEC = dict(
    netns=dict(type="str", required=True),
    lab_id=dict(type="int", default=1),
    guests=dict(type="list", elements="dict", required=True),
    ledger_dir=dict(type="path", default=_ledger.DEFAULT_DIR),
    run_id=dict(type="str"),
)


def _guests(module: AnsibleModule, p: dict) -> list[_vmlab.Guest]:
    """The guests as the tap names need them (name, index, NICs); a bad entry fails naming it."""
    guests = []
    for g in p["guests"]:
        try:
            nics = [_vmlab.Nic(model=n["model"], name=n["name"], link=n["link"], queues=int(n.get("queues", 1)))
                    for n in g.get("nics", [])]
            guests.append(_vmlab.Guest(name=g["name"], index=int(g["index"]), kernel="", image="", rundir="",
                                       ssh_port=0, lab_id=p["lab_id"], nics=nics))
        except (KeyError, TypeError, ValueError) as exc:
            module.fail_json(msg=f"guest {g.get('name', g)!r}: bad NIC or guest entry ({exc!r})")
    return guests


def _join(module: AnsibleModule, ip: str, tc: str, netns: str, tap: str, peer: str) -> None:
    """Redirect everything tap receives to peer (tc mirred), the tap's old filters recorded first."""
    stale = _prepare(module, tc, netns, tap)  # recorded before acting
    steps = [
        [ip, "-n", netns, "link", "set", "dev", tap, "up"],
        [tc, "-n", netns, "qdisc", "replace", "dev", tap, "clsact"],
        *stale,
        [tc, "-n", netns, "filter", "add", "dev", tap, "ingress", "protocol", "all", "prio",
         str(PREF), "u32", "match", "u32", "0", "0", "action", "mirred", "egress", "redirect", "dev", peer],
    ]
    for argv in steps:
        rc, out, err = _command.run(module, argv, ok=None)
        if rc != 0 or err.strip():
            module.fail_json(msg=f"joining {tap} to {peer} in {netns} failed: {' '.join(argv)}",
                             rc=rc, stdout=out, stderr=err)


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    try:
        _validate.netns_name(p["netns"], "vmlab_link netns")
    except _validate.ValidationError as exc:
        module.fail_json(msg=str(exc))
    try:
        guests = _guests(module, p)
        pairs = _vmlab.link_pairs(guests)
        owner = {_vmlab.tap_name(g, slot): f"guest {g.name!r} NIC {nic.name}"
                 for g in guests for slot, nic in enumerate(g.nics, start=1)}
        ip = module.get_bin_path("ip", required=True)
        tc = module.get_bin_path("tc", required=True)
        changed = False
        for tap in (t for pair in pairs for t in pair):  # every tap checked before any is wired
            rc, _dummy, err = _command.run(module, [ip, "-n", p["netns"], "link", "show", "dev", tap], ok=None)
            if rc != 0:
                module.fail_json(msg=f"{owner[tap]}: its tap {tap} is not in namespace {p['netns']}; the guest's "
                                 "QEMU is not running (taps live as long as their QEMU)", rc=rc, stderr=err)
        for a, b in pairs:
            for tap, peer in ((a, b), (b, a)):
                if _wired(module, tc, p["netns"], tap, peer):
                    continue
                changed = True
                if not module.check_mode:
                    _join(module, ip, tc, p["netns"], tap, peer)
        module.exit_json(changed=changed, pairs=[list(pair) for pair in pairs])
    except (_vmlab.VmlabError, _ledger.LedgerError) as exc:
        module.fail_json(msg=str(exc))
    except Exception as exc:  # noqa: BLE001 - one top-level handler, as the collection's modules do
        module.fail_json(msg=f"vmlab_link failed: {exc}", exception=traceback.format_exc())


if __name__ == "__main__":
    main()
