#!/usr/bin/python
# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: run_lock
short_description: One xdplab run at a time per host
version_added: 0.1.0
description:
  - Takes or releases the run lock of the host, a file naming its holder (the C(ansible-playbook)
    process on the controller - machine id, boot id, pid and the pid's start time; host, run id and
    since when for people).
  - A second run fails at once with a message naming the holder and how to take the lock over. A
    holder provably gone (it ran on this very boot of the machine that judges it, and that process is
    gone, as after a run killed with SIGKILL) is stale and the lock is taken over; RV(previous) then names it,
    and the caller should clean the host's ledger. A holder nobody here can judge - another machine,
    a clone with the same hostname, another boot, a lock file that is not a lock - is taken over only
    when O(steal) names it.
  - The action plugin of the same name fills in O(owner_pid) and O(owner_host) with the controller's
    C(ansible-playbook) process.
author:
  - xdplab.testbed developers (!UNKNOWN)
options:
  state:
    description: C(held) takes the lock (re-entrant for the same holder); C(released) gives it back.
    type: str
    choices: [held, released]
    default: held
  path:
    description: Lock file on the host.
    type: path
    default: /run/xdplab/run.lock
  run_id:
    description: Run id stored in the lock, shown to a second run.
    type: str
  steal:
    description:
      - Take over the lock whose holder cannot be judged from here, named by the token the refusal
        printed (C(PID:START@MACHINE-ID/BOOT-ID), or C(unreadable:SHA256) for a lock file that is not a
        lock). Another holder than the one named is not taken over; a live holder on this boot of this
        machine is never taken over.
    type: str
  owner_pid:
    description: Pid of the holder (set by the action plugin).
    type: int
    required: true
  owner_host:
    description: Host of the holder process (set by the action plugin).
    type: str
    required: true
  owner_start:
    description: Start time (clock ticks since boot) of the holder process on its host (set by the action plugin).
    type: int
  owner_boot_id:
    description: Boot id of the holder's host (set by the action plugin).
    type: str
  owner_machine_id:
    description: Machine id (machine-id(5)) of the holder's host (set by the action plugin).
    type: str
  stale_holder:
    description:
      - A holder on another host that its own host found dead (the action plugin checks holders that ran
        on this boot of the controller - machine id, boot id, pid and start time). The lock is taken over
        only if it is still exactly that holder; a live or different holder is never replaced.
    type: dict
extends_documentation_fragment:
  - xdplab.testbed.attributes
  - xdplab.testbed.attributes.action
attributes:
  check_mode:
    support: full
    details: Reports whether the lock could be taken; takes nothing.
  diff_mode:
    support: none
  action:
    support: full
"""

EXAMPLES = r"""
- name: One run at a time
  xdplab.testbed.run_lock:
    run_id: "{{ run_id }}"

- name: Let the next run go
  xdplab.testbed.run_lock:
    state: released
"""

RETURN = r"""
status:
  description: C(acquired), C(held) (already ours), C(taken-over) (a stale holder), C(released) or C(not-held).
  returned: always
  type: str
holder:
  description: On failure, the live (or unverifiable) holder, so the controller can check it.
  returned: when the lock is held by another run
  type: dict
previous:
  description: The stale holder that was replaced, with C(status=taken-over).
  returned: when a stale lock was taken over
  type: dict
"""

import dataclasses
import os
import traceback

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils.state._ledger import (
    Holder,
    LockHeld,
    acquire,
    held_message,
    holder_alive,
    holder_identity,
    read_lock,
    release,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["held", "released"], default="held"),
            path=dict(type="path", default="/run/xdplab/run.lock"),
            run_id=dict(type="str"),
            steal=dict(type="str"),
            owner_pid=dict(type="int", required=True),
            owner_host=dict(type="str", required=True),
            owner_start=dict(type="int"),
            owner_boot_id=dict(type="str"),
            owner_machine_id=dict(type="str"),
            stale_holder=dict(type="dict"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    ident = holder_identity(p["owner_pid"], p["owner_host"], p["owner_start"], p["owner_boot_id"],
                            p["owner_machine_id"])
    me = Holder(ident["pid"], ident["pid_start"], ident["host"], p["run_id"], "", ident["boot_id"], ident["machine_id"])
    try:
        if p["state"] == "released":
            current = read_lock(p["path"])
            ours = current is not None and current.identity() == me.identity() and current.host == me.host
            if ours and not module.check_mode:
                release(p["path"], p["owner_pid"], p["owner_host"], p["owner_start"], p["owner_boot_id"],
                        p["owner_machine_id"])
            module.exit_json(changed=ours, status="released" if ours else "not-held")
        if module.check_mode:
            current = read_lock(p["path"])
            if current and not (current.identity() == me.identity() and current.host == me.host):
                if holder_alive(current) is not False and p["steal"] != current.token():
                    raise LockHeld(held_message(p["path"], current, holder_alive(current)))
            module.exit_json(changed=current is None, status="acquired" if current is None else "held")
        stale = None
        if p["stale_holder"]:
            sh = p["stale_holder"]
            stale = Holder(int(sh["pid"]), sh.get("pid_start"), str(sh["host"]), sh.get("run_id"),
                           str(sh["since"]), sh.get("boot_id"), sh.get("machine_id"), sh.get("unreadable"))
        status, previous = acquire(p["path"], p["owner_pid"], p["owner_host"], p["run_id"], steal=p["steal"],
                                   pid_start=p["owner_start"], boot_id=p["owner_boot_id"], stale=stale,
                                   machine_id=p["owner_machine_id"])
    except LockHeld as exc:
        current = read_lock(p["path"])
        module.fail_json(msg=str(exc), holder=dataclasses.asdict(current) if current else None)
    except Exception as exc:  # noqa: BLE001 - one top-level handler, reported with traceback
        module.fail_json(msg=f"run lock {p['path']}: {exc}", exception=traceback.format_exc())
    out = {"changed": status != "held", "status": status}
    if previous is not None and status == "taken-over":
        out["previous"] = dataclasses.asdict(previous)
        module.warn(f"took over the run lock of {previous.describe()}: "
                    + ("named by steal" if p["steal"] else "that process is gone"))
    os.chmod(p["path"], 0o644)
    module.exit_json(**out)


if __name__ == "__main__":
    main()
