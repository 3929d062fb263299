#!/usr/bin/python
# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
---
module: neighbour
short_description: A static neighbour (ARP/NDP) entry, recorded in the ledger with the entry it replaced
version_added: "0.2.0"
description:
  - Sets a permanent neighbour entry (IP address -> MAC address) on an interface, in the network namespace
    the module runs in, and takes it away again. A socket sender needs one towards a DUT whose XDP program
    drops ARP.
  - Before changing anything it records in the state ledger the entry that was there (its MAC address and
    state), so that O(state=absent) and C(xdplab.testbed.ledger state=cleaned) put a permanent or noarp
    entry found in place back as it was, and delete only an entry this collection made (a learned entry is
    learned again).
  - Reads and writes the neighbour table through netlink (pyroute2).
author:
  - xdplab.testbed contributors (!UNKNOWN)
requirements:
  - pyroute2 >= 0.9
extends_documentation_fragment:
  - xdplab.testbed.attributes
  - xdplab.testbed.object_ledger
attributes:
  check_mode:
    support: full
    details: Reads the neighbour table and reports what would change.
  diff_mode:
    support: full
    details: Shows the entry before and after.
options:
  interface:
    description: The interface.
    type: str
    required: true
  address:
    description: The neighbour's IP address (IPv4 or IPv6).
    type: str
    required: true
  lladdr:
    description: With O(state=present), its MAC address.
    type: str
  state:
    description:
      - V(present) makes the entry permanent with O(lladdr); V(absent) undoes what the ledger says this
        collection did (the entry found in place comes back; without a ledger entry nothing is touched).
    type: str
    choices: [present, absent]
    default: present
"""

EXAMPLES = r"""
- name: The DUT's MAC address for its IP on the generator port
  xdplab.testbed.neighbour:
    interface: veth0
    address: 198.18.0.2
    lladdr: "02:00:00:00:00:02"
- name: Put back what was there
  xdplab.testbed.neighbour:
    interface: veth0
    address: 198.18.0.2
    state: absent
"""

RETURN = r"""
before:
  description: The entry found (C(lladdr), C(state)), or null.
  returned: always
  type: dict
  sample: {"lladdr": "02:00:00:00:00:09", "state": "permanent"}
after:
  description: The entry now (in check mode, what it would be), or null.
  returned: always
  type: dict
  sample: {"lladdr": "02:00:00:00:00:02", "state": "permanent"}
"""

import json
import socket
import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _validate
from ansible_collections.xdplab.testbed.plugins.module_utils.state import _kinds, _ledger
from ansible_collections.xdplab.testbed.plugins.module_utils.testbed import _neighbours
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning._plan_and_snapshots import current_netns_name

try:
    from pyroute2 import IPRoute
except ImportError:
    IPRoute = None


class NeighbourError(ValueError):
    """Bad input or a missing interface; the message names it."""


class Table:
    """The neighbour table of one interface in this namespace."""

    def __init__(self, ipr, interface: str) -> None:
        found = ipr.link_lookup(ifname=interface)
        if not found:
            raise NeighbourError(f"interface {interface!r} not found in this network namespace")
        self.ipr, self.index = ipr, found[0]

    def read(self, address: str) -> dict | None:
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        for msg in self.ipr.get_neighbours(family=family, ifindex=self.index):
            if msg.get_attr("NDA_DST") == address and msg.get_attr("NDA_LLADDR"):
                return {"lladdr": msg.get_attr("NDA_LLADDR").lower(), "state": _neighbours.nud_name(msg["state"])}
        return None

    def put(self, address: str, lladdr: str, state: str) -> None:
        self.ipr.neigh("replace", dst=address, lladdr=lladdr, ifindex=self.index, state=_neighbours.nud_value(state))

    def delete(self, address: str) -> None:
        self.ipr.neigh("del", dst=address, ifindex=self.index)


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            interface=dict(type="str", required=True),
            address=dict(type="str", required=True),
            lladdr=dict(type="str"),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            ledger_dir=dict(type="path", default=_ledger.DEFAULT_DIR),
            run_id=dict(type="str"),
        ),
        required_if=[("state", "present", ("lladdr",))],
        supports_check_mode=True,
    )
    p = module.params
    if IPRoute is None:
        module.fail_json(msg=missing_required_lib("pyroute2"))
    try:
        _validate.ifname(p["interface"], "interface")
        address = _validate.ip_address(p["address"], "address")
        lladdr = _validate.lladdr(p["lladdr"], "lladdr") if p["lladdr"] is not None else None
        here = current_netns_name()
        entry = _ledger.check_entry("neigh", {"interface": p["interface"], "address": address},
                                    None if here == "host" else here)
        with IPRoute() as ipr:
            table = Table(ipr, p["interface"])
            before = table.read(address)
            if p["state"] == "present":
                after = {"lladdr": lladdr, "state": "permanent"}
                changed = before != after
                if changed and not module.check_mode:
                    # before acting: what was there, unless an earlier task of the run already said so
                    # (an entry an earlier task of the run recorded is kept: it holds what was found)
                    _ledger.record(p["ledger_dir"], entry, p["run_id"], previous=before)
                    table.put(address, lladdr, "permanent")
            else:
                recorded = _ledger.read(p["ledger_dir"], entry)  # checked by the neigh row
                if recorded is None:
                    after, changed = before, False
                else:
                    previous = _kinds.restorable_neighbour(recorded.get("previous"))
                    after = previous
                    changed = before != after
                    if not module.check_mode:
                        if previous:
                            table.put(address, previous["lladdr"], previous["state"])
                        elif before is not None:
                            table.delete(address)
                        _ledger.forget(p["ledger_dir"], entry)
    except (NeighbourError, _validate.ValidationError, _ledger.LedgerError) as exc:
        module.fail_json(msg=str(exc), interface=p["interface"], address=p["address"])
    except Exception as exc:  # noqa: BLE001 - one top-level handler, reported with traceback
        module.fail_json(msg=f"neighbour {p['address']} on {p['interface']}: {exc}", exception=traceback.format_exc())
    module.exit_json(changed=changed, before=before, after=after,
                     diff={"before": json.dumps(before) + "\n", "after": json.dumps(after) + "\n"})


if __name__ == "__main__":
    main()
