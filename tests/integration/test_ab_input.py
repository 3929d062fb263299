# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/ab.yml refuses a DUT loop it must not run, naming why, before a kernel is built or a run
begins: every boot of a loop on a DUT reboots it, so kernel_reboot_ok=true is required, and the DUT
must be a host of the inventory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import playbook_run
import pytest

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK = ROOT / ".venv" / "bin" / "ansible-playbook"
SERIES = [{"path": str(p)} for p in sorted((ROOT / "files" / "patches" / "fixture").glob("*.patch"))]


@pytest.mark.parametrize(("extra", "named"), [
    ({"ab_dut": "vmdut"}, "ab_dut 'vmdut' must be an inventory host and needs kernel_reboot_ok=true"),
    ({"ab_dut": "vmdut", "kernel_reboot_ok": False}, "needs kernel_reboot_ok=true"),
    ({"ab_dut": "nosuchhost", "kernel_reboot_ok": True}, "ab_dut 'nosuchhost' must be an inventory host"),
])
def test_a_dut_loop_without_the_reboot_guard_or_the_host_is_refused(tmp_path, extra, named):
    ev = dict({"ab_series": SERIES, "xdplab_results_root": str(tmp_path / "results")}, **extra)
    argv = [str(PLAYBOOK), "-i", "inventories/vmlab", "playbooks/ab.yml", "-e", json.dumps(ev)]
    proc = playbook_run.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,  # noqa: S603
                            env=dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0"))
    out = " ".join(proc.stdout.split())
    assert proc.returncode != 0 and named in out, out[-3000:]
    assert "Build the two kernels" not in out and "Begin the run" not in out, out[-3000:]
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(("inventory", "extra", "named"), [
    # sweeps run from a generator to a DUT of the inventory: not in the QEMU guest
    (None, {"ab_sweeps": ["xdp_flow"]}, "the sweeps ['xdp_flow'] need ab_dut and an inventory with a generator"),
    ("inventories/vmlab", {"ab_sweeps": ["xdp_flows"]},
     'unknown scenario sweep "xdp_flows": known are pktgen_burst, xdp_flow, xsk_tx_metadata, xsk_vs_syscall'),
    ("inventories/vmlab", {"ab_sweeps": ["xsk_vs_syscall"], "ab_duration": 3000},
     "sweep_plan: this sweep needs"),
    ("inventories/vmlab", {"ab_scenarios": [], "ab_sweeps": []}, "at least one scenario or sweep (got [] and [])"),
])
def test_a_bad_sweep_is_refused_naming_it_before_anything_is_built(tmp_path, inventory, extra, named):
    ev = dict({"ab_series": SERIES, "xdplab_results_root": str(tmp_path / "results")}, **extra)
    if inventory:
        ev.update(ab_dut="vmdut", kernel_reboot_ok=True)
    argv = [str(PLAYBOOK), *(["-i", inventory] if inventory else []), "playbooks/ab.yml", "-e", json.dumps(ev)]
    proc = playbook_run.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,  # noqa: S603
                            env=dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0"))
    out = " ".join(proc.stdout.split())
    assert proc.returncode != 0 and named in out, out[-3000:]
    for later in ("Build the sweeps' programs", "Build the two kernels", "Begin the run"):
        assert later not in out, out[-3000:]
    assert not (tmp_path / "results").exists()


def test_sweep_hosts_without_pyroute2_are_refused_naming_them_before_anything_is_built(tmp_path):
    # A Python without pyroute2 (a bare venv) on both hosts: what a lab looks like before prereqs.yml.
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)  # noqa: S603
    host = {"ansible_connection": "local", "ansible_python_interpreter": str(bare / "bin" / "python3")}
    (tmp_path / "hosts.yml").write_text(json.dumps({"all": {"children": {
        "xdplab_generators": {"hosts": {"gen1": host}}, "xdplab_duts": {"hosts": {"dut1": host}}}}}))
    ev = {"ab_series": SERIES, "xdplab_results_root": str(tmp_path / "results"), "ab_dut": "dut1",
          "kernel_reboot_ok": True, "ab_scenarios": [], "ab_sweeps": ["xdp_flow"]}
    argv = [str(PLAYBOOK), "-i", str(tmp_path / "hosts.yml"), "playbooks/ab.yml", "-e", json.dumps(ev)]
    proc = playbook_run.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,  # noqa: S603
                            env=dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0"))
    out = " ".join(proc.stdout.split())
    assert proc.returncode != 0, out[-3000:]
    assert "need pyroute2 >= 0.9 on gen1, dut1" in out, out[-3000:]
    assert "No module named 'pyroute2'" in out and "playbooks/prereqs.yml first" in out, out[-3000:]
    for later in ("Build the sweeps' programs", "Build the two kernels", "Begin the run"):
        assert later not in out, out[-3000:]
    assert not (tmp_path / "results").exists()
