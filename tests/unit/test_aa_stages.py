# SPDX-License-Identifier: GPL-3.0-or-later
"""A/A of each stage (results._aa_stages): disjoint windows, the exact interval, the MDE and the
total that is never a number where no method recovered a known cost."""

from __future__ import annotations

import random

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.results._aa_stages import (
    aa_stages,
    aa_windows,
    merge_reasons,
    stage_line,
    stage_units,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.results._statistics import (
    StatsError,
    min_detectable_effect,
    welch,
)
from scipy import stats

REASON = "the DUT port's NAPI kthread ran 612 ns per packet, but ..."


def _records(program: list[float], rounds: int = 4, total: list[float] | None = None) -> list[dict]:
    """Records of one configuration: the units spread over ``rounds`` records in order."""
    per = len(program) // rounds
    out = []
    for r in range(rounds):
        reps = []
        for i in range(r * per, (r + 1) * per):
            cost = {"stages": {"program": program[i]}}
            if total is None:
                cost["not_separable"] = REASON
            else:
                cost["ns_per_packet"] = total[i]
            reps.append({"dut_pps": 1e9 / (800 + program[i]), "dut_cost": cost})
        out.append({"scenario": "perf_aa", "reps": reps})
    return out


def test_null_compares_call_about_five_percent():
    rng = random.Random(5)
    sig = comps = 0
    for _dummy in range(25):
        aa = aa_windows([rng.gauss(60.0, 2.0) for _dummy in range(160)])
        assert aa["compares"] == 40 and aa["units"] == 160 and aa["mde_units_per_side"] == 80
        sig += aa["significant"]
        comps += aa["compares"]
    # Welch's df on 2 vs 2 units is below 2: the test is conservative (about 2% here), never above 5%
    assert 0.005 <= sig / comps <= 0.05


def test_windows_are_disjoint_and_labelled_abab():
    # A (even positions inside each window) 5 ns above B: every window sees it
    values = [65.0 + 0.1 * (i % 3) if i % 2 == 0 else 60.0 + 0.1 * (i % 5) for i in range(16)]
    aa = aa_windows(values, per_side=2)
    assert aa["compares"] == 4 and aa["significant"] == 4
    # one window by hand
    w = welch(values[0:4:2], values[1:4:2])
    assert w["significant"]
    # a leftover shorter than a window is no compare
    assert aa_windows(values[:7], per_side=2)["compares"] == 1
    assert aa_windows(values, per_side=3)["compares"] == 2


def test_exact_interval_is_clopper_pearson():
    rng = random.Random(1)
    values = [rng.gauss(60.0, 2.0) for _dummy in range(200)]
    values[0:4] = [70.0, 50.0, 70.1, 50.2]  # one window certainly significant
    aa = aa_windows(values)
    ci = stats.binomtest(aa["significant"], aa["compares"]).proportion_ci(method="exact")
    assert aa["false_positive_interval"] == pytest.approx([ci.low, ci.high], rel=1e-9)
    assert aa["significant"] >= 1 and aa["compares"] == 50


def test_mde_has_its_power():
    # a true difference of the MDE is found in about 80% of A/B compares with the same units per side
    rng = random.Random(7)
    aa = aa_windows([rng.gauss(60.0, 2.0) for _dummy in range(40)])
    assert aa["mde_ns"] == pytest.approx(min_detectable_effect(aa["stdev_ns"], 20))
    assert aa["mde_percent"] == pytest.approx(100 * aa["mde_ns"] / aa["mean_ns"])
    mde = min_detectable_effect(2.0, 20)
    found = sum(welch([rng.gauss(60.0, 2.0) for _dummy in range(20)],
                      [rng.gauss(60.0 + mde, 2.0) for _dummy in range(20)])["significant"] for _dummy in range(400))
    assert 0.72 <= found / 400 <= 0.88


def test_stages_of_records_program_and_a_total_never_a_number():
    rng = random.Random(2)
    program = [rng.gauss(60.0, 0.5) for _dummy in range(160)]
    out = aa_stages(_records(program))
    assert out["program"]["units"] == 160 and out["program"]["compares"] == 40
    assert out["program"]["mde_target"] == "<= 1 ns/packet"
    assert out["program"]["mde_met"] is True  # 0.5 ns stdev, 80 per side: about 0.22 ns
    assert out["rate"]["units"] == 160 and "mde_met" not in out["rate"]
    # the records carry no total: its reason, and no figure anywhere
    assert out["total"] == {"not_separable": REASON}
    line = stage_line("total", out["total"])
    assert line.startswith("total: not separable on this host (the DUT port's NAPI kthread ran 612 ns")
    assert "no number" in line
    # where a method gives a total, it is measured against 2% of its mean
    total = [rng.gauss(600.0, 30.0) for _dummy in range(160)]
    out = aa_stages(_records(program, total=total))
    assert out["total"]["units"] == 160 and out["total"]["mde_met"] is False  # 5% stdev: MDE ~2.2%
    assert "MDE <= 2% of the total: NOT met" in stage_line("total", out["total"])


def test_targets_need_forty_compares_and_a_small_mde():
    rng = random.Random(3)
    few = aa_stages(_records([rng.gauss(60.0, 0.5) for _dummy in range(40)]))["program"]
    assert few["compares"] == 10 and few["false_positive_met"] is False
    noisy = aa_stages(_records([rng.gauss(60.0, 5.0) for _dummy in range(160)]))["program"]
    assert noisy["mde_met"] is False and "MDE <= 1 ns/packet: NOT met" in stage_line("program", noisy)


def test_short_repetitions_are_no_units_and_order_is_kept():
    recs = _records([float(i) + 1 for i in range(8)], rounds=2)
    recs[0]["reps"][1]["dut_short"] = True
    values, why = stage_units(recs, "program")
    assert why is None and values == [1.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]


def test_bad_input_is_named():
    with pytest.raises(StatsError, match="3 units, need at least 4"):
        aa_windows([1.0, 2.0, 3.0])
    with pytest.raises(StatsError, match="per_side must be an integer >= 2, got 1"):
        aa_windows([1.0] * 8, per_side=1)
    with pytest.raises(StatsError, match="unit 2 is nan"):
        aa_windows([1.0, 2.0, float("nan"), 4.0])
    with pytest.raises(StatsError, match="stage must be one of rate, program, total, got 'rx'"):
        stage_units([], "rx")
    assert aa_stages([{"scenario": "x"}])["program"] == {"error": "record 0 ('x') has no reps list"}
    # statistics off: no program stage, said so, never a made-up figure
    recs = [{"reps": [{"dut_pps": 1e6, "dut_cost": {"stages": {}}}] * 8}]
    assert aa_stages(recs)["program"] == {"error": "no repetition carries the program stage"}


def test_reasons_differing_in_their_figures_become_one_with_ranges():
    reasons = {f"the kthread ran {ns} ns per packet on CPU 1: not recovered" for ns in (174, 188, 181)}
    assert merge_reasons(reasons) == "the kthread ran 174-188 ns per packet on CPU 1: not recovered"
    assert merge_reasons({"a 5 b", "other"}) == "a 5 b; other"
    recs = _records([60.0] * 8, rounds=2)
    for i, rec in enumerate(recs):
        for rep in rec["reps"]:
            rep["dut_cost"]["not_separable"] = f"ran {600 + i} ns per packet"
    assert aa_stages(recs)["total"] == {"not_separable": "ran 600-601 ns per packet"}
