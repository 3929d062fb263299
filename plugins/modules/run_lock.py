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
    process on the controller - pid, the pid's start time, host, run id, since when).
  - A second run fails at once with a message naming the holder. A holder whose process is gone (a
    run killed with SIGKILL, a crashed controller) is recognised as stale and the lock is taken over;
    RV(previous) then names it, and the caller should clean the host's ledger.
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
      - Take over a lock whose holder runs on another host (its liveness cannot be checked from here).
        A live holder on this host is never stolen.
    type: bool
    default: false
  owner_pid:
    description: Pid of the holder (set by the action plugin).
    type: int
    required: true
  owner_host:
    description: Host of the holder process (set by the action plugin).
    type: str
    required: true
attributes:
  check_mode:
    support: full
    details: Reports whether the lock could be taken; takes nothing.
    description: Can run in check_mode and return changed status prediction without modifying target.
  diff_mode:
    support: none
    description: Returns no diff.
  action:
    support: full
    description: Runs through an action plugin of the same name on the controller.
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
previous:
  description: The stale holder that was replaced, with C(status=taken-over).
  returned: when a stale lock was taken over
  type: dict
"""

import dataclasses
import os
import socket
import traceback

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils._ledger import (
    LockHeld,
    acquire,
    holder_alive,
    read_lock,
    release,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["held", "released"], default="held"),
            path=dict(type="path", default="/run/xdplab/run.lock"),
            run_id=dict(type="str"),
            steal=dict(type="bool", default=False),
            owner_pid=dict(type="int", required=True),
            owner_host=dict(type="str", required=True),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        if p["state"] == "released":
            current = read_lock(p["path"])
            ours = current is not None and current.pid == p["owner_pid"] and current.host == p["owner_host"]
            if ours and not module.check_mode:
                release(p["path"], p["owner_pid"], p["owner_host"])
            module.exit_json(changed=ours, status="released" if ours else "not-held")
        if module.check_mode:
            current = read_lock(p["path"])
            if current and not (current.pid == p["owner_pid"] and current.host == p["owner_host"]):
                if holder_alive(current, socket.gethostname()) is not False and not p["steal"]:
                    module.fail_json(msg=f"another xdplab run holds the lock {p['path']}: {current.describe()}")
            module.exit_json(changed=current is None, status="acquired" if current is None else "held")
        status, previous = acquire(p["path"], p["owner_pid"], p["owner_host"], p["run_id"], steal=p["steal"])
    except LockHeld as exc:
        module.fail_json(msg=str(exc))
    except Exception as exc:  # noqa: BLE001 - one top-level handler, reported with traceback
        module.fail_json(msg=f"run lock {p['path']}: {exc}", exception=traceback.format_exc())
    out = {"changed": status != "held", "status": status}
    if previous is not None and status == "taken-over":
        out["previous"] = dataclasses.asdict(previous)
        module.warn(f"took over a stale run lock: {previous.describe()} is gone")
    os.chmod(p["path"], 0o644)
    module.exit_json(**out)


if __name__ == "__main__":
    main()
