# SPDX-License-Identifier: GPL-3.0-or-later
"""Results across runs (results._trend, results._render_trend, bench_report trend=true): series per
report row, run order, the change-point method against a scipy oracle, its false-positive rate over
flat series, an injected step found at its run with its size, and every rendering."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json

import numpy as np
import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.common._atomic_files import write_json_atomic
from ansible_collections.xdplab.testbed.plugins.module_utils.results import _render_trend, _report, _trend
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_schema import build_record, record_filename
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from test_report import ansible

T0 = dt.datetime(2026, 12, 7, 12, 0, 0)
STEP_AT = 12  # index of the first run of the new level: run #13
STEP_NS = 350.0


def put_run(root, i, ns=(17000.0, 17100.0), costs=(60.0, 61.0), program="xdp_drop", kernel="6.18.0",
            scenario="xdp_drop", params=None, started=None, run_id=None, stages=None):
    """One run directory with one record of the row (``costs`` None: a record without the DUT's total
    cost, as on a host where no method recovered a known one; ``stages``: the program stage per rep)."""
    t = T0 + dt.timedelta(minutes=3 * i)
    rid = run_id or f"{t:%Y%m%dT%H%M%SZ}-{i:06x}"
    env = {"kernel": kernel, "cpu_mhz": 2000.0 + i,
           "xdp": {"veth0": {"program": program, "tag": f"{len(program):016x}", "prog_id": 100 + i, "mode": "native"}}}
    extra = {"bound": "shared-core"}
    if costs is not None or stages is not None:
        extra["reps"] = [{"dut_cost": dict({} if costs is None else {"ns_per_packet": costs[k]},
                                           stages={} if stages is None else {"program": stages[k]})}
                         for k in range(len(costs if costs is not None else stages))]
    r = build_record(run_id=rid, scenario=scenario, variant="baseline", tool="xdpgen",
                     params=params or {"pkt_size": 64, "duration": 5}, samples=[1e9 / x for x in ns],
                     started=started or f"{t:%Y-%m-%dT%H:%M:%SZ}", duration_s=10.0, environment=env, extra=extra)
    if costs is not None or stages is not None:
        r["summary"]["dut_cost"] = dict({} if costs is None else {"ns_per_packet": float(np.mean(costs))},
                                        stages={} if stages is None else {"program": float(np.mean(stages))})
    d = root / rid
    d.mkdir(parents=True, exist_ok=True)
    write_json_atomic(str(d / record_filename(scenario, "baseline", r["params"])), r)
    return d


@pytest.fixture
def stepped(tmp_path):
    """20 runs of xdp_drop; from run #13 on the DUT runs the known-cost program: +350 ns of cost."""
    rng = np.random.default_rng(7)
    root = tmp_path / "results"
    for i in range(20):
        base = 60.0 + (STEP_NS if i >= STEP_AT else 0.0) + rng.normal(0, 2.0)
        put_run(root, i, ns=tuple(17000 + rng.normal(0, 300, 3)), costs=tuple(base + rng.normal(0, 1.0, 3)),
                program="xdp_drop_work" if i >= STEP_AT else "xdp_drop")
    return root


# ------------------------------------------------------------------ the method

def test_injected_step_found_at_its_run_with_its_size():
    rng = np.random.default_rng(11)
    values = 100.0 + rng.normal(0, 3.0, 20)
    values[STEP_AT:] += 25.0
    res = _trend.change_points(list(values))
    (cp,) = res["change_points"]
    assert cp["index"] == STEP_AT
    assert cp["before"] == pytest.approx(values[:STEP_AT].mean())
    assert cp["after"] == pytest.approx(values[STEP_AT:].mean())
    # the size is the difference of the two levels, within the noise of those means of the injected one
    assert cp["size"] == pytest.approx(25.0, abs=3 * 3.0 * np.sqrt(1 / 12 + 1 / 8))
    assert [(s["start"], s["end"]) for s in res["segments"]] == [(0, STEP_AT), (STEP_AT, 20)]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), at=st.integers(_trend.MIN_SEGMENT, 20 - _trend.MIN_SEGMENT),
       size=st.floats(10.0, 40.0), sign=st.sampled_from([-1.0, 1.0]))
def test_a_large_step_is_always_found_where_it_is(seed, at, size, sign):
    values = 100.0 + np.random.default_rng(seed).normal(0, 1.0, 20)
    values[at:] += sign * size
    res = _trend.change_points(list(values))
    found = [c for c in res["change_points"] if c["index"] == at]
    assert len(found) == 1, res["change_points"]
    assert found[0]["size"] == pytest.approx(sign * size, abs=6 * np.sqrt(1 / at + 1 / (20 - at)))


def test_flat_noisy_series_has_no_change_point():
    values = list(100.0 + np.random.default_rng(3).normal(0, 3.0, 20))
    res = _trend.change_points(values)
    assert res["change_points"] == [] and res["tested"] and res["note"] is None
    assert res["segments"] == [{"start": 0, "end": 20, "level": pytest.approx(np.mean(values))}]


def test_false_positive_rate_over_200_flat_series_is_at_most_the_level():
    called = sum(bool(_trend.change_points(list(np.random.default_rng(seed).normal(100.0, 3.0, 20)))["change_points"])
                 for seed in range(200))
    assert called / 200 <= 1 - _trend.LEVEL, called


def _oracle(values, family, alpha=0.05, m=_trend.MIN_SEGMENT, lo=0, out=None):
    """Binary segmentation with scipy's Student t-test, Bonferroni over the whole series' ``family`` of
    splits: the reference the implementation must agree with."""
    out = [] if out is None else out
    n = len(values)
    splits = list(range(m, n - m + 1))
    if not splits:
        return out
    tests = [(abs(stats.ttest_ind(values[k:], values[:k], equal_var=True).statistic), k) for k in splits]
    _t, k = max(tests, key=lambda x: (x[0], -x[1]))
    p = stats.ttest_ind(values[k:], values[:k], equal_var=True).pvalue
    if min(1.0, p * family) < alpha:
        out.append((lo + k, min(1.0, p * family)))
        _oracle(values[:k], family, alpha, m, lo, out)
        _oracle(values[k:], family, alpha, m, lo + k, out)
    return sorted(out)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 30),
       steps=st.lists(st.tuples(st.floats(0, 1), st.floats(-20, 20)), max_size=3))
def test_change_points_agree_with_the_scipy_oracle(seed, n, steps):
    values = np.random.default_rng(seed).normal(50.0, 2.0, n)
    for where, size in steps:
        values[int(where * n):] += size
    mine = _trend.change_points(list(values))["change_points"]
    ref = _oracle(values, max(1, n - 2 * _trend.MIN_SEGMENT + 1))
    assert [c["index"] for c in mine] == [k for k, _p in ref]
    for c, (_k, p) in zip(mine, ref, strict=True):
        assert c["p_bonferroni"] == pytest.approx(p, rel=1e-7, abs=1e-300)


def test_best_split_t_and_p_are_scipys():
    values = [10.0, 11.0, 10.5, 10.2, 13.0, 13.4, 12.8, 13.1, 12.9]
    split = _trend.best_split(values)
    ref = stats.ttest_ind(values[split["index"]:], values[:split["index"]], equal_var=True)
    assert split["t"] == pytest.approx(ref.statistic) and split["p_value"] == pytest.approx(ref.pvalue)
    assert split["index"] == 4 and split["splits"] == len(values) - 2 * _trend.MIN_SEGMENT + 1
    assert split["p_bonferroni"] == pytest.approx(ref.pvalue * split["splits"])


def test_too_short_and_flat_series_say_why():
    short = _trend.change_points([1.0, 2.0, 3.0])
    assert short["change_points"] == [] and not short["tested"]
    assert "3 run(s): too few to test for a change (at least 4" in short["note"]
    flat = _trend.change_points([5.0] * 4 + [7.0] * 4)
    assert flat["change_points"] == []
    assert "no spread on either side of position 5" in flat["note"] and "noise is unknown, not zero" in flat["note"]


@pytest.mark.parametrize("values, needle", [
    ("abc", "values must be a list of numbers, got 'abc'"),
    ([1.0, float("nan")], "values[1] must be a finite number, got nan"),
    ([1.0, True], "values[1] must be a finite number, got True"),
    ([1.0, "2"], "values[1] must be a finite number, got '2'"),
])
def test_bad_values_are_named(values, needle):
    with pytest.raises(_trend.TrendError) as exc:
        _trend.change_points(values)
    assert needle in str(exc.value)


def test_bad_level_and_segment_are_named():
    with pytest.raises(_trend.TrendError, match=r"level must be a number in \[0.5, 1\), got 1.5"):
        _trend.change_points([1.0] * 5, level=1.5)
    with pytest.raises(_trend.TrendError, match="min_segment must be an integer >= 2.*got 1"):
        _trend.change_points([1.0] * 5, min_segment=1)


# ------------------------------------------------------------------ runs and series

def test_stepped_runs_give_one_cost_change_at_the_run_with_the_program(stepped):
    rep = _trend.build([str(stepped)])
    assert [r["position"] for r in rep["runs"]] == list(range(1, 21))
    (s,) = rep["series"]
    assert s["name"] == "xdp_drop/baseline duration=5 pkt_size=64"
    (cp,) = [c for c in rep["change_points"] if c["quantity"] == "cost"]
    assert cp["position"] == STEP_AT + 1 and cp["run_id"] == rep["runs"][STEP_AT]["run_id"]
    assert cp["previous_run_id"] == rep["runs"][STEP_AT - 1]["run_id"]
    assert cp["size"] == pytest.approx(STEP_NS, abs=5.0)
    assert cp["before"] == pytest.approx(60.0, abs=3.0) and cp["after"] == pytest.approx(410.0, abs=3.0)
    # what changed: the program and its tag, not the clock or the program id
    assert {d["key"] for d in cp["changed"]} == {"xdp.veth0.program", "xdp.veth0.tag"}
    assert not [c for c in rep["change_points"] if c["quantity"] == "rate"]  # rate noise hides it here
    row = next(r for r in rep["rows"] if r["position"] == STEP_AT + 1)
    assert row["cost_change_ns"] == pytest.approx(cp["size"]) and row["rate_change_ns"] is None


def test_each_run_point_is_the_one_run_reports_figure(stepped):
    rep = _trend.build([str(stepped)])
    for run_dir in sorted(stepped.iterdir())[:3] + sorted(stepped.iterdir())[-2:]:
        one = _report.build([str(run_dir)])["rows"][0]
        mine = next(r for r in rep["rows"] if r["run_id"] == run_dir.name)
        for key in ("pps", "ns_per_packet", "ci95_ns", "n", "cost_ns", "cost_ci95_ns", "bound"):
            assert mine[key] == one[key], key


def test_runs_in_order_of_kernel_release(tmp_path):
    for i, kernel in enumerate(["6.18.2", "6.9.1", "6.18.10", "6.12.0"]):
        put_run(tmp_path / "r", i, kernel=kernel)
    rep = _trend.build([str(tmp_path / "r")], order="kernel")
    assert [r["kernel"] for r in rep["runs"]] == ["6.9.1", "6.12.0", "6.18.2", "6.18.10"]
    header = next(ln for ln in _render_trend.render_text(rep).splitlines() if ln.startswith("#  "))
    assert header.split()[:3] == ["#", "run", "kernel"]
    time = _trend.build([str(tmp_path / "r")])
    assert [r["kernel"] for r in time["runs"]] == ["6.18.2", "6.9.1", "6.18.10", "6.12.0"]


def test_ties_are_put_in_run_id_order_and_said(tmp_path):
    same = "2026-12-07T12:00:00Z"
    put_run(tmp_path / "r", 0, started=same, run_id="20261207T120000Z-bbbbbb")
    put_run(tmp_path / "r", 1, started=same, run_id="20261207T120000Z-aaaaaa")
    rep = _trend.build([str(tmp_path / "r")])
    assert [r["run_id"] for r in rep["runs"]] == ["20261207T120000Z-aaaaaa", "20261207T120000Z-bbbbbb"]
    text = " ".join(_render_trend.render_text(rep).split())
    assert ("NOTE: runs 20261207T120000Z-aaaaaa, 20261207T120000Z-bbbbbb started at the same second "
            "(2026-12-07T12:00:00Z): put in run id order") in text
    assert "2 run(s): too few to test for a change" in text


def test_one_run_is_refused_with_a_clear_message(tmp_path):
    put_run(tmp_path / "r", 0)
    with pytest.raises(_trend.TrendError, match=r"a trend needs records of at least 2 runs; found 1 \(20261207T1200"):
        _trend.build([str(tmp_path / "r")])


def test_missing_cost_is_skipped_and_named(tmp_path):
    for i in range(6):
        put_run(tmp_path / "r", i, costs=None if i in (1, 4) else (60.0 + i, 61.0 + i))
    rep = _trend.build([str(tmp_path / "r")])
    (s,) = rep["series"]
    missing = [rep["runs"][1]["run_id"], rep["runs"][4]["run_id"]]
    assert s["cost_missing"] == missing
    assert [seg["first_position"] for seg in s["cost"]["segments"]] == [1]
    text = " ".join(_render_trend.render_text(rep).split())
    assert (f"no DUT cost in run(s) {', '.join(missing)}; its DUT cost series skips them (a cost is never "
            "guessed)") in text
    assert [r["cost_ns"] is None for r in rep["rows"]] == [False, True, False, False, True, False]


def test_no_cost_anywhere_has_no_cost_column_or_panel(tmp_path):
    for i in range(4):
        put_run(tmp_path / "r", i, costs=None)
    rep = _trend.build([str(tmp_path / "r")])
    assert rep["series"][0]["cost"] is None and rep["series"][0]["cost_missing"] == []
    assert "DUT cost ns" not in _render_trend.render_text(rep)
    labels = [ax.get_label() for ax in _render_trend.figure(rep).axes]
    assert labels == ["trend-pps-xdp_drop/baseline duration=5 pkt_size=64"]
    # beside a row that has one, a row without a cost says so in its place
    for i in range(4):
        put_run(tmp_path / "r", i, scenario="xdp_tx")
    labels = [ax.get_label() for ax in _render_trend.figure(_trend.build([str(tmp_path / "r")])).axes]
    assert labels == ["trend-pps-xdp_drop/baseline duration=5 pkt_size=64",
                      "trend-nocost-xdp_drop/baseline duration=5 pkt_size=64",
                      "trend-pps-xdp_tx/baseline duration=5 pkt_size=64",
                      "trend-cost-xdp_tx/baseline duration=5 pkt_size=64"]


@pytest.mark.parametrize("case, needle", [
    ("order", "order must be one of time, kernel, got 'commit'"),
    ("started", "run r1: start 'yesterday' is not a time like 2026-11-29T21:50:00Z"),
    ("nokernel", "order by kernel: no kernel release in the fingerprint of run(s) r1"),
    ("twice", "is read twice: name a directory of runs, or the runs, not both"),
])
def test_bad_input_is_named(tmp_path, case, needle):
    put_run(tmp_path / "r", 0, run_id="r0")
    put_run(tmp_path / "r", 1, run_id="r1", started="yesterday" if case == "started" else None,
            kernel="" if case == "nokernel" else "6.18.0")
    paths = [str(tmp_path / "r")] + ([str(tmp_path / "r" / "r0")] if case == "twice" else [])
    with pytest.raises(_trend.TrendError) as exc:
        _trend.build(paths, order="commit" if case == "order" else "kernel" if case == "nokernel" else "time")
    assert needle in str(exc.value)


def test_rows_are_keyed_as_the_report_keys_them(tmp_path):
    for i in range(4):
        put_run(tmp_path / "r", i)
        put_run(tmp_path / "r", i, params={"pkt_size": 128, "duration": 5})
        put_run(tmp_path / "r", i, scenario="xdp_tx")
    rep = _trend.build([str(tmp_path / "r")])
    assert [s["name"] for s in rep["series"]] == ["xdp_drop/baseline duration=5 pkt_size=128",
                                                  "xdp_drop/baseline duration=5 pkt_size=64",
                                                  "xdp_tx/baseline duration=5 pkt_size=64"]
    assert all(len(s["points"]) == 4 for s in rep["series"])


# ------------------------------------------------------------------ renderings

def test_text_and_markdown_fit_100_columns_and_name_the_change(stepped):
    rep = _trend.build([str(stepped)])
    for markdown in (False, True):
        text = _render_trend.render_text(rep, markdown=markdown)
        assert max(len(line) for line in text.splitlines()) <= 100
        flat = " ".join(text.split())
        run = rep["runs"][STEP_AT]["run_id"]
        assert f"xdp_drop/baseline duration=5 pkt_size=64: run #13 ({run}): DUT cost" in flat
        assert "changed since the run before: xdp.veth0.program xdp_drop -> xdp_drop_work" in flat
        assert "binary segmentation" in flat and "Bonferroni" in flat
        assert "<- cost +" in text


def test_csv_has_one_line_per_row_and_run_with_intervals(stepped):
    rep = _trend.build([str(stepped)])
    lines = list(csv.DictReader(io.StringIO(_render_trend.render_csv(rep))))
    assert len(lines) == 20 and [int(x["position"]) for x in lines] == list(range(1, 21))
    step = lines[STEP_AT]
    assert float(step["cost_change_ns"]) == pytest.approx(rep["change_points"][0]["size"], abs=0.01)
    assert all(x["cost_change_ns"] == "" for i, x in enumerate(lines) if i != STEP_AT)
    assert float(step["ns_ci95_lo"]) < float(step["ns_per_packet"]) < float(step["ns_ci95_hi"])
    assert float(lines[0]["cost_level_ns"]) == pytest.approx(rep["change_points"][0]["before"], abs=0.01)
    assert json.loads(step["params"]) == {"duration": 5, "pkt_size": 64}
    assert "scatter between the runs' points" in step["notices"]


def test_png_draws_each_run_the_change_and_keeps_its_text_inside(stepped):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    rep = _trend.build([str(stepped)])
    fig = _render_trend.figure(rep)
    pps, cost = fig.axes
    assert pps.get_label().startswith("trend-pps-") and cost.get_label().startswith("trend-cost-")
    vlines = [ln for ln in cost.get_lines() if list(ln.get_xdata()) == [STEP_AT + 0.5, STEP_AT + 0.5]]
    assert len(vlines) == 1
    assert len(cost.collections) >= 2  # the interval bars and the two levels
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    drawn = fig.get_tightbbox(canvas.get_renderer())
    w, h = fig.get_size_inches()
    assert drawn.x0 >= -0.01 and drawn.y0 >= -0.01 and drawn.x1 <= w + 0.01 and drawn.y1 <= h + 0.01, (drawn, w, h)
    assert any(t.get_label() == "notices" for t in fig.findobj(Text))
    assert _render_trend.png_bytes(rep).startswith(b"\x89PNG")


def test_html_is_one_page_with_the_changes_and_the_plot(stepped):
    rep = _trend.build([str(stepped)])
    page = _render_trend.render_html(rep)
    assert page.startswith("<!DOCTYPE html>") and 'src="data:image/png;base64,' in page
    assert '<ul id="changes"><li>xdp_drop/baseline duration=5 pkt_size=64: run #13' in page
    assert "http://" not in page and "https://" not in page
    assert page.count('<table class="series">') == 1


def test_render_refuses_an_unknown_format(stepped, tmp_path):
    with pytest.raises(ValueError, match="format must be one of text, markdown, csv, png, html, got 'pdf'"):
        _render_trend.render(_trend.build([str(stepped)]), "pdf", str(tmp_path / "x"))


def test_the_trend_renders_every_report_format():
    # One list of formats (_report.FORMATS): the trend renders each of them, and no other.
    assert set(_render_trend.TEXT_RENDERERS) | {"png"} == set(_report.FORMATS)


# ------------------------------------------------------------------ module

def test_module_trend_is_written_once_and_idempotent(stepped, tmp_path):
    dest = stepped / "trend-time" / "report.csv"
    dest.parent.mkdir()
    args = {"results": [str(stepped)], "trend": True, "format": "csv", "dest": str(dest)}
    rc, res = ansible("bench_report", args)
    assert rc == 0, res
    assert res["changed"] is True and "noise" not in res
    (cp,) = [c for c in res["change_points"] if c["quantity"] == "cost"]
    assert cp["position"] == STEP_AT + 1
    assert len(res["rows"]) == 20 and res["rows"][1]["delta_prev_ns"] is not None
    rc, again = ansible("bench_report", args)
    assert rc == 0 and again["changed"] is False
    # every format into the trend's own directory, under the names every report uses
    rc, every = ansible("bench_report", {"results": [str(stepped)], "trend": True, "dest": str(dest.parent)})
    assert rc == 0, every
    assert sorted(every["files"]) == sorted(_report.REPORT_FILES)
    assert sorted(p.name for p in dest.parent.iterdir()) == sorted(_report.REPORT_FILES.values())


def test_module_trend_refusals(stepped, tmp_path):
    rc, res = ansible("bench_report", {"results": [str(stepped)] * 3, "format": "csv", "dest": str(tmp_path / "x")})
    assert rc != 0 and "(a trend over runs: trend=true)" in res["msg"]
    rc, res = ansible("bench_report", {"results": [str(stepped)], "trend": True, "baseline_variant": "a",
                                       "candidate_variant": "b", "dest": str(tmp_path / "x")})
    assert rc != 0 and "mutually exclusive: trend|baseline_variant" in res["msg"]
    one = sorted(stepped.iterdir())[0]
    rc, res = ansible("bench_report", {"results": [str(one)], "trend": True, "dest": str(tmp_path / "x")})
    assert rc != 0 and "a trend needs records of at least 2 runs" in res["msg"]


def test_without_a_total_the_program_stage_carries_the_change(tmp_path):
    """The embedded bed's records: no total cost (no method recovered a known one there), the program
    stage in every repetition; the known-cost program from run #5 on."""
    rng = np.random.default_rng(2)
    for i in range(10):
        stage = 60.0 + (STEP_NS if i >= 4 else 0.0)
        put_run(tmp_path / "r", i, costs=None, stages=tuple(stage + rng.normal(0, 2.0, 2)),
                program="xdp_drop_work" if i >= 4 else "xdp_drop")
    rep = _trend.build([str(tmp_path / "r")])
    (s,) = rep["series"]
    assert s["cost"] is None and s["cost_missing"] == []
    (cp,) = rep["change_points"]
    assert cp["quantity"] == "program" and cp["position"] == 5
    assert cp["size"] == pytest.approx(STEP_NS, abs=6.0)
    one = _report.build([str(sorted((tmp_path / "r").iterdir())[4])])
    assert "program ns [95% CI]" in _render_trend.render_text(rep) and one["rows"][0]["cost_ns"] is None
    labels = [ax.get_label() for ax in _render_trend.figure(rep).axes]
    assert labels == ["trend-pps-" + s["name"], "trend-program-" + s["name"]]
    lines = list(csv.DictReader(io.StringIO(_render_trend.render_csv(rep))))
    assert float(lines[4]["program_change_ns"]) == pytest.approx(cp["size"], abs=0.01)
    assert lines[3]["program_change_ns"] == "" and lines[4]["cost_ns"] == ""


def test_beside_a_true_change_false_ones_stay_at_the_level():
    """One true step in 20 runs, 200 draws: the step is found every time, and the draws with any other
    change point (noise called a change in the segments beside it) stay within the 5% level."""
    extra = 0
    for seed in range(200):
        values = 100.0 + np.random.default_rng(seed).normal(0, 1.0, 20)
        values[STEP_AT:] += 20.0
        found = [c["index"] for c in _trend.change_points(list(values))["change_points"]]
        assert STEP_AT in found, (seed, found)
        extra += len(found) > 1
    assert extra / 200 <= 1 - _trend.LEVEL, extra
