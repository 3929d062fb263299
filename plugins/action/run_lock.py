# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action for xdplab.testbed.run_lock: the holder is this controller's ansible-playbook process.

The holder is recorded with its start time, this machine's boot id and its machine id. When a target's
lock is held by a run of *this* boot of *this* controller whose process is provably gone (no such pid,
or another start time), the target cannot tell - it cannot see the controller's processes - so the
action checks here and asks the module to take over exactly that holder (``stale_holder``). A holder on
another machine (a clone with the same hostname included) or another boot, which cannot be proven
dead, is never taken over unless ``steal`` names it.
"""

from __future__ import annotations

import os
import socket

from ansible.plugins.action import ActionBase
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _process_identity as _proc


def holder_dead_here(holder: dict, proc: str = "/proc") -> bool:
    """Whether a lock holder that ran on this very boot of this machine (machine id and boot id both
    ours; the hostname proves nothing) is provably gone: its pid is gone or has another start time."""
    if not isinstance(holder, dict) or holder.get("unreadable"):
        return False
    try:
        pid = int(holder.get("pid"))
    except (TypeError, ValueError):
        return False
    machine = _proc.machine_id()
    if not machine or holder.get("machine_id") != machine or holder.get("boot_id") != _proc.boot_id(proc):
        return False
    if pid <= 1:
        return False
    start = _proc.start_time(pid, proc)
    if start is None:
        return True
    return holder.get("pid_start") is not None and start != holder["pid_start"]


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        # Action plugins run in a worker forked from the ansible-playbook process: its parent is the run.
        owner = os.getppid()
        args.setdefault("owner_pid", owner)
        args.setdefault("owner_host", socket.gethostname())
        if args["owner_pid"] == owner and args["owner_host"] == socket.gethostname():
            start = _proc.start_time(owner)
            if start is not None:
                args.setdefault("owner_start", start)
            args.setdefault("owner_boot_id", _proc.boot_id())
            if _proc.machine_id():
                args.setdefault("owner_machine_id", _proc.machine_id())
        res = self._execute_module("xdplab.testbed.run_lock", module_args=args, task_vars=task_vars)
        holder = res.get("holder")
        if res.get("failed") and holder and args.get("state", "held") == "held" \
                and holder_dead_here(holder):
            res = self._execute_module("xdplab.testbed.run_lock", module_args=dict(args, stale_holder=holder),
                                       task_vars=task_vars)
        result.update(res)
        return result
