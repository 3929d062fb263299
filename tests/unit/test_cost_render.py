# SPDX-License-Identifier: GPL-3.0-or-later
"""Records that carry the DUT's cost per packet (``summary.dut_cost``, ``reps[].dut_cost``) and the
bottleneck (``bound``): every format shows the cost with its interval beside the rate and the bound
label; between rows that are not DUT-bound the rate-based delta is marked and the cost-based delta is
the headline. Expected figures computed here with scipy."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.common._atomic_files import write_json_atomic
from ansible_collections.xdplab.testbed.plugins.module_utils.results import _render_html, _report
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_schema import build_record, record_filename
from scipy import stats


def _put(d, scenario, variant, costs, bound, pkt=64, ns=(100.0, 101.0, 99.0)):
    r = build_record(run_id="20261129T215000Z-aaaaaa", scenario=scenario, variant=variant, tool="xdpgen",
                     params={"pkt_size": pkt}, samples=[1e9 / x for x in ns], started="2026-11-29T21:50:00Z",
                     duration_s=30.0,
                     extra={"bound": bound,
                            "reps": [{"dut_cost": {"ns_per_packet": c, "stages": {"program": c / 2},
                                                   "method": "bpf_stats"}} for c in costs]})
    r["summary"]["dut_cost"] = {"ns_per_packet": float(np.mean(costs)), "ci95": None, "method": "bpf_stats",
                                "cpus": [1], "busy": {"dut": 0.4, "generator": 0.97}}
    d.mkdir(parents=True, exist_ok=True)
    write_json_atomic(str(d / record_filename(scenario, variant, r["params"])), r)


BASE_COST = [40.0, 41.0, 39.5]
CAND_COST = [45.0, 46.5, 44.0]


def _ci(x):
    x = np.asarray(x)
    half = stats.t.ppf(0.975, len(x) - 1) * np.std(x, ddof=1) / np.sqrt(len(x))
    return x.mean(), x.mean() - half, x.mean() + half


def test_sweep_rows_carry_cost_and_bound_in_every_format(tmp_path):
    _put(tmp_path / "run", "xdp_drop", "baseline", BASE_COST, "generator-bound")
    _put(tmp_path / "run", "xdp_tx", "baseline", CAND_COST, "dut-bound")
    report = _report.build([str(tmp_path / "run")])
    m, lo, hi = _ci(BASE_COST)
    row = next(r for r in report["rows"] if r["scenario"] == "xdp_drop")
    assert row["bound"] == "generator-bound" and row["cost_n"] == 3
    assert row["cost_ns"] == pytest.approx(m, rel=1e-12) and row["cost_ci95_ns"] == pytest.approx([lo, hi], rel=1e-9)
    cell = f"{m:.2f} [{lo:.2f}, {hi:.2f}]"
    for doc in (_report.render_text(report), _report.render_text(report, markdown=True),
                _render_html.render_html(report)):
        assert next(ln for ln in doc.splitlines() if "xdp_drop" in ln and cell in ln)
        # (the text formats may carry the bound in a second table of the same rows, to stay in 100 columns)
        assert next(ln for ln in doc.splitlines() if "xdp_drop" in ln and "generator-bound" in ln)
    c = next(r for r in csv.DictReader(io.StringIO(_report.render_csv(report))) if r["scenario"] == "xdp_drop")
    assert (c["cost_ns"], c["cost_ci95_ns_lo"], c["cost_ci95_ns_hi"], c["bound"]) == (
        f"{m:.2f}", f"{lo:.2f}", f"{hi:.2f}", "generator-bound")


def test_ab_cost_delta_is_the_headline_when_not_dut_bound(tmp_path):
    _put(tmp_path / "a", "xdp_drop", "baseline", BASE_COST, "generator-bound")
    _put(tmp_path / "b", "xdp_drop", "patched", CAND_COST, "generator-bound")
    report = _report.build([str(tmp_path / "a"), str(tmp_path / "b")])
    (c,) = report["comparisons"]
    ref = stats.ttest_ind(CAND_COST, BASE_COST, equal_var=False).confidence_interval(0.95)
    assert c["cost_delta_ns"] == pytest.approx(np.mean(CAND_COST) - np.mean(BASE_COST), rel=1e-12)
    assert c["cost_ci95_ns"] == pytest.approx([ref.low, ref.high], rel=1e-9)
    assert c["rate_not_dut_bound"] is True and c["headline"] == "cost"
    assert c["verdict"].startswith(f"DUT cost {c['cost_delta_ns']:+.2f} ns/packet")
    assert "rate-based, not DUT-bound" in c["verdict"]
    text = _report.render_text(report)
    assert f"{c['delta_ns_per_packet']:+.2f}* " in text and "* rate-based delta of a row that is not DUT-bound" in text
    assert f"{c['cost_delta_ns']:+.2f} [{ref.low:+.2f}, {ref.high:+.2f}]" in text
    page = _render_html.render_html(report)
    assert f"{c['delta_ns_per_packet']:+.2f}* (" in page and "generator-bound/generator-bound" in page
    row = next(csv.DictReader(io.StringIO(_report.render_csv(report))))
    assert (row["headline"], row["rate_not_dut_bound"], row["cost_delta_ns"]) == (
        "cost", "true", f"{c['cost_delta_ns']:.2f}")


def test_dut_bound_rows_keep_the_rate_headline_and_no_mark(tmp_path):
    _put(tmp_path / "a", "xdp_drop", "baseline", BASE_COST, "dut-bound")
    _put(tmp_path / "b", "xdp_drop", "patched", CAND_COST, "dut-bound")
    (c,) = _report.build([str(tmp_path / "a"), str(tmp_path / "b")])["comparisons"]
    assert c["headline"] == "rate" and c["rate_not_dut_bound"] is False
    assert c["verdict"].startswith(f"{c['delta_ns_per_packet']:+.2f} ns/packet")


def test_no_cost_is_never_guessed(tmp_path):
    r = build_record(run_id="20261129T215000Z-aaaaaa", scenario="xdp_drop", variant="baseline", tool="xdpgen",
                     params={"pkt_size": 64}, samples=[1e7, 1.01e7], started="2026-11-29T21:50:00Z", duration_s=3.0)
    (tmp_path / "r").mkdir()
    write_json_atomic(str(tmp_path / "r" / "x.json"), r)
    report = _report.build([str(tmp_path / "r")])
    assert report["rows"][0]["cost_ns"] is None
    assert "DUT cost" not in _report.render_text(report)
