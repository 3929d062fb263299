# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run one of the collection's playbooks on a test bed of namespaces with this test's prefix, and check
that the run left no namespace of that prefix and no stale run lock behind. Shared by the tests of the
scenario playbooks and of bench.yml's programs of the user's own."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import playbook_run
import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.state._ledger import read_lock

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK = ROOT / ".venv" / "bin" / "ansible-playbook"
LOCK = "/run/xdplab/run.lock"
# The test files whose playbook runs take the host's run lock: one pytest-xdist group, run in a row by
# one worker (a run beside another would only wait for the lock), first, while the other worker takes
# the rest file by file (tests/integration/conftest.py).
RUN_LOCK_GROUP = "run_lock"
run_lock = pytest.mark.xdist_group(RUN_LOCK_GROUP)


def netns_with(pfx: str) -> list[str]:
    out = subprocess.run(["ip", "-j", "netns", "list"], capture_output=True, text=True, check=True).stdout  # noqa: S607
    return [n["name"] for n in json.loads(out or "[]") if n["name"].startswith(pfx)]


def run_playbook(playbook: str, pfx: str, extra: dict, inventory: str | None = None) -> subprocess.CompletedProcess:
    """ansible-playbook `playbook` (relative to the collection root) with `extra` as -e and the namespace
    prefix `pfx`; the namespaces of that prefix it left are deleted, and their names fail the test."""
    argv = [str(PLAYBOOK), playbook, "-e", json.dumps(dict(extra, xdplab_netns_prefix=pfx))]
    if inventory:
        argv += ["-i", inventory]
    try:
        proc = playbook_run.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=1500, check=False,  # noqa: S603
                                env=dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0"))
    finally:
        left = netns_with(pfx)
        for ns in left:
            subprocess.run(["ip", "netns", "del", ns], check=False)  # noqa: S603,S607
    assert not left, f"namespaces left behind: {left}"
    return proc


def lock_not_stale() -> None:
    # Our ansible-playbook has exited: a lock naming a dead process is one it failed to release
    # (another live run may hold it meanwhile: that is the lock working).
    holder = read_lock(LOCK)
    if holder is not None:
        assert Path(f"/proc/{holder.pid}").exists(), f"stale lock left behind: {holder.describe()}"
