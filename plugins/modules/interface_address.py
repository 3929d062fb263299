#!/usr/bin/python
# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
---
module: interface_address
short_description: A test address on an interface, recorded in the ledger before it is added
version_added: "0.2.0"
description:
  - Adds an IPv4 or IPv6 address with its prefix length to an interface, in the network namespace the
    module runs in, optionally bringing the interface up, and takes it away again. The kernel's driver
    selftests (C(playbooks/kselftest.yml)) need one on each end of a NIC pair.
  - An address that is already configured on any interface of the namespace and that the ledger does
    not name as this collection's is refused, naming it (it is someone else's, and taking it away
    afterwards would break them).
  - Before changing anything it records in the state ledger the address and whether it brings the
    interface up, so that O(state=absent) and C(xdplab.testbed.ledger state=cleaned) delete only that
    address and take the interface down again only if the module brought it up.
  - Reads and writes addresses and link state through netlink (pyroute2).
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
    details: Reads the addresses and link state and reports what would change.
  diff_mode:
    support: full
    details: Shows whether the address is there and the interface is up, before and after.
options:
  interface:
    description: The interface.
    type: str
    required: true
  address:
    description: The address with its prefix length (V(198.18.10.1/24), V(2001:db8:10::1/64)).
    type: str
    required: true
  up:
    description: With O(state=present), bring the interface up if it is down (and record that).
    type: bool
    default: false
  nodad:
    description:
      - With O(state=present), add an IPv6 address without duplicate address detection, so it is usable
        at once. Ignored for IPv4.
    type: bool
    default: true
  state:
    description:
      - V(present) adds the address; V(absent) undoes what the ledger says this collection did (without a
        ledger entry nothing is touched).
    type: str
    choices: [present, absent]
    default: present
"""

EXAMPLES = r"""
- name: Address the DUT's end of the pair
  xdplab.testbed.interface_address:
    interface: enp0s4
    address: 198.18.10.1/24
    up: true
  become: true

- name: Take it away again
  xdplab.testbed.interface_address:
    interface: enp0s4
    address: 198.18.10.1/24
    state: absent
  become: true
"""

RETURN = r"""
before:
  description: Whether the address was on the interface and the interface was up.
  returned: always
  type: dict
  sample: {"present": false, "up": false}
after:
  description: The same now (in check mode, what it would be).
  returned: always
  type: dict
  sample: {"present": true, "up": true}
"""

import ipaddress
import json
import socket
import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _validate
from ansible_collections.xdplab.testbed.plugins.module_utils.state import _ledger
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning._plan_and_snapshots import current_netns_name

try:
    from pyroute2 import IPRoute
    from pyroute2.netlink.exceptions import NetlinkError
except ImportError:
    IPRoute = None
    NetlinkError = OSError

IFF_UP = 0x1
IFA_F_NODAD = 0x02
EADDRNOTAVAIL = 99


class AddressError(ValueError):
    """Bad input, a missing interface or someone else's address; the message names it."""


def addresses(ipr) -> dict[str, int]:
    """Every address of this namespace (without prefix length) -> the index of its interface."""
    found = {}
    for msg in ipr.get_addr():
        local = msg.get_attr("IFA_LOCAL") or msg.get_attr("IFA_ADDRESS")
        if local:
            found[ipaddress.ip_address(local).compressed] = msg["index"]
    return found


ARGUMENT_SPEC = dict(
    interface=dict(type="str", required=True),
    address=dict(type="str", required=True),
    up=dict(type="bool", default=False),
    nodad=dict(type="bool", default=True),
    state=dict(type="str", choices=["present", "absent"], default="present"),
    ledger_dir=dict(type="path", default=_ledger.DEFAULT_DIR),
    run_id=dict(type="str"),
)


def _present(module: AnsibleModule, p: dict, ipr, index: int, iface, entry: dict, recorded, before: dict,
             on: dict) -> dict:
    """state=present: add the address (ledger entry first) and set the link up if asked. Returns after."""
    ip = iface.ip.compressed
    if ip in on and recorded is None:
        where = "on it" if on[ip] == index else f"on interface index {on[ip]}"
        raise AddressError(f"{ip} is already configured {where} in this namespace and is not this "
                           "collection's (no ledger entry): choose another address")
    after = {"present": True, "up": before["up"] or p["up"]}
    if before != after and not module.check_mode:
        set_up = not before["up"] and p["up"]
        # before acting; an entry of an earlier task of the run keeps what it found
        path, fresh = _ledger.record(p["ledger_dir"], entry, p["run_id"], set_up=set_up)
        if not fresh and set_up:
            _ledger.annotate(path, set_up=True)
        if not before["present"]:
            family = socket.AF_INET6 if iface.version == 6 else socket.AF_INET
            flags = IFA_F_NODAD if iface.version == 6 and p["nodad"] else 0
            ipr.addr("add", index=index, address=ip, prefixlen=iface.network.prefixlen,
                     family=family, flags=flags)
        if set_up:
            ipr.link("set", index=index, state="up")
    return after


def _absent(module: AnsibleModule, p: dict, ipr, index: int, iface, entry: dict, recorded, before: dict) -> dict:
    """state=absent: remove an address this collection put there (and the link state it set). Returns after."""
    if recorded is None:
        return before
    after = {"present": False, "up": before["up"] and not recorded.get("set_up")}
    if not module.check_mode:
        if before["present"]:
            try:
                ipr.addr("del", index=index, address=iface.ip.compressed, prefixlen=iface.network.prefixlen)
            except NetlinkError as exc:
                if exc.code != EADDRNOTAVAIL:  # gone with the link meanwhile
                    raise
        if recorded.get("set_up") and before["up"]:
            ipr.link("set", index=index, state="down")
        _ledger.forget(p["ledger_dir"], entry)
    return after


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    if IPRoute is None:
        module.fail_json(msg=missing_required_lib("pyroute2"))
    try:
        _validate.ifname(p["interface"], "interface")
        iface = ipaddress.ip_interface(_validate.ip_interface(p["address"], "address"))
        here = current_netns_name()
        entry = _ledger.check_entry("addr", {"interface": p["interface"], "address": iface.with_prefixlen},
                                    None if here == "host" else here)
        recorded = _ledger.read(p["ledger_dir"], entry)
        with IPRoute() as ipr:
            found = ipr.link_lookup(ifname=p["interface"])
            if not found:
                raise AddressError(f"interface {p['interface']!r} not found in this network namespace")
            index = found[0]
            link_up = bool(ipr.get_links(index)[0]["flags"] & IFF_UP)
            on = addresses(ipr)
            before = {"present": on.get(iface.ip.compressed) == index, "up": link_up}
            if p["state"] == "present":
                after = _present(module, p, ipr, index, iface, entry, recorded, before, on)
            else:
                after = _absent(module, p, ipr, index, iface, entry, recorded, before)
            changed = before != after
    except (AddressError, _validate.ValidationError, _ledger.LedgerError) as exc:
        module.fail_json(msg=str(exc), interface=p["interface"], address=p["address"])
    except Exception as exc:  # noqa: BLE001 - one top-level handler, reported with traceback
        module.fail_json(msg=f"address {p['address']} on {p['interface']}: {exc}", exception=traceback.format_exc())
    module.exit_json(changed=changed, before=before, after=after,
                     diff={"before": json.dumps(before) + "\n", "after": json.dumps(after) + "\n"})


if __name__ == "__main__":
    main()
