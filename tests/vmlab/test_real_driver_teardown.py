# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Runs on the lab's real drivers: SIGKILLed then playbooks/teardown.yml, every setting as before; the
pktgen burst sweep on the DUT's igb port.

Needs the lab up with its prerequisites (`make vmlab-faults` does that, runs this and takes the lab
down). The guests are reached over ssh with the lab's key, as the inventory reaches them.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK = ROOT / ".venv" / "bin" / "ansible-playbook"
KEY = "/var/lib/xdplab/vmlab/id_ed25519"
GUESTS = {"vmgen": 10122, "vmdut": 10123}
PORT = "igb0"
# What a run changes on the ports and hosts, read raw: the comparison is byte for byte.
READ_BACK = {
    "coalesce": f"ethtool -c {PORT}",
    "pause": f"ethtool -a {PORT}",
    "rings": f"ethtool -g {PORT}",
    "channels": f"ethtool -l {PORT}",
    "features": f"ethtool -k {PORT}",
    "irq_affinity": f"for i in $(awk -F: '/{PORT}/ {{print $1}}' /proc/interrupts); do "
                    "echo $i $(cat /proc/irq/$i/smp_affinity_list); done",
    "xdp": f"ip -d link show {PORT} | grep -o 'prog/xdp id [0-9]*' || true",
    "tc": f"tc qdisc show dev {PORT}; tc filter show dev {PORT} ingress",
    "nft": "nft list ruleset",
    "addresses": f"ip -br addr show {PORT}",
    "ledger": "ls -A /var/lib/xdplab/ledger 2>/dev/null || true",
    "tuning_snapshots": "ls -A /var/lib/xdplab/tuning 2>/dev/null || true",
    "processes": "pgrep -a -x 'xdpgen|xskgen|xsksink|udpsink|udpgen|sockperf|iperf3' || true",
    "pktgen": "grep -h -E '^(Running|Stopped):' /proc/net/pktgen/kpktgend_* 2>/dev/null || true",
}


def ssh(guest: str, script: str, timeout: float = 120) -> str:
    argv = ["ssh", "-i", KEY, "-p", str(GUESTS[guest]), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
            "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=20",
            "xdplab@127.0.0.1", "sudo sh -c " + shlex.quote(script)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False,  # noqa: S603
                          env=dict(os.environ, LC_ALL="C"))
    assert proc.returncode == 0, f"{guest}: {script!r} failed (rc={proc.returncode}): {proc.stderr.strip()}"
    return proc.stdout


def read_back(guest: str) -> dict[str, str]:
    return {name: ssh(guest, f"LC_ALL=C; {cmd}") for name, cmd in READ_BACK.items()}


def playbook(name: str, extra: dict | None, log: Path) -> subprocess.Popen:
    fh = open(log, "w", encoding="utf-8")  # noqa: SIM115 - the child holds it; closed with the process
    argv = [str(PLAYBOOK), "-i", "inventories/vmlab", name] + (["-e", json.dumps(extra)] if extra else [])
    return subprocess.Popen(argv, cwd=ROOT,  # noqa: S603
                            stdout=fh, stderr=subprocess.STDOUT, start_new_session=True,
                            env=dict(os.environ, ANSIBLE_NOCOLOR="1", PATH=f"{PLAYBOOK.parent}:{os.environ['PATH']}"))


def wait_for(pred, timeout: float, what: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        if proc.poll() is not None:
            pytest.fail(f"the run ended (rc={proc.returncode}) before {what}; log {log}")
        time.sleep(3)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}; log {log}")


@pytest.fixture
def lab():
    try:
        before = {guest: read_back(guest) for guest in GUESTS}
    except (AssertionError, subprocess.TimeoutExpired) as exc:
        pytest.fail(f"the lab does not answer ({exc}): bring it up with make vmlab-up and "
                    "ansible-playbook -i inventories/vmlab playbooks/prereqs.yml, or run make vmlab-faults")
    assert not before["vmdut"]["ledger"].strip(), f"the DUT's ledger is not empty before the test: {before}"
    return before


def test_sigkilled_bench_then_teardown_leaves_the_real_nics_as_they_were(lab, tmp_path):
    """Breaks: bench.yml is SIGKILLed, with its whole session, once the DUT's igb port is tuned (rx-usecs 30,
    flow control off) and has its XDP program: nothing of its own clean-up runs.

    After: playbooks/teardown.yml on the lab inventory puts every setting of both guests back byte for
    byte (coalescing, pause, rings, channels, offloads, the IRQ vectors' affinity), detaches the program,
    removes the tc and nftables objects, and leaves no ledger entry, snapshot or generator behind.
    """
    before = lab
    log = tmp_path / "bench.log"
    run = playbook("bench.yml", {"bench_scenarios": ["xdp_drop"], "bench_repetitions": 3, "bench_duration": 20,
                                 "xdplab_results_root": str(tmp_path / "results")}, log)
    try:
        def tuned_and_attached() -> bool:
            dut = ssh("vmdut", f"ethtool -c {PORT}; ip -d link show {PORT}")
            return "rx-usecs: 30" in dut and "prog/xdp" in dut
        wait_for(tuned_and_attached, 900, "the DUT tuned and its XDP program attached", run, log)
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait(30)
    killed = read_back("vmdut")
    assert killed != before["vmdut"], "the killed run left the DUT as it was: the case proves nothing"
    assert "rx-usecs: 30" in killed["coalesce"] and killed["ledger"].strip(), killed

    down_log = tmp_path / "teardown.log"
    down = playbook("playbooks/teardown.yml", None, down_log)
    assert down.wait(900) == 0, f"teardown failed; log {down_log}"
    for guest, was in before.items():
        now = read_back(guest)
        differ = {k: {"before": was[k], "after": now[k]} for k in was if now[k] != was[k]}
        assert not differ, f"{guest} is not as it was before the run: {json.dumps(differ, indent=1)}"


def pktgen_sending() -> bool:
    lines = ssh("vmdut", READ_BACK["pktgen"]).splitlines()
    return any(line.startswith("Running:") and PORT in line.split() for line in lines)


def test_pktgen_burst_sweeps_the_dut_igb_port_and_a_killed_sweep_is_undone(lab, tmp_path):
    """pktgen_burst.yml on the lab (pktgen_burst_on: dut): the DUT's own pktgen sends out its igb port to
    the generator, one record per (burst, variant) naming the igb driver, the frames arrive on the
    generator's igb port, and both guests are as before. Then a sweep SIGKILLed while pktgen sends
    (nothing stops it but the DUT's ledger entry of the pktgen module) is stopped and reset by teardown.
    """
    before = lab
    rx = f"cat /sys/class/net/{PORT}/statistics/rx_packets"
    received = int(ssh("vmgen", rx))
    log = tmp_path / "pktgen.log"
    results = tmp_path / "results"
    run = playbook("playbooks/pktgen_burst.yml", {
        "scenarios_repetitions": 1, "scenarios_duration": 2, "xdplab_results_root": str(results),
        "scenarios_pktgen_burst_matrix": {"burst": [1, 32], "pkt_size": [64]}}, log)
    assert run.wait(1200) == 0, f"pktgen_burst.yml failed; log {log}"
    [run_dir] = [d for d in results.iterdir() if d.is_dir()]
    records = [json.loads(p.read_text()) for p in sorted(run_dir.glob("pktgen_burst__*.json"))]
    points = sorted((r["variant"], r["params"]["burst"], r["params"]["clone_skb"]) for r in records)
    assert points == [("clone_off", 1, 0), ("clone_off", 32, 0), ("clone_on", 1, 64), ("clone_on", 32, 64)], points
    for rec in records:
        assert rec["params"]["device"] == "igb" and rec["environment"]["nic"][PORT]["driver"] == "igb", rec["params"]
        assert rec["samples"][0] > 0 and rec["counters"]["gen_errors"] == 0, rec["counters"]
    sent = sum(rec["counters"]["gen_packets"] for rec in records)
    # The emulated receiver drops what it cannot take; what arrived crossed the lab's igb wire.
    assert int(ssh("vmgen", rx)) - received > sent // 10, (received, sent)
    for guest, was in before.items():
        now = read_back(guest)
        assert now == was, f"{guest} after the sweep: {json.dumps({k: now[k] for k in now if now[k] != was[k]})}"

    log = tmp_path / "killed.log"
    run = playbook("playbooks/pktgen_burst.yml", {
        "scenarios_repetitions": 1, "scenarios_duration": 600, "scenarios_budget": 0,
        "xdplab_results_root": str(results), "scenarios_pktgen_burst_matrix": {"burst": [8], "pkt_size": [64]},
        "scenarios_pktgen_burst_variants": ["clone_off"]}, log)
    try:
        wait_for(pktgen_sending, 600, "pktgen sending on the DUT", run, log)
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait(30)
    time.sleep(3)
    assert pktgen_sending(), "pktgen stopped with the play: the kill proves nothing"
    down_log = tmp_path / "teardown.log"
    assert playbook("playbooks/teardown.yml", None, down_log).wait(900) == 0, f"teardown failed; log {down_log}"
    for guest, was in before.items():
        now = read_back(guest)
        assert now == was, f"{guest} after teardown: {json.dumps({k: now[k] for k in now if now[k] != was[k]})}"
