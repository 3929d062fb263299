# SPDX-License-Identifier: GPL-3.0-or-later
"""`ansible-playbook bench.yml --check` stops at once, before anything is created, saying what a run
would create, attach and tune, and exits 0 (`make bench BENCH_ARGS=--check` is a check that passes)."""

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
    assert proc.returncode == 0, out
    assert "check mode: bench.yml changes nothing and stops here" in out
    assert "create the network namespaces xdplab-gen, xdplab-dut and xdplab-sink" in out
    assert "(xdp_drop, tc_drop; XDP in native mode)" in out
    assert "with the latency preset" in out
    # It stopped in the first play: no task of the run itself was reached.
    assert "Take the run lock" not in out and "Choose the run id" not in out
    assert "Begin the run" not in out and "Bring up the virtual test bed" not in out
    assert "failed=0" in out


def test_bench_check_mode_without_tuning_says_so():
    out = " ".join(check_run("-e", "xdplab_tuning_enabled=false").stdout.split())
    assert "tune nothing," in out


def test_make_bench_check_installs_nothing():
    # `make -n` prints the recipes make would run: with --check in BENCH_ARGS, no apt-get and no
    # install of the apt list, only its dry run; the playbook itself runs with --check.
    dry = ["make", "-n", "-W", "requirements-apt.txt", "bench"]
    proc = subprocess.run([*dry, "BENCH_ARGS=--check"], capture_output=True, text=True, cwd=REPO, check=True)  # noqa: S603
    assert "host_deps.py install --dry-run requirements-apt.txt" in proc.stdout
    assert "apt-get" not in proc.stdout and "host_deps.py install requirements-apt" not in proc.stdout
    assert "ansible-playbook bench.yml --check" in proc.stdout
    real = subprocess.run(dry, capture_output=True, text=True, cwd=REPO, check=True)  # noqa: S603
    assert "host_deps.py install requirements-apt.txt" in real.stdout
