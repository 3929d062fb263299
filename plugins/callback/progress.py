# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: progress
type: stdout
short_description: Ansible's default output, with a progress line for a long step that is still running
version_added: "0.2.0"
description:
  - >-
    The default stdout callback, except for a task that polls an async job (C(ansible.builtin.async_status)
    with C(until)) while the job is still running. Ansible's default prints C(FAILED - RETRYING ... (229 retries
    left)) for each poll, which reads as a failure. This callback prints
    C(RUNNING: [host]: task: 2m30s elapsed, poll 5 of 229, gives up in 1h52m) instead.
  - A poll that did fail (the module failed, or a condition other than a running job) keeps the default line.
  - The collection's ansible.cfg sets it as C(stdout_callback).
extends_documentation_fragment:
  - ansible.builtin.default_callback
  - ansible.builtin.result_format_callback
requirements:
  - set as the stdout callback (C(stdout_callback = xdplab.testbed.progress) in ansible.cfg)
"""

import time

from ansible import constants as C
from ansible.plugins.callback.default import CallbackModule as DefaultCallback
from ansible_collections.xdplab.testbed.plugins.module_utils.common._progress import still_running


def is_running_job(result: dict) -> bool:
    """An async_status result of a job that has not finished, and has not failed."""
    return "ansible_job_id" in result and not result.get("finished") and not result.get("failed")


class CallbackModule(DefaultCallback):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "xdplab.testbed.progress"

    def __init__(self):
        super().__init__()
        self._started: dict[tuple[str, str], float] = {}

    def v2_runner_on_start(self, host, task):
        self._started[(host.get_name(), task._uuid)] = time.monotonic()
        super().v2_runner_on_start(host, task)

    def v2_runner_retry(self, result):
        res = result.result if hasattr(result, "result") else result._result
        if not is_running_job(res):
            super().v2_runner_retry(result)
            return
        task = result.task if hasattr(result, "task") else result._task
        host = result.host if hasattr(result, "host") else result._host
        started = self._started.get((host.get_name(), task._uuid), time.monotonic())
        self._display.display(still_running(str(result.task_name or task), self.host_label(result),
                                            int(res.get("attempts", 1)), int(res.get("retries", 1)),
                                            float(task.delay or 0), time.monotonic() - started),
                              color=C.COLOR_DEBUG)
