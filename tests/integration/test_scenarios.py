# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The reference scenario playbooks end to end on the virtual test bed (real namespaces, veth, XDP,
AF_XDP, nftables, tc), CI-sized: 1 repetition of 1 s per point.

- xsk_tx_metadata.yml on the embedded test bed (an inventory without generators);
- xsk_vs_syscall.yml on the default inventory (gen/dut) with this test's namespace prefix;
- xdp_flow.yml on a two-host inventory whose hosts are namespaces (the multi-host path: generator
  and DUT are different inventory hosts reached over the netns connection);
- a tool that rejects a parameter (zero-copy on veth): the xsk points fail with xskgen's/xsksink's
  own message, the socket points' records stay, no report, everything cleaned up;
- an over-budget sweep is refused before anything is built.
Every run waits for the run lock (another run holding it is the lock working) and must leave no
namespace, no lock and no INCOMPLETE marker behind (except on the failed run, which keeps it).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from _netns_runs import lock_not_stale, run_lock, run_playbook

pytestmark = [pytest.mark.root, run_lock]

# 2 s per step: at 10 Hz a 1 s burst keeps about 8 interior intervals, and on a loaded machine ramp
# trimming once left fewer than 3 (a "short" burst, rightly refused as a rate).
SMALL = {"scenarios_repetitions": 1, "scenarios_duration": 2, "xdplab_lock_wait": 900}


def prefix(tag: str) -> str:
    return f"h9{tag}{os.getpid() % 10000}-"


def play(name: str, tmp_path: Path, pfx: str, extra: dict | None = None,
         inventory: str | None = None) -> subprocess.CompletedProcess:
    ev = dict(SMALL, xdplab_results_root=str(tmp_path / "results"), **(extra or {}))
    return run_playbook(f"playbooks/{name}.yml", pfx, ev, inventory)


def run_dir(tmp_path: Path) -> Path:
    dirs = list((tmp_path / "results").iterdir())
    assert len(dirs) == 1, dirs
    return dirs[0]


def records(d: Path) -> dict[str, dict]:
    out = {}
    for p in d.glob("*.json"):
        rec = json.loads(p.read_text())
        out[rec["variant"] + " " + json.dumps(rec["params"].get("pkt_size"))] = rec
    return out


def check_ok(proc: subprocess.CompletedProcess, tmp_path: Path, scenario: str, variants: list[str]) -> dict:
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    lock_not_stale()
    d = run_dir(tmp_path)
    assert not (d / "INCOMPLETE").exists()
    recs = records(d)
    assert sorted(r["variant"] for r in recs.values()) == sorted(variants)
    for r in recs.values():
        assert r["schema"] == "xdplab.result/v1" and r["scenario"] == scenario
        assert r["summary"]["n"] == 1 and r["samples"][0] > 1000, r["samples"]
        assert r["environment"].get("kernel"), r["environment"]
    report = (d / "report.txt").read_text()
    for v in variants:
        assert v in report
    assert (d / "report.md").exists() and (d / "report.csv").exists()
    return recs


def test_xsk_tx_metadata_embedded_test_bed(tmp_path):
    pfx = prefix("m")
    inv = tmp_path / "controller.yml"
    inv.write_text("all:\n  hosts:\n    localhost:\n      ansible_connection: local\n"
                   "      ansible_python_interpreter: '{{ ansible_playbook_python }}'\n")
    proc = play("xsk_tx_metadata", tmp_path, pfx, {"scenarios_xsk_tx_metadata_matrix": {"pkt_size": [200]}},
                inventory=str(inv))
    recs = check_ok(proc, tmp_path, "xsk_tx_metadata", ["md_off", "md_fill", "md_request"])
    # the DUT counted in XDP what xskgen sent: every record carries the DUT's XDP_DROP count
    for r in recs.values():
        assert r["tool"] == "xskgen" and r["counters"]["dut_packets"] > 0, r["counters"]
    # the embedded test bed's hosts are the run role's gen and dut (as bench.yml's)
    assert f"{pfx}gen" in proc.stdout and f"{pfx}dut" in proc.stdout and f"{pfx}generator" not in proc.stdout


def test_xsk_vs_syscall_default_inventory(tmp_path):
    pfx = prefix("s")
    # rx_xsk in scenarios_xsk_mode (auto), tx_xsk_copy forced to copy mode
    variants = ["tx_syscall", "tx_xsk_copy", "rx_syscall", "rx_xsk"]
    proc = play("xsk_vs_syscall", tmp_path, pfx, {"scenarios_xsk_vs_syscall_variants": variants})
    recs = check_ok(proc, tmp_path, "xsk_vs_syscall", variants)
    by_variant = {r["variant"]: r for r in recs.values()}
    assert by_variant["tx_syscall"]["tool"] == "udpgen" and by_variant["tx_xsk_copy"]["tool"] == "xskgen"
    # every record says how its socket was bound: the forced copy says it was asked for; rx_xsk (auto)
    # falls back to copy, veth having no zero copy
    assert by_variant["tx_xsk_copy"]["reps"][0]["gen_figures"]["bind_mode"] == "copy"
    assert by_variant["tx_xsk_copy"]["reps"][0]["gen_figures"]["mode_note"] == "copy (asked)"
    assert "bind_mode" not in by_variant["tx_syscall"]["reps"][0].get("gen_figures", {})
    assert by_variant["rx_xsk"]["counters"]["server"]["info"]["mode"] == "copy"
    for v in ("rx_syscall", "rx_xsk"):
        cpu = by_variant[v]["counters"]["server_cpu"]
        assert cpu["app_pct"] > 0, cpu  # the sink's own CPU while it received
    for v in ("tx_syscall", "tx_xsk_copy"):
        assert by_variant[v]["reps"][0]["gen_cpu"]["app_pct"] > 0
    # our namespaces, never the default test bed's
    assert f"{pfx}gen" in proc.stdout and "xdplab-gen" not in proc.stdout.replace("xdplab-gen:", "")


def test_xdp_flow_two_host_inventory(tmp_path):
    pfx = prefix("f")
    inv = tmp_path / "hosts.yml"
    inv.write_text(
        "all:\n  vars:\n    ansible_python_interpreter: '{{ ansible_playbook_python }}'\n"
        "  hosts:\n    localhost:\n      ansible_connection: local\n"
        "  children:\n    xdplab_virtual:\n      vars:\n        ansible_connection: xdplab.testbed.netns\n"
        "      children:\n        xdplab_generators:\n          hosts:\n            h9gen: {}\n"
        "        xdplab_duts:\n          hosts:\n            h9dut: {}\n")
    proc = play("xdp_flow", tmp_path, pfx, {"scenarios_xdp_flow_first_packet_flows": 5}, inventory=str(inv))
    recs = check_ok(proc, tmp_path, "xdp_flow", ["xdp_flow", "tc_bpf", "nft"])
    by_variant = {r["variant"]: r for r in recs.values()}
    assert by_variant["xdp_flow"]["counters"]["dut_packets"] > 0
    assert by_variant["nft"]["counters"]["dut_packets"] > 0
    assert f"{pfx}h9gen" in proc.stdout and f"{pfx}h9dut" in proc.stdout
    # first packet of a new flow: entry inserted on a miss, per-flow figures from flowins
    fp = (run_dir(tmp_path) / "first_packet.txt").read_text()
    m = re.search(r"flowins: flows=(\d+) insert_ns min=(\d+) median=(\d+) max=(\d+) slow_packets=(\d+)", fp)
    assert m, fp
    flows, lo, med, hi, slow = map(int, m.groups())
    assert flows == 5 and 0 < lo <= med <= hi < 1_000_000_000
    # 3 packets per flow: at least the first took the slow path; not all of them may have
    assert flows <= slow < 3 * flows, fp


def test_tool_rejecting_a_parameter_fails_its_points_and_keeps_the_others(tmp_path):
    pfx = prefix("z")
    proc = play("xsk_vs_syscall", tmp_path, pfx, {"scenarios_xsk_mode": "zerocopy"})
    assert proc.returncode != 0
    out = proc.stdout
    # tx_xsk and rx_syscall send with xskgen, rx_xsk receives with xsksink: all three refuse
    assert "3 of 4 steps failed" in out, out[-5000:]
    assert "xskgen: bind(XDP_ZEROCOPY) failed: Operation not supported" in out, out[-5000:]
    assert "xsksink exited while starting" in out
    lock_not_stale()
    d = run_dir(tmp_path)
    assert (d / "INCOMPLETE").exists() and not (d / "report.txt").exists()
    kept = sorted(r["variant"] for r in records(d).values())
    assert kept == ["tx_syscall"]


def test_over_budget_refused_before_anything_is_built(tmp_path):
    pfx = prefix("b")
    proc = play("xdp_flow", tmp_path, pfx, {"scenarios_budget": 5, "scenarios_duration": 2})
    assert proc.returncode != 0
    assert "over budget" in proc.stdout, proc.stdout[-3000:]
    assert "Bring up the virtual test bed" not in proc.stdout and "Take the run lock" not in proc.stdout
    assert not (tmp_path / "results").exists()


def test_pktgen_burst_on_neither_qemu_nor_dut_is_named(tmp_path):
    # pktgen_burst.yml runs in a QEMU-booted kernel (qemu) or on a lab DUT (dut): anything else fails
    # naming the value before a kernel is built or a run begins.
    proc = play("pktgen_burst", tmp_path, prefix("p"), {"pktgen_burst_on": "guest"})
    assert proc.returncode != 0
    assert "pktgen_burst_on is guest: it must be qemu" in proc.stdout, proc.stdout[-3000:]
    assert "Build the guest kernel" not in proc.stdout and "Take the run lock" not in proc.stdout, proc.stdout[-3000:]
    assert not (tmp_path / "results").exists()
