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
