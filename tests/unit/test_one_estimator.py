# SPDX-License-Identifier: GPL-3.0-or-later
"""One estimator per quantity, in every format: each sweep/scenario row's ns/packet, its 95% interval
and n come from one computation at the row's replication unit, and text, Markdown, CSV, HTML, PNG and
the module's return (``rows``) print the same three numbers; the point lies inside its interval.
Expected values are computed here independently with numpy/scipy."""

from __future__ import annotations

import csv
import io
import math

import numpy as np
from ansible_collections.xdplab.testbed.plugins.module_utils.common._atomic_files import write_json_atomic
from ansible_collections.xdplab.testbed.plugins.module_utils.results import _render_html, _render_png, _report
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_schema import build_record, record_filename
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

rate = st.floats(min_value=1e5, max_value=2e7, allow_nan=False, allow_infinity=False)
stall = st.sampled_from([2e3, 5e4])  # a repetition that stalled: a rate far below the others
rep_rates = st.lists(st.one_of(rate, rate, rate, stall), min_size=1, max_size=4)
unit_sets = st.lists(rep_rates, min_size=1, max_size=3)  # one list per unit (round)
rows_st = st.lists(unit_sets, min_size=1, max_size=3)


def expected(units: list[list[float]]) -> tuple[float, list[float] | None, int]:
    """The row by its definition: per unit the mean of 1e9/pps; over units the mean and a Student t
    interval; one unit: its repetitions are the units."""
    if len(units) == 1:
        values = 1e9 / np.asarray(units[0])
    else:
        values = np.array([np.mean(1e9 / np.asarray(u)) for u in units])
    n = len(values)
    mean = float(np.mean(values))
    if n < 2:
        return mean, None, n
    half = stats.t.ppf(0.975, n - 1) * np.std(values, ddof=1) / math.sqrt(n)
    return mean, [mean - half, mean + half], n


def write(tmp_path, rows):
    d = tmp_path / "run"
    if d.exists():
        for f in d.iterdir():
            f.unlink()
    d.mkdir(exist_ok=True)
    for i, units in enumerate(rows):
        for k, samples in enumerate(units):
            extra = {"replicate": {"level": "round", "id": k}} if len(units) > 1 else None
            r = build_record(run_id=f"20261129T2150{k:02d}Z-aaaaaa", scenario="xdp_drop", variant="baseline",
                             tool="xdpgen", params={"pkt_size": 64 * (i + 1)}, samples=samples,
                             started="2026-11-29T21:50:00Z", duration_s=10.0, extra=extra)
            write_json_atomic(str(d / record_filename("xdp_drop", "baseline", r["params"], r.get("replicate"))), r)
    return d


def _f(v):
    return f"{v:.2f}"


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows_st)
def test_every_format_prints_the_rows_one_estimate(tmp_path, rows):
    report = _report.build([str(write(tmp_path, rows))])
    text = _report.render_text(report)
    md = _report.render_text(report, markdown=True)
    csv_rows = list(csv.DictReader(io.StringIO(_report.render_csv(report))))
    page = _render_html.render_html(report)
    fig = _render_png.figure(report)
    table = report["sweeps"][0]["rows"]
    assert len(table) == len(rows) == len(report["rows"]) == len(csv_rows)
    for i, units in enumerate(rows):
        ns, ci, n = expected(units)
        row = next(r for r in table if r["params"]["pkt_size"] == 64 * (i + 1))
        ret = next(r for r in report["rows"] if r["params"]["pkt_size"] == 64 * (i + 1))
        assert row["ns_per_packet"] == ret["ns_per_packet"]
        assert row["ns_per_packet"] == np.float64(ns) or math.isclose(row["ns_per_packet"], ns, rel_tol=1e-12)
        assert row["n"] == ret["n"] == n
        if ci is None:
            assert row["ci95_ns"] is None and ret["ci95_ns"] is None
        else:
            assert row["ci95_ns"] == ret["ci95_ns"]
            assert np.allclose(row["ci95_ns"], ci, rtol=1e-9)
            assert row["ci95_ns"][0] <= row["ns_per_packet"] <= row["ci95_ns"][1]  # inside its own interval
            # the rate is the same figure: 1e9 / ns, its interval the same one mapped
            assert math.isclose(row["pps"], 1e9 / row["ns_per_packet"], rel_tol=1e-12)
            lo_ns, hi_ns = row["ci95_ns"]
            assert math.isclose(row["ci95"][0], 1e9 / hi_ns, rel_tol=1e-12)
            assert row["ci95"][1] is None if lo_ns <= 0 else math.isclose(row["ci95"][1], 1e9 / lo_ns, rel_tol=1e-12)
        cells = (_f(row["ns_per_packet"]), "no interval" if ci is None else
                 f"[{_f(row['ci95_ns'][0])}, {_f(row['ci95_ns'][1])}]")
        c = next(r for r in csv_rows if r["params"] == f'{{"pkt_size": {64 * (i + 1)}}}')
        assert c["ns_per_packet"] == cells[0] and c["n"] == str(n) and c["pps"] == f"{row['pps']:.2f}"
        if ci is not None:
            lo_ns, hi_ns = row["ci95_ns"]
            assert (c["pps_ci95_lo"], c["pps_ci95_hi"]) == (f"{1e9 / hi_ns:.2f}",
                                                            f"{1e9 / lo_ns:.2f}" if lo_ns > 0 else "")
        assert (c["ns_ci95_lo"], c["ns_ci95_hi"]) == (("", "") if ci is None else
                                                      (_f(row["ci95_ns"][0]), _f(row["ci95_ns"][1])))
        for doc, needle in ((text, f"pkt_size={64 * (i + 1)} "), (md, f"pkt_size={64 * (i + 1)} "),
                            (page, f"pkt_size={64 * (i + 1)}</td>")):
            lines = [ln for ln in doc.splitlines() if needle in ln or (len(rows) == 1 and "(common)" in ln)]
            assert lines, needle
            # a table wider than 100 columns is split into tables led by the row's name: the row's cells
            # are on the lines that name it
            line = " ".join(lines)
            assert cells[0] in line and str(n) in line
            if ci is not None:
                assert cells[1] in line, (line, cells)
    # the PNG draws the same points and the same whiskers (no clipping: the point is inside)
    if len(rows) > 1:
        ns_ax = next(ax for ax in fig.axes if ax.get_label().startswith("sweep-ns"))
        (container,) = ns_ax.containers
        ys = list(container.lines[0].get_ydata())
        assert np.allclose(ys, [r["ns_per_packet"] for r in table], rtol=1e-12)
        segs = container.lines[2][0].get_segments() if container.lines[2] else []
        drawn = {round(float(s[0][0])): (float(s[0][1]), float(s[1][1])) for s in segs}
        for r in table:
            if r["ci95_ns"] is not None and r["ci95_ns"][1] > r["ci95_ns"][0]:
                lo, hi = drawn[r["params"]["pkt_size"]]
                assert np.allclose([lo, hi], r["ci95_ns"], rtol=1e-9)
    assert "a row's is the mean over its units" in " ".join(text.split())
    assert "a row&#x27;s is the mean over its units" in page or "a row's is the mean over its units" in page
