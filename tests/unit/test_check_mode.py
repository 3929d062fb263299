# SPDX-License-Identifier: GPL-3.0-or-later
"""`ansible-playbook bench.yml --check` stops at once, before anything is created, saying what a run
would create, attach and tune."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import playbook_run

REPO = Path(__file__).resolve().parents[2]


def check_run(*extra: str) -> subprocess.CompletedProcess:
    return playbook_run.run([str(REPO / ".venv/bin/ansible-playbook"), "bench.yml", "--check", *extra],
                            capture_output=True, text=True, cwd=REPO, timeout=300,
                            env={**os.environ, "ANSIBLE_NOCOLOR": "1",
                                 "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.default"}, check=False)


def test_bench_check_mode_stops_first_and_says_what_it_would_do():
    proc = check_run("-e", '{"bench_scenarios": ["xdp_drop", "tc_drop"]}')
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0
    assert "check mode: bench.yml changes nothing and stops here" in out
    assert "create the network namespaces xdplab-gen, xdplab-dut and xdplab-sink" in out
    assert "(xdp_drop, tc_drop; XDP in native mode)" in out
    assert "with the latency preset" in out
    # It stopped in the first play: no task of the run itself was reached.
    assert "Take the run lock" not in out and "Choose the run id" not in out
    assert "ok=1" in out and "failed=1" in out


def test_bench_check_mode_without_tuning_says_so():
    out = " ".join(check_run("-e", "xdplab_tuning_enabled=false").stdout.split())
    assert "tune nothing," in out
