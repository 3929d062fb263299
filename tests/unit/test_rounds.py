# SPDX-License-Identifier: GPL-3.0-or-later
"""Interleaved rounds (module_utils/results/_rounds.py, filter bench_schedule)."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.filter.bench_schedule import bench_schedule
from ansible_collections.xdplab.testbed.plugins.module_utils.results._rounds import schedule


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
    (["A"], 2, "random", "round order must be one of abab, rotated, got 'random'"),
    ([], 2, "abab", "items must be a non-empty list, got"),
])
def test_bad_input_named(items, rounds, order, needle):
    with pytest.raises(ValueError, match=needle):
        schedule(items, rounds, order)


def test_filter_wraps_errors():
    assert len(bench_schedule(["x", "y"], "2")) == 4
    with pytest.raises(AnsibleFilterError, match="bench_schedule: rounds must be"):
        bench_schedule(["x"], -1)
