# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.
#
# Sweep planning, pure logic:
#   expand(matrix)                        -> list of points (dicts), the cartesian product in key order
#   plan(matrix, variants, repetitions)   -> ordered steps; every step is ONE repetition of one
#                                            (point, variant); variants rotate A B | B A | A B ...
#                                            per repetition, and every repetition visits all points,
#                                            so slow drift falls on every point and both variants
#   estimate(...) / check_budget(...)     -> "this sweep needs ~N s, budget M s" before anything runs
#   merge_record(old, new)                -> a point's record v1 grown by one repetition's record
"""Sweep matrices, interleaved A/B ordering, time budgets and per-point record merging."""

from __future__ import annotations

import itertools
import json
from typing import Any

from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_schema import build_record, record_filename

__all__ = ["SweepError", "expand", "plan", "estimate", "check_budget", "merge_record", "point_key"]

MAX_STEPS = 10000


class SweepError(ValueError):
    """A sweep definition that cannot run (bad matrix, variants, repetitions, or over budget)."""


def expand(matrix: dict[str, Any] | None) -> list[dict]:
    """Cartesian product of `matrix` ({param: [values]}); a scalar counts as a one-value list."""
    if matrix is None:
        return [{}]
    if not isinstance(matrix, dict):
        raise SweepError(f"matrix must be a dict of parameter -> list of values, got {matrix!r}")
    axes = []
    for key, values in matrix.items():
        if not isinstance(key, str) or not key:
            raise SweepError(f"matrix keys must be parameter names, got {key!r}")
        vals = values if isinstance(values, list) else [values]
        if not vals:
            raise SweepError(f"matrix parameter {key!r} has no values")
        for v in vals:
            if isinstance(v, (dict, list)):
                raise SweepError(f"matrix parameter {key!r}: value {v!r} must be a scalar")
        if len({json.dumps(v, sort_keys=True) for v in vals}) != len(vals):
            raise SweepError(f"matrix parameter {key!r} repeats a value: {vals!r}")
        axes.append((key, vals))
    return [dict(zip([k for k, _dummy in axes], combo, strict=True))
            for combo in itertools.product(*[v for _dummy, v in axes])]


def _variants(variants: Any) -> list[dict]:
    if variants is None or variants == []:
        return [{"name": "baseline", "params": {}}]
    if not isinstance(variants, list):
        raise SweepError(f"variants must be a list of names or {{name, params}} dicts, got {variants!r}")
    out = []
    for v in variants:
        if isinstance(v, str):
            v = {"name": v}
        if not isinstance(v, dict) or not isinstance(v.get("name"), str) or not v["name"]:
            raise SweepError(f"variant {v!r} needs a name")
        extra = sorted(set(v) - {"name", "params"})
        if extra:
            raise SweepError(f"variant {v['name']!r}: unknown key(s) {', '.join(extra)}; known: name, params")
        if not isinstance(v.get("params", {}), dict):
            raise SweepError(f"variant {v['name']!r}: params must be a dict, got {v.get('params')!r}")
        out.append({"name": v["name"], "params": dict(v.get("params") or {})})
    names = [v["name"] for v in out]
    if len(set(names)) != len(names):
        raise SweepError(f"variant names repeat: {names!r}")
    return out


def point_key(variant: str, params: dict) -> str:
    """Stable id of a (variant, params) point: the record file name it is written to."""
    return record_filename("sweep", variant, params)[len("sweep__"):]


def plan(matrix: dict | None, variants: Any = None, repetitions: int = 3) -> list[dict]:
    """Ordered steps of a sweep, each one repetition of one (point, variant).

    Repetition r visits every point; for each point the variants run rotated by r (A B, B A, A B, ...;
    with three: A B C, B C A, C A B), so every variant runs in every position equally often.
    """
    if isinstance(repetitions, bool) or not isinstance(repetitions, int) or repetitions < 1:
        raise SweepError(f"repetitions must be an integer >= 1, got {repetitions!r}")
    points = expand(matrix)
    vs = _variants(variants)
    clash = sorted({k for v in vs for k in v["params"]} & set(matrix or {}))
    if clash:
        raise SweepError(f"parameter(s) {', '.join(clash)} set both by the matrix and by a variant")
    total = len(points) * len(vs) * repetitions
    if total > MAX_STEPS:
        raise SweepError(f"sweep of {total} steps is larger than {MAX_STEPS}")
    steps = []
    for rep in range(repetitions):
        for pi, point in enumerate(points):
            shift = rep % len(vs)
            for v in vs[shift:] + vs[:shift]:
                params = dict(point, **v["params"])
                steps.append({"index": len(steps), "rep": rep, "point": pi, "params": params,
                              "sweep": dict(point), "variant": v["name"], "key": point_key(v["name"], params)})
    return steps


def estimate(steps: int, seconds_per_rep: float, overhead_per_step: float) -> float:
    """Seconds a sweep of `steps` steps takes: each step is one generator run plus fixed overhead."""
    return steps * (float(seconds_per_rep) + float(overhead_per_step))


def check_budget(steps: list[dict] | int, seconds_per_rep: float, overhead_per_step: float,
                 budget_s: float | None) -> dict:
    """Refuse a sweep that would run longer than `budget_s` (None or 0: no budget), before it starts."""
    n = steps if isinstance(steps, int) else len(steps)
    need = estimate(n, seconds_per_rep, overhead_per_step)
    out = {"steps": n, "estimate_s": round(need, 1), "budget_s": budget_s,
           "msg": f"this sweep needs ~{need:.0f} s ({n} steps x ({seconds_per_rep:g} s run + "
                  f"{overhead_per_step:g} s overhead))"}
    if budget_s:
        out["msg"] += f", budget {float(budget_s):.0f} s"
        if need > float(budget_s):
            raise SweepError(out["msg"] + ": over budget; reduce the matrix, the variants, the repetitions "
                             "or the duration, or raise the budget")
    return out


def merge_record(old: dict | None, new: dict) -> dict:
    """Add one step's record (n repetitions of a point) to the point's record so far."""
    if not isinstance(new, dict) or new.get("schema") != "xdplab.result/v1":
        raise SweepError(f"not a result record v1: {str(new)[:200]!r}")
    if old is None:
        return new
    for key in ("scenario", "variant", "tool", "params", "run_id"):
        if old.get(key) != new.get(key):
            raise SweepError(f"cannot merge records that differ in {key}: {old.get(key)!r} vs {new.get(key)!r}")
    counters = dict(new.get("counters") or {})
    for key in ("gen_packets", "dut_packets"):
        if key in old.get("counters", {}) or key in counters:
            counters[key] = int(old.get("counters", {}).get(key, 0)) + int(counters.get(key, 0))
    reps = list(old.get("reps") or []) + list(new.get("reps") or [])
    bound = "dut-bound" if "dut-bound" in (old.get("bound"), new.get("bound")) else new.get("bound", "unknown")
    extra = {k: v for k, v in new.items() if k not in (
        "schema", "run_id", "scenario", "variant", "tool", "params", "samples", "unit", "summary", "counters",
        "environment", "started", "duration_s")}
    extra.update(reps=reps, bound=bound)
    return build_record(run_id=old["run_id"], scenario=old["scenario"], variant=old["variant"], tool=old["tool"],
                        params=old["params"], samples=list(old["samples"]) + list(new["samples"]),
                        counters=counters, environment=new.get("environment") or old.get("environment"),
                        started=old["started"], duration_s=float(old["duration_s"]) + float(new["duration_s"]),
                        extra=extra)
