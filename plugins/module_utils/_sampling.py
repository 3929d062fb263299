# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Counter time series -> per-repetition rates. Private to the xdplab.testbed collection.

The DUT sampler reads a monotonically increasing packet counter every ``interval`` seconds while
the generator runs ``n`` repetitions separated by idle gaps. This module cuts that series into
bursts (one per repetition) and derives, per burst, the total packets the DUT counted and its
steady-state rate: the rate over the burst's interior intervals, leaving out the first and the last
interval, which only partly overlap the traffic.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

# A point is "moving" when its rate exceeds this share of the series' peak rate (and MIN_RATE):
# small enough to keep a slow DUT's bursts whole, large enough to ignore ARP/ND chatter.
MOVING_SHARE = 0.02
MIN_RATE = 200.0
# Loss above this share of what the generator sent makes the point DUT-bound.
LOSS_THRESHOLD = 0.01


class SamplingError(ValueError):
    """The series cannot be cut into the expected bursts."""


@dataclass
class Burst:
    start: int  # index of the last idle sample before the burst
    end: int  # index of the first idle sample after the burst
    packets: int  # counter(end) - counter(start): every packet of the burst
    seconds: float  # t(end) - t(start)
    rate: float  # steady-state rate (interior intervals), packets/s
    interior: bool  # False when the burst was too short to have an interior

    def as_dict(self) -> dict:
        return asdict(self)


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


def find_bursts(times: list[float], counts: list[int], min_gap: float = 0.0,
                expected: int | None = None) -> list[Burst]:
    """Cut a counter series into bursts of traffic separated by idle intervals.

    Idle stretches shorter than ``min_gap`` seconds (a stall inside one repetition, e.g. the CPU
    taken away for a moment) do not split a burst: the generator idles at least ``gap`` seconds
    between repetitions, so callers pass about half of that. With ``expected`` (the number of
    repetitions), surplus bursts are merged across the shortest idle stretches first: a stall is
    shorter than the idle gap the generator leaves between two repetitions.
    """
    if len(times) != len(counts):
        raise SamplingError(f"{len(times)} times but {len(counts)} counter values")
    if len(times) < 3:
        raise SamplingError(f"need at least 3 samples, got {len(times)}")
    rates = _rates(times, counts)
    peak = max(rates)
    threshold = max(MIN_RATE, MOVING_SHARE * peak)
    moving = [r > threshold for r in rates]  # moving[i] describes interval (i, i+1)
    if moving[0]:
        raise SamplingError(
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
        if end - start >= 3:
            a, b = start + 1, end - 1
            rate = (counts[b] - counts[a]) / (times[b] - times[a])
            interior = True
        else:
            rate = packets / seconds
            interior = False
        bursts.append(Burst(start, end, packets, seconds, rate, interior))
    return bursts


def bound_label(sent: int | None, received: int, threshold: float = LOSS_THRESHOLD) -> tuple[str, float | None]:
    """Label a point from the generator's sent count and the DUT's received count.

    No loss: the DUT kept up with everything offered, so the generator set the rate
    ("generator-bound"). Loss above the threshold: the DUT could not keep up ("dut-bound").
    Returns (label, loss_ratio); without a sent count the point is "unknown".
    """
    if sent is None or sent <= 0:
        return "unknown", None
    loss = max(0, sent - received) / sent
    return ("dut-bound" if loss > threshold else "generator-bound"), loss
