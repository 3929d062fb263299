# SPDX-License-Identifier: GPL-3.0-or-later
"""Degenerate input and the far tails: p-values down to 1e-300 and t quantiles for df from 1 to
1e15 against scipy, and 'no spread' to a relative tolerance (rounding residue is not noise)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.results import _statistics
from ansible_collections.xdplab.testbed.plugins.module_utils.results._compare import compare_records
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_schema import build_record
from ansible_collections.xdplab.testbed.plugins.module_utils.results._statistics import (
    StatsError,
    no_spread,
    t_quantile,
    t_sf,
    welch,
)
from scipy import stats

DFS = [1.0, 1.5, 2.0, 2.5, 3.0, 7.5, 10.0, 30.0, 1e3, 1e5, 3e5, 1e8, 1e12, 1e15]


def _rec(samples, variant):
    return build_record(run_id="20261129T215000Z-aaaaaa", scenario="xdp_drop", variant=variant, tool="xdpgen",
                        params={"pkt_size": 64}, samples=list(samples), started="2026-11-29T21:50:00Z",
                        duration_s=3.0)


@pytest.mark.parametrize("df", DFS)
def test_p_value_tail_matches_scipy_down_to_1e300(df):
    # t from the centre to where the two-sided p is about 1e-300 for this df
    t_far = min(-t_quantile(2.5e-301, df), 1e150)  # (scipy's isf gives nan or inf out there)
    for t in np.geomspace(1e-3, t_far, 60):
        ref = 2.0 * stats.t.sf(t, df)
        ours = 2.0 * t_sf(float(t), df)
        if ref == 0.0 and df == 1.0:  # scipy's t * t overflows past 1e154; the Cauchy tail is atan(1/t)/pi
            ref = 2.0 * math.atan(1.0 / t) / math.pi
        if ref == 0.0:  # below the smallest double: ours must say (almost) nothing either
            assert ours < 1e-300
            continue
        assert ours == pytest.approx(ref, rel=1e-9), (t, df)
        assert ours > 0.0


@pytest.mark.parametrize("df", DFS)
def test_t_quantile_matches_scipy_over_the_whole_range(df):
    for p in np.geomspace(1e-300, 0.49, 80):
        q = t_quantile(float(p), df)
        assert math.isfinite(q) and q < 0, (p, df, q)
        ref = stats.t.ppf(p, df)
        if math.isfinite(ref) and abs(stats.t.cdf(ref, df) / p - 1.0) < 1e-12:
            assert q == pytest.approx(ref, rel=1e-9), (p, df)
        else:
            # scipy's own inverse fails here (df 2.5, p 1e-300: it returns +inf); its CDF does not
            assert stats.t.cdf(q, df) == pytest.approx(p, rel=1e-9), (p, df, q, ref)


def test_t_quantile_is_symmetric():
    for df in DFS:
        assert t_quantile(0.975, df) == pytest.approx(-t_quantile(0.025, df), rel=1e-12)


def test_t_quantile_df1_tiny_p_does_not_raise():
    assert t_quantile(1e-12, 1) == pytest.approx(stats.t.ppf(1e-12, 1), rel=1e-12)
    assert t_quantile(1e-300, 1) == pytest.approx(-1.0 / (math.pi * 1e-300), rel=1e-12)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), True])
def test_bad_df_is_named(bad):
    with pytest.raises(StatsError, match="degrees of freedom"):
        t_quantile(0.9, bad)


def test_welch_p_value_in_the_far_tail_is_not_zero():
    a = [100.0, 100.001, 99.999, 100.0005]
    b = [200.0, 200.001, 199.999, 200.0005]
    ours = welch(a, b)
    ref = stats.ttest_ind(b, a, equal_var=False)
    assert ref.pvalue > 0.0
    assert ours["p_value"] == pytest.approx(ref.pvalue, rel=1e-9)


def test_rounding_residue_is_no_spread():
    # 1,000,000 pps three times against 999,999 three times: identical on each side; 1e9/x leaves a
    # rounding residue that an exact-zero test took for noise and called "significant"
    out = compare_records(_rec([1e6] * 3, "baseline"), _rec([999_999.0] * 3, "patched"))
    assert out["ci95_ns"] is None and out["significant"] is False and out["p_value"] is None
    assert "no interval" in out["note"] and "no interval" in out["verdict"]
    assert out["delta_ns_per_packet"] == pytest.approx(1e9 / 999_999 - 1e3, rel=1e-9)
    vals = [1e9 / x for x in (1.0000001e6, 1.0000001e6, 1.0000001e6)]
    assert no_spread(vals)
    assert not no_spread([1000.0, 1000.0, 1000.00001])  # 1e-8 relative: a real (tiny) spread


def test_one_flat_side_keeps_the_interval_of_the_other():
    out = welch([5.0, 5.0 * (1 + 1e-14), 5.0], [6.0, 6.5, 5.5])
    ref = stats.ttest_ind([6.0, 6.5, 5.5], [5.0, 5.0, 5.0], equal_var=False)
    assert out["ci"] is not None and out["df"] == pytest.approx(2.0)
    assert out["p_value"] == pytest.approx(ref.pvalue, rel=1e-9)


def test_fallback_without_scipy_central_quantiles(monkeypatch):
    # a host without scipy (the QEMU guest writing pktgen records) still summarizes a record
    monkeypatch.setattr(_statistics, "HAS_SCIPY", False)
    for df in (1, 2, 4.5, 30, 1e6):
        for p in (0.6, 0.975, 0.995):
            assert t_quantile(p, df) == pytest.approx(stats.t.ppf(p, df), rel=1e-8)
    assert _statistics.summarize([1e6, 1.1e6])["ci95"] is not None
    with pytest.raises(StatsError, match="needs scipy"):
        _statistics.t_sf(3.0, 4)
