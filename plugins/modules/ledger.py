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
    snapshots and QEMU processes. Roles record an object B(before) creating it, so an interrupted run
    leaves ledger entries, never unrecorded state.
  - O(state=cleaned) removes every object the ledger lists, if it still exists, in a safe order
    (processes, XDP, tc, nftables, then namespaces; objects inside a listed namespace go with it), then
    the entries. Only what the ledger names is touched. Tuning entries are left for the tuning role
    (C(tuning_state=restored)), which owns the restore; they are returned in RV(pending).
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
    description: Kind of object, with O(state=recorded) or O(state=absent).
    type: str
    choices: [netns, xdp, tc, nft, tuning, qemu]
  key:
    description:
      - What identifies the object. C(netns) C(name); C(xdp) and C(tc) C(interface); C(nft) C(family) and
        C(table); C(tuning) C(state_file); C(qemu) C(pid) and C(cmdline_sha256) (sha256 of its
        NUL-separated C(/proc/PID/cmdline), so a reused pid is never killed), optionally C(owner) and
        C(owner_start) (pid and start time of the process running it; while it lives the entry is kept).
    type: dict
  netns:
    description:
      - Namespace the object lives in (C(xdp), C(tc), C(nft)). Default the named namespace the module runs
        in (with the C(xdplab.testbed.netns) connection), or none for the initial namespace.
    type: str
  run_id:
    description: Run id stored in the entry.
    type: str
attributes:
  check_mode:
    support: full
    description: Can run in check_mode and return changed status prediction without modifying target.
  diff_mode:
    support: none
    description: Returns no diff.
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
pending:
  description: Tuning entries left for the tuning role to restore.
  returned: always
  type: list
  elements: dict
kept:
  description: With O(state=cleaned), QEMU entries kept because the process that runs the guest still lives.
  returned: always
  type: list
  elements: str
path:
  description: The entry file, with O(state=recorded) or O(state=absent).
  returned: when kind is given
  type: str
"""

import hashlib
import os
import signal
import traceback

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils._ledger import (
    LedgerError,
    check_entry,
    entries,
    entry_id,
    owner_alive,
    record,
    teardown_plan,
)
from ansible_collections.xdplab.testbed.plugins.module_utils._tuning import current_netns_name


def describe(entry: dict) -> str:
    key = " ".join(f"{k}={v}" for k, v in entry["key"].items())
    return f"{entry['kind']} {key}" + (f" in {entry['netns']}" if entry.get("netns") else "")


class Cleaner:
    """Removes one ledger object on this host, tolerating that it is already gone."""

    def __init__(self, module: AnsibleModule):
        self.module = module
        self.ip = module.get_bin_path("ip", required=True)

    def _in_netns(self, netns: str | None, argv: list[str]) -> list[str]:
        return [self.ip, "netns", "exec", netns, *argv] if netns else argv

    def _run(self, argv: list[str], gone: tuple[str, ...]) -> None:
        rc, out, err = self.module.run_command(argv)
        if rc != 0 and not any(g in err for g in gone):
            raise RuntimeError(f"{' '.join(argv)} failed (rc={rc}): {err.strip() or out.strip()}")

    def netns_exists(self, name: str) -> bool:
        return os.path.exists(os.path.join("/run/netns", name))

    def remove(self, entry: dict) -> None:
        kind, key, netns = entry["kind"], entry["key"], entry.get("netns")
        if netns and kind in ("xdp", "tc", "nft") and not self.netns_exists(netns):
            return  # its namespace, and the object with it, is already gone
        if kind == "netns":
            if self.netns_exists(key["name"]):
                rc, out, _dummy = self.module.run_command([self.ip, "netns", "pids", key["name"]])
                for pid in out.split() if rc == 0 else []:
                    try:
                        os.kill(int(pid), signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                self._run([self.ip, "netns", "delete", key["name"]], ("No such file",))
        elif kind == "xdp":
            base = [self.ip, *(["-n", netns] if netns else []), "link", "set", "dev", key["interface"]]
            for mode in ("xdpgeneric", "xdpdrv"):
                self._run([*base, mode, "off"], ("Cannot find device", "does not exist"))
        elif kind == "tc":
            tc = self.module.get_bin_path("tc", required=True)
            self._run([tc, *(["-n", netns] if netns else []), "qdisc", "del", "dev", key["interface"], "clsact"],
                      ("Cannot find", "No such file", "Invalid handle"))
        elif kind == "nft":
            nft = self.module.get_bin_path("nft", required=True)
            self._run(self._in_netns(netns, [nft, "delete", "table", key["family"], key["table"]]),
                      ("No such file",))
        elif kind == "qemu":
            pid = int(key["pid"])
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    cmdline = fh.read()
            except FileNotFoundError:
                return
            if hashlib.sha256(cmdline).hexdigest() == key.get("cmdline_sha256"):
                os.kill(pid, signal.SIGKILL)


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["recorded", "absent", "cleaned", "listed"], default="recorded"),
            dir=dict(type="path", default="/var/lib/xdplab/ledger"),
            kind=dict(type="str", choices=["netns", "xdp", "tc", "nft", "tuning", "qemu"]),
            key=dict(type="dict", no_log=False),
            netns=dict(type="str"),
            run_id=dict(type="str"),
        ),
        required_if=[("state", "recorded", ("kind", "key")), ("state", "absent", ("kind", "key"))],
        supports_check_mode=True,
    )
    p = module.params
    module.run_command_environ_update = {"LC_ALL": "C"}
    changed, removed, pending, kept, result = False, [], [], [], {}
    try:
        if p["state"] in ("recorded", "absent"):
            netns = p["netns"]
            if netns is None and p["kind"] in ("xdp", "tc", "nft"):
                here = current_netns_name()
                netns = None if here == "host" else here
            entry = check_entry(p["kind"], p["key"], netns)
            path = os.path.join(p["dir"], entry_id(entry))
            result["path"] = path
            if p["state"] == "recorded":
                changed = not os.path.exists(path)
                if changed and not module.check_mode:
                    record(p["dir"], entry, p["run_id"])
            elif os.path.exists(path):
                changed = True
                if not module.check_mode:
                    os.unlink(path)
        elif p["state"] == "cleaned":
            cleaner = Cleaner(module)
            for path, entry in teardown_plan(entries(p["dir"])):
                if entry["kind"] == "tuning":
                    pending.append(entry)
                    continue
                if entry["kind"] == "qemu" and owner_alive(entry["key"]):
                    kept.append(describe(entry))
                    continue
                changed = True
                if not module.check_mode:
                    cleaner.remove(entry)
                    os.unlink(path)
                removed.append(describe(entry))
    except LedgerError as exc:
        module.fail_json(msg=str(exc))
    except Exception as exc:  # noqa: BLE001 - one top-level handler, reported with traceback
        module.fail_json(msg=f"ledger {p['state']}: {exc}", exception=traceback.format_exc(), removed=removed)
    try:
        current = [e for _dummy, e in entries(p["dir"])]
    except LedgerError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=changed, entries=current, removed=removed, pending=pending, kept=kept, **result)


if __name__ == "__main__":
    main()
