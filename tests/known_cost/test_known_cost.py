# SPDX-License-Identifier: GPL-3.0-or-later
"""A known cost recovered: bench.yml's dut_cost program stage against BPF_PROG_TEST_RUN.

xdp_drop and xdp_drop_work are one program built twice, the second with a fixed amount of extra work
per packet. The reference for that work is BPF_PROG_TEST_RUN in repeat mode (no live frames: allowed
on kernels that refuse them) of each build, attached to a veth of a namespace this test creates. Then
bench.yml measures both scenarios on its embedded test bed, and the difference of their program stages
(summary.dut_cost.stages.program) must lie within 3% of the reference difference. It fails when the
accounting is wrong (another interval than the rate's, another divisor than the program's runs, the
statistics not switched on).

The generator is paced to RATE packets/s for both builds: matched offered loads, far below what the
DUT's kthread handles even with the extra work. There the total is checked too: a total the records
give must have a Δ whose 95% interval contains the reference; where they give none, every repetition
and summary must say why (``not_separable``) and carry no total, and the candidate method's figures
(the NAPI kthread's schedstat time, ``unvalidated``) are printed against the reference.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.results._known_cost import recovery, rep_values
from ansible_collections.xdplab.testbed.plugins.module_utils.xdp import _bpf

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
NS = f"xkc{os.getpid() % 100000}"
PAIR = ("xdp_drop", "xdp_drop_work")
TOLERANCE = 0.03
REPETITIONS = 3
ROUNDS = 2
# Offered load of both builds, packets/s: below saturation (the DUT's kthread takes about 1 Mpps of
# xdp_drop_work, the AF_PACKET generator sends up to about 1 Mpps).
RATE = 200_000
# A 64-byte Ethernet/IPv4/UDP frame (the generator's size).
FRAME = bytes.fromhex("020000000002020000000001" + "0800" + "4500003200000000401100000a0000010a000002"
                      + "04000400001e0000") + bytes(22)

pytestmark = pytest.mark.root


def reference_ns(objects: Path, repeat: int = 200_000, rounds: int = 7) -> dict[str, float]:
    """Median over `rounds` of BPF_PROG_TEST_RUN's average ns per run of each build, on the CPU the DUT's
    NAPI kthread runs on (the highest one; the generator is on CPU 0)."""
    out = {}
    allowed = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {max(allowed)})
    subprocess.run(["ip", "netns", "add", NS], check=True)
    try:
        subprocess.run(["ip", "-n", NS, "link", "add", "v0", "type", "veth", "peer", "name", "v1"], check=True)
        for name in PAIR:
            subprocess.run(["ip", "-n", NS, "link", "set", "dev", "v0", "xdpdrv", "obj",
                            str(objects / f"{name}.o"), "sec", "xdp"], check=True)
            link = json.loads(subprocess.run(["ip", "-n", NS, "-j", "-d", "link", "show", "v0"], check=True,
                                             capture_output=True, text=True).stdout)[0]
            fd = _bpf.prog_fd_by_id(link["xdp"]["prog"]["id"])
            try:
                runs = []
                for _round in range(rounds):
                    retval, ns = _bpf.prog_test_run(fd, FRAME, repeat)
                    assert retval == 1, f"{name} returned {retval} on the test frame, not XDP_DROP"
                    runs.append(ns)
                out[name] = statistics.median(runs)
            finally:
                os.close(fd)
            subprocess.run(["ip", "-n", NS, "link", "set", "dev", "v0", "xdpdrv", "off"], check=True)
    finally:
        os.sched_setaffinity(0, allowed)
        subprocess.run(["ip", "netns", "delete", NS], check=False)
    return out


def test_program_stage_recovers_the_known_cost(tmp_path):
    started = time.monotonic()
    objects = tmp_path / "xdp"
    subprocess.run(["make", "-s", "-C", str(ROOT / "files/xdp"), f"OUT={objects}"], check=True)
    before = reference_ns(objects)

    results = tmp_path / "results"
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    # another run holding the run lock (one started without the heavy-work lock) is waited for
    extra = {"bench_scenarios": list(PAIR), "xdplab_results_root": str(results), "xdplab_lock_wait": 600,
             "bench_repetitions": REPETITIONS, "bench_rounds": ROUNDS, "bench_rate": RATE}
    proc = subprocess.run([str(BIN / "ansible-playbook"), str(ROOT / "bench.yml"), "-e", json.dumps(extra)],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    failed = [line for line in proc.stdout.splitlines() if "FAILED!" in line or "msg:" in line]
    assert proc.returncode == 0, "\n".join(failed[-20:]) + proc.stdout[-3000:] + proc.stderr[-1000:]
    # the reference before and after the live runs, averaged: a virtual machine's steal time and other
    # load change the CPU's speed over minutes
    after = reference_ns(objects)
    ref = {name: (before[name] + after[name]) / 2 for name in PAIR}
    ref_delta = ref["xdp_drop_work"] - ref["xdp_drop"]
    assert ref_delta > 100, f"the extra work costs only {ref_delta} ns per run in BPF_PROG_TEST_RUN: {ref}"
    rounds: dict[str, list[dict]] = {name: [] for name in PAIR}
    for path in results.glob("*/*.json"):
        rec = json.loads(path.read_text())
        if rec.get("scenario") in PAIR:
            rounds[rec["scenario"]].append(rec)
    assert all(len(recs) == ROUNDS for recs in rounds.values()), {n: len(r) for n, r in rounds.items()}
    # repetitions pooled over the interleaved rounds: the machine's speed drifts between one scenario and
    # the next, and the rounds put that drift on both builds alike
    program = recovery(rep_values(rounds["xdp_drop"], "program"), rep_values(rounds["xdp_drop_work"], "program"),
                       ref_delta, tolerance=TOLERANCE)
    thread = {name: rep_values(recs, "napi_thread") for name, recs in rounds.items()}
    napi = recovery(thread["xdp_drop"], thread["xdp_drop_work"], ref_delta) if all(
        len(v) >= 2 for v in thread.values()) else None
    rate_ns = {name: [round(r["summary"]["ns_per_packet"]) for r in recs] for name, recs in rounds.items()}
    pps = {name: [round(r["summary"]["mean"]) for r in recs] for name, recs in rounds.items()}
    print(f"reference (BPF_PROG_TEST_RUN) before {before}, after {after}, delta {ref_delta:.1f} ns; "
          f"program stage delta {program['delta']:.1f} ns ({program['off_percent']:+.2f}%, 95% CI "
          f"{program['ci95']}); NAPI kthread (schedstat) delta "
          + (f"{napi['delta']:.1f} ns ({napi['off_percent']:+.1f}%, 95% CI {napi['ci95']}, contains the reference: "
             f"{napi['contains']}; means {[round(sum(v) / len(v), 1) for v in thread.values()]})" if napi else "none")
          + f"; offered {RATE} pps, DUT pps {pps}; rate-derived ns/packet {rate_ns}; "
          f"bound {[r['bound'] for n in PAIR for r in rounds[n]]}; took {time.monotonic() - started:.0f} s")
    for name, rec in [(n, r) for n, recs in rounds.items() for r in recs]:
        assert rec["params"].get("bpf_stats") == "on", name
        assert rec["params"].get("rate") == RATE, (name, rec["params"])
        assert all("dut_cost" in rep for rep in rec["reps"]), name
        assert rec["bound"] in ("generator-bound", "dut-bound", "shared-core"), (name, rec["bound"])
    # the total: checked against the reference where the records give one, else never a number
    totals = {name: rep_values(recs, "total") for name, recs in rounds.items()}
    if any(totals.values()):
        total = recovery(totals["xdp_drop"], totals["xdp_drop_work"], ref_delta)
        assert total["contains"], (
            f"the total's delta {total['delta']:.1f} ns, 95% CI {total['ci95']}, misses {ref_delta:.1f} ns")
    else:
        for name, rec in [(n, r) for n, recs in rounds.items() for r in recs]:
            for cost in [rec["summary"]["dut_cost"]] + [rep["dut_cost"] for rep in rec["reps"]]:
                assert "ns_per_packet" not in cost and "ci95" not in cost, (name, cost)
                assert cost.get("not_separable"), (name, cost)
    assert program["within"], (
        f"program stage delta {program['delta']:.1f} ns is not within {TOLERANCE:.0%} of the reference "
        f"{ref_delta:.1f} ns")
