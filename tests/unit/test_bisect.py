# SPDX-License-Identifier: GPL-3.0-or-later
"""Performance bisection (results._bisect): the step's decision against scipy's Welch interval, the
error spent over steps and looks, the planner (git bisect's skip, reuse of a measured prefix), and
simulated bisections: a culprit located, a null series ending with no culprit, a patch that does not
build located around, and the error rate over whole bisections against its bound (scipy's exact
binomial interval on the simulated rate)."""

from __future__ import annotations

import numpy as np
import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.results import _bisect
from ansible_collections.xdplab.testbed.plugins.module_utils.results._statistics import min_detectable_effect
from scipy import stats

BASE_NS = 3000.0
SD = 100.0


def simulator(effects, rng, broken=(), sd=SD):
    """measure(prefix, boots) of a series whose patch i adds effects[i-1] ns/packet; a prefix holding
    a patch of ``broken`` (and not the patch after it, which fixes the build) does not build.
    Counts the boots each prefix was measured with."""
    cache: dict[int, tuple[list, list]] = {}
    calls: list[tuple[int, int]] = []

    def measure(k, boots):
        calls.append((k, boots))
        if any(b <= k < b + 1 for b in broken):
            return None
        base, pre = cache.setdefault(k, ([], []))
        while len(base) < boots:
            base.append(rng.normal(BASE_NS, sd))
            pre.append(rng.normal(BASE_NS + sum(effects[:k]), sd))
        return list(base), list(pre)

    measure.calls = calls
    return measure


# --------------------------------------------------------------------------- the error spent


def test_planned_steps_and_the_levels_sum_to_at_most_alpha():
    assert [_bisect.planned_steps(n) for n in (1, 2, 3, 4, 6, 8, 9, 100)] == [1, 2, 3, 3, 4, 4, 5, 8]
    for n in (1, 6, 100):
        levels = [_bisect.step_alpha(s, n, 0.05) for s in range(1, 200)]
        assert sum(levels) <= 0.05
        planned = _bisect.planned_steps(n)
        assert levels[0] == pytest.approx(0.05 / (planned + 1))
        assert levels[planned] == pytest.approx(levels[0] / 2)
    with pytest.raises(_bisect.BisectError, match="alpha must be a probability"):
        _bisect.step_alpha(1, 6, 1.5)
    with pytest.raises(_bisect.BisectError, match="a series has at least one patch, got 0"):
        _bisect.planned_steps(0)


@pytest.mark.parametrize("looks", [[], [1, 3], [3, 3], [5, 3], [3.0, 5], "35"])
def test_bad_looks_are_refused_naming_them(looks):
    with pytest.raises(_bisect.BisectError, match="looks must be boots per kernel"):
        _bisect.check_looks(looks)


# --------------------------------------------------------------------------- one step


@pytest.mark.parametrize("seed", range(5))
def test_the_interval_of_a_look_is_scipy_s_welch_interval_at_the_adjusted_level(seed):
    rng = np.random.default_rng(seed)
    base, pre = rng.normal(3000, 100, 5), rng.normal(3100, 150, 5)
    d = _bisect.decide(list(base), list(pre), threshold=50.0, alpha_step=0.01, looks=(3, 5, 8))
    assert d["level"] == pytest.approx(1 - 0.01 / 3)
    ci = stats.ttest_ind(pre, base, equal_var=False).confidence_interval(d["level"])
    assert d["ci"] == pytest.approx([ci.low, ci.high], rel=1e-6)
    assert d["delta"] == pytest.approx(pre.mean() - base.mean())


def test_moved_not_moved_and_the_next_look():
    base = [3000.0, 3010.0, 2990.0]
    moved = _bisect.decide(base, [3500.0, 3510.0, 3490.0], 100.0, 0.01)
    assert (moved["decision"], moved["direction"]) == ("moved", "slower")
    faster = _bisect.decide(base, [2500.0, 2510.0, 2490.0], 100.0, 0.01)
    assert (faster["decision"], faster["direction"]) == ("moved", "faster")
    # interval [-x, +x] well inside the threshold: did not move by it
    same = _bisect.decide(base, [3001.0, 3009.0, 2991.0], 1000.0, 0.01)
    assert same["decision"] == "not_moved" and -1000 < same["ci"][0] and same["ci"][1] < 1000
    # the same data with a threshold the interval does not fit in: the next look
    more = _bisect.decide(base, [3001.0, 3009.0, 2991.0], 10.0, 0.01)
    assert (more["decision"], more["next_boots"]) == ("continue", 5)
    # between looks: no interval, just the next look
    between = _bisect.decide(base + [3000.0], [3001.0, 3009.0, 2991.0, 3000.0], 10.0, 0.01)
    assert (between["decision"], between["ci"], between["next_boots"]) == ("continue", None, 5)


def test_after_the_last_look_a_step_is_undecided_never_guessed():
    rng = np.random.default_rng(3)
    base, pre = list(rng.normal(3000, 100, 8)), list(rng.normal(3030, 100, 8))
    d = _bisect.decide(base, pre, threshold=20.0, alpha_step=0.01, looks=(3, 5, 8))
    assert d["decision"] == "undecided" and d["next_boots"] is None
    assert d["ci"][0] < 0 < d["ci"][1]  # not moved for sure, and not within 20 ns either


def test_a_step_refuses_unequal_boots_and_a_bad_threshold():
    with pytest.raises(_bisect.BisectError, match="as many boots of the base as of the prefix, got 3 and 2"):
        _bisect.decide([1.0, 2.0, 3.0], [1.0, 2.0], 10.0, 0.01)
    with pytest.raises(_bisect.BisectError, match="threshold must be a number of ns/packet > 0, got -1"):
        _bisect.decide([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], -1, 0.01)
    with pytest.raises(_bisect.BisectError, match="9 boots per kernel is past the last look"):
        _bisect.decide([1.0] * 9, [1.0] * 9, 10.0, 0.01)


def test_the_default_threshold_is_the_loop_s_minimum_detectable_effect():
    base = [2900.0, 3000.0, 3100.0]
    assert _bisect.default_threshold(base, 3) == pytest.approx(min_detectable_effect(100.0, 3))
    with pytest.raises(_bisect.BisectError, match="no spread: give the threshold"):
        _bisect.default_threshold([3000.0, 3000.0], 3)


# --------------------------------------------------------------------------- the planner


def test_the_planner_tries_the_whole_series_first_then_halves():
    assert _bisect.plan(6, {}) == {"next": 6}
    assert _bisect.plan(6, {6: "moved"}) == {"next": 3}
    assert _bisect.plan(6, {6: "moved", 3: "not_moved"}) == {"next": 4}
    assert _bisect.plan(6, {6: "moved", 3: "moved"}) == {"next": 1}
    done = _bisect.plan(6, {6: "moved", 3: "not_moved", 4: "not_moved", 5: "moved"})
    assert done["next"] is None
    assert done["result"] == {"verdict": "culprit", "good": 4, "bad": 5, "first": 5, "last": 5,
                              "skipped": [], "undecided": []}


def test_the_planner_ends_a_series_that_did_not_move():
    done = _bisect.plan(6, {6: "not_moved"})
    assert done["result"]["verdict"] == "no_culprit" and done["result"]["good"] == 6
    assert _bisect.plan(6, {6: "undecided"})["result"]["verdict"] == "undecided"


def test_skipped_prefixes_are_stepped_around_like_git_bisect_skip():
    # the series' end does not build: its last prefix that does stands for it
    assert _bisect.plan(6, {6: "skip"}) == {"next": 5}
    done = _bisect.plan(6, {6: "skip", 5: "not_moved"})["result"]
    assert (done["verdict"], done["good"], done["skipped"]) == ("no_culprit", 5, [6])
    # the middle does not build: the nearest prefix that might is tried instead
    assert _bisect.plan(6, {6: "moved", 3: "skip"}) == {"next": 2}
    assert _bisect.plan(6, {6: "moved", 3: "skip", 2: "not_moved"}) == {"next": 4}
    located = _bisect.plan(6, {6: "moved", 3: "skip", 2: "not_moved", 4: "moved"})["result"]
    # patch 3 does not build alone and patch 4 moved it: the culprit is 3 or 4, never guessed
    assert (located["verdict"], located["first"], located["last"], located["skipped"]) == ("range", 3, 4, [3])
    assert _bisect.plan(2, {2: "skip", 1: "skip"})["result"]["verdict"] == "unmeasurable"


def test_an_undecided_prefix_is_not_measured_again_and_is_named():
    done = _bisect.plan(4, {4: "moved", 2: "undecided", 1: "not_moved", 3: "moved"})["result"]
    assert (done["verdict"], done["first"], done["last"], done["undecided"]) == ("range", 2, 3, [2])


def test_the_planner_refuses_an_unknown_prefix_or_outcome():
    with pytest.raises(_bisect.BisectError, match="prefix 7 is not one of 1..6"):
        _bisect.plan(6, {7: "moved"})
    with pytest.raises(_bisect.BisectError, match="outcome 'bad' is not one of"):
        _bisect.plan(6, {6: "bad"})


# --------------------------------------------------------------------------- simulated bisections


def test_a_culprit_in_the_middle_is_located_with_its_delta():
    rng = np.random.default_rng(11)
    measure = simulator([0, 0, 0, 400, 0, 0], rng)
    out = _bisect.bisect(6, measure, threshold=300.0)
    assert out["result"]["verdict"] == "culprit" and out["result"]["first"] == 4
    steps = {s["prefix"]: s for s in out["steps"]}
    assert steps[4]["decision"] == "moved" and steps[4]["ci"][0] < 400 < steps[4]["ci"][1]
    assert steps[3]["decision"] == "not_moved"
    # each prefix measured once, in looks of 3, 5, 8 boots
    prefixes = [k for k, _b in measure.calls]
    assert sorted(set(prefixes)) == sorted(steps)
    assert all(b in (3, 5, 8) for _k, b in measure.calls)


def test_a_null_series_ends_with_no_culprit_by_the_threshold():
    rng = np.random.default_rng(12)
    out = _bisect.bisect(6, simulator([0] * 6, rng), threshold=300.0)
    assert out["result"]["verdict"] == "no_culprit" and out["result"]["good"] == 6
    assert len(out["steps"]) == 1 and out["steps"][0]["ci"][1] < 300 and out["steps"][0]["ci"][0] > -300


def test_a_patch_that_does_not_build_is_located_around():
    # patch 2 does not build alone (patch 3 fixes it), patch 4 is the culprit
    rng = np.random.default_rng(13)
    measure = simulator([0, 0, 0, 400, 0, 0], rng, broken=(2,))
    out = _bisect.bisect(6, measure, threshold=300.0)
    assert out["result"]["verdict"] == "culprit" and out["result"]["first"] == 4
    # and with the culprit right after it: the culprit is 2 or 3, never guessed
    rng = np.random.default_rng(14)
    out = _bisect.bisect(6, simulator([0, 0, 400, 0, 0, 0], rng, broken=(2,)), threshold=300.0)
    res = out["result"]
    assert (res["verdict"], res["first"], res["last"], res["skipped"]) == ("range", 2, 3, [2])
    skipped = [s for s in out["steps"] if s["decision"] == "skip"]
    assert [s["prefix"] for s in skipped] == [2] and skipped[0]["step"] is None


def test_measured_prefixes_of_an_earlier_attempt_are_reused():
    rng = np.random.default_rng(15)
    first = _bisect.bisect(6, simulator([0, 0, 0, 400, 0, 0], rng), threshold=300.0)
    done = first["steps"][:2]
    measure = simulator([0, 0, 0, 400, 0, 0], np.random.default_rng(16))
    again = _bisect.bisect(6, measure, threshold=300.0, known=done)
    assert not {s["prefix"] for s in done} & {k for k, _b in measure.calls}
    assert again["steps"][:2] == done and again["steps"][2]["step"] == 3
    assert again["result"]["first"] == 4


def _error_rate(effects, culprit, runs, seed, threshold, alpha=0.05, looks=(3, 5, 8)):
    """Bisections whose answer is wrong: a culprit named that is not it, no culprit when there is
    one of at least the threshold, or a range that does not hold it (undecided is not wrong)."""
    rng = np.random.default_rng(seed)
    wrong = 0
    for _run in range(runs):
        res = _bisect.bisect(len(effects), simulator(effects, rng), threshold, alpha, looks)["result"]
        if res["verdict"] in ("culprit", "range"):
            wrong += culprit is None or not res["first"] <= culprit <= res["last"]
        elif res["verdict"] == "no_culprit":
            wrong += culprit is not None
    return wrong


@pytest.mark.parametrize("effects, culprit, threshold", [
    ([0] * 6, None, 50.0),                 # a null series, a threshold that takes every look
    ([0, 0, 0, 150, 0, 0], 4, 150.0),      # a culprit of exactly the threshold: the worst case
])
def test_the_error_over_whole_bisections_stays_under_alpha(effects, culprit, threshold):
    # the rate of wrong answers is shown below alpha = 0.05 (scipy's exact 99% interval of the
    # simulated rate); the same rule at 95% per look (no adjustment) gets 8% and 16% wrong here
    runs = 400
    wrong = _error_rate(effects, culprit, runs, seed=21, threshold=threshold)
    ci = stats.binomtest(wrong, runs).proportion_ci(0.99)
    assert ci.high < 0.05, f"{wrong}/{runs} bisections wrong: the rule spends more than alpha"


def test_without_the_adjustment_the_error_exceeds_alpha():
    # every look at 95% (no Bonferroni over looks and steps), a threshold too small to be reached so
    # that each step looks 3 times: a null series is called moved far more often than alpha. The rule
    # with the adjustment, on the same data, stays under it: what the test above would catch
    runs = 400
    rng = np.random.default_rng(22)
    naive = adjusted = 0
    for _run in range(runs):
        measure = simulator([0] * 6, rng)
        for alpha_step, count in ((0.05 * 3, "naive"), (_bisect.step_alpha(1, 6), "adjusted")):
            for boots in (3, 5, 8):
                base, pre = measure(6, boots)
                d = _bisect.decide(base, pre, threshold=10.0, alpha_step=alpha_step, looks=(3, 5, 8))
                if d["decision"] != "continue":
                    if count == "naive":
                        naive += d["decision"] == "moved"
                    else:
                        adjusted += d["decision"] == "moved"
                    break
    assert stats.binomtest(naive, runs).proportion_ci(0.99).low > 0.05
    assert stats.binomtest(adjusted, runs).proportion_ci(0.99).high < 0.05


def test_a_step_of_another_series_is_refused_on_resume():
    ids = ["a" * 40, "b" * 40, "c" * 40]
    steps = [{"prefix": 3, "decision": "moved", "patch_ids": ids},
             {"prefix": 2, "decision": "not_moved", "patch_ids": ids[:2]}]
    assert _bisect.next_step(3, steps, patch_ids=ids)["result"]["first"] == 3
    other = ids[:1] + ["d" * 40, ids[2]]
    with pytest.raises(_bisect.BisectError, match=r"prefix 1-3 was measured on patches \['aaaaaaaaaaaa', 'bbbbbbbbbbbb'"
                                                  r", 'cccccccccccc'\], but this series' first 3 are \['aaaaaaaaaaaa', "
                                                  r"'dddddddddddd'"):
        _bisect.next_step(3, steps, patch_ids=other)
    with pytest.raises(_bisect.BisectError, match=r"prefix 1-2 was measured on patches None"):
        _bisect.next_step(3, [{"prefix": 2, "decision": "skip"}], patch_ids=ids)
