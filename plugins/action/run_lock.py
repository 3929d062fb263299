# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action for xdplab.testbed.run_lock: the holder is this controller's ansible-playbook process.

The holder is recorded with its start time and this machine's boot id. When a target's lock is held
by a run of *this* controller whose process is provably gone (no such pid, another start time, or
another boot), the target cannot tell - it cannot see the controller's processes - so the action
checks here and asks the module to take over exactly that holder (``stale_holder``). A holder on a
third machine, or one that cannot be proven dead, is never taken over without ``steal``.
"""

from __future__ import annotations

import os
import socket

from ansible.plugins.action import ActionBase
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _process_identity as _proc


def holder_dead_here(holder: dict, this_host: str, proc: str = "/proc") -> bool:
    """Whether a lock holder that ran on this machine is provably gone."""
    if not isinstance(holder, dict) or holder.get("host") != this_host:
        return False
    try:
        pid = int(holder.get("pid"))
    except (TypeError, ValueError):
        return False
    if holder.get("boot_id") and holder["boot_id"] != _proc.boot_id(proc):
        return True  # this machine has rebooted since: every process of that boot is gone
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
        res = self._execute_module("xdplab.testbed.run_lock", module_args=args, task_vars=task_vars)
        holder = res.get("holder")
        if res.get("failed") and holder and args.get("state", "held") == "held" \
                and holder_dead_here(holder, socket.gethostname()):
            res = self._execute_module("xdplab.testbed.run_lock", module_args=dict(args, stale_holder=holder),
                                       task_vars=task_vars)
        result.update(res)
        return result
