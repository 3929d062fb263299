# SPDX-License-Identifier: GPL-3.0-or-later
"""Cutting a DUT counter series into per-repetition bursts (module_utils/traffic/_counter_bursts.py)."""

from __future__ import annotations

import numpy as np
import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._counter_bursts import (
    SamplingError,
    align_bursts,
    bound_label,
    find_bursts,
    read_at_midpoint,
    signed_loss,
    slope,
    trim_leading_traffic,
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


def test_leading_traffic_is_cut_at_its_end_and_the_rest_keeps_its_clock():
    # the tail of an earlier step, idle, then this point's two bursts
    rates = [4e5, 3e5, 0, 0] + ([6e6] * 6 + [0] * 4) * 2
    times, counts = series(rates)
    t2, c2, packets, ended = trim_leading_traffic(times, counts)
    assert packets == int(4e5 * 0.1) + int(3e5 * 0.1)
    assert ended == pytest.approx(0.2) and t2[0] == ended and c2[0] == packets
    bursts = find_bursts(t2, c2, expected=2)
    assert [b.packets for b in bursts] == [6 * int(6e6 * 0.1)] * 2
    assert bursts[0].t_start == pytest.approx(0.4)  # same sampler clock as the whole series


def test_no_leading_traffic_leaves_the_series_alone():
    times, counts = series([0, 6e6, 6e6, 0, 0])
    assert trim_leading_traffic(times, counts) == (times, counts, 0, 0.0)


def test_traffic_from_first_to_nearly_last_sample_cannot_be_cut():
    times, counts = series([6e6, 6e6, 6e6, 0])
    with pytest.raises(SamplingError, match="moving from the first sample to nearly the last"):
        trim_leading_traffic(times, counts)


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
    ("sent", "received", "kw", "label", "loss"),
    [
        # no loss is not enough for "generator-bound": a DUT that back-pressures loses nothing either
        (1000, 1000, {}, "undetermined", 0.0),
        (1000, 1000, {"rate": 5.0e6, "generator_max": 6.0e6}, "undetermined", 0.0),
        # near the generator-only maximum (calibration): the generator set the rate
        (1000, 1000, {"rate": 5.8e6, "generator_max": 6.0e6}, "generator-bound", 0.0),
        (1000, 995, {"rate": 5.8e6, "generator_max": 6.0e6}, "generator-bound", 0.005),
        (1000, 900, {"rate": 5.8e6, "generator_max": 6.0e6}, "dut-bound", 0.1),
        # the DUT's own drop counters: DUT-bound even without loss between the counters
        (1000, 1000, {"rate": 5.8e6, "generator_max": 6.0e6, "dut_drops": 3}, "dut-bound", 0.0),
        (1000, 1200, {}, "undetermined", -0.2),  # surplus: loss is signed, not clipped
        (None, 10, {}, "unknown", None),
    ],
)
def test_bound_label(sent, received, kw, label, loss):
    got_label, got_loss = bound_label(sent, received, **kw)
    assert got_label == label
    assert got_loss == (pytest.approx(loss) if loss is not None else None)


def test_signed_loss_names_the_surplus():
    loss, warning = signed_loss(1000, 1200)
    assert loss == pytest.approx(-0.2)
    assert warning == ("the DUT counted 1200 packets but the generator sent 1000: a surplus of 200 packets "
                       "(20.00%) that were not the generator's")
    assert signed_loss(1000, 990) == (pytest.approx(0.01), None)


def test_short_stall_inside_a_repetition_does_not_split_it():
    # 6 Mpps, a 0.2 s stall (CPU taken away), 6 Mpps; then the 0.6 s gap and the next repetition
    rates = [0, 0] + [6e6] * 5 + [0, 0] + [6e6] * 5 + [0] * 6 + [6e6] * 10 + [0, 0]
    times, counts = series(rates)
    assert len(find_bursts(times, counts)) == 3  # without min_gap: the stall splits the first one
    bursts = find_bursts(times, counts, min_gap=0.3)
    assert len(bursts) == 2
    first = bursts[0]
    assert first.packets == 10 * int(6e6 * 0.1)
    # the stall is inside the first repetition's interior (kept: a stall is a result): the fitted
    # rate is lower than the peak; least squares over interior samples 3..13 (numpy as the oracle)
    a, b = first.start + 1, first.end - 1
    assert (a, b, first.ramp_trimmed) == (3, 13, 0)
    assert first.rate == pytest.approx(float(np.polyfit(times[a:b + 1], counts[a:b + 1], 1)[0]), rel=1e-9)
    assert first.rate < 6e6 * 0.95


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


def test_short_burst_is_flagged():
    times, counts = series([0, 0, 3e6, 6e6, 6e6, 2e6, 0, 0])  # two interior intervals
    (b,) = find_bursts(times, counts)
    assert b.short is True and b.interior is False
    times, counts = series([0, 0, 3e6, 6e6, 6e6, 6e6, 2e6, 0, 0])  # three: enough
    (b,) = find_bursts(times, counts)
    assert b.short is False and b.rate == pytest.approx(6e6, rel=1e-9)


def test_ramp_trimmed_by_threshold_not_by_one_interval():
    # a three-interval ramp at the start and one at the end, inside the edges
    rates = [0, 0, 1e6, 2e6, 4e6, 5.5e6] + [6e6] * 10 + [5e6, 1e6, 0, 0]
    times, counts = series(rates)
    (b,) = find_bursts(times, counts)
    assert b.ramp_trimmed == 4  # 2e6, 4e6, 5.5e6 at the start and 5e6 at the end: < 95% of 6e6
    assert b.rate == pytest.approx(6e6, rel=1e-9)
    assert b.interior_intervals == 10


def test_least_squares_slope_against_numpy():
    rng = np.random.default_rng(7)
    for _dummy in range(50):
        n = int(rng.integers(2, 40))
        t = np.sort(rng.uniform(0, 10, n))
        t[0] -= 1.0  # spread
        c = np.cumsum(rng.integers(0, 10**6, n))
        assert slope(list(t), [int(x) for x in c]) == pytest.approx(float(np.polyfit(t, c, 1)[0]), rel=1e-7)
    with pytest.raises(SamplingError, match="at least 2 samples, got 1"):
        slope([0.0], [1])


def test_midpoint_timestamps_cancel_read_latency():
    # the counter is read 30 ms after the "before" timestamp: midpoint times remove most of that skew
    true = [0.0 + 0.1 * i for i in range(30)]
    counts = [0] * 5 + [int(6e6 * (t - true[5])) for t in true[5:25]] + [int(6e6 * (true[24] - true[5]))] * 5
    latency = [0.03 if i % 2 else 0.0 for i in range(30)]  # every other read slow
    before = [t - lat for t, lat in zip(true, latency, strict=True)]
    mid = [t - lat / 2 for t, lat in zip(true, latency, strict=True)]
    rb = find_bursts(before, counts)[0].rate
    rm = find_bursts(mid, counts)[0].rate
    assert abs(rm - 6e6) < abs(rb - 6e6)


def test_bursts_aligned_to_runs_by_start_time():
    # runs of 2 s every 3 s; the DUT clock is 100 s ahead; the first run left no burst (the DUT saw nothing)
    runs = [(0.0, 2.0), (3.0, 2.0), (6.0, 2.0), (9.0, 2.0)]
    bursts = [103.05, 106.02, 109.1]
    with pytest.raises(SamplingError, match=r"run 1 \(0.000 to 2.000\) has no burst of traffic starting inside it"):
        align_bursts(runs, bursts)
    assert align_bursts(runs[1:], bursts) == [0, 1, 2]
    # bursts listed out of order are still given to the run they started in
    assert align_bursts(runs[1:], [106.02, 103.05, 109.1]) == [1, 0, 2]
    # two bursts inside one run (a stall split it) are named, never shifted onto the next run
    with pytest.raises(SamplingError, match=r"run \d \(.*\) has 2 bursts of traffic"):
        align_bursts(runs[1:], [103.05, 104.4, 106.02, 109.1])


def test_alignment_ignores_start_up_time():
    # testpmd-like: each run spends a varying start-up before its traffic (5 s, 1 s, 9 s)
    runs = [(0.0, 8.0), (8.6, 4.0), (13.2, 12.0)]
    bursts = [5.1, 9.7, 22.3]
    assert align_bursts(runs, bursts) == [0, 1, 2]


def test_read_at_midpoint_uses_both_timestamps():
    clock = iter([10.0, 10.04])
    t, value, latency = read_at_midpoint(lambda: 123, lambda: next(clock))
    assert (t, value) == (10.02, 123) and latency == pytest.approx(0.04)


def test_sampler_times_are_midpoints(monkeypatch):
    from ansible_collections.xdplab.testbed.plugins.modules import bench_sample

    now = [0.0]

    def clock():
        return now[0]

    def read():
        now[0] += read.latency.pop(0)  # reads take 20 or 60 ms
        return read.counts.pop(0)

    read.latency = [0.02, 0.06] * 5

    read.counts = [0, 0, 1000, 2000, 3000, 3000, 3000, 3000, 3000, 3000]

    def sleep(s):
        now[0] += s

    monkeypatch.setattr(bench_sample.time, "monotonic", clock)
    monkeypatch.setattr(bench_sample.time, "sleep", sleep)
    times, counts = bench_sample.sample(read, 0.1, 1, 0.3, 5.0)
    # read 1: 0.00-0.02 (mid 0.01 = time 0); read 2: 0.12-0.18 (mid 0.15); read 3: 0.28-0.30 (mid 0.29)
    # timestamps taken before each read would give 0.12 and 0.28 instead
    assert times[:3] == pytest.approx([0.0, 0.14, 0.28])
    assert counts[:3] == [0, 0, 1000]
