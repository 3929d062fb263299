# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.
#
# Results across runs, pure logic: the records of many runs grouped into one series per report
# row (scenario + variant + params, as the report keys rows), the runs put in order (start time,
# or kernel release), each run's point and interval from the report's own estimator
# (results._compare.side_stats), and the change points of each series. Rendering is in
# _render_trend.
"""Series of report rows across runs, and their change points.

Change-point method: **binary segmentation** (Vostrikova 1981) of the series of run points, where
each segment is tested with the **maximum two-sample Student t** over its splits (the
likelihood-ratio test for one shift in a normal mean with an unknown common variance, Worsley
1979), whose p-value is bounded by **Bonferroni** over the splits of the whole series: p = min(1,
M * p_t) for the M splits the whole series has, in every segment. A segment whose bounded p is below
``1 - LEVEL`` (5%) is cut at its best split and both halves are tested again. Why this one:

- its false-positive rate is stated and holds without tuning: on a series with no change, a change
  is called with probability <= 5% (Bonferroni is an upper bound; the test suite checks it over 200
  random flat series). Beside true changes too: the segments without a change that get tested are
  disjoint, so together they hold at most the M splits the bound is taken over, and the chance of any
  false change point stays <= 5% (a per-segment bound would give each segment its own 5%);
- it is deterministic, so a report rendered twice is byte-identical (a permutation test is not);
- every number is the t-test a reviewer knows, checked against scipy.stats.ttest_ind in the tests;
- CSIT's ``jumpavg`` groups by description length (bits) and states no level, so its false-positive
  rate over flat series cannot be stated in advance; this method can.

The values tested are the runs' points (the mean of per-unit ns/packet of the row in that run, the
report's one estimator): the noise a change must exceed is the scatter between runs, not the
within-run interval each run prints. A change must hold for MIN_SEGMENT runs or more on each side of
it: one outlying run is not a change, and the newest run alone cannot be one. Levels before and after
a change are the means of the run points of the final segments on either side; the size is after
minus before, in ns/packet (positive = slower / more costly).
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from typing import Any

from ansible_collections.xdplab.testbed.plugins.module_utils.results._compare import cost_units, side_stats
from ansible_collections.xdplab.testbed.plugins.module_utils.results._environment import fingerprint_diff
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_files import load_results, params_key
from ansible_collections.xdplab.testbed.plugins.module_utils.results._report import record_meta
from ansible_collections.xdplab.testbed.plugins.module_utils.results._statistics import no_spread, summarize, t_sf

__all__ = ["TrendError", "ORDERS", "LEVEL", "MIN_SEGMENT", "METHOD_TEXT", "change_points", "order_runs",
           "build_series", "build"]

ORDERS = ("time", "kernel")
LEVEL = 0.95
MIN_SEGMENT = 2
METHOD = "binary segmentation, max Student t, Bonferroni"
METHOD_TEXT = (f"Change points: binary segmentation of the series of run points; each segment is cut at the "
               f"split with the largest two-sample Student t (at least {MIN_SEGMENT} runs each side), when that "
               f"t's p-value times the number of splits of the whole series (Bonferroni) is below "
               f"{1 - LEVEL:.0%}; the chance of any false change point in a series is <= {1 - LEVEL:.0%}. The "
               "values are the runs' points, so a change must exceed the scatter between runs, not a run's own "
               "interval")
CAVEAT = ("each run's interval is its own repetitions' (within-run noise); a change point is tested against the "
          "scatter between the runs' points, which is the noise a run-to-run change must exceed")
# Fingerprint keys that name what was measured (kernel, its build, the program): printed at a change.
_WHAT_CHANGED = ("kernel", "kernel_cmdline", "kernel_config_sha256", "kernel_patches", "governor", "tuned_profile",
                 "smt")
_WHAT_CHANGED_LEAF = {"xdp": ("program", "tag", "mode"), "nic": ("driver", "version", "firmware")}
# The quantities drawn and tested per row: name -> (the point's field, what it is). "cost" is the DUT's
# total cost per packet and "program" its program stage (summary.dut_cost, stages.program): each only
# where the records carry it, never guessed.
QUANTITIES = {"rate": ("ns_per_packet", "rate-derived ns/packet"), "cost": ("cost_ns", "DUT cost"),
              "program": ("program_ns", "program stage")}


class TrendError(ValueError):
    """Records or values a trend cannot be drawn from; the message names what is wrong."""


# ------------------------------------------------------------------ change points

def _check_values(values: Any, what: str) -> list[float]:
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__len__"):
        raise TrendError(f"{what} must be a list of numbers, got {values!r}")
    out = []
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise TrendError(f"{what}[{i}] must be a finite number, got {v!r}")
        out.append(float(v))
    return out


def _mean(values: list[float]) -> float:
    return math.fsum(values) / len(values)


def _ss(values: list[float]) -> float:
    m = _mean(values)
    return math.fsum((v - m) ** 2 for v in values)


def best_split(values: list[float], min_segment: int = MIN_SEGMENT, family: int | None = None) -> dict | None:
    """The split of ``values`` with the largest two-sample Student t (pooled variance) over the splits
    leaving ``min_segment`` values or more on each side: {"index" (first value after it), "t", "df",
    "splits" (of these values), "family" (the splits the bound is taken over: ``family``, else these),
    "p_value" (two-sided, of that t alone), "p_bonferroni" (min(1, family * p_value))}. None when there is no split
    (too few values). "flat": True when no split has any spread, or one split has none on either side
    while their means differ (the noise is unknown, not zero: no t, never a change; "index" names that
    split)."""
    n = len(values)
    splits = list(range(min_segment, n - min_segment + 1))
    if not splits:
        return None
    best = None
    flat_step = None
    for k in splits:
        left, right = values[:k], values[k:]
        df = n - 2
        sp2 = (_ss(left) + _ss(right)) / df
        if no_spread(left) and no_spread(right):
            if _mean(left) != _mean(right):
                flat_step = k
            continue
        t = (_mean(right) - _mean(left)) / math.sqrt(sp2 * (1.0 / len(left) + 1.0 / len(right)))
        if best is None or abs(t) > abs(best["t"]):
            best = {"index": k, "t": t, "df": df}
    if best is None or flat_step is not None:  # a step between two flat sides: no noise to weigh it by
        return {"index": flat_step, "t": None, "df": n - 2, "splits": len(splits), "family": family or len(splits),
                "p_value": None, "p_bonferroni": None, "flat": True}
    p = min(1.0, 2.0 * t_sf(abs(best["t"]), best["df"]))
    m = family or len(splits)
    return dict(best, splits=len(splits), family=m, p_value=p, p_bonferroni=min(1.0, p * m), flat=False)


def change_points(values: Any, level: float = LEVEL, min_segment: int = MIN_SEGMENT,
                  what: str = "values") -> dict:
    """Change points of a series (module docstring: binary segmentation, max-t, Bonferroni).

    Returns {"change_points": [{"index", "before", "after", "size", "t", "p_value", "p_bonferroni",
    "splits" (the whole series', the family of the bound)}] in index order (index = the first value of
    the new level), "segments": [{"start", "end" (exclusive), "level"}], "tested": whether the whole
    series had a split to test, "note": why nothing was tested or called, or None}."""
    vals = _check_values(values, what)
    if isinstance(level, bool) or not isinstance(level, float) or not 0.5 <= level < 1.0:
        raise TrendError(f"level must be a number in [0.5, 1), got {level!r}")
    if isinstance(min_segment, bool) or not isinstance(min_segment, int) or min_segment < 2:
        raise TrendError(f"min_segment must be an integer >= 2 (a variance needs two values), got {min_segment!r}")
    alpha = 1.0 - level
    family = max(1, len(vals) - 2 * min_segment + 1)  # the whole series' splits: the bound of every test
    found: list[dict] = []
    notes: list[str] = []

    def segment(lo: int, hi: int) -> None:
        split = best_split(vals[lo:hi], min_segment, family)
        if split is None:
            return
        if split["flat"]:
            if split["index"] is not None:
                notes.append(f"no spread on either side of position {lo + split['index'] + 1} (every value equal): "
                             "the noise is unknown, not zero; no change called there")
            return
        if split["p_bonferroni"] >= alpha:
            return
        k = lo + split["index"]
        found.append({"index": k, "t": split["t"], "p_value": split["p_value"],
                      "p_bonferroni": split["p_bonferroni"], "splits": split["family"]})
        segment(lo, k)
        segment(k, hi)

    segment(0, len(vals))
    found.sort(key=lambda c: c["index"])
    bounds = [0] + [c["index"] for c in found] + [len(vals)]
    segments = [{"start": a, "end": b, "level": _mean(vals[a:b])} for a, b in zip(bounds, bounds[1:], strict=False)
                if b > a]
    for i, c in enumerate(found):
        c["before"], c["after"] = segments[i]["level"], segments[i + 1]["level"]
        c["size"] = c["after"] - c["before"]
    tested = len(vals) >= 2 * min_segment
    note = None
    if not tested:
        note = (f"{len(vals)} run(s): too few to test for a change (at least {2 * min_segment}, {min_segment} "
                "on each side of it)")
    elif notes:
        note = "; ".join(notes)
    return {"change_points": found, "segments": segments, "tested": tested, "note": note, "level": level,
            "min_segment": min_segment, "method": METHOD}


# ------------------------------------------------------------------------- runs

def _natural(text: str) -> tuple:
    """A kernel release as a sortable key: 6.9 < 6.18, 6.18.2 < 6.18.10, numbers before words."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", text) if p)


def _started(value: Any, run_id: str) -> _dt.datetime:
    try:
        ts = _dt.datetime.strptime(str(value), "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        raise TrendError(f"run {run_id}: start {value!r} is not a time like 2026-11-29T21:50:00Z") from None
    return ts.replace(tzinfo=_dt.UTC)


def runs_of(records: list[dict]) -> list[dict]:
    """The runs the records belong to (by run id): {"run_id", "started" (the earliest record's start),
    "kernel" (the release, when every record of the run names the same one), "records"}."""
    runs: dict[str, dict] = {}
    for rec in records:
        rid = str(rec.get("run_id"))
        run = runs.setdefault(rid, {"run_id": rid, "records": [], "kernels": set()})
        run["records"].append(rec)
        env = rec.get("environment") or {}
        if env.get("kernel"):
            run["kernels"].add(str(env["kernel"]))
    out = []
    for run in runs.values():
        starts = [_started(r.get("started"), run["run_id"]) for r in run["records"]]
        kernels = sorted(run.pop("kernels"))
        if len(kernels) > 1:
            raise TrendError(f"run {run['run_id']}: its records name {len(kernels)} kernels ({', '.join(kernels)}); "
                             "a run is measured on one kernel")
        out.append(dict(run, started=min(starts), kernel=kernels[0] if kernels else None))
    return out


def order_runs(runs: list[dict], order: str = "time") -> tuple[list[dict], list[str]]:
    """The runs in ``order`` ("time": by start; "kernel": by kernel release, version-aware, then by start),
    numbered from 1 ("position"), and notes on ties (runs that started in the same second are put in
    run id order; so are runs of one kernel started together). A run without a kernel release cannot
    be put in kernel order: an error naming it."""
    if order not in ORDERS:
        raise TrendError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
    if order == "kernel":
        missing = sorted(r["run_id"] for r in runs if not r.get("kernel"))
        if missing:
            raise TrendError(f"order by kernel: no kernel release in the fingerprint of run(s) {', '.join(missing)}; "
                             "order by time instead")

        def key(r: dict) -> tuple:
            return _natural(r["kernel"]), r["started"], r["run_id"]
    else:
        def key(r: dict) -> tuple:
            return r["started"], r["run_id"]
    ordered = sorted(runs, key=key)
    notes = []
    same: dict[tuple, list[str]] = {}
    for r in ordered:
        same.setdefault((r["kernel"] if order == "kernel" else None, r["started"]), []).append(r["run_id"])
    for (_kernel, started), ids in same.items():
        if len(ids) > 1:
            notes.append(f"runs {', '.join(ids)} started at the same second ({started:%Y-%m-%dT%H:%M:%SZ}): "
                         "put in run id order")
    return [dict(r, position=i + 1) for i, r in enumerate(ordered)], notes


# ----------------------------------------------------------------------- series

def _name(scenario: str, variant: str, params: dict) -> str:
    return f"{scenario}/{variant} " + (" ".join(f"{k}={v}" for k, v in sorted(params.items())) or "-")


def what_changed(before: dict | None, after: dict | None) -> list[dict]:
    """The fingerprint keys that name what was measured (kernel, its build and patches, the XDP program
    and its tag, the NIC driver) and differ between two runs' records; the rest (clock, program ids)
    moves every run."""
    out = []
    for d in fingerprint_diff(before, after):
        top, _dot, rest = d["key"].partition(".")
        leaf = d["key"].rsplit(".", 1)[-1]
        if top in _WHAT_CHANGED or (top in _WHAT_CHANGED_LEAF and rest and leaf in _WHAT_CHANGED_LEAF[top]):
            out.append(d)
    return out


def build_series(records: list[dict], order: str = "time") -> dict:
    """Records of several runs -> {"runs" (ordered), "series" (one per report row), "notes"}.

    A series is a report row (scenario + variant + params) with one point per run that measured it, in
    run order: the row's figures in that run from results._compare.side_stats, the report's one
    estimator (pps, ns_per_packet, ci95_ns, n; cost_ns, cost_ci95_ns, cost_n; program_ns,
    program_ci95_ns, program_n by the same computation as the cost), and per quantity of QUANTITIES
    the change points of its series over the runs that carry it (None when no run does), with
    ``<quantity>_missing`` naming the runs without it when others have it."""
    if not records:
        raise TrendError("no records: nothing to draw")
    runs, notes = order_runs(runs_of(records), order)
    if len(runs) < 2:
        raise TrendError(f"a trend needs records of at least 2 runs; found 1 ({runs[0]['run_id']}): "
                         "for one run, drop trend to get its report")
    rows: dict[tuple[str, str, str], dict] = {}
    for run in runs:
        by_row: dict[tuple[str, str, str], list[dict]] = {}
        for rec in run["records"]:
            by_row.setdefault((rec["scenario"], rec["variant"], params_key(rec["params"])), []).append(rec)
        for key, recs in by_row.items():
            side = side_stats(recs)  # several records of one row in a run: its rounds, the units of its point
            row = rows.setdefault(key, {"scenario": key[0], "variant": key[1], "params": recs[0]["params"],
                                        "name": _name(key[0], key[1], recs[0]["params"]), "points": []})
            row["points"].append({
                "run_id": run["run_id"], "position": run["position"], "kernel": run["kernel"],
                "started": f"{run['started']:%Y-%m-%dT%H:%M:%SZ}",
                "pps": side["mean"], "ci95": side["ci95"], "ns_per_packet": side["ns_per_packet"],
                "ci95_ns": side["ci95_ns"], "n": side["n"], "unit_level": side["unit_level"],
                "cost_ns": side["cost_ns"], "cost_ci95_ns": side["cost_ci95_ns"], "cost_n": side["cost_n"],
                **_program(recs),
                "bound": side["bound"], "records": [r["_path"] for r in recs],
                "environment": recs[0].get("environment") or {}})
    series = []
    for key in sorted(rows, key=lambda k: (k[0], k[1], k[2])):
        s = rows[key]
        pts = s["points"]
        for quantity, (field, what) in QUANTITIES.items():
            have = [p for p in pts if p[field] is not None]
            s[f"{quantity}_missing"] = [p["run_id"] for p in pts if p[field] is None] if have else []
            s[quantity] = None
            if have:
                s[quantity] = change_points([p[field] for p in have], what=f"{s['name']} {what}")
                _positions(s[quantity], have)
                for c in s[quantity]["change_points"]:
                    c["changed"] = what_changed(c.pop("_env_before"), c.pop("_env_after"))
        series.append(s)
    return {"runs": runs, "series": series, "notes": notes}


def _program(records: list[dict]) -> dict:
    """The program stage of a row in one run, by the computation of its DUT cost (cost_units at the
    same replication unit, Student t over its values)."""
    values = cost_units(records, stage="program")
    if not values:
        return {"program_ns": None, "program_ci95_ns": None, "program_n": 0}
    st = summarize(values)
    return {"program_ns": st["mean"], "program_ci95_ns": st["ci95"], "program_n": st["n"]}


def _positions(result: dict, points: list[dict]) -> None:
    """Name each change point and segment by the runs of ``points`` (the points the series was made of)."""
    for c in result["change_points"]:
        before, after = points[c["index"] - 1], points[c["index"]]
        c.update(run_id=after["run_id"], position=after["position"], previous_run_id=before["run_id"],
                 _env_before=before["environment"], _env_after=after["environment"])
    for seg in result["segments"]:
        seg["first_position"] = points[seg["start"]]["position"]
        seg["last_position"] = points[seg["end"] - 1]["position"]


def level_at(result: dict | None, index: int) -> float | None:
    """The fitted level (its segment's mean) of the index-th value of a series."""
    for seg in (result or {}).get("segments") or []:
        if seg["start"] <= index < seg["end"]:
            return seg["level"]
    return None


# ----------------------------------------------------------------------- report

def build(results: list[str], order: str = "time", allow_incomplete: bool = False) -> dict:
    """Report data of a trend: ``results`` is a directory of run directories, or several run directories
    (or record files). Rows (one per series and run) carry the contract's row fields, with Δ vs the
    previous run and vs the first run of the series."""
    if not results:
        raise TrendError("results: no path given")
    records = [r for p in results for r in load_results(p, allow_incomplete=allow_incomplete)]
    seen: set[str] = set()
    for r in records:  # the same file named twice (a run directory and its parent) would count twice
        if r["_path"] in seen:
            raise TrendError(f"record {r['_path']} is read twice: name a directory of runs, or the runs, not both")
        seen.add(r["_path"])
    data = build_series(records, order)
    rows = []
    changes = []
    for s in data["series"]:
        first = s["points"][0]
        for i, p in enumerate(s["points"]):
            row = {k: v for k, v in p.items() if k not in ("records", "environment")}
            row.update(scenario=s["scenario"], variant=s["variant"], params=s["params"],
                       delta_prev_ns=p["ns_per_packet"] - s["points"][i - 1]["ns_per_packet"] if i else None,
                       delta_base_ns=p["ns_per_packet"] - first["ns_per_packet"] if i else None)
            for quantity, (field, _what) in QUANTITIES.items():
                have = [q for q in s["points"] if q[field] is not None]
                row[f"{quantity}_level_ns"] = level_at(s[quantity], have.index(p)) if p in have else None
                row[f"{quantity}_change_ns"] = next((c["size"] for c in (s[quantity] or {}).get("change_points", [])
                                                     if c["position"] == p["position"]), None)
            rows.append(row)
        for quantity in QUANTITIES:
            for c in (s[quantity] or {}).get("change_points", []):
                changes.append(dict(c, scenario=s["scenario"], variant=s["variant"],
                                    params=s["params"], name=s["name"], quantity=quantity))
    all_env = [r.get("environment") for r in sorted(records, key=lambda r: str(r.get("started")))
               if r.get("environment")]
    return {
        "trend": True, "order": order, "results": list(results), "records": len(records),
        "runs": [{k: (f"{v:%Y-%m-%dT%H:%M:%SZ}" if k == "started" else v) for k, v in r.items() if k != "records"}
                 for r in data["runs"]],
        "series": data["series"], "rows": rows, "change_points": changes, "order_notes": data["notes"],
        "incomplete": sorted({r["_path"] for r in records if r.get("incomplete")}),
        "environment": all_env[-1] if all_env else {},
        "caveat": CAVEAT, "method": METHOD, "method_text": METHOD_TEXT, "level": LEVEL,
        "warnings": [f"{r['_path']}: {w}" for r in records for w in r.get("warnings") or []],
        "record_meta": record_meta(records),
    }
