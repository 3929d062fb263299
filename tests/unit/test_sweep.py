# SPDX-License-Identifier: GPL-3.0-or-later
"""Sweep planner: matrix expansion, interleaved A/B order, time budget, per-point record merging."""

from __future__ import annotations

import collections

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_schema import build_record
from ansible_collections.xdplab.testbed.plugins.module_utils.results._sweep import (
    SweepError,
    check_budget,
    expand,
    merge_record,
    plan,
)
from hypothesis import given
from hypothesis import strategies as st


def test_expand_is_the_cartesian_product_in_key_order():
    assert expand({"burst": [0, 32], "pkt_size": [200, 1400]}) == [
        {"burst": 0, "pkt_size": 200}, {"burst": 0, "pkt_size": 1400},
        {"burst": 32, "pkt_size": 200}, {"burst": 32, "pkt_size": 1400}]
    assert expand({"pkt_size": 64}) == [{"pkt_size": 64}]
    assert expand(None) == [{}]


@pytest.mark.parametrize(("matrix", "msg"), [
    ({"burst": []}, "matrix parameter 'burst' has no values"),
    ({"burst": [1, 1]}, "matrix parameter 'burst' repeats a value"),
    ({"burst": [{"a": 1}]}, "value {'a': 1} must be a scalar"),
    ([1, 2], "matrix must be a dict"),
])
def test_bad_matrix_named(matrix, msg):
    with pytest.raises(SweepError, match=msg.replace("(", r"\(").replace("{", r"\{")):
        expand(matrix)


def test_variants_alternate_per_repetition():
    steps = plan({"pkt_size": [200, 1400]}, ["A", "B"], repetitions=3)
    order = [(s["rep"], s["params"]["pkt_size"], s["variant"]) for s in steps]
    assert order == [
        (0, 200, "A"), (0, 200, "B"), (0, 1400, "A"), (0, 1400, "B"),
        (1, 200, "B"), (1, 200, "A"), (1, 1400, "B"), (1, 1400, "A"),
        (2, 200, "A"), (2, 200, "B"), (2, 1400, "A"), (2, 1400, "B"),
    ]
    assert [s["index"] for s in steps] == list(range(12))


def test_variant_params_are_added_and_keys_identify_points():
    steps = plan({"pkt_size": [64]}, [{"name": "off", "params": {"tx_metadata": "off"}},
                                      {"name": "req", "params": {"tx_metadata": "request"}}], repetitions=2)
    assert steps[0]["params"] == {"pkt_size": 64, "tx_metadata": "off"} and steps[0]["sweep"] == {"pkt_size": 64}
    keys = collections.Counter(s["key"] for s in steps)
    assert len(keys) == 2 and set(keys.values()) == {2}


@pytest.mark.parametrize(("variants", "reps", "msg"), [
    (["A", "A"], 1, "variant names repeat"),
    ([{"name": "A", "extra": 1}], 1, "unknown key"),
    ([{"params": {}}], 1, "needs a name"),
    (["A"], 0, "repetitions must be an integer >= 1, got 0"),
    ([{"name": "A", "params": {"pkt_size": 1}}], 1, "set both by the matrix and by a variant"),
])
def test_bad_plan_named(variants, reps, msg):
    with pytest.raises(SweepError, match=msg):
        plan({"pkt_size": [64]}, variants, reps)


@given(points=st.integers(1, 4), nvar=st.integers(1, 3), reps=st.integers(1, 6))
def test_balance_property(points, nvar, reps):
    """Every (point, variant) runs `reps` times, and each variant runs first equally often (+-1)."""
    names = [f"v{i}" for i in range(nvar)]
    steps = plan({"x": list(range(points))}, names, reps)
    assert len(steps) == points * nvar * reps
    count = collections.Counter((s["point"], s["variant"]) for s in steps)
    assert set(count.values()) == {reps}
    firsts = collections.Counter(s["variant"] for s in steps if s["index"] % nvar == 0)
    if nvar > 1:
        assert max(firsts.values()) - min(firsts.get(n, 0) for n in names) <= points


def test_budget_says_how_long_before_running():
    steps = plan({"burst": [0, 8, 32]}, ["A", "B"], 3)
    ok = check_budget(steps, 2, 4, 200)
    assert ok["estimate_s"] == 108.0 and "needs ~108 s (18 steps x (2 s run + 4 s overhead)), budget 200 s" in ok["msg"]
    with pytest.raises(SweepError, match=r"needs ~108 s .*budget 100 s: over budget"):
        check_budget(steps, 2, 4, 100)
    assert check_budget(steps, 2, 4, None)["estimate_s"] == 108.0


def rec(samples, variant="A", params=None, gen=100, bound="generator-bound"):
    return build_record(run_id="20261129T000000Z-abcdef", scenario="s", variant=variant, tool="xskgen",
                        params=params or {"pkt_size": 64}, samples=samples, counters={"gen_packets": gen},
                        started="2026-11-29T00:00:00Z", duration_s=1.0,
                        extra={"reps": [{"gen_pps": s} for s in samples], "bound": bound})


def test_merge_grows_samples_and_recomputes_summary():
    merged = merge_record(None, rec([1000.0]))
    merged = merge_record(merged, rec([2000.0], bound="dut-bound"))
    merged = merge_record(merged, rec([3000.0]))
    assert merged["samples"] == [1000.0, 2000.0, 3000.0]
    assert merged["summary"]["n"] == 3 and merged["summary"]["mean"] == pytest.approx(2000.0)
    assert merged["counters"]["gen_packets"] == 300 and len(merged["reps"]) == 3
    assert merged["bound"] == "dut-bound" and merged["duration_s"] == 3.0


def test_merge_refuses_other_points():
    with pytest.raises(SweepError, match="differ in variant"):
        merge_record(rec([1.0]), rec([1.0], variant="B"))
    with pytest.raises(SweepError, match="differ in params"):
        merge_record(rec([1.0]), rec([1.0], params={"pkt_size": 1400}))
    with pytest.raises(SweepError, match="not a result record v1"):
        merge_record(None, {"samples": [1]})
