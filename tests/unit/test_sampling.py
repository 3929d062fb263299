"""Cutting a DUT counter series into per-repetition bursts (module_utils/traffic/_counter_bursts.py)."""

from __future__ import annotations

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._counter_bursts import (
    SamplingError,
    bound_label,
    find_bursts,
)


def series(pattern: list[float], dt: float = 0.1, start: int = 0):
    """Counter series from a list of per-interval rates (packets/s)."""
    times, counts = [0.0], [start]
    for rate in pattern:
        times.append(round(times[-1] + dt, 6))
        counts.append(counts[-1] + int(rate * dt))
    return times, counts


def test_three_bursts_steady_rate_excludes_partial_edges():
    # idle, then per burst: a partial first interval, 10 full ones, a partial last one, idle gap
    rates = [0, 0] + ([3e6] + [6e6] * 10 + [1e6] + [0] * 5) * 3
    times, counts = series(rates)
    bursts = find_bursts(times, counts)
    assert len(bursts) == 3
    for b in bursts:
        assert b.interior
        assert b.rate == pytest.approx(6e6, rel=1e-9)  # the partial intervals are left out
        assert b.packets == int(3e6 * 0.1) + 10 * int(6e6 * 0.1) + int(1e6 * 0.1)


def test_short_burst_has_no_interior_and_uses_whole_span():
    times, counts = series([0, 0, 5e5, 5e5, 0, 0])
    (b,) = find_bursts(times, counts)
    assert not b.interior
    assert b.packets == 100000
    assert b.rate == pytest.approx(100000 / 0.2)  # two moving intervals, both partial


def test_background_chatter_is_not_a_burst():
    times, counts = series([0, 50, 0, 6e6, 6e6, 6e6, 6e6, 0, 80, 0])
    assert len(find_bursts(times, counts)) == 1


def test_nothing_received_gives_no_bursts():
    times, counts = series([0, 0, 0, 0])
    assert find_bursts(times, counts) == []


def test_sampler_started_late_is_an_error():
    times, counts = series([6e6, 6e6, 0, 0])
    with pytest.raises(SamplingError, match="already moving at the first sample"):
        find_bursts(times, counts)


def test_sampler_stopped_early_is_an_error():
    times, counts = series([0, 6e6, 6e6])
    with pytest.raises(SamplingError, match="still moving at the last sample"):
        find_bursts(times, counts)


def test_counter_going_backwards_is_named():
    with pytest.raises(SamplingError, match="backwards at sample 2: 500 -> 100"):
        find_bursts([0.0, 0.1, 0.2], [0, 500, 100])


def test_mismatched_lengths_and_too_few_samples():
    with pytest.raises(SamplingError, match="3 times but 2 counter values"):
        find_bursts([0.0, 0.1, 0.2], [0, 1])
    with pytest.raises(SamplingError, match="at least 3 samples"):
        find_bursts([0.0, 0.1], [0, 1])


@pytest.mark.parametrize(
    ("sent", "received", "label", "loss"),
    [
        (1000, 1000, "generator-bound", 0.0),
        (1000, 995, "generator-bound", 0.005),
        (1000, 900, "dut-bound", 0.1),
        (1000, 1200, "generator-bound", 0.0),  # other traffic counted too: no negative loss
        (None, 10, "unknown", None),
    ],
)
def test_bound_label(sent, received, label, loss):
    got_label, got_loss = bound_label(sent, received)
    assert got_label == label
    assert got_loss == (pytest.approx(loss) if loss is not None else None)


def test_short_stall_inside_a_repetition_does_not_split_it():
    # 6 Mpps, a 0.2 s stall (CPU taken away), 6 Mpps; then the 0.6 s gap and the next repetition
    rates = [0, 0] + [6e6] * 5 + [0, 0] + [6e6] * 5 + [0] * 6 + [6e6] * 10 + [0, 0]
    times, counts = series(rates)
    assert len(find_bursts(times, counts)) == 3  # without min_gap: the stall splits the first one
    bursts = find_bursts(times, counts, min_gap=0.3)
    assert len(bursts) == 2
    first = bursts[0]
    assert first.packets == 10 * int(6e6 * 0.1)
    # the stall is inside the first repetition's interior: its rate is lower than the peak
    assert first.rate == pytest.approx(8 * 6e5 / 1.0)


def test_surplus_bursts_merge_across_the_shortest_idle_stretch():
    # two repetitions 0.6 s apart, the first with a 0.4 s stall (longer than min_gap)
    rates = [0, 0] + [6e6] * 4 + [0] * 4 + [6e6] * 4 + [0] * 6 + [6e6] * 8 + [0, 0]
    times, counts = series(rates)
    assert len(find_bursts(times, counts, min_gap=0.3)) == 3
    bursts = find_bursts(times, counts, min_gap=0.3, expected=2)
    assert len(bursts) == 2
    assert bursts[0].packets == 8 * int(6e6 * 0.1)  # the stalled repetition, whole
    assert bursts[1].packets == 8 * int(6e6 * 0.1)
    # fewer bursts than expected are never invented
    assert len(find_bursts(times, counts, min_gap=0.3, expected=5)) == 3
