# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Does a cost method recover a known cost? Private to the xdplab.testbed collection.

Two builds of one program differ by a fixed amount of work per packet; BPF_PROG_TEST_RUN's average
duration of each build in repeat mode is the reference for that work. A method of the DUT's cost
(the program stage, or a candidate for the total such as the NAPI kthread's schedstat time) recovers
it when its Δ between the builds, measured at the same offered load, agrees with the reference's Δ:

- the program stage: within a relative tolerance (3%);
- the total: its 95% interval (Welch's t over the repetitions of both builds, pooled over the rounds,
  in the order they ran) contains the reference.

Repetitions are the units: with two or three rounds per build, an interval over round means (df 1 or
2, t of 12.7 or 4.3) would contain almost anything and prove nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible_collections.xdplab.testbed.plugins.module_utils.results._statistics import StatsError, welch

METHODS = {
    "program": ("stages", "program"),  # dut_cost.stages.program
    "total": (None, "ns_per_packet"),  # dut_cost.ns_per_packet, given only where a method passed
    "napi_thread": ("unvalidated", "napi_thread"),  # the kthread's schedstat time per packet
}


def rep_values(records: Sequence[Mapping], method: str) -> list[float]:
    """The method's per-repetition figures of one build's records, in order (short ones left out)."""
    if method not in METHODS:
        raise StatsError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    group, key = METHODS[method]
    out = []
    for rec in records:
        for rep in rec.get("reps") or []:
            if rep.get("dut_short"):
                continue
            cost = rep.get("dut_cost") or {}
            value = (cost.get(group) or {}).get(key) if group else cost.get(key)
            if value is not None:
                out.append(float(value))
    return out


def recovery(baseline: Sequence[float], candidate: Sequence[float], reference_delta: float,
             tolerance: float | None = None) -> dict:
    """Δ = mean(candidate) − mean(baseline) against ``reference_delta`` (ns):
    ``delta``, ``ci95`` (Welch), ``off_percent``, ``contains`` (the interval holds the reference) and,
    with a ``tolerance``, ``within`` (|Δ − reference| <= tolerance × reference)."""
    if not reference_delta > 0:
        raise StatsError(f"the reference delta must be > 0 ns, got {reference_delta!r}")
    if len(baseline) < 2 or len(candidate) < 2:
        raise StatsError(f"need at least 2 repetitions per build, got {len(baseline)} and {len(candidate)}")
    w = welch(list(baseline), list(candidate))
    delta = w["delta"]
    out = {"delta": delta, "ci95": w["ci"], "reference": reference_delta,
           "off_percent": 100.0 * (delta - reference_delta) / reference_delta,
           "contains": w["ci"] is not None and w["ci"][0] <= reference_delta <= w["ci"][1],
           "n": [len(baseline), len(candidate)]}
    if tolerance is not None:
        out["within"] = abs(delta - reference_delta) <= tolerance * reference_delta
    return out
