# SPDX-License-Identifier: GPL-3.0-or-later
"""The collection's stdout callback (ansible.cfg: xdplab.testbed.progress): a step that is still
running prints a progress line, not "FAILED - RETRYING"; a poll that really failed keeps the default."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from ansible_collections.xdplab.testbed.plugins.callback.progress import is_running_job

REPO = Path(__file__).resolve().parents[2]
PLAY = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: A long step
      ansible.builtin.command: sleep 3
      async: 60
      poll: 0
      register: job
    - name: Wait for the long step (log /tmp/step.log)
      ansible.builtin.async_status:
        jid: "{{ job.ansible_job_id }}"
      register: st
      until: st.finished
      retries: 20
      delay: 1
    - name: A check that fails
      ansible.builtin.command: "false"
      register: r
      until: r.rc == 0
      retries: 1
      delay: 0
      ignore_errors: true
"""


def test_a_running_step_prints_progress_and_a_failing_one_the_default(tmp_path):
    play = tmp_path / "wait.yml"
    play.write_text(PLAY)
    env = {k: v for k, v in os.environ.items() if k != "ANSIBLE_STDOUT_CALLBACK"}
    proc = subprocess.run([str(REPO / ".venv/bin/ansible-playbook"), "-i", "localhost,", "-c", "local",
                           "-e", f"ansible_python_interpreter={sys.executable}", str(play)],
                          capture_output=True, text=True, cwd=REPO, timeout=120, check=False,
                          env={**env, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    waits = [line for line in proc.stdout.splitlines() if "Wait for the long step" in line and "elapsed" in line]
    assert waits and all(line.startswith("RUNNING: [localhost]: Wait for the long step (log /tmp/step.log): ")
                         for line in waits), waits
    assert "elapsed, poll 1 of 21, gives up in" in waits[0]
    assert "FAILED - RETRYING: [localhost]: A check that fails" in proc.stdout


@pytest.mark.parametrize(("result", "running"), [
    ({"ansible_job_id": "1.2", "finished": 0, "started": 1}, True),
    ({"ansible_job_id": "1.2", "finished": 1}, False),
    ({"ansible_job_id": "1.2", "finished": 0, "failed": True}, False),
    ({"rc": 1, "failed": True}, False),
])
def test_only_an_unfinished_job_that_has_not_failed_is_running(result, running):
    assert is_running_job(result) is running
