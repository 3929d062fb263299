# SPDX-License-Identifier: GPL-3.0-or-later
"""One estimator everywhere, replication units, degenerate cases and Holm across report rows."""

from __future__ import annotations

import math

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.common._atomic_files import write_json_atomic
from ansible_collections.xdplab.testbed.plugins.module_utils.results import _report
from ansible_collections.xdplab.testbed.plugins.module_utils.results._compare import (
    CAVEAT_ONE_RUN,
    compare_records,
    match,
    multiple_comparisons,
    noise,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_files import load_results
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_schema import build_record, record_filename
from ansible_collections.xdplab.testbed.plugins.module_utils.results._statistics import (
    holm,
    min_detectable_effect,
    welch,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def rec(samples, variant="baseline", run_id="20261129T215000Z-aaaaaa", replicate=None, params=None,
        warnings=None):
    extra = {}
    if replicate:
        extra["replicate"] = replicate
    if warnings:
        extra["warnings"] = warnings
    return build_record(run_id=run_id, scenario="xdp_drop", variant=variant, tool="xdpgen",
                        params=params or {"pkt_size": 64}, samples=list(samples), started="2026-11-29T21:50:00Z",
                        duration_s=3.0, extra=extra or None)


# ------------------------------------------------------------------ one estimator

def test_bimodal_delta_inside_its_interval():
    # two fast, one slow repetition: 1e9/mean(pps) and mean(1e9/pps) disagree; the delta must be the
    # estimator the interval is built on
    base = rec([7e6, 7e6, 1e6])
    cand = rec([6.9e6, 6.9e6, 1.05e6], variant="patched")
    out = compare_records(base, cand)
    lo, hi = tuple(out["ci95_ns"])
    assert lo <= out["delta_ns_per_packet"] <= hi
    assert out["delta_ns_per_packet"] == pytest.approx(
        out["candidate"]["ns_per_packet"] - out["baseline"]["ns_per_packet"], rel=1e-12)
    # the old mix: 1e9/mean delta (-4.78 ns, outside nothing but a different number) is not what is printed
    old = 1e9 / (sum(cand["samples"]) / 3) - 1e9 / (sum(base["samples"]) / 3)
    assert abs(old - out["delta_ns_per_packet"]) > 1.0
    assert (out["direction"] == "faster") == (out["delta_ns_per_packet"] < 0)
    assert (out["percent"] > 0) == (out["delta_ns_per_packet"] < 0)


rates = st.floats(min_value=1e3, max_value=1e9, allow_nan=False, allow_infinity=False)
side = st.lists(rates, min_size=1, max_size=8)


@settings(max_examples=300, deadline=None)
@given(side, side)
def test_property_delta_inside_its_own_interval(a, b):
    out = compare_records(rec(a), rec(b, variant="patched"))
    d = out["delta_ns_per_packet"]
    assert math.isfinite(d)
    if out["ci95_ns"] is not None:
        lo, hi = tuple(out["ci95_ns"])
        assert lo - 1e-9 * abs(d) <= d <= hi + 1e-9 * abs(d)
        assert out["significant"] == (lo > 0 or hi < 0)
    else:
        assert out["significant"] is False
    if out["significant"]:
        assert out["direction"] == ("faster" if d < 0 else "slower")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(side, side), min_size=1, max_size=4), st.booleans())
def test_property_no_render_crashes(tmp_path, pairs, with_png):
    base_dir, cand_dir = tmp_path / "a", tmp_path / "b"
    for d in (base_dir, cand_dir):
        d.mkdir(exist_ok=True)
        for f in d.iterdir():
            f.unlink()
    for i, (a, b) in enumerate(pairs):
        for d, s, v in ((base_dir, a, "baseline"), (cand_dir, b, "patched")):
            r = rec(s, variant=v, params={"pkt_size": 64 + i})
            write_json_atomic(str(d / record_filename(r["scenario"], r["variant"], r["params"])), r)
    report = _report.build([str(base_dir), str(cand_dir)])
    for c in report["comparisons"]:
        if c["ci95_ns"] is not None:
            tol = 1e-9 * abs(c["delta_ns_per_packet"])
            assert c["ci95_ns"][0] - tol <= c["delta_ns_per_packet"] <= c["ci95_ns"][1] + tol
    _report.render_text(report)
    _report.render_text(report, markdown=True)
    _report.render_csv(report)
    if with_png:
        _report.render_png(report, str(tmp_path / "r.png"))
    sweep = _report.build([str(base_dir)])
    _report.render_text(sweep)
    if with_png:
        _report.render_png(sweep, str(tmp_path / "s.png"))


def test_png_bimodal_does_not_crash(tmp_path):
    # the case that drew a negative error bar when the bar height and its interval used two estimators
    for d, s, v in ((tmp_path / "a", [7e6, 1e6] * 10, "baseline"), (tmp_path / "b", [7e6, 1e6, 1e6] * 6, "patched")):
        d.mkdir()
        r = rec(s, variant=v)
        write_json_atomic(str(d / record_filename(r["scenario"], r["variant"], r["params"])), r)
    report = _report.build([str(tmp_path / "a"), str(tmp_path / "b")])
    _report.render_png(report, str(tmp_path / "x.png"))
    assert (tmp_path / "x.png").stat().st_size > 1000


# ------------------------------------------------------------------ degenerate cases

def test_zero_variance_both_sides_no_interval_never_significant():
    out = compare_records(rec([1e6, 1e6, 1e6]), rec([2e6, 2e6, 2e6], variant="patched"))
    assert out["ci95_ns"] is None and out["significant"] is False and out["p_value"] is None
    assert out["note"] == "zero variance on both sides, no interval"
    assert "zero variance on both sides" in out["verdict"]
    w = welch([5.0, 5.0], [6.0, 6.0])
    assert w["ci"] is None and w["significant"] is False


def test_zero_variance_one_side_still_has_interval():
    out = compare_records(rec([1e6, 1e6, 1e6]), rec([2e6, 2.1e6, 1.9e6], variant="patched"))
    assert out["ci95_ns"] is not None


def test_record_warnings_reach_the_comparison_and_report(tmp_path):
    warn = "repetition 2: short burst (2 intervals), kept out of the samples"
    for d, v, w in ((tmp_path / "a", "baseline", [warn]), (tmp_path / "b", "patched", None)):
        d.mkdir()
        r = rec([1e6, 1.1e6, 0.9e6], variant=v, warnings=w)
        write_json_atomic(str(d / record_filename(r["scenario"], r["variant"], r["params"])), r)
    report = _report.build([str(tmp_path / "a"), str(tmp_path / "b")])
    assert report["comparisons"][0]["warnings"] == [warn]
    text = " ".join(_report.render_text(report).split())
    assert f"WARNING: xdp_drop pkt_size=64: {warn}" in text  # named by its row, not an absolute path


# ------------------------------------------------------------------ replication units

def _rounds(tmp_path, name, variant, means, reps=(0.99, 1.0, 1.01)):
    d = tmp_path / name
    d.mkdir(exist_ok=True)
    for k, m in enumerate(means):
        r = rec([m * f for f in reps], variant=variant, replicate={"level": "round", "id": k},
                run_id=f"20261129T2150{k:02d}Z-aaaaaa")
        name = record_filename(r["scenario"], r["variant"], dict(r["params"], round=k))
        write_json_atomic(str(d / name), r)
    return load_results(str(d))


def test_between_unit_variance_when_several_units(tmp_path):
    # rounds differ far more than repetitions inside a round: unit means carry that spread
    base = _rounds(tmp_path, "a", "baseline", [1.00e6, 1.10e6, 0.90e6, 1.05e6])
    cand = _rounds(tmp_path, "b", "patched", [1.02e6, 1.12e6, 0.93e6, 1.06e6])
    pairs, _dummy = match(base, cand)
    b, c = pairs[0]
    assert len(b) == 4 and len(c) == 4
    out = compare_records(b, c)
    assert out["baseline"]["n"] == 4 and out["unit_level"] == "round" and "caveat" not in out
    assert out["significant"] is False  # within-round noise alone would call this significant
    pooled = compare_records(rec([s for r in b for s in r["samples"]]),
                             rec([s for r in c for s in r["samples"]], variant="patched"))
    assert pooled["ci95_ns"][1] - pooled["ci95_ns"][0] < out["ci95_ns"][1] - out["ci95_ns"][0]


def test_one_back_to_back_run_says_so(tmp_path):
    out = compare_records(rec([1e6, 1.01e6, 0.99e6]), rec([1e6, 1.02e6, 0.98e6], variant="patched"))
    assert out["caveat"] == CAVEAT_ONE_RUN and out["unit_level"] == "repetition"
    for d, v in ((tmp_path / "a", "baseline"), (tmp_path / "b", "patched")):
        d.mkdir()
        r = rec([1e6, 1.01e6, 0.99e6], variant=v)
        write_json_atomic(str(d / record_filename(r["scenario"], r["variant"], r["params"])), r)
    text = _report.render_text(_report.build([str(tmp_path / "a"), str(tmp_path / "b")]))
    assert "CAVEAT: one back-to-back run per side" in text
    assert "CAVEAT" in _report.render_text(_report.build([str(tmp_path / "a")]))


def test_aa_noise_never_groups_the_two_sides(tmp_path):
    # A and B keep the default variant name; a real difference between them is not an A/A false positive
    _rounds(tmp_path, "a", "baseline", [1.00e6, 1.00e6])
    _rounds(tmp_path, "b", "baseline", [2.00e6, 2.00e6])
    report = _report.build([str(tmp_path / "a"), str(tmp_path / "b")])
    assert report["noise"]["aa_comparisons"] == 2  # one pair inside a, one inside b
    assert report["noise"]["aa_significant"] == 0
    mixed = load_results(str(tmp_path / "a")) + load_results(str(tmp_path / "b"))
    assert noise(mixed)["aa_significant"] > 0  # grouped together, the real difference would count


# ------------------------------------------------------------------ multiple comparisons

def test_holm_known_values():
    out = holm([0.01, 0.04, 0.03, None, 0.005])
    assert [o["p_holm"] for o in out] == pytest.approx([0.03, 0.06, 0.06, None, 0.02])
    assert [o["significant"] for o in out] == [True, False, False, False, True]
    with pytest.raises(ValueError, match=r"p-value 0 must be a number in \[0, 1\], got 1.5"):
        holm([1.5])


def test_multiple_comparisons_in_report_rows():
    cmps = [compare_records(rec([1e6, 1.01e6, 0.99e6]), rec([x, x * 1.01, x * 0.99], variant="p"))
            for x in (1.0e6, 1.2e6, 1.0e6)]
    mc = multiple_comparisons(cmps)
    assert mc["rows_tested"] == 3 and mc["expected_by_chance"] == pytest.approx(0.15)
    assert mc["significant_holm"] == 1 and cmps[1]["significant_holm"] is True
    assert cmps[0]["significant_holm"] is False


def test_min_detectable_effect():
    # (t_.975,18 + t_.8,18) * 2 * sqrt(2/10)
    assert min_detectable_effect(2.0, 10) == pytest.approx((2.100922 + 0.862049) * 2 * math.sqrt(0.2), rel=1e-4)
    assert min_detectable_effect(2.0, 1) is None


# ------------------------------------------------------------------ A/A in interleaved rounds

def _aa_records(rng, rounds, between, within, reps=3, mean_ns=140.0):
    out = []
    for k in range(rounds):
        m = rng.gauss(mean_ns, between)
        out.append(rec([1e9 / rng.gauss(m, within) for _dummy in range(reps)], replicate={"level": "round", "id": k},
                       run_id=f"20261129T2150{k % 60:02d}Z-aaaaaa"))
    return out


def test_aa_rounds_false_positive_rate_by_round_means():
    # between-round spread equal to the within-round spread: pooled repetitions call far more than 5%
    # of A/A compares significant; round means stay near 5%
    import random

    from ansible_collections.xdplab.testbed.plugins.module_utils.results._compare import aa_rounds

    rng = random.Random(11)
    sig = comps = sig_rep = comps_rep = 0
    for _dummy in range(150):
        aa = aa_rounds(_aa_records(rng, 24, between=1.0, within=1.0))
        sig += aa["significant"]
        comps += aa["compares"]
        sig_rep += aa["repetition_level_significant"]
        comps_rep += aa["repetition_level_compares"]
    assert 0.02 <= sig / comps <= 0.08
    assert sig_rep / comps_rep > 0.15
    assert aa["rounds"] == 24 and aa["compares"] == 24 - 6 + 1 and aa["mde_rounds_per_side"] == 12
    assert aa["mde_ns_all_rounds"] == pytest.approx(min_detectable_effect(aa["round_stdev_ns"], 12))


def test_aa_rounds_needs_enough_rounds_and_reaches_the_report(tmp_path):
    import random

    from ansible_collections.xdplab.testbed.plugins.module_utils.results._compare import aa_rounds

    rng = random.Random(3)
    with pytest.raises(ValueError, match="5 rounds, need at least 6"):
        aa_rounds(_aa_records(rng, 5, 1.0, 1.0))
    d = tmp_path / "aa"
    d.mkdir()
    for r in _aa_records(rng, 8, 1.0, 1.0):
        write_json_atomic(str(d / record_filename(r["scenario"], r["variant"], r["params"], r["replicate"])), r)
    report = _report.build([str(d)])
    (aa,) = report["noise"]["aa_rounds"]
    assert aa["rounds"] == 8
    lo, hi = aa["false_positive_interval"]
    assert 0.0 <= lo <= aa["false_positive_rate"] <= hi <= 1.0 and hi - lo > 0.3  # 3 compares: wide
    text = _report.render_text(report)
    assert "A/A in rounds (xdp_drop/baseline): 8 interleaved rounds" in text
    assert f"exact 95% interval {lo * 100:.1f}-{hi * 100:.1f}%" in text
    assert "CAVEAT" not in _report.render_text(report)  # rounds are units: not one back-to-back run


def test_noise_reports_between_unit_stdev(tmp_path):
    recs = _rounds(tmp_path, "a", "baseline", [1.00e6, 1.10e6, 0.90e6, 1.05e6])
    nz = noise(recs)
    means = [sum(1e9 / x for x in r["samples"]) / 3 for r in recs]
    m = sum(means) / 4
    assert nz["pooled_unit_stdev_ns"] == pytest.approx(math.sqrt(sum((x - m) ** 2 for x in means) / 3), rel=1e-12)
    assert nz["pooled_unit_stdev_ns"] > 5 * nz["pooled_stdev_ns"]
    assert "Between units (rounds, runs, boots" in _report.render_text(_report.build([str(tmp_path / "a")]))


def test_bad_replicate_in_a_record_file_names_the_file(tmp_path):
    import json

    from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_files import RecordError

    r = rec([1e6])
    r["replicate"] = {"level": "reboot", "id": 1}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(r))
    with pytest.raises(RecordError, match=r"bad.json: replicate.level must be one of .*, got 'reboot'"):
        load_results(str(path))
