# SPDX-License-Identifier: GPL-3.0-or-later
"""Pictures and HTML pages of reports: what is drawn (bars, points, intervals, axis limits)
for the three kinds of run directory, CSV intervals, warnings, and a comparison kept out of
the compared runs' directories."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.common._atomic_files import write_json_atomic
from ansible_collections.xdplab.testbed.plugins.module_utils.results import _render_html, _render_png, _report
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_schema import build_record, record_filename
from matplotlib.collections import LineCollection
from matplotlib.container import BarContainer, ErrorbarContainer
from test_report import ansible  # the real module through `ansible localhost -m`

# bench.yml's default scenarios, one record each (pps, spread): xdp_tx has n=1.
DEFAULT_RUN = [("xdp_drop", 9.1e6), ("xdp_tx", 4.2e6), ("xdp_redirect", 3.3e6), ("tc_drop", 2.9e6),
               ("nft_drop", 1.4e6)]


def put(run_dir: Path, scenario="xdp_drop", variant="baseline", params=None, samples=(5e6, 5.05e6, 4.95e6),
        started="2026-11-29T21:50:00Z", bound="dut-bound"):
    run_dir.mkdir(parents=True, exist_ok=True)
    r = build_record(run_id="20261129T215000Z-aaaaaa", scenario=scenario, variant=variant, tool="xdpgen",
                     params=params or {"pkt_size": 64, "duration": 10}, samples=list(samples),
                     environment={"kernel": "6.1.0", "cpu_model": "Test CPU"}, started=started, duration_s=30.0,
                     extra={"bound": bound})
    write_json_atomic(str(run_dir / record_filename(scenario, variant, r["params"])), r)


@pytest.fixture
def default_run(tmp_path):
    d = tmp_path / "20261201T010000Z-abcdef"
    for i, (scen, pps) in enumerate(DEFAULT_RUN):
        samples = [pps] if scen == "xdp_tx" else [pps * 0.98, pps, pps * 1.02]
        put(d, scenario=scen, samples=samples, started=f"2026-11-29T21:5{i}:00Z",
            params={"pkt_size": 64, "duration": 2, "xdp_mode": "native"},
            bound="generator-bound" if scen == "nft_drop" else "dut-bound")
    return d


@pytest.fixture
def sweep_run(tmp_path):
    d = tmp_path / "sweep"
    for variant, scale in (("baseline", 1.0), ("patched", 1.1)):
        for size, pps in ((64, 5.0e6), (256, 4.5e6), (512, 3.9e6), (1024, 2.2e6)):
            put(d, variant=variant, params={"pkt_size": size, "duration": 10},
                samples=[pps * scale * 0.99, pps * scale, pps * scale * 1.01])
    return d


@pytest.fixture
def ab_runs(tmp_path):
    for scen, base, cand in (("xdp_drop", 5.0e6, 5.2e6), ("xdp_tx", 3.0e6, 2.9e6), ("tc_drop", 2.0e6, 2.0e6)):
        put(tmp_path / "base", scenario=scen, samples=[base * 0.999, base, base * 1.001])
        put(tmp_path / "cand", scenario=scen, variant="patched", samples=[cand * 0.999, cand, cand * 1.001])
    return tmp_path / "base", tmp_path / "cand"


def axes(fig, label):
    return next(a for a in fig.axes if a.get_label() == label)


def bars(ax):
    return [p for c in ax.containers if isinstance(c, BarContainer) for p in c.patches]


def error_segments(ax):
    return [seg for c in ax.collections if isinstance(c, LineCollection) for seg in c.get_segments()]


def test_png_default_run_one_bar_per_scenario_with_intervals(default_run):
    rep = _report.build([str(default_run)])
    assert _render_png.kind(rep) == "scenarios"
    fig = _render_png.figure(rep)
    mpps, ns = axes(fig, "scenarios-mpps"), axes(fig, "scenarios-ns")
    assert len(bars(mpps)) == len(bars(ns)) == len(rep["rows"]) == 5
    assert [t.get_text() for t in mpps.get_xticklabels()] == [s for s, _dummy in DEFAULT_RUN]
    heights = [b.get_height() for b in bars(mpps)]
    assert heights == pytest.approx([r["pps"] / 1e6 for r in rep["rows"]])
    assert [b.get_height() for b in bars(ns)] == pytest.approx([r["ns_per_packet"] for r in rep["rows"]])
    # Four of five rows have an interval (xdp_tx is n=1): one whisker each, ends at the interval.
    segs = error_segments(ns)
    whiskers = [s for s in segs if abs(s[1][1] - s[0][1]) > 1e-9]
    assert len(whiskers) == 4
    nft = rep["sweeps"][4]["rows"][0]
    lo, hi = _render_png.ns_interval(nft)
    assert any(s[0][1] == pytest.approx(lo) and s[1][1] == pytest.approx(hi) for s in whiskers)
    # The axis covers the tallest bar and its whisker.
    sweep_rows = [t["rows"][0] for t in rep["sweeps"]]
    top = max(max(r["ns_per_packet"], (_render_png.ns_interval(r) or [0, 0])[1]) for r in sweep_rows)
    assert ns.get_ylim()[0] <= 0 and ns.get_ylim()[1] >= top
    assert mpps.get_ylim()[1] >= max(heights)


def test_png_sweep_one_line_per_variant(sweep_run):
    rep = _report.build([str(sweep_run)])
    assert _render_png.kind(rep) == "sweep"
    fig = _render_png.figure(rep)
    for label, key in (("sweep-mpps-pkt_size", "pps"), ("sweep-ns-pkt_size", "ns_per_packet")):
        ax = axes(fig, label)
        lines = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
        assert len(lines) == 2  # baseline, patched
        assert sorted(c.get_label() for c in lines) == ["xdp_drop/baseline", "xdp_drop/patched"]
        for c, table in zip(lines, rep["sweeps"], strict=True):
            xs, ys = c.lines[0].get_data()
            assert list(xs) == [64.0, 256.0, 512.0, 1024.0]
            want = [r[key] / (1e6 if key == "pps" else 1) for r in table["rows"]]
            assert list(ys) == pytest.approx(want)
        all_y = [y for c in lines for y in c.lines[0].get_ydata()]
        lo, hi = ax.get_ylim()
        assert lo < min(all_y) and hi > max(all_y)
        assert ax.get_xlim()[0] <= 64 and ax.get_xlim()[1] >= 1024


def test_png_ab_delta_bar_per_row(ab_runs):
    rep = _report.build([str(p) for p in ab_runs])
    assert _render_png.kind(rep) == "ab"
    ax = axes(_render_png.figure(rep), "ab-delta")
    drawn = bars(ax)
    assert len(drawn) == len(rep["rows"]) == 3
    assert [b.get_width() for b in drawn] == pytest.approx([c["delta_ns_per_packet"] for c in rep["comparisons"]])
    lo, hi = ax.get_xlim()
    for c in rep["comparisons"]:
        assert lo <= c["ci95_ns"][0] and hi >= c["ci95_ns"][1]
    # faster significant green, slower significant red, no change grey
    color = {c["scenario"]: b.get_facecolor()[:3] for c, b in zip(rep["comparisons"], drawn, strict=True)}
    assert color["xdp_drop"] == pytest.approx((0x2a / 255, 0x9d / 255, 0x4b / 255))
    assert color["xdp_tx"] == pytest.approx((0xc0 / 255, 0x39 / 255, 0x2b / 255))
    assert color["tc_drop"] == pytest.approx((0x8c / 255, 0x8c / 255, 0x8c / 255))


def test_png_file_written(default_run, tmp_path):
    out = tmp_path / "r.png"
    _report.render(_report.build([str(default_run)]), "png", str(out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_csv_interval_columns(default_run, ab_runs):
    rep = _report.build([str(default_run)])
    rows = list(csv.DictReader(io.StringIO(_report.render_csv(rep))))
    drop = rows[0]
    ci = rep["sweeps"][0]["rows"][0]["ci95"]
    assert float(drop["pps_ci95_lo"]) == pytest.approx(ci[0], abs=0.01)
    assert float(drop["ns_ci95_lo"]) < float(drop["ns_per_packet"]) < float(drop["ns_ci95_hi"])
    tx = next(r for r in rows if r["scenario"] == "xdp_tx")
    assert tx["pps_ci95_lo"] == tx["ns_ci95_hi"] == ""  # n=1
    ab = list(csv.DictReader(io.StringIO(_report.render_csv(_report.build([str(p) for p in ab_runs])))))
    assert float(ab[0]["baseline_ns_ci95_lo"]) < float(ab[0]["baseline_ns_ci95_hi"])
    assert float(ab[0]["candidate_ns_ci95_lo"]) < float(ab[0]["candidate_ns_ci95_hi"])


def test_warnings_default_run(default_run):
    warns = _render_html.warnings(_report.build([str(default_run)]))
    assert len(warns) == 4
    assert warns[0].startswith("one back-to-back run per side")  # the one-run caveat, in HTML too
    assert warns[1].startswith("n=1, no interval: xdp_tx/baseline")
    assert warns[2].startswith("Short bursts: 2 s per repetition")
    assert warns[3].startswith("Generator-bound: nft_drop/baseline")


def test_warnings_none_for_long_repeated_dut_bound(sweep_run):
    # one back-to-back run: only the one-run caveat
    (only,) = _render_html.warnings(_report.build([str(sweep_run)]))
    assert only.startswith("one back-to-back run per side")


def test_html_run_self_contained(default_run):
    page = _render_html.render_html(_report.build([str(default_run)]))
    assert page.count('<tr class="row">') == 5
    assert 'src="data:image/png;base64,' in page
    assert "http://" not in page and "https://" not in page  # nothing fetched from elsewhere
    assert "Environment" in page and "Test CPU" in page
    assert page.index('id="warnings"') < page.index('id="summary"')


def test_html_ab_env_diff(ab_runs):
    base, cand = ab_runs
    put(cand, scenario="xdp_drop", variant="patched", samples=[5.2e6 * 0.999, 5.2e6, 5.2e6 * 1.001])
    rep = _report.build([str(base), str(cand)])
    page = _render_html.render_html(rep)
    assert page.count('<tr class="row') == 3
    assert '<tr class="row faster">' in page and '<tr class="row slower">' in page
    assert "A/B: base (baseline) vs cand (candidate)" in page
    assert 'id="envdiff"' not in page  # same environment on both sides
    diff = [{"key": "kernel", "baseline": "6.1.0", "candidate": "6.1.0-patched"}]
    page2 = _render_html.render_html({**rep, "environment_diff": diff})
    assert 'id="envdiff"' in page2 and "6.1.0-patched" in page2


# ------------------------------------------------------------ module, end to end

def test_module_comparison_refuses_a_runs_directory(ab_runs, tmp_path):
    base, cand = ab_runs
    before = sorted(os.listdir(base))
    rc, res = ansible("bench_report", {"results": [str(base), str(cand)], "format": "html",
                                       "dest": str(base / "report.html")})
    assert rc != 0 and "its own directory" in res["msg"]
    assert sorted(os.listdir(base)) == before
    own = tmp_path / "compare-base-vs-cand"
    own.mkdir()
    rc, res = ansible("bench_report", {"results": [str(base), str(cand)], "format": "html",
                                       "dest": str(own / "report.html")})
    assert rc == 0, res
    assert (own / "report.html").read_text().startswith("<!DOCTYPE html>")


def test_png_repeated_runs_of_one_configuration_are_one_bar_of_all_runs(tmp_path):
    # Repeated runs of one configuration in one directory are replication units of one row (the
    # report pools them as units), so the picture is one bar whose n counts every repetition.
    d = tmp_path / "aa"
    for i, pps in enumerate((5.0e6, 5.02e6, 4.97e6, 5.01e6)):
        put(d / f"run{i}", samples=[pps * 0.99, pps, pps * 1.01], started=f"2026-11-29T21:5{i}:00Z")
    for i in range(1, 4):
        for f in (d / f"run{i}").iterdir():
            f.rename(d / "run0" / f"{i}-{f.name}")
    rep = _report.build([str(d / "run0")])
    assert _render_png.kind(rep) == "scenarios"
    assert [r["n"] for t in rep["sweeps"] for r in t["rows"]] == [4]
    fig = _render_png.figure(rep)
    assert fig.axes, "no axes drawn"


def test_html_warnings_of_a_row_pooling_several_records():
    # A row of interleaved rounds (make bench-perf's A/A) names a list of records, not one: the HTML
    # warnings crashed on it (unhashable list), and generator-bound must still be seen in any of them.
    report = {"record_meta": {"/r/round-2.json": {"bound": "generator-bound"}},
              "sweeps": [{"scenario": "perf_aa", "variant": "aa",
                          "rows": [{"params": {"duration": 10}, "n": 24, "warnings": [],
                                    "record": ["/r/round-1.json", "/r/round-2.json"]}]}]}
    out = _render_html.warnings(report)
    assert any(w.startswith("Generator-bound: perf_aa/aa") for w in out), out
    report["record_meta"] = {}
    assert not any("Generator-bound" in w for w in _render_html.warnings(report))
