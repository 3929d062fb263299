# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.
#
# Statistics for packet-rate samples: the result record v1 ``summary``, Student t
# distribution (scipy.special on the controller), Welch's t interval for a difference in
# ns/packet, and the A/A noise helpers.
"""Statistics for xdplab.testbed result records.

The Student t distribution, the normal quantile and the beta quantiles come from scipy.special
(a controller requirement, requirements.txt): its tails are exact to double precision where a
home-made 2 * (1 - cdf) printed 0.0 below about 1e-11. A host without scipy (the QEMU guest that
writes pktgen records) gets only ``t_quantile`` from a pure-Python fallback, for the central
quantiles a record ``summary`` needs; the controller recomputes every summary when it loads a
record, so no figure a report prints comes from the fallback.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

try:
    from scipy import special as _special

    HAS_SCIPY = True
except ImportError:  # pragma: no cover - depends on the host (the QEMU guest has no scipy)
    _special = None
    HAS_SCIPY = False

__all__ = [
    "StatsError",
    "check_samples",
    "summarize",
    "t_cdf",
    "t_sf",
    "t_quantile",
    "no_spread",
    "normal_quantile",
    "welch",
    "ns_samples",
    "repetitions_needed",
    "aa_false_positive_rate",
    "holm",
    "min_detectable_effect",
    "binomial_interval",
]


class StatsError(ValueError):
    """Samples that cannot be summarized (empty, NaN, negative, zero rates)."""


# --------------------------------------------------------------------------- inputs

def check_samples(samples: Sequence[float], what: str = "samples") -> list[float]:
    """Return samples as floats; raise StatsError naming the first bad value.

    A packet rate must be a finite number > 0: a rate of 0 has no ns/packet and
    almost always means a broken run, so it is refused rather than averaged in.
    """
    if isinstance(samples, (str, bytes)) or not isinstance(samples, Sequence):
        raise StatsError(f"{what} must be a list of numbers, got {samples!r}")
    if len(samples) == 0:
        raise StatsError(f"{what} is empty: nothing to summarize")
    out: list[float] = []
    for i, value in enumerate(samples):
        if isinstance(value, bool):
            raise StatsError(f"{what}[{i}] must be a number, got {value!r}")
        try:
            f = float(value)
        except (TypeError, ValueError):
            raise StatsError(f"{what}[{i}] must be a number, got {value!r}") from None
        if math.isnan(f) or math.isinf(f):
            raise StatsError(f"{what}[{i}] is not a finite number: {value!r}")
        if f <= 0:
            raise StatsError(f"{what}[{i}] must be a rate > 0, got {value!r}")
        out.append(f)
    return out


# --------------------------------------------------------------------- Student t

def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction for the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    if abs(d) < tiny:
        d = tiny
    d = 1.0 / d
    h = d
    for m in range(1, 10000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = tiny if abs(d) < tiny else d
        c = 1.0 + aa / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = tiny if abs(d) < tiny else d
        c = 1.0 + aa / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            return h
    raise ArithmeticError("incomplete beta continued fraction did not converge")  # pragma: no cover


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbt = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
           + a * math.log(x) + b * math.log1p(-x))
    bt = math.exp(lbt)
    if x < (a + 1.0) / (a + b + 2.0):
        return bt * _betacf(a, b, x) / a
    return 1.0 - bt * _betacf(b, a, 1.0 - x) / b


_LARGE_DF = 2e5


def _normal_pdf(z: float) -> float:
    return math.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)


def _t_cdf_fallback(t: float, df: float) -> float:
    """Pure-Python t CDF (incomplete beta; Fisher's expansion past df 2e5): central values only."""
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    if df > _LARGE_DF:
        return 0.5 * math.erfc(-t / math.sqrt(2.0)) - _normal_pdf(t) * (t ** 3 + t) / (4.0 * df)
    x = df / (df + t * t)
    tail = 0.5 * _betainc(df / 2.0, 0.5, x)
    return 1.0 - tail if t >= 0 else tail


def _check_df(df: float) -> float:
    if isinstance(df, bool) or not isinstance(df, (int, float)) or not df > 0 or math.isnan(df):
        raise StatsError(f"degrees of freedom must be a number > 0, got {df!r}")
    return float(df)


def _need_scipy(what: str) -> None:
    if not HAS_SCIPY:
        raise StatsError(f"{what} needs scipy (a controller requirement: pip install -r requirements.txt)")


def t_cdf(t: float, df: float) -> float:
    """CDF of Student's t distribution with df degrees of freedom (df > 0, may be fractional)."""
    df = _check_df(df)
    _need_scipy("t_cdf")
    return float(_special.stdtr(df, t))


def t_sf(t: float, df: float) -> float:
    """Upper tail P(T > t) of Student's t, computed as a tail (never 1 - cdf): exact down to the
    smallest doubles (a two-sided p-value is 2 * t_sf(|t|, df))."""
    df = _check_df(df)
    _need_scipy("t_sf")
    if df == 1.0 and t > 1.0:  # Cauchy: t * t overflows scipy's form past 1e154; atan(1/t) does not
        return math.atan(1.0 / t) / math.pi
    return float(_special.stdtr(df, -t))


def _invert(cdf, p: float, lo: float, hi: float, rel_tol: float) -> float:
    """The x in [lo, hi] with cdf(x) = p, by bisection (cdf increasing): the quantile functions here.
    Stops when the bracket is narrower than rel_tol * max(1, |hi|), or after 200 halvings."""
    for _dummy in range(200):
        mid = (lo + hi) / 2.0
        if cdf(mid) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < rel_tol * max(1.0, abs(hi)):
            break
    return (lo + hi) / 2.0


def _lower_t_quantile(p: float, df: float) -> float:
    """The t < 0 with P(T <= t) = p (p < 0.5), with scipy. stdtrit is exact where it converges; far
    in the tail of a small df it returns inf (df 2.5, p 1e-300), so its answer is checked against the
    CDF and, when off, found again by bisection on log|t| with the CDF, which stays exact there."""
    if df == 1.0:  # Cauchy, closed form: exact for any p, where the t * t of the general form overflows
        return math.tan(math.pi * (p - 0.5)) if p > 0.25 else -1.0 / math.tan(math.pi * p)
    q = float(_special.stdtrit(df, p))
    if math.isfinite(q) and q < 0 and abs(float(_special.stdtr(df, q)) / p - 1.0) < 1e-12:
        return q
    log_p = math.log(p)
    u = _invert(lambda v: -math.log(float(_special.stdtr(df, -math.exp(v))) or 5e-324) + log_p,
                0.0, 0.0, 710.0, rel_tol=1e-15)
    return -math.exp(u)


def t_quantile(p: float, df: float) -> float:
    """Inverse CDF of Student's t: the t with P(T <= t) = p, any p in (0, 1), any df > 0."""
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 < p < 1.0:
        raise StatsError(f"probability must be in (0, 1), got {p!r}")
    df = _check_df(df)
    if p == 0.5:
        return 0.0
    if not HAS_SCIPY:  # pragma: no cover - exercised by test_stats's fallback test
        return _t_quantile_fallback(p, df)
    return _lower_t_quantile(p, df) if p < 0.5 else -_lower_t_quantile(1.0 - p, df)


def _t_quantile_fallback(p: float, df: float) -> float:
    """Pure-Python quantile (bisection on _t_cdf_fallback), ~1e-10 for 1e-6 < p < 1 - 1e-6."""
    if p < 0.5:
        return -_t_quantile_fallback(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while _t_cdf_fallback(hi, df) < p:
        lo, hi = hi, hi * 2.0
        if hi > 1e12:
            raise StatsError(f"t quantile out of the fallback's range for p={p!r}, df={df!r}: install scipy")
    return _invert(lambda x: _t_cdf_fallback(x, df), p, lo, hi, rel_tol=1e-12)


def normal_quantile(p: float) -> float:
    """Inverse CDF of the standard normal."""
    if not 0.0 < p < 1.0:
        raise StatsError(f"probability must be in (0, 1), got {p!r}")
    _need_scipy("normal_quantile")
    return float(_special.ndtri(p))


# ----------------------------------------------------------------------- summary

def _mean_stdev(values: Sequence[float]) -> tuple[float, float | None]:
    n = len(values)
    mean = math.fsum(values) / n
    if n < 2:
        return mean, None
    var = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(var)


def summarize(samples: Sequence[float], pkt_size: int | None = None) -> dict:
    """Record v1 ``summary`` of packet-rate samples (packets/s).

    Returns n, mean, stdev (sample stdev, n-1; 0.0 when n == 1), ci95 ([lo, hi],
    Student t on the mean; None when n == 1), ns_per_packet and ci95_ns (the
    comparison estimator, the mean of per-sample 1e9/pps with its Student t
    interval: the number every report prints for this record) and, when pkt_size
    is given, gbps = mean * pkt_size * 8 / 1e9 (frame bytes only: Ethernet
    preamble, SFD and inter-frame gap, 20 B per frame, are NOT included).
    """
    values = check_samples(samples)
    n = len(values)
    out = {"n": n}
    out["mean"], out["stdev"], out["ci95"] = _t_interval(values)
    out["ns_per_packet"], _dummy, out["ci95_ns"] = _t_interval([1e9 / v for v in values])
    if pkt_size is not None:
        if isinstance(pkt_size, bool) or not isinstance(pkt_size, int) or pkt_size <= 0:
            raise StatsError(f"pkt_size must be a positive integer, got {pkt_size!r}")
        out["gbps"] = out["mean"] * pkt_size * 8 / 1e9
    return out


def _t_interval(values: list[float]) -> tuple[float, float, list[float] | None]:
    """mean, sample stdev (0.0 for one value) and the 95% Student t interval of the mean (None for one)."""
    mean, stdev = _mean_stdev(values)
    if stdev is None:
        return mean, 0.0, None
    half = t_quantile(0.975, len(values) - 1) * stdev / math.sqrt(len(values))
    return mean, stdev, [mean - half, mean + half]


# ------------------------------------------------------------ A/B in ns/packet

def ns_samples(samples: Sequence[float]) -> list[float]:
    """Per-sample ns/packet (1e9 / pps)."""
    return [1e9 / v for v in check_samples(samples)]


# Values that differ by less than this, relative to their size, are equal: 1e9/999999 three times
# leaves a rounding residue of ~1e-14 in the variance, not a measured spread. A real rate is never
# measured to 1e-9.
SPREAD_REL_TOL = 1e-9


def no_spread(values: Sequence[float], rel_tol: float = SPREAD_REL_TOL) -> bool:
    """True when every value equals the others to ``rel_tol`` of the largest magnitude."""
    vals = [float(v) for v in values]
    return max(vals) - min(vals) <= rel_tol * max(abs(v) for v in vals)


def welch(baseline: Sequence[float], candidate: Sequence[float], level: float = 0.95) -> dict:
    """Welch's t interval for mean(candidate) - mean(baseline).

    Both inputs are already in the unit of comparison (ns/packet here).
    With n < 2 on either side there is no interval: ``ci`` is None and
    ``significant`` is False, ``note`` says "n=1, no interval". With no spread on
    both sides (every value equal to a relative 1e-9, ``no_spread``) there is no
    interval either (the noise is unknown, not zero: integer rates under a rate cap):
    ``note`` says so, never significant. A side without spread next to one with it
    counts as variance 0 (Welch's df then rests on the other side alone, as scipy's).
    The p-value is two-sided, 2 * P(T > |t|) computed as a tail (exact down to 1e-300).
    """
    a = [float(v) for v in baseline]
    b = [float(v) for v in candidate]
    if not a or not b:
        raise StatsError("welch: both sides need at least one sample")
    ma, sa = _mean_stdev(a)
    mb, sb = _mean_stdev(b)
    delta = mb - ma
    out = {"method": "welch-t", "delta": delta, "ci": None, "df": None, "t": None,
           "p_value": None, "significant": False, "note": None}
    if sa is None or sb is None:
        out["note"] = "n=1, no interval"
        return out
    flat_a, flat_b = no_spread(a), no_spread(b)
    if flat_a and flat_b:
        # identical samples on each side: no estimate of the noise, so no interval (scipy: NaN).
        out["note"] = "zero variance on both sides, no interval"
        return out
    va = 0.0 if flat_a else sa * sa / len(a)
    vb = 0.0 if flat_b else sb * sb / len(b)
    se = math.sqrt(va + vb)
    denom = 0.0
    if va > 0:
        denom += va * va / (len(a) - 1)
    if vb > 0:
        denom += vb * vb / (len(b) - 1)
    df = (va + vb) ** 2 / denom
    q = t_quantile(0.5 + level / 2.0, df)
    t = delta / se
    out.update(ci=[delta - q * se, delta + q * se], df=df, t=t, p_value=min(1.0, 2.0 * t_sf(abs(t), df)))
    out["significant"] = out["ci"][0] > 0.0 or out["ci"][1] < 0.0
    return out


def repetitions_needed(stdev_ns: float, delta_ns: float = 1.0, level: float = 0.95,
                       power: float = 0.8) -> int | None:
    """Repetitions per side to detect a difference of delta_ns with the given power.

    Normal approximation refined with t quantiles: n = 2 (t_{1-a/2} + t_{power})^2 s^2 / d^2,
    iterated until stable. Returns None when stdev_ns is not a finite number >= 0.
    """
    if stdev_ns is None or not math.isfinite(stdev_ns) or stdev_ns < 0:
        return None
    if delta_ns <= 0:
        raise StatsError(f"delta_ns must be > 0, got {delta_ns!r}")
    if stdev_ns == 0:
        return 2
    za, zb = normal_quantile(0.5 + level / 2.0), normal_quantile(power)
    n = max(2, math.ceil(2 * (za + zb) ** 2 * stdev_ns ** 2 / delta_ns ** 2))
    for _dummy in range(50):
        df = 2 * n - 2
        ta, tb = t_quantile(0.5 + level / 2.0, df), t_quantile(power, df)
        new = max(2, math.ceil(2 * (ta + tb) ** 2 * stdev_ns ** 2 / delta_ns ** 2))
        if new == n:
            break
        n = new
    return n


def aa_false_positive_rate(records: Sequence[dict], level: float = 0.95) -> dict:
    """A/A check: compare every pair of records of one configuration.

    records: result records (dicts with ``samples``) of the SAME configuration.
    Each unordered pair is compared with Welch's t in ns/packet; the share of
    pairs called significant is the false-positive rate (should stay <= 5 %).
    Also returns the pooled per-sample stdev in ns/packet and the repetitions a
    1 ns/packet difference would need at that noise.
    """
    if len(records) < 2:
        raise StatsError(f"A/A needs at least 2 records, got {len(records)}")
    per = []
    for i, rec in enumerate(records):
        try:
            per.append(ns_samples(rec["samples"]))
        except (KeyError, TypeError):
            raise StatsError(f"record {i} has no samples list") from None
    comparisons = significant = 0
    for i in range(len(per)):
        for j in range(i + 1, len(per)):
            res = welch(per[i], per[j], level)
            if res["ci"] is None:
                continue
            comparisons += 1
            significant += bool(res["significant"])
    # pooled within-record variance (each record's own repetitions)
    num = math.fsum((len(v) - 1) * _mean_stdev(v)[1] ** 2 for v in per if len(v) > 1)
    dof = sum(len(v) - 1 for v in per if len(v) > 1)
    pooled = math.sqrt(num / dof) if dof else None
    return {
        "records": len(per),
        "comparisons": comparisons,
        "significant": significant,
        "rate": (significant / comparisons) if comparisons else None,
        "pooled_stdev_ns": pooled,
        "repetitions_for_1ns": repetitions_needed(pooled) if pooled is not None else None,
    }


def holm(p_values: Sequence[float | None], level: float = 0.95) -> list[dict]:
    """Holm's step-down adjustment of a family of p-values (family-wise error <= 1 - level).

    ``None`` entries (rows without an interval) are not tested and stay None. Returns per input
    {"p_holm": adjusted p (monotone, capped at 1) or None, "significant": adjusted p < alpha}.
    """
    alpha = 1.0 - level
    tested = [(p, i) for i, p in enumerate(p_values) if p is not None]
    for p, i in tested:
        if not (isinstance(p, (int, float)) and 0.0 <= p <= 1.0):
            raise StatsError(f"p-value {i} must be a number in [0, 1], got {p!r}")
    m = len(tested)
    out: list[dict] = [{"p_holm": None, "significant": False} for _dummy in p_values]
    running = 0.0
    for rank, (p, i) in enumerate(sorted(tested)):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = {"p_holm": running, "significant": running < alpha}
    return out


def min_detectable_effect(stdev: float, n_per_side: int, level: float = 0.95, power: float = 0.8) -> float | None:
    """Smallest true difference a two-sided test at ``level`` detects with ``power``.

    Two samples of n_per_side units each with per-unit stdev ``stdev``:
    MDE = (t_{1-a/2, df} + t_{power, df}) * stdev * sqrt(2 / n), df = 2n - 2.
    None when n < 2 or stdev is not a finite number >= 0.
    """
    if stdev is None or not math.isfinite(stdev) or stdev < 0 or n_per_side < 2:
        return None
    df = 2 * n_per_side - 2
    return (t_quantile(0.5 + level / 2.0, df) + t_quantile(power, df)) * stdev * math.sqrt(2.0 / n_per_side)


def binomial_interval(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper-Pearson) interval for a rate of k events in n independent trials.

    How sure an A/A false-positive rate is: 1 of 19 is 5.3%, but anything from about 0.1% to 26% gives
    that count as easily. Raises StatsError naming a bad k or n.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise StatsError(f"trials must be an integer >= 1, got {n!r}")
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= n:
        raise StatsError(f"events must be an integer in [0, {n}], got {k!r}")
    if not 0.0 < level < 1.0:
        raise StatsError(f"level must be in (0, 1), got {level!r}")
    tail = (1.0 - level) / 2.0
    _need_scipy("binomial_interval")
    # the bounds are quantiles of beta distributions
    lower = 0.0 if k == 0 else float(_special.betaincinv(k, n - k + 1, tail))
    upper = 1.0 if k == n else float(_special.betaincinv(k + 1, n - k, 1.0 - tail))
    return lower, upper
