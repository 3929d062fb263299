# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A/A of each stage of the DUT's cost: how small a difference one configuration measured against
itself can show, and how often it calls noise significant. Private to the xdplab.testbed collection.

The stages are the figures a record carries per repetition: the rate-derived ns/packet (1e9 / pps),
the program stage (``dut_cost.stages.program``, BPF run-time statistics) and the total
(``dut_cost.ns_per_packet``), which is absent where no method recovered a known cost on the host:
then the stage is reported as not separable, with the records' own reason, and never as a number.

The units of a stage are its repetitions, in the order they ran (records by round, repetitions in
order). Consecutive units are cut into disjoint windows of 2 x ``per_side`` units; inside a window
they are labelled A B A B ..., so a slow drift falls on both sides alike, and each window is one A/A
compare (Welch's t on the unit values, 95%). Windows share no unit, so the compares are independent
when the units are, and the exact (Clopper-Pearson) interval of the false-"significant" rate holds.
The minimum detectable effect is that of an A/B with all the units split in two
(``min_detectable_effect``, 80% power, 95% two-sided), in ns/packet and in % of the stage's mean.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from ansible_collections.xdplab.testbed.plugins.module_utils.results._statistics import (
    StatsError,
    binomial_interval,
    min_detectable_effect,
    welch,
)

STAGES = ("rate", "program", "total")
PER_SIDE = 2
# Targets of the precision check: the program stage's MDE in ns/packet, the total's in % of its mean,
# and the false-"significant" share of the compares (at least MIN_COMPARES of them).
PROGRAM_MDE_NS = 1.0
TOTAL_MDE_PERCENT = 2.0
FALSE_POSITIVE_GOAL = 0.05
MIN_COMPARES = 40


def stage_units(records: Sequence[Mapping], stage: str) -> tuple[list[float], str | None]:
    """(unit values in run order, why the stage has none) of one configuration's records.

    ``records`` are in the order they ran. A repetition the sampler found too short (``dut_short``)
    is no unit, as in the record's own summary. The total of a record that carries none gives no
    values and the records' ``not_separable`` reason.
    """
    if stage not in STAGES:
        raise StatsError(f"stage must be one of {', '.join(STAGES)}, got {stage!r}")
    values: list[float] = []
    reasons: set[str] = set()
    for i, rec in enumerate(records):
        reps = rec.get("reps")
        if not isinstance(reps, list):
            raise StatsError(f"record {i} ({rec.get('scenario')!r}) has no reps list")
        for rep in reps:
            if rep.get("dut_short"):
                continue
            if stage == "rate":
                pps = rep.get("dut_pps")
                if isinstance(pps, (int, float)) and pps > 0:
                    values.append(1e9 / pps)
                continue
            cost = rep.get("dut_cost") or {}
            value = (cost.get("stages") or {}).get("program") if stage == "program" else cost.get("ns_per_packet")
            if value is None:
                if cost.get("not_separable") and stage == "total":
                    reasons.add(cost["not_separable"])
                continue
            values.append(float(value))
    if values:
        return values, None
    if reasons:
        return [], merge_reasons(reasons)
    return [], f"no repetition carries the {stage} stage"


def merge_reasons(reasons: set[str] | Sequence[str]) -> str:
    """The repetitions' ``not_separable`` reasons as one: reasons that differ only in their figures
    (the kthread's ns per packet of each repetition) become one reason with each figure's range."""
    groups: dict[str, list[list[float]]] = {}
    for reason in sorted(reasons):
        figures = [float(x) for x in _FIGURE.findall(reason)]
        groups.setdefault(_FIGURE.sub("#", reason), []).append(figures)
    out = []
    for template, figures in groups.items():
        parts = template.split("#")
        text = parts[0]
        for i, part in enumerate(parts[1:]):
            lo, hi = min(f[i] for f in figures), max(f[i] for f in figures)
            text += (f"{lo:g}" if lo == hi else f"{lo:g}-{hi:g}") + part
        out.append(text)
    return "; ".join(out)


_FIGURE = re.compile(r"\d+(?:\.\d+)?")


def aa_windows(values: Sequence[float], per_side: int = PER_SIDE, level: float = 0.95) -> dict:
    """A/A of one stage's unit values (in run order), by disjoint windows; see the module's doc."""
    if isinstance(per_side, bool) or not isinstance(per_side, int) or per_side < 2:
        raise StatsError(f"per_side must be an integer >= 2, got {per_side!r}")
    values = [float(v) for v in values]
    for i, v in enumerate(values):
        if not math.isfinite(v) or v < 0:
            raise StatsError(f"unit {i} is {v!r}, not a finite ns/packet >= 0")
    n = len(values)
    if n < 2 * per_side:
        raise StatsError(f"A/A: {n} units, need at least {2 * per_side} ({per_side} per side)")
    compares = significant = 0
    for start in range(0, n - 2 * per_side + 1, 2 * per_side):
        window = values[start:start + 2 * per_side]
        res = welch(window[0::2], window[1::2], level)
        if res["ci"] is None:  # no spread on either side: untested, never significant
            continue
        compares += 1
        significant += bool(res["significant"])
    mean = math.fsum(values) / n
    stdev = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    mde = min_detectable_effect(stdev, n // 2, level)
    return {
        "units": n,
        "per_side": per_side,
        "mean_ns": mean,
        "stdev_ns": stdev,
        "compares": compares,
        "significant": significant,
        "false_positive_rate": significant / compares if compares else None,
        "false_positive_interval": list(binomial_interval(significant, compares)) if compares else None,
        "mde_units_per_side": n // 2,
        "mde_ns": mde,
        "mde_percent": 100.0 * mde / mean if mde is not None and mean > 0 else None,
    }


def verdict(stage: str, aa: Mapping) -> dict:
    """The stage's targets and whether they were met: ``mde`` (program: <= 1 ns/packet; total:
    <= 2% of its mean; rate: no target), ``false_positive`` (<= 5% of at least 40 compares)."""
    out: dict = {}
    if stage == "program":
        out["mde_target"] = f"<= {PROGRAM_MDE_NS:g} ns/packet"
        out["mde_met"] = aa["mde_ns"] is not None and aa["mde_ns"] <= PROGRAM_MDE_NS
    elif stage == "total":
        out["mde_target"] = f"<= {TOTAL_MDE_PERCENT:g}% of the total"
        out["mde_met"] = aa["mde_percent"] is not None and aa["mde_percent"] <= TOTAL_MDE_PERCENT
    rate = aa["false_positive_rate"]
    out["false_positive_target"] = f"<= {100 * FALSE_POSITIVE_GOAL:g}% of >= {MIN_COMPARES} compares"
    out["false_positive_met"] = (aa["compares"] >= MIN_COMPARES and rate is not None
                                 and rate <= FALSE_POSITIVE_GOAL)
    return out


def aa_stages(records: Sequence[Mapping], per_side: int = PER_SIDE, level: float = 0.95) -> dict:
    """{stage: A/A with its targets, or {"not_separable": why} / {"error": why}} for every stage of
    one configuration's records (in the order they ran)."""
    out: dict = {}
    for stage in STAGES:
        try:
            values, why = stage_units(records, stage)
            if why is not None:
                out[stage] = {"not_separable": why} if stage == "total" else {"error": why}
                continue
            aa = aa_windows(values, per_side, level)
        except StatsError as exc:
            out[stage] = {"error": str(exc)}
            continue
        out[stage] = dict(aa, **verdict(stage, aa))
    return out


def stage_line(stage: str, aa: Mapping) -> str:
    """One line of text for a stage's A/A (what bench_perf.yml prints)."""
    if "not_separable" in aa:
        return f"{stage}: not separable on this host ({aa['not_separable']}): no A/A, no number"
    if "error" in aa:
        return f"{stage}: no A/A ({aa['error']})"
    lo, hi = aa["false_positive_interval"] or (None, None)
    fp = (f"{aa['significant']} of {aa['compares']} compares ({aa['per_side']} vs {aa['per_side']} units) "
          f"called significant = {100 * aa['false_positive_rate']:.1f}%"
          + (f" (exact 95% interval {100 * lo:.1f}-{100 * hi:.1f}%)" if lo is not None else ""))
    mde = (f"MDE {aa['mde_ns']:.2f} ns/packet = {aa['mde_percent']:.2f}% with {aa['mde_units_per_side']} units "
           "per side" if aa["mde_ns"] is not None else "no MDE")
    targets = []
    if "mde_met" in aa:
        targets.append(f"MDE {aa['mde_target']}: {'met' if aa['mde_met'] else 'NOT met'}")
    targets.append(f"false positives {aa['false_positive_target']}: "
                   f"{'met' if aa['false_positive_met'] else 'NOT met'}")
    return (f"{stage}: {aa['mean_ns']:.2f} ns/packet, stdev {aa['stdev_ns']:.2f} over {aa['units']} units; "
            f"{fp}; {mde}; {'; '.join(targets)}")
