# SPDX-License-Identifier: GPL-3.0-or-later
"""results._known_cost: a method's Δ between the two builds against BPF_PROG_TEST_RUN's reference."""

from __future__ import annotations

import random

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.results._known_cost import recovery, rep_values
from ansible_collections.xdplab.testbed.plugins.module_utils.results._statistics import StatsError
from scipy import stats


def _recs(program, thread, total=None, short=()):
    reps = []
    for i, (p, t) in enumerate(zip(program, thread, strict=True)):
        cost = {"stages": {"program": p}, "unvalidated": {"napi_thread": t}, "not_separable": "why"}
        if total is not None:
            cost["ns_per_packet"] = total[i]
        reps.append({"dut_cost": cost, "dut_short": i in short})
    return [{"reps": reps[:2]}, {"reps": reps[2:]}]


def test_rep_values_by_method_in_order():
    recs = _recs([60.0, 61.0, 62.0, 63.0], [600.0, 610.0, 620.0, 630.0], short=(1,))
    assert rep_values(recs, "program") == [60.0, 62.0, 63.0]
    assert rep_values(recs, "napi_thread") == [600.0, 620.0, 630.0]
    assert rep_values(recs, "total") == []  # no total in the records: nothing to check, no number
    with pytest.raises(StatsError, match="method must be one of program, total, napi_thread, got 'rx'"):
        rep_values(recs, "rx")


def test_recovery_against_scipy_welch():
    rng = random.Random(4)
    base = [rng.gauss(60.0, 2.0) for _dummy in range(6)]
    work = [rng.gauss(420.0, 5.0) for _dummy in range(6)]
    got = recovery(base, work, 360.0, tolerance=0.03)
    ci = stats.ttest_ind(work, base, equal_var=False).confidence_interval(0.95)
    assert got["ci95"] == pytest.approx([ci.low, ci.high], rel=1e-9)
    assert got["delta"] == pytest.approx(sum(work) / 6 - sum(base) / 6)
    assert got["contains"] is True and got["within"] is True and got["n"] == [6, 6]
    assert got["off_percent"] == pytest.approx(100 * (got["delta"] - 360.0) / 360.0)


def test_a_method_that_loses_part_of_the_cost_fails():
    # the kthread's time moves by +200 ns for 360 ns of work (wakeups absorb the rest): not recovered
    rng = random.Random(8)
    got = recovery([rng.gauss(600.0, 20.0) for _dummy in range(6)], [rng.gauss(800.0, 20.0) for _dummy in range(6)],
                   360.0, tolerance=0.03)
    assert got["contains"] is False and got["within"] is False and got["off_percent"] < -30
    # the program stage 4% off: inside a loose interval maybe, but not within 3%
    assert recovery([60.0, 61.0, 59.0], [434.0, 435.0, 433.6], 360.0, tolerance=0.03)["within"] is False


def test_bad_input_is_named():
    with pytest.raises(StatsError, match="reference delta must be > 0 ns, got -3"):
        recovery([1.0, 2.0], [3.0, 4.0], -3)
    with pytest.raises(StatsError, match="at least 2 repetitions per build, got 1 and 2"):
        recovery([1.0], [3.0, 4.0], 2.0)
