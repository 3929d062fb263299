# SPDX-License-Identifier: GPL-3.0-or-later
"""The statistics against scipy/numpy (test-only dependencies) on random and adversarial cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.results._compare import compare_records
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_schema import build_record
from ansible_collections.xdplab.testbed.plugins.module_utils.results._statistics import (
    StatsError,
    binomial_interval,
    holm,
    min_detectable_effect,
    repetitions_needed,
    summarize,
    t_cdf,
    t_quantile,
    welch,
)
from scipy import stats

RNG = np.random.default_rng(20261201)


def _random_sides(n_cases=200):
    for _dummy in range(n_cases):
        na, nb = (int(x) for x in RNG.integers(2, 30, 2))
        scale = 10 ** RNG.uniform(-2, 3)
        yield RNG.normal(140, scale, na), RNG.normal(140 + RNG.normal(0, scale), scale * RNG.uniform(0.1, 10), nb)


ADVERSARIAL = [
    ([140.0, 140.0, 140.0, 140.0], [140.0, 141.0]),  # zero variance on one side
    ([1e-9, 2e-9], [1e-9, 3e-9]),  # tiny values
    ([1e9, 1e9 + 1, 1e9 + 2], [1e9 + 3, 1e9 + 5, 1e9 + 4]),  # large values, small spread (cancellation)
    ([140.0, 1000.0], [141.0, 142.0, 143.0, 144.0, 145.0, 146.0, 147.0, 148.0]),  # bimodal, unequal n
    ([1.0, 2.0], [1.0, 2.0]),  # identical sides
    ([5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 6.0], [5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 9.0]),
]


def _check_welch(a, b):
    ours = welch(list(a), list(b))
    ref = stats.ttest_ind(b, a, equal_var=False)
    ci = ref.confidence_interval(0.95)
    assert ours["delta"] == pytest.approx(np.mean(b) - np.mean(a), rel=1e-12, abs=1e-12)
    assert ours["p_value"] == pytest.approx(ref.pvalue, rel=1e-8, abs=1e-12)
    assert ours["df"] == pytest.approx(ref.df, rel=1e-10)
    assert ours["ci"][0] == pytest.approx(ci.low, rel=1e-8, abs=1e-9 * abs(ci.low) + 1e-15)
    assert ours["ci"][1] == pytest.approx(ci.high, rel=1e-8, abs=1e-9 * abs(ci.high) + 1e-15)
    assert ours["significant"] == bool(ref.pvalue < 0.05)


def test_welch_against_scipy_random():
    for a, b in _random_sides():
        _check_welch(a, b)


@pytest.mark.filterwarnings("ignore:Precision loss occurred")  # scipy's own warning on the 1e9 case
@pytest.mark.parametrize(("a", "b"), ADVERSARIAL)
def test_welch_against_scipy_adversarial(a, b):
    _check_welch(np.array(a), np.array(b))


def test_zero_variance_both_sides_scipy_nan_ours_no_interval():
    a, b = [140.0, 140.0, 140.0], [150.0, 150.0]
    with np.errstate(all="ignore"):
        ref = stats.ttest_ind(b, a, equal_var=False)
    # scipy: no finite statistic (t = inf, or NaN when the means are equal too): no usable interval
    assert not math.isfinite(ref.statistic) or math.isnan(ref.pvalue)
    ours = welch(a, b)
    assert ours["ci"] is None and ours["p_value"] is None and ours["significant"] is False


def test_t_quantile_against_scipy():
    for df in [1, 1.5, 2, 3, 4.7, 10, 29.3, 100]:
        for p in [0.5 + 1e-6, 0.6, 0.8, 0.9, 0.95, 0.975, 0.995, 0.9995]:
            assert t_quantile(p, df) == pytest.approx(stats.t.ppf(p, df), rel=1e-9, abs=1e-9)
            assert t_quantile(1 - p, df) == pytest.approx(stats.t.ppf(1 - p, df), rel=1e-9, abs=1e-9)
    # extreme df (< 1, 1e4): ~1e-8 absolute near the median, still exact enough for 2-decimal ns
    for df in (0.5, 1e4):
        for p in (0.5 + 1e-6, 0.8, 0.975):
            assert t_quantile(p, df) == pytest.approx(stats.t.ppf(p, df), rel=1e-8, abs=1e-7)


def test_t_cdf_and_quantile_huge_df_against_scipy():
    # repetitions_needed on a tiny effect asks for df ~ 6e12: the incomplete beta did not converge
    # there (ArithmeticError out of bench_report) and lost digits from df ~ 3e5 on
    for df in np.geomspace(1e3, 1e15, 61):
        for t in (0.0, 0.1, 0.8416, 1.645, 1.96, 3.0, 8.0, -2.0):
            assert t_cdf(t, df) == pytest.approx(stats.t.cdf(t, df), abs=1e-10)
        for p in (0.8, 0.975):
            assert t_quantile(p, df) == pytest.approx(stats.t.ppf(p, df), rel=1e-9)
    assert t_cdf(0.8416, 2937096609185.0) == pytest.approx(stats.norm.cdf(0.8416), abs=1e-12)
    # stdev 1e6 ns for a 1 ns effect: n is astronomic, but it is a number
    n = repetitions_needed(1e6, 1.0)
    assert n == pytest.approx(2 * (stats.norm.ppf(0.975) + stats.norm.ppf(0.8)) ** 2 * 1e12, rel=1e-6)


def test_summary_against_numpy_and_scipy():
    for _dummy in range(100):
        x = RNG.uniform(1e5, 1e7, int(RNG.integers(2, 40)))
        s = summarize(list(x))
        assert s["mean"] == pytest.approx(np.mean(x), rel=1e-12)
        assert s["stdev"] == pytest.approx(np.std(x, ddof=1), rel=1e-9)
        lo, hi = stats.t.interval(0.95, len(x) - 1, loc=np.mean(x), scale=stats.sem(x))
        assert s["ci95"] == pytest.approx([lo, hi], rel=1e-10)


def test_compare_estimator_against_scipy():
    # mean of per-unit ns/packet, Welch on it: the whole comparison reproduced with scipy
    for _dummy in range(50):
        a = RNG.uniform(5e6, 8e6, int(RNG.integers(2, 12)))
        b = RNG.uniform(5e6, 8e6, int(RNG.integers(2, 12)))

        def mk(s, v):
            return build_record(run_id="20261129T215000Z-aaaaaa", scenario="s", variant=v, tool="xdpgen",
                                params={}, samples=list(s), started="2026-11-29T21:50:00Z", duration_s=1.0)
        out = compare_records(mk(a, "b"), mk(b, "c"))
        ref = stats.ttest_ind(1e9 / b, 1e9 / a, equal_var=False)
        ci = ref.confidence_interval(0.95)
        assert out["delta_ns_per_packet"] == pytest.approx(np.mean(1e9 / b) - np.mean(1e9 / a), rel=1e-10, abs=1e-10)
        assert out["ci95_ns"] == pytest.approx([ci.low, ci.high], rel=1e-8, abs=1e-9)
        assert out["p_value"] == pytest.approx(ref.pvalue, rel=1e-8, abs=1e-12)


def _holm_reference(p, alpha=0.05):
    """Holm by its definition (closed testing of ordered p-values), written independently."""
    p = np.asarray(p)
    order = np.argsort(p, kind="stable")
    m = len(p)
    reject = np.zeros(m, dtype=bool)
    for k, i in enumerate(order):
        if p[i] <= alpha / (m - k) and (k == 0 or reject[order[k - 1]]):
            reject[i] = True
        else:
            break
    adj = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adj
    return reject, out


def test_holm_against_reference_random_and_ties():
    cases = [list(RNG.uniform(0, 0.2, int(RNG.integers(1, 30)))) for _dummy in range(200)]
    cases += [[0.01, 0.01, 0.01], [0.0125] * 4, [0.05], [0.0, 1.0], [0.049999, 0.05]]
    for p in cases:
        ours = holm(p)
        reject, adj = _holm_reference(p)
        assert [o["p_holm"] for o in ours] == pytest.approx(list(adj), rel=1e-12)
        # significance: adjusted p < 0.05 (strict), the reference rejects at <= alpha/(m-k)
        for o, r, a in zip(ours, reject, adj, strict=True):
            if not math.isclose(a, 0.05):
                assert o["significant"] == bool(r)


def test_holm_family_wise_error_under_the_null():
    # 10 A/A rows, each with a uniform p-value: raw 5% calls ~40% of reports "something significant",
    # Holm keeps that at <= 5%
    trials, any_raw, any_holm = 4000, 0, 0
    for _dummy in range(trials):
        p = list(RNG.uniform(0, 1, 10))
        any_raw += any(x < 0.05 for x in p)
        any_holm += any(o["significant"] for o in holm(p))
    assert any_raw / trials > 0.3
    assert any_holm / trials <= 0.06


def test_min_detectable_effect_has_80_percent_power():
    # power of the two-sided two-sample t test at the MDE, by the noncentral t distribution
    for n in (3, 5, 10, 20, 40):
        s = 2.5
        mde = min_detectable_effect(s, n)
        df = 2 * n - 2
        nc = mde / (s * math.sqrt(2.0 / n))
        tcrit = stats.t.ppf(0.975, df)
        power = 1 - stats.nct.cdf(tcrit, df, nc) + stats.nct.cdf(-tcrit, df, nc)
        assert power == pytest.approx(0.8, abs=0.03)


def test_binomial_interval_against_scipy_exact():
    rng = np.random.default_rng(14)
    cases = [(0, 1), (1, 1), (0, 19), (1, 19), (19, 19), (3, 40), (500, 1000), (1, 5000)]
    cases += [(int(k), int(n)) for n in rng.integers(1, 300, 30) for k in [rng.integers(0, n + 1)]]
    for k, n in cases:
        for level in (0.95, 0.99, 0.8):
            ci = stats.binomtest(k, n).proportion_ci(confidence_level=level, method="exact")
            lo, hi = binomial_interval(k, n, level)
            assert lo == pytest.approx(ci.low, abs=1e-9), (k, n, level)
            assert hi == pytest.approx(ci.high, abs=1e-9), (k, n, level)
            assert lo <= k / n <= hi


@pytest.mark.parametrize(("k", "n", "level", "bad"), [
    (1, 0, 0.95, "trials"), (-1, 5, 0.95, "events"), (6, 5, 0.95, "events"), (True, 5, 0.95, "events"),
    (1, 5.0, 0.95, "trials"), (1, 5, 1.0, "level"), (1, 5, 0.0, "level"),
])
def test_binomial_interval_names_the_bad_value(k, n, level, bad):
    with pytest.raises(StatsError, match=bad):
        binomial_interval(k, n, level)
