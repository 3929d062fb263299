# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action for xdplab.testbed.run_lock: the holder is this controller's ansible-playbook process."""

from __future__ import annotations

import os
import socket

from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        # Action plugins run in a worker forked from the ansible-playbook process: its parent is the run.
        args.setdefault("owner_pid", os.getppid())
        args.setdefault("owner_host", socket.gethostname())
        result.update(self._execute_module("xdplab.testbed.run_lock", module_args=args, task_vars=task_vars))
        return result
