# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Counter time series -> per-repetition rates. Private to the xdplab.testbed collection.

The DUT sampler reads a monotonically increasing packet counter every ``interval`` seconds while
the generator runs ``n`` repetitions separated by idle gaps. This module cuts that series into
bursts (one per repetition) and derives, per burst, the total packets the DUT counted and its
steady-state rate.

- Each sample's time is the midpoint of the counter read (timestamps taken before and after it), so
  read latency does not enter the rate.
- The interior of a burst leaves out its first and last interval, which only partly overlap the
  traffic, then trims ramps: leading and trailing intervals below RAMP_SHARE of the interior's median
  rate (a generator warming up, a DUT filling its rings). Dips in the middle stay: a stall is a result.
- The rate is the least-squares slope of counter against time over the interior samples.
- A burst with fewer than MIN_INTERIOR interior intervals is ``short``: its rate is packets over a
  span that includes idle time, so callers keep it out of comparisons and say so.
- Bursts are matched to the generator's runs by their start times (align_bursts), not by index.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

# A point is "moving" when its rate exceeds this share of the series' peak rate (and MIN_RATE):
# small enough to keep a slow DUT's bursts whole, large enough to ignore ARP/ND chatter.
MOVING_SHARE = 0.02
MIN_RATE = 200.0
# Loss above this share of what the generator sent makes the point DUT-bound.
LOSS_THRESHOLD = 0.01
# Ramp intervals: below this share of the median interior rate, at either end of the interior.
RAMP_SHARE = 0.95
# Fewer interior intervals than this (after trimming) make a burst "short".
MIN_INTERIOR = 3
# Generator-bound only within this share of the generator-only maximum (the calibration).
NEAR_MAX = 0.95


class SamplingError(ValueError):
    """The series cannot be cut into the expected bursts."""


class TrafficAtStart(SamplingError):
    """The counter was already moving at the first sample: the sampler started after the traffic, or
    other traffic reached the DUT then (a transient one, such as a NIC's link coming back after a reset,
    is gone when the point runs again with a longer lead; a steady one is not)."""


@dataclass
class Burst:
    start: int  # index of the last idle sample before the burst
    end: int  # index of the first idle sample after the burst
    packets: int  # counter(end) - counter(start): every packet of the burst
    seconds: float  # t(end) - t(start)
    rate: float  # steady-state rate: least-squares slope over the interior samples, packets/s
    interior: bool  # False when the burst was too short to have an interior (== not short)
    short: bool = False  # fewer than MIN_INTERIOR interior intervals: keep out of comparisons
    ramp_trimmed: int = 0  # ramp intervals trimmed from the interior (both ends)
    interior_intervals: int = 0  # intervals the rate was fitted over
    t_start: float = 0.0  # time of the first moving interval's start (sampler clock)
    # sample indices of the steady interval the rate was fitted over (start .. end for a short burst):
    # the DUT's cost per packet is measured between the same two readings
    first: int = 0
    last: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


def read_at_midpoint(read, clock) -> tuple[float, int, float]:
    """Read a counter between two timestamps: (midpoint time, value, read latency in seconds)."""
    before = clock()
    value = read()
    after = clock()
    return (before + after) / 2.0, value, after - before


def _rates(times: list[float], counts: list[int]) -> list[float]:
    rates = []
    for i in range(1, len(times)):
        dt = times[i] - times[i - 1]
        if dt <= 0:
            raise SamplingError(f"sample times must increase, got {times[i - 1]!r} then {times[i]!r}")
        dc = counts[i] - counts[i - 1]
        if dc < 0:
            raise SamplingError(f"counter went backwards at sample {i}: {counts[i - 1]} -> {counts[i]}")
        rates.append(dc / dt)
    return rates


def _moving(times: list[float], counts: list[int]) -> tuple[list[float], list[bool]]:
    """A checked series' interval rates, and whether each interval (i, i+1) is moving: above
    MOVING_SHARE of the peak rate and MIN_RATE."""
    if len(times) != len(counts):
        raise SamplingError(f"{len(times)} times but {len(counts)} counter values")
    if len(times) < 3:
        raise SamplingError(f"need at least 3 samples, got {len(times)}")
    rates = _rates(times, counts)
    threshold = max(MIN_RATE, MOVING_SHARE * max(rates))
    return rates, [r > threshold for r in rates]


def find_bursts(times: list[float], counts: list[int], min_gap: float = 0.0,
                expected: int | None = None) -> list[Burst]:
    """Cut a counter series into bursts of traffic separated by idle intervals.

    Idle stretches shorter than ``min_gap`` seconds (a stall inside one repetition, e.g. the CPU
    taken away for a moment) do not split a burst: the generator idles at least ``gap`` seconds
    between repetitions, so callers pass about half of that. With ``expected`` (the number of
    repetitions), surplus bursts are merged across the shortest idle stretches first: a stall is
    shorter than the idle gap the generator leaves between two repetitions.
    """
    rates, moving = _moving(times, counts)  # moving[i] describes interval (i, i+1)
    if moving[0]:
        raise TrafficAtStart(
            "the counter was already moving at the first sample: the sampler started after the "
            "traffic (raise the sampler lead time) or other traffic reaches the DUT"
        )
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(moving):
        if not moving[i]:
            i += 1
            continue
        j = i
        while j < len(moving) and moving[j]:
            j += 1
        if j == len(moving):
            raise SamplingError("the counter was still moving at the last sample: the sampler stopped too early")
        if spans and times[i] - times[spans[-1][1]] < min_gap:
            spans[-1] = (spans[-1][0], j)  # a short stall: same repetition
        else:
            spans.append((i, j))  # samples: idle before = i, idle after = j
        i = j
    while expected and len(spans) > expected:
        k = min(range(len(spans) - 1), key=lambda n: times[spans[n + 1][0]] - times[spans[n][1]])
        spans[k:k + 2] = [(spans[k][0], spans[k + 1][1])]
    bursts: list[Burst] = []
    for start, end in spans:
        packets = counts[end] - counts[start]
        seconds = times[end] - times[start]
        a, b, trimmed = interior_window(rates, start + 1, end - 1)
        if b - a >= MIN_INTERIOR:
            rate, short = slope(times[a:b + 1], counts[a:b + 1]), False
        else:
            rate, short = packets / seconds, True
        bursts.append(Burst(start, end, packets, seconds, rate, not short, short, trimmed,
                            b - a if not short else 0, times[start],
                            a if not short else start, b if not short else end))
    return bursts


def trim_leading_traffic(times: list[float], counts: list[int]) -> tuple[list[float], list[int], int, float]:
    """Cut off traffic that was already arriving at the first sample: the series from the end of that
    first moving stretch on, the packets cut off, and the time the stretch ended (sampler clock).

    Such a stretch is either the tail of something earlier (frames of the previous step still
    reaching the DUT) or the first repetition caught late; only the caller can tell them apart, by the
    generator's start time. A series whose first interval is idle comes back unchanged, with (0, t0).
    """
    moving = _moving(times, counts)[1]
    j = 0
    while j < len(moving) and moving[j]:
        j += 1
    if j == 0:
        return times, counts, 0, times[0]
    if len(times) - j < 3:
        raise SamplingError("the counter was moving from the first sample to nearly the last: "
                            "no idle stretch after the traffic that was already arriving")
    return times[j:], counts[j:], counts[j] - counts[0], times[j]


def interior_window(rates: list[float], a: int, b: int, share: float = RAMP_SHARE) -> tuple[int, int, int]:
    """Sample indices [a, b] of a burst's interior after trimming ramps at both ends.

    ``rates[i]`` is the rate of interval (i, i+1); the interior intervals are a .. b-1. Leading and
    trailing intervals below ``share`` of their median are a ramp; returns (a, b, intervals trimmed).
    """
    if b - a < 1:
        return a, b, 0
    inner = sorted(rates[a:b])
    mid = len(inner) // 2
    median = inner[mid] if len(inner) % 2 else (inner[mid - 1] + inner[mid]) / 2
    floor = share * median
    a0, b0 = a, b
    while b - a > 1 and rates[a] < floor:
        a += 1
    while b - a > 1 and rates[b - 1] < floor:
        b -= 1
    return a, b, (a - a0) + (b0 - b)


def slope(times: list[float], counts: list[int]) -> float:
    """Least-squares slope of counts against times (packets/s); two points give their difference."""
    n = len(times)
    if n < 2:
        raise SamplingError(f"a rate needs at least 2 samples, got {n}")
    mt = math.fsum(times) / n
    mc = math.fsum(counts) / n
    sxx = math.fsum((t - mt) ** 2 for t in times)
    if sxx <= 0:
        raise SamplingError(f"sample times do not spread: {times!r}")
    return math.fsum((t - mt) * (c - mc) for t, c in zip(times, counts, strict=True)) / sxx


def align_bursts(runs: list[tuple[float, float]], burst_starts: list[float], slack: float = 0.5) -> list[int]:
    """Match each generator run to the burst that started inside it, by start times.

    ``runs``: (start, elapsed seconds) of every run on the generator's clock; ``burst_starts``: the
    bursts' starts on the DUT sampler's clock. A burst belongs to the run whose span [start - slack,
    start + elapsed] holds its start, so a tool's start-up time (testpmd waits for its readiness sign)
    does not matter. The clocks may differ by a constant offset (the DUT is another host): 0 and every
    (burst - run start) difference are tried, and the offset that gives the most runs exactly one
    burst wins (ties: the smallest offset). Returns the burst index of every run; a run without its
    burst, or with two, raises SamplingError naming the run.
    """
    if not runs:
        return []
    if not burst_starts:
        raise SamplingError("no bursts to align the runs with")

    def assign(offset: float) -> list[list[int]]:
        return [[j for j, b in enumerate(burst_starts) if start - slack <= b - offset <= start + elapsed]
                for start, elapsed in runs]

    candidates = {0.0} | {b - start for start, _dummy in runs for b in burst_starts}
    offset = min(candidates, key=lambda off: (-sum(1 for m in assign(off) if len(m) == 1), abs(off), off))
    out: list[int] = []
    for i, found in enumerate(assign(offset)):
        start, elapsed = runs[i]
        if len(found) != 1:
            shown = ", ".join(f"{b - offset:.3f}" for b in burst_starts)
            what = "no burst of traffic" if not found else f"{len(found)} bursts of traffic"
            raise SamplingError(f"run {i + 1} ({start:.3f} to {start + elapsed:.3f}) has {what} starting inside it; "
                                f"bursts started at {shown}")
        out.append(found[0])
    return out


# ethtool -S counters of the DUT's ingress that mean "the DUT dropped for lack of resources"
# (not the XDP program's verdict, which is the scenario's job).
_DROP_WORDS = ("missed", "no_buf", "nobuf", "fifo", "rx_dropped", "rx_drops", "queue_full", "overrun")


def dut_drops(ethtool: dict | None) -> int | None:
    """Sum of the DUT's resource-drop counter deltas (``ethtool -S`` per interface); None without data."""
    if not ethtool:
        return None
    total = 0
    for stats in ethtool.values():
        for key, value in (stats or {}).items():
            if isinstance(value, int) and value > 0 and any(w in key.lower() for w in _DROP_WORDS):
                total += value
    return total


def signed_loss(sent: int | None, received: int) -> tuple[float | None, str | None]:
    """(sent - counted) / sent, signed, and a warning when the DUT counted more than was sent.

    More counted than sent means packets that were not ours reached the counter (ARP/ND, another
    generator, a counter at the wrong place): the warning names the surplus instead of hiding it.
    """
    if sent is None or sent <= 0:
        return None, None
    loss = (sent - received) / sent
    if received > sent:
        return loss, (f"the DUT counted {received} packets but the generator sent {sent}: a surplus of "
                      f"{received - sent} packets ({-100 * loss:.2f}%) that were not the generator's")
    return loss, None


def bound_label(sent: int | None, received: int, *, rate: float | None = None,
                generator_max: float | None = None, dut_drops: int | None = None,
                threshold: float = LOSS_THRESHOLD, near: float = NEAR_MAX) -> tuple[str, float | None]:
    """Label a point: who set its rate. Returns (label, signed loss ratio).

    - "dut-bound": the DUT dropped (its own drop counters, ``dut_drops`` > 0) or lost more than
      ``threshold`` of what the generator sent;
    - "generator-bound": only when the point's rate is within ``near`` of the generator-only
      maximum ``generator_max`` (the generator alone into a drop sink, the calibration);
    - "undetermined": anything else, including every point without a calibration: a DUT that
      back-pressures without loss looks like "no loss" too;
    - "unknown": no sent count.
    """
    loss, _dummy = signed_loss(sent, received)
    if loss is None:
        return "unknown", None
    if (dut_drops or 0) > 0 or loss > threshold:
        return "dut-bound", loss
    if generator_max and rate is not None and rate >= near * generator_max:
        return "generator-bound", loss
    return "undetermined", loss
