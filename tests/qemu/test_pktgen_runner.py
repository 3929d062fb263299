# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""pktgen for real, in the guest kernel the kernel role built (the host kernel has no pktgen):

1. boot it with xdplab.testbed.qemu_exec (run as Ansible runs it, see conftest.py) and run
   tests/qemu/test_pktgen_module.py inside (the pktgen module on dummy and veth devices);
2. playbooks/pktgen_burst.yml end to end, CI-sized (burst 1 and 8 x clone_skb off/on, 1 repetition of
   1 s): records per point, a report, and a bad parameter failing its points with pktgen's reason.

No kernel is a failure, not a skip.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import IN_GUEST, ansible_playbook, guest_kernel, only_run_dir, run_guest_tests

pytestmark = [pytest.mark.qemu, pytest.mark.root]


@pytest.mark.skipif(IN_GUEST, reason="already inside the guest: no nested QEMU")
def test_pktgen_module_inside_guest():
    run_guest_tests("test_pktgen_module.py", min_passed=8, cpus=2, timeout=600)


def playbook(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    return ansible_playbook("playbooks/pktgen_burst.yml", "-e", f"pktgen_guest_kernel={guest_kernel()}",
                            "-e", f"xdplab_results_root={tmp_path}", "-e", "scenarios_repetitions=1",
                            "-e", "scenarios_duration=1",
                            "-e", json.dumps({"scenarios_pktgen_burst_matrix": {"burst": [1, 8], "pkt_size": [64]}}),
                            *extra)


@pytest.mark.skipif(IN_GUEST, reason="already inside the guest: no nested QEMU")
def test_pktgen_burst_playbook(tmp_path):
    proc = playbook(tmp_path)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
    d = only_run_dir(tmp_path)
    assert not (d / "INCOMPLETE").exists() and not (d / "PLAN").exists()
    records = [json.loads(p.read_text()) for p in d.glob("pktgen_burst__*.json")]
    got = sorted((r["variant"], r["params"]["burst"], r["params"]["clone_skb"]) for r in records)
    assert got == [("clone_off", 1, 0), ("clone_off", 8, 0), ("clone_on", 1, 64), ("clone_on", 8, 64)]
    for r in records:
        assert r["schema"] == "xdplab.result/v1" and r["tool"] == "pktgen"
        assert r["summary"]["n"] == 1 and r["samples"][0] > 1000
        assert r["environment"]["kernel"] != os.uname().release  # measured in the guest kernel
        assert r["reps"][0]["gen_cpu"]["system_pct"] > 0
    report = (d / "report.txt").read_text()
    assert "pktgen_burst / clone_on: sweep over burst" in report and "burst=8" in report


@pytest.mark.skipif(IN_GUEST, reason="already inside the guest: no nested QEMU")
def test_pktgen_burst_bad_parameter_fails_its_points_keeps_the_others(tmp_path):
    # veth refuses burst > 1 (no IFF_TX_SKB_SHARING): burst 1 points run, burst 8 points fail.
    proc = playbook(tmp_path, "-e", json.dumps({"pktgen_device": {"name": "h9pv0", "kind": "veth"},
                                                "pktgen_clone_skb": 0}))
    assert proc.returncode != 0
    out = proc.stdout
    assert "2 of 4 steps failed" in out and "refused 'burst 8' on h9pv0" in out, out[-4000:]
    d = only_run_dir(tmp_path)
    assert (d / "INCOMPLETE").exists() and not (d / "report.txt").exists()
    kept = sorted(json.loads(p.read_text())["params"]["burst"] for p in d.glob("pktgen_burst__*.json"))
    assert kept == [1, 1]


@pytest.mark.skipif(IN_GUEST, reason="already inside the guest: no nested QEMU")
def test_pktgen_burst_over_budget_refused_before_boot(tmp_path):
    proc = playbook(tmp_path, "-e", "scenarios_budget=3")
    assert proc.returncode != 0
    assert "over budget" in proc.stdout, proc.stdout[-3000:]
    assert "Boot the guest" not in proc.stdout
    assert list(tmp_path.iterdir()) == []
