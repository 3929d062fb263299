# SPDX-License-Identifier: GPL-3.0-or-later
"""Statistics: record v1 summary, t quantiles, Welch, A/A helpers.

Reference t quantiles are the two-sided 95 % table values (e.g. NIST/SEMATECH
e-Handbook table 1.3.6.7.2), reference summaries hand-computed below.
"""

from __future__ import annotations

import math
import random

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.results._statistics import (
    StatsError,
    aa_false_positive_rate,
    normal_quantile,
    repetitions_needed,
    summarize,
    t_cdf,
    t_quantile,
    welch,
)


@pytest.mark.parametrize("df,expected", [
    (1, 12.706204736), (2, 4.302652730), (3, 3.182446305), (4, 2.776445105),
    (5, 2.570581836), (9, 2.262157163), (10, 2.228138852), (30, 2.042272456),
    (100, 1.983971519), (1e7, 1.959964),
])
def test_t_quantile_975(df, expected):
    assert t_quantile(0.975, df) == pytest.approx(expected, abs=2e-6)


@pytest.mark.parametrize("p,df,expected", [
    (0.95, 1, 6.313751515), (0.95, 10, 1.812461123), (0.995, 5, 4.032142984),
    (0.8, 20, 0.859964), (0.025, 5, -2.570581836), (0.5, 7, 0.0),
])
def test_t_quantile_other(p, df, expected):
    assert t_quantile(p, df) == pytest.approx(expected, abs=2e-6)


def test_t_quantile_fractional_df_between_neighbours():
    q = t_quantile(0.975, 7.5)
    assert t_quantile(0.975, 8) < q < t_quantile(0.975, 7)


def test_t_cdf_roundtrip():
    for df in (1, 3, 12.4, 50):
        for p in (0.6, 0.9, 0.975, 0.999):
            assert t_cdf(t_quantile(p, df), df) == pytest.approx(p, abs=1e-10)


def test_normal_quantile():
    assert normal_quantile(0.975) == pytest.approx(1.959963985, abs=1e-8)
    assert normal_quantile(0.8) == pytest.approx(0.841621234, abs=1e-8)


@pytest.mark.parametrize("p", [0, 1, -0.1, 1.5])
def test_t_quantile_bad_p(p):
    with pytest.raises(StatsError, match="probability"):
        t_quantile(p, 3)


def test_summarize_three_samples():
    s = summarize([6310000.0, 6295000.0, 6322000.0], pkt_size=64)
    mean = (6310000.0 + 6295000.0 + 6322000.0) / 3
    sd = math.sqrt(((6310000 - mean) ** 2 + (6295000 - mean) ** 2 + (6322000 - mean) ** 2) / 2)
    half = 4.302652730 * sd / math.sqrt(3)
    assert s["n"] == 3
    assert s["mean"] == pytest.approx(mean)
    assert s["stdev"] == pytest.approx(sd)
    assert s["ci95"][0] == pytest.approx(mean - half, rel=1e-9)
    assert s["ci95"][1] == pytest.approx(mean + half, rel=1e-9)
    ns = [1e9 / x for x in (6310000.0, 6295000.0, 6322000.0)]
    assert s["ns_per_packet"] == pytest.approx(sum(ns) / 3, rel=1e-12)  # mean of per-sample ns, not 1e9/mean
    assert s["ns_per_packet"] != pytest.approx(1e9 / mean, rel=1e-7)
    assert s["gbps"] == pytest.approx(mean * 64 * 8 / 1e9)


def test_summarize_n1_no_interval_no_gbps():
    s = summarize([2_000_000])
    assert s["n"] == 1
    assert s["ci95"] is None
    assert s["stdev"] == 0.0
    assert s["ns_per_packet"] == pytest.approx(500.0)
    assert "gbps" not in s


@pytest.mark.parametrize("samples,needle", [
    ([], "empty"),
    ([1.0, float("nan")], r"samples\[1\] is not a finite"),
    ([1.0, -5.0], r"samples\[1\] must be a rate > 0, got -5.0"),
    ([0.0], r"samples\[0\] must be a rate > 0"),
    (["abc"], "must be a number, got 'abc'"),
    ("123", "must be a list"),
    ([float("inf")], "not a finite"),
])
def test_summarize_bad_samples(samples, needle):
    with pytest.raises(StatsError, match=needle):
        summarize(samples)


def test_summarize_bad_pkt_size():
    with pytest.raises(StatsError, match="pkt_size must be a positive integer, got 'x'"):
        summarize([1.0, 2.0], pkt_size="x")


def test_welch_reference():
    # Welch example computed by hand: a=[1,2,3,4], b=[3,4,5,6,7]
    a, b = [1.0, 2.0, 3.0, 4.0], [3.0, 4.0, 5.0, 6.0, 7.0]
    r = welch(a, b)
    va, vb = (5 / 3) / 4, 2.5 / 5
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / 3 + vb ** 2 / 4)
    assert r["method"] == "welch-t"
    assert r["delta"] == pytest.approx(2.5)
    assert r["df"] == pytest.approx(df)
    q = t_quantile(0.975, df)
    assert r["ci"] == pytest.approx([2.5 - q * se, 2.5 + q * se])
    assert r["significant"] is True
    assert 0 < r["p_value"] < 0.05


def test_welch_overlap_not_significant():
    r = welch([10.0, 11.0, 12.0], [10.5, 11.5, 12.5])
    assert r["ci"][0] < 0 < r["ci"][1]
    assert r["significant"] is False


def test_welch_n1_no_interval():
    r = welch([10.0], [20.0, 21.0])
    assert r["ci"] is None
    assert r["significant"] is False
    assert r["note"] == "n=1, no interval"


def test_aa_false_positive_rate_is_about_5_percent():
    rng = random.Random(1234)
    recs = [{"samples": [rng.gauss(5e6, 5e4) for _dummy in range(5)]} for _dummy in range(40)]
    res = aa_false_positive_rate(recs)
    assert res["comparisons"] == 40 * 39 // 2
    assert res["rate"] < 0.10
    assert res["pooled_stdev_ns"] == pytest.approx(2.0, rel=0.2)  # 5e4/5e6 * 200 ns
    assert res["repetitions_for_1ns"] == repetitions_needed(res["pooled_stdev_ns"])


def test_aa_detects_a_real_shift():
    rng = random.Random(7)
    recs = [{"samples": [rng.gauss(5e6 + (i % 2) * 5e5, 1e4) for _dummy in range(5)]} for i in range(6)]
    assert aa_false_positive_rate(recs)["rate"] > 0.5


def test_repetitions_needed():
    # 2 * (1.96 + 0.8416)^2 * s^2 / d^2 at s=2, d=1 -> 62.8 (normal); t refinement >= that
    n = repetitions_needed(2.0, 1.0)
    assert 63 <= n <= 66
    assert repetitions_needed(0.1, 1.0) == 2
    assert repetitions_needed(float("nan")) is None
