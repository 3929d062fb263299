# SPDX-License-Identifier: GPL-3.0-or-later
"""The report of a bisection (results._bisect_report): culprit subject and patch-id, Δ with interval,
each step, the cost, the method; text and Markdown of at most 100 columns."""

from __future__ import annotations

import numpy as np
import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.results import _bisect
from ansible_collections.xdplab.testbed.plugins.module_utils.results import _bisect_report as report
from test_bisect import simulator

SERIES = [{"subject": f"net: pktgen: change {i} of a series whose subjects are long enough to need care",
           "patch_id": f"{i:040x}"} for i in range(1, 7)]


def state(effects, broken=(), seed=14, threshold=300.0):
    out = _bisect.bisect(6, simulator(effects, np.random.default_rng(seed), broken=broken), threshold=threshold)
    for s in out["steps"]:
        if s["decision"] == "skip":
            s["reason"] = "does not apply or build: net/core/pktgen.c:520: error: implicit declaration"
    return dict(out, series=SERIES, scenario="pktgen_xmit", run_id="20261207T120000-bisect",
                threshold_source="given", cost={"kernels": 4, "compiled": 3, "boots": 30, "seconds": 754})


def _width(text):
    return max(len(line) for line in text.splitlines())


def test_a_culprit_s_report_names_it_with_its_delta_steps_and_cost():
    st = state([0, 0, 0, 400, 0, 0])
    text, md, fig = report.render_text(st), report.render_markdown(st), report.summary(st)
    assert _width(text) <= 100 and _width(md) <= 100
    assert text.splitlines()[0] == "Bisection of 6 patches, pktgen_xmit: patch 4/6 moves ns/packet"
    assert f"culprit   4/6 {SERIES[3]['subject']}" in text and f"patch-id {SERIES[3]['patch_id']}" in text
    bad = next(s for s in st["steps"] if s["prefix"] == 4)
    assert f"{bad['delta']:+.0f} [{bad['ci'][0]:+.0f}, {bad['ci'][1]:+.0f}] ns/packet, slower" in text
    for s in st["steps"]:
        assert f"1-{s['prefix']}" in text and f"1-{s['prefix']}" in md
    assert "cost: 4 kernels (3 compiled), 30 boots, wall time 12 min 34 s" in text
    assert "| step | prefix | boots A/B | Δ ns/pkt [interval] | decision |" in md
    assert fig["culprit"]["patches"] == [dict(SERIES[3], index=4)]
    assert fig["culprit"]["delta_ns_per_packet"] == bad["delta"] and fig["culprit"]["ci_ns"] == bad["ci"]
    assert fig["schema"] == "xdplab.bisect/v1" and fig["planned_steps"] == 4
    assert "alpha/5 for each of the 4 planned steps" in " ".join(text.split())


def test_a_null_series_states_the_threshold_it_ruled_out():
    st = state([0] * 6, seed=1)
    text = report.render_text(st)
    assert "no patch moves ns/packet by >= 300 ns/packet" in text.splitlines()[0]
    assert report.summary(st)["culprit"] is None


def test_a_range_around_a_skipped_patch_names_both_and_the_reason():
    st = state([0, 0, 400, 0, 0, 0], broken=(2,))
    text = report.render_text(st)
    assert "one of patches 2-3 of 6 moves ns/packet" in text.splitlines()[0]
    assert "culprit   2/6" in text and "culprit   3/6" in text
    assert "skipped (do not apply, build or boot): prefix 1-2" in text
    assert "prefix 1-2: does not apply or build: net/core/pktgen.c:520: error" in text
    assert _width(text) <= 100


def test_a_state_without_its_result_is_refused_naming_the_key():
    st = state([0] * 6, seed=1)
    del st["result"]
    with pytest.raises(_bisect.BisectError, match="needs 'result'"):
        report.render_text(st)


def _pktgen_record(kernel, boot, reps):
    """A pktgen record as the guest runner writes it: reps of (usec_cpu, packets)."""
    return {"variant": kernel, "replicate": {"level": "boot", "id": boot},
            "reps": [{"devices": [{"device": "pg0", "usec_cpu": us, "packets": n}]} for us, n in reps]}


def test_a_step_s_cpu_per_packet_is_pktgen_s_cpu_time_over_its_packets_per_boot():
    records = [_pktgen_record("baseline", "01-baseline", [(900_000, 150_000), (900_000, 150_000)]),
               _pktgen_record("bisect", "02-bisect", [(950_000, 95_000)]),
               _pktgen_record("bisect", "03-bisect", [(960_000, 80_000)]),
               _pktgen_record("baseline", "04-baseline", [(1_000_000, 125_000)]),
               _pktgen_record("other", "05-other", [(1, 1)])]
    cpu = _bisect.step_cpu(records, "baseline", "bisect")
    assert cpu["values"] == {"base": [6000.0, 8000.0], "prefix": [10000.0, 12000.0]}
    assert cpu["base"] == 7000.0 and cpu["prefix"] == 11000.0 and cpu["delta"] == 4000.0
    assert cpu["source"] == "pktgen" and cpu["boots"] == {"base": 2, "prefix": 2}
    # the DUT's own accounting wins over pktgen's where a record has it
    dut = [dict(r, summary={"dut_cost": {"ns_per_packet": 50.0 + i}}) for i, r in enumerate(records[:4])]
    assert _bisect.step_cpu(dut, "baseline", "bisect")["values"] == {"base": [50.0, 53.0], "prefix": [51.0, 52.0]}
    # a record without CPU figures: none, never guessed
    bare = records[:3] + [{"variant": "baseline", "replicate": {"level": "boot", "id": "04-baseline"},
                           "reps": [{"devices": [{"device": "pg0", "packets": 5}]}]}]
    assert _bisect.step_cpu(bare, "baseline", "bisect") is None
    assert _bisect.step_cpu(records[:1], "baseline", "bisect") is None


def test_the_culprit_s_rate_cpu_and_build_time_are_in_the_report():
    st = state([0, 0, 0, 400, 0, 0])
    for s in st["steps"]:
        if s["prefix"] == 4:
            s["rate_pps"] = {"base": 160000.0, "prefix": 80000.0}
            s["cpu_ns_per_packet"] = {"base": 6000.0, "prefix": 11000.0, "delta": 5000.0, "source": "pktgen"}
    st["cost"] = dict(st["cost"], build_seconds=371.4)
    text, md, fig = report.render_text(st), report.render_markdown(st), report.summary(st)
    assert "rate      160000 -> 80000 pps (-50.0%), base -> prefix 1-4" in text
    assert "CPU       6000 -> 11000 ns/packet (+5000), pktgen's CPU time per packet" in text
    assert "cost: 4 kernels (3 compiled in 6 min 11 s), 30 boots, wall time 12 min 34 s" in text
    assert "rate      160000 -> 80000 pps" in md and _width(md) <= 100 and _width(text) <= 100
    assert fig["culprit"]["rate_pps"] == {"base": 160000.0, "prefix": 80000.0, "percent": -50.0}
    assert fig["culprit"]["cpu_ns_per_packet"]["delta"] == 5000.0 and fig["cost"]["build_seconds"] == 371.4
    # a step that recorded neither says so
    plain = report.render_text(state([0, 0, 0, 400, 0, 0]))
    assert "rate      not recorded" in plain and "CPU       cost per packet not recorded" in plain


def test_every_skipped_prefix_is_named_also_outside_the_culprit_s_bracket():
    # 2 does not build, 6 does not apply: the culprit 4 is bracketed by 3 and 4, both skips are named
    st = state([0, 0, 0, 400, 0, 0], broken=(2, 6))
    assert st["result"]["verdict"] == "culprit" and st["result"]["skipped"] == []
    text = " ".join(report.render_text(st).split())
    assert "skipped (do not apply, build or boot): prefix 1-2, 1-6" in text
    assert "prefix 1-2: does not apply or build" in text and "prefix 1-6: does not apply or build" in text
