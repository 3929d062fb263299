# SPDX-License-Identifier: GPL-3.0-or-later
"""Interleaved rounds (module_utils/results/_rounds.py, filter bench_schedule)."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.filter.ab_boot_plan import ab_boot_plan
from ansible_collections.xdplab.testbed.plugins.filter.bench_schedule import bench_schedule
from ansible_collections.xdplab.testbed.plugins.module_utils.results._rounds import boot_plan, schedule


def test_abab_same_order_every_round():
    out = schedule(["A", "B"], 3)
    assert [s["item"] for s in out] == ["A", "B"] * 3
    assert [s["round"] for s in out] == [1, 1, 2, 2, 3, 3]


def test_rotated_starts_one_later_each_round():
    out = schedule(["A", "B", "C"], 4, "rotated")
    assert [s["item"] for s in out] == list("ABCBCACABABC")
    # over a full rotation every item is first once
    assert sorted(s["item"] for s in out[:9] if s["position"] == 0) == ["A", "B", "C"]


@pytest.mark.parametrize(("items", "rounds", "order", "needle"), [
    (["A"], 0, "abab", "rounds must be an integer >= 1, got 0"),
    (["A"], 2, "random", "round order must be one of abab, rotated, abba, got 'random'"),
    ([], 2, "abab", "items must be a non-empty list, got"),
])
def test_bad_input_named(items, rounds, order, needle):
    with pytest.raises(ValueError, match=needle):
        schedule(items, rounds, order)


def test_filter_wraps_errors():
    assert len(bench_schedule(["x", "y"], "2")) == 4
    with pytest.raises(AnsibleFilterError, match="bench_schedule: rounds must be"):
        bench_schedule(["x"], -1)


def test_abba_reverses_every_other_round():
    assert [s["item"] for s in schedule(["A", "B"], 3, "abba")] == list("ABBAAB")
    assert [s["item"] for s in schedule(["A", "B", "C"], 2, "abba")] == list("ABCCBA")


def test_boot_plan_interleaves_and_names_each_boot():
    plan = boot_plan(["base", "patched"])
    assert [b["kernel"] for b in plan] == ["base", "patched", "patched", "base", "base", "patched"]
    assert [b["boot"] for b in plan] == [1, 2, 3, 4, 5, 6]
    assert [b["round"] for b in plan] == [1, 1, 2, 2, 3, 3]
    assert plan[2]["replicate"] == {"level": "boot", "id": "03-patched"}
    # ids are unique and sort in boot order
    ids = [b["replicate"]["id"] for b in plan]
    assert sorted(ids) == ids and len(set(ids)) == len(ids)
    # default: three boots per kernel, each kernel as often first in its round as second
    assert {k: sum(b["kernel"] == k for b in plan) for k in ("base", "patched")} == {"base": 3, "patched": 3}
    four = boot_plan(["base", "patched"], 4)
    firsts = [b["kernel"] for b in four if b["position"] == 0]
    assert firsts.count("base") == firsts.count("patched") == 2


@pytest.mark.parametrize(("kernels", "boots", "needle"), [
    (["a", "b"], 1, "boots per kernel must be an integer >= 2, got 1"),
    (["a", "b"], True, "boots per kernel must be an integer >= 2, got True"),
    (["a"], 3, "kernels must be a list of at least two names"),
    (["a", "a"], 3, "kernels must be distinct"),
])
def test_boot_plan_refuses_bad_input(kernels, boots, needle):
    with pytest.raises(ValueError, match=needle):
        boot_plan(kernels, boots)


def test_boot_plan_filter_wraps_errors():
    assert len(ab_boot_plan(["a", "b"], "4", "abab")) == 8
    with pytest.raises(AnsibleFilterError, match="ab_boot_plan: boots per kernel"):
        ab_boot_plan(["a", "b"], 1)
