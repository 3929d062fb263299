#!/usr/bin/python
# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ledger
short_description: Record what the collection creates on a host, and remove exactly that
version_added: 0.1.0
description:
  - Keeps a ledger of the objects the collection creates on the host it runs on, one small JSON file per
    object under O(dir) - network namespaces, XDP attachments, tc clsact qdiscs, nftables tables, tuning
    snapshots, QEMU processes and background processes (servers, pktgen), and what a run changed in a
    namespace it found in place. Modules record an object B(before) creating or changing it, so an
    interrupted run leaves ledger entries, never unrecorded state.
  - A namespace found in place is never deleted; O(state=cleaned) deletes the interfaces the run made in
    it and puts back the settings it changed (addresses, MTU, MAC, GRO, link state, sysctls).
  - O(state=cleaned) removes every object the ledger lists, if it still exists, in a safe order
    (processes, XDP, tc, nftables, then namespaces; objects inside a listed namespace go with it), then
    the entries. Only what the ledger names is touched.
  - Tuning entries (written by C(nic_tuning), C(irq_affinity) and C(host_tuning) before they change
    anything) are restored from their snapshots, with the restore those modules use for
    C(state=restored) - host knobs and sysctls first (the tuned profile before the governor), then IRQ
    affinity, then NIC settings - and read back; a snapshot that does not read back equal is kept with
    its entry and named in RV(failed_entries). A port of a named namespace that is gone took its
    settings with it, so its snapshot is dropped.
author:
  - xdplab.testbed developers (!UNKNOWN)
options:
  state:
    description:
      - C(recorded) adds the entry (nothing changes when it is already there); C(absent) removes the
        entry once the object is gone; C(cleaned) removes every listed object and its entry;
        C(listed) only returns the entries.
    type: str
    choices: [recorded, absent, cleaned, listed]
    default: recorded
  dir:
    description: Ledger directory on the host.
    type: path
    default: /var/lib/xdplab/ledger
  kind:
    description:
      - Kind of object, with O(state=recorded) or O(state=absent). One of the kinds of the ledger's table,
        one row per kind in C(plugins/module_utils/state/_kinds.py) - C(netns), C(xdp), C(tc), C(nft), C(ovs),
        C(neigh), C(addr), C(tuning), C(qemu), C(process), C(napi) and any kind added there; another value is refused,
        naming it.
    type: str
  key:
    description:
      - What identifies the object, the fields its kind's row names, each checked by that row. C(netns)
        C(name); C(xdp) and C(tc) C(interface); C(nft) C(family) and C(table); C(ovs) C(datapath)
        (packet_hook's Open vSwitch datapath, deleted with its ports and flows); C(neigh) C(interface) and
        C(address) (the neighbour module's, with the entry found in place as C(previous)); C(addr)
        C(interface) and C(address) (the interface_address module's, an address with its prefix length,
        with C(set_up) if the module brought the interface up); C(tuning) C(state_file); C(qemu) C(pid)
        and C(cmdline_sha256) (sha256 of its NUL-separated C(/proc/PID/cmdline), so a reused pid is never
        killed), optionally C(owner) and C(owner_start) (pid and start time of the process running it;
        while it lives the entry is kept); C(process) C(pid), C(start) and C(boot_id) (a background
        process of C(bench_server) or C(pktgen), stopped only while that pid still has that start time in
        that boot); C(napi) C(interface) (the napi_threads module's, with the C(threaded) value and
        kthread affinities it found).
    type: dict
  netns:
    description:
      - Namespace the object lives in (C(xdp), C(tc), C(nft), C(ovs), C(neigh), C(addr)). Default the named
        namespace the module runs in (with the C(xdplab.testbed.netns) connection), or none for the initial namespace.
    type: str
  run_id:
    description: Run id stored in the entry.
    type: str
  keep:
    description:
      - With O(state=cleaned), kinds of objects to leave in place with their entries (C(netns) keeps the
        virtual test bed's namespaces for a later run); what lives inside a kept namespace is still undone.
        Each a kind of the ledger's table (see O(kind)).
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - xdplab.testbed.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
"""

EXAMPLES = r"""
- name: Record the namespace before creating it
  xdplab.testbed.ledger:
    kind: netns
    key: {name: xdplab-dut}
    run_id: "{{ run_id }}"

- name: Remove whatever an interrupted run left
  xdplab.testbed.ledger:
    state: cleaned
"""

RETURN = r"""
entries:
  description: The ledger's entries after the call.
  returned: always
  type: list
  elements: dict
removed:
  description: With O(state=cleaned), each object removed (or found already gone), as C(kind key netns).
  returned: always
  type: list
  elements: str
failed_entries:
  description:
    - With O(state=cleaned), when the call fails, each entry that could not be undone with the reason
      (a snapshot that reads back different, a port missing from the initial namespace). They stay in the
      ledger; every other entry was undone.
  returned: failure
  type: list
  elements: str
  sample: ["tuning state_file=/var/lib/xdplab/tuning/nic-host-ens1f0.json: read back differs: ..."]
set_aside:
  description:
    - With O(state=cleaned), ledger files that could not be read (truncated, not an entry, a symlink, a
      field its kind's row does not accept) - each renamed to C(<name>.unreadable-<time>) and never acted
      on; the other entries are still cleaned.
  returned: always
  type: list
  elements: dict
  sample:
    - path: /var/lib/xdplab/ledger/netns-0a1b.json
      moved_to: /var/lib/xdplab/ledger/netns-0a1b.json.unreadable-20261201T010000Z
      reason: "JSONDecodeError: Expecting value"
kept:
  description:
    - With O(state=cleaned), QEMU entries kept because the process that runs the guest still lives, and
      objects left alone because what now has their name is not what the collection created (a namespace
      with another inode), with the reason.
  returned: always
  type: list
  elements: str
path:
  description: The entry file, with O(state=recorded) or O(state=absent).
  returned: when kind is given
  type: str
"""

import os
import traceback

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils.state import _kinds
from ansible_collections.xdplab.testbed.plugins.module_utils.state._kinds import Cleaner
from ansible_collections.xdplab.testbed.plugins.module_utils.state._ledger import (
    DEFAULT_DIR,
    LedgerError,
    check_entry,
    entries,
    entry_id,
    owner_alive,
    record,
    scan,
    set_aside,
    teardown_plan,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _restore
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning._plan_and_snapshots import current_netns_name


def describe(entry: dict) -> str:
    key = " ".join(f"{k}={v}" for k, v in entry["key"].items())
    return f"{entry['kind']} {key}" + (f" in {entry['netns']}" if entry.get("netns") else "")


ARGUMENT_SPEC = dict(
    state=dict(type="str", choices=["recorded", "absent", "cleaned", "listed"], default="recorded"),
    dir=dict(type="path", default=DEFAULT_DIR),
    kind=dict(type="str"),
    key=dict(type="dict", no_log=False),
    netns=dict(type="str"),
    run_id=dict(type="str"),
    keep=dict(type="list", elements="str", default=[]),
)


def _record_or_drop(module: AnsibleModule, p: dict, result: dict) -> bool:
    """state=recorded/absent: write or remove the one entry (in the task's namespace when its kind
    lives in one). Returns changed; result gains the entry's path."""
    netns = p["netns"]
    if netns is None and _kinds.row(p["kind"]).in_netns:
        here = current_netns_name()
        netns = None if here == "host" else here
    entry = check_entry(p["kind"], p["key"], netns)
    path = os.path.join(p["dir"], entry_id(entry))
    result["path"] = path
    if p["state"] == "recorded":
        changed = not os.path.exists(path)
        if changed and not module.check_mode:
            record(p["dir"], entry, p["run_id"])
        return changed
    if os.path.exists(path):
        if not module.check_mode:
            os.unlink(path)
        return True
    return False


def _clean(module: AnsibleModule, p: dict, removed: list, kept: list, set_aside_list: list, failed: list) -> bool:
    """state=cleaned: undo every entry in teardown order (kinds in keep and live QEMU owners stay),
    setting aside the unreadable ones. Fills the lists as it goes; returns changed."""
    changed = False
    cleaner = Cleaner(module)
    good, bad = scan(p["dir"])
    for path, reason in bad:
        # Unreadable (truncated, foreign, a symlink): never acted on, moved out of the way and
        # named, so it does not stop the rest from being cleaned.
        changed = True
        new = path if module.check_mode else set_aside(path)
        set_aside_list.append({"path": path, "moved_to": new, "reason": reason})
        module.warn(f"ledger entry {path} is unreadable ({reason}): set aside as {new}")
    subrank = {"tuning": lambda e: _restore.snapshot_kind_rank(e.get("snapshot_kind"))}
    for path, entry in teardown_plan(good, keep=p["keep"], subrank=subrank):
        if entry["kind"] in p["keep"]:
            continue
        if entry["kind"] == "qemu" and owner_alive(entry["key"]):
            kept.append(describe(entry))
            continue
        changed = True
        if not module.check_mode:
            try:
                reason = cleaner.remove(entry)
            except Exception as exc:  # noqa: BLE001 - named below; the entry stays for a later try
                failed.append(f"{describe(entry)}: {exc}")
                continue
            os.unlink(path)
            if reason:
                kept.append(f"{describe(entry)}: {reason}")
                continue
        removed.append(describe(entry))
    return changed


def main() -> None:
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        required_if=[("state", "recorded", ("kind", "key")), ("state", "absent", ("kind", "key"))],
        supports_check_mode=True,
    )
    p = module.params
    changed, removed, kept, result, set_aside_list = False, [], [], {}, []
    failed: list[str] = []
    try:
        for kind in p["keep"]:
            _kinds.row(kind)  # a kind of the table, or LedgerError naming it
        if p["state"] in ("recorded", "absent"):
            changed = _record_or_drop(module, p, result)
        elif p["state"] == "cleaned":
            changed = _clean(module, p, removed, kept, set_aside_list, failed)
    except LedgerError as exc:
        module.fail_json(msg=str(exc))
    except Exception as exc:  # noqa: BLE001 - one top-level handler, reported with traceback
        module.fail_json(msg=f"ledger {p['state']}: {exc}", exception=traceback.format_exc(), removed=removed)
    try:
        current = [e for _dummy, e in entries(p["dir"])]
    except LedgerError as exc:
        module.fail_json(msg=str(exc))
    if failed:
        # Every other entry was undone; these stay in the ledger for the next cleanup.
        module.fail_json(msg=f"ledger cleaned: could not undo {len(failed)} entr{'y' if len(failed) == 1 else 'ies'}: "
                             + "; ".join(failed), failed_entries=failed, entries=current, removed=removed,
                         kept=kept, set_aside=set_aside_list, changed=changed)
    module.exit_json(changed=changed, entries=current, removed=removed, kept=kept,
                     set_aside=set_aside_list, **result)


if __name__ == "__main__":
    main()
