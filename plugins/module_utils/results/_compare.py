# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.
#
# A/B comparison in ns/packet (docs/architecture.md, "Comparison conventions"), matching of
# records by scenario + params, sweep tables, and the noise figures of a set of
# records (A/A false positives, repetitions for a 1 ns/packet difference).
"""A/B comparison, record matching, sweeps and noise of result records."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from ansible_collections.xdplab.testbed.plugins.module_utils.results._aa_stages import aa_stages, stage_line
from ansible_collections.xdplab.testbed.plugins.module_utils.results._environment import fingerprint_diff
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_files import RecordError, params_key
from ansible_collections.xdplab.testbed.plugins.module_utils.results._statistics import (
    StatsError,
    aa_false_positive_rate,
    binomial_interval,
    holm,
    min_detectable_effect,
    ns_samples,
    repetitions_needed,
    summarize,
    welch,
)

METHOD = "welch-t"
ESTIMATOR = "mean of per-unit ns/packet"
METHOD_TEXT = ("Welch t-test on the mean of per-unit ns/packet (1e9/pps of each unit), 95% two-sided "
               "interval; the delta, its interval, the significance call, the direction word and the plot "
               "all use that one estimator")
CAVEAT_ONE_RUN = ("one back-to-back run per side: the units are repetitions inside one run, so the interval "
                  "shows within-run noise only; a difference between runs (boot, placement, drift) is not "
                  "covered. Repeat in interleaved rounds (bench_rounds) for between-run variance")


def replicate_of(record: dict) -> tuple[str, str]:
    """(level, id) of the unit a record is: its ``replicate``, else one run named by its run id."""
    rep = record.get("replicate")
    if isinstance(rep, dict) and rep.get("id") is not None:
        return str(rep.get("level") or "run"), str(rep["id"])
    return "run", str(record.get("run_id"))


def units(records: list[dict], force_units: bool = False) -> dict:
    """The values a comparison is fed, for the records of one side and one scenario + params.

    More than one replication unit (run, boot, round; each record is one) or ``force_units``:
    one value per unit, the mean of its per-repetition ns/packet, so the variance is the
    between-unit variance. One unit: its per-repetition ns/packet, with the one-run caveat.
    """
    if not records:
        raise RecordError("no records to compare")
    per = [ns_samples(r["samples"]) for r in records]
    levels = sorted({replicate_of(r)[0] for r in records})
    if len(records) > 1 or force_units:
        values = [math.fsum(v) / len(v) for v in per]
        return {"values": values, "level": "/".join(levels), "units": len(values), "caveat": None}
    return {"values": per[0], "level": "repetition", "units": 1, "caveat": CAVEAT_ONE_RUN}


def _cost(d: Any, stage: str | None = None) -> float | None:
    cost = d.get("dut_cost") if isinstance(d, dict) else None
    if stage is not None:
        cost = cost.get("stages") if isinstance(cost, dict) else None
    v = cost.get(stage or "ns_per_packet") if isinstance(cost, dict) else None
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def cost_units(records: list[dict], force_units: bool = False, stage: str | None = None) -> list[float] | None:
    """The DUT's cost per packet (CPU accounting, ``dut_cost``) at the same replication unit as the
    rate: one value per record (its ``summary.dut_cost``) when there are several units, else the
    repetitions' ``reps[].dut_cost`` (the record's summary value when the repetitions do not say).
    None when any record has no cost: a cost is never guessed. With ``stage`` (``program``), that
    stage of the cost (``dut_cost.stages.<stage>``) instead of the total."""
    if len(records) > 1 or force_units:
        values = [_cost(r.get("summary"), stage) for r in records]
        return None if any(v is None for v in values) else values
    rec = records[0]
    reps = [_cost(r, stage) for r in rec.get("reps") or []]
    reps = [v for v in reps if v is not None]
    if len(reps) >= 1:
        return reps
    one = _cost(rec.get("summary"), stage)
    return None if one is None else [one]


def bound_of(records: list[dict]) -> str | None:
    """The bottleneck label of a row or side: its records' ``bound`` when they agree, else "mixed"."""
    labels = {r.get("bound") for r in records if r.get("bound")}
    return None if not labels else labels.pop() if len(labels) == 1 else "mixed"


def side_stats(record: dict | list[dict], force_units: bool = False) -> dict:
    """Statistics of one side (or one report row), all from one computation at its replication unit:
    ns_per_packet = mean of per-unit ns/packet, stdev_ns and ci95_ns (Student t over the units), n =
    units. The rate is the same figure in pps: mean = 1e9 / ns_per_packet, ci95 = the ns interval
    mapped (ends swapped; upper end None when the ns interval reaches 0), so a row's pps and
    ns/packet never come from two estimators."""
    recs = record if isinstance(record, list) else [record]
    u = units(recs, force_units)
    ns_sum = summarize(u["values"])
    ns_ci = ns_sum["ci95"]
    out = {"n": ns_sum["n"], "repetitions": sum(len(r["samples"]) for r in recs),
           "mean": 1e9 / ns_sum["mean"], "stdev": _stdev([1e9 / v for v in u["values"]]),
           # an ns interval reaching 0 or below leaves the rate unbounded above: None, never a guess
           "ci95": [1e9 / ns_ci[1], 1e9 / ns_ci[0] if ns_ci[0] > 0 else None] if ns_ci else None,
           "ns_per_packet": ns_sum["mean"], "stdev_ns": ns_sum["stdev"],
           "ci95_ns": ns_ci, "unit_level": u["level"], "units": u["units"],
           "estimator": ESTIMATOR, "record": recs[0].get("_path") if len(recs) == 1 else [r.get("_path") for r in recs],
           "run_id": recs[0].get("run_id"), "variant": recs[0].get("variant"), "_values": u["values"]}
    if u["caveat"]:
        out["caveat"] = u["caveat"]
    if ns_sum["n"] == 1:
        out["note"] = "n=1, no interval"
    out["bound"] = bound_of(recs)
    cost = cost_units(recs, force_units)
    out["_cost_values"] = cost
    if cost:
        cs = summarize(cost)
        out.update(cost_ns=cs["mean"], cost_ci95_ns=cs["ci95"], cost_n=cs["n"])
    else:
        out.update(cost_ns=None, cost_ci95_ns=None, cost_n=0)
    return out


def _stdev(values: list[float]) -> float:
    return summarize(values)["stdev"]


def compare_records(base: dict | list[dict], cand: dict | list[dict]) -> dict:
    """Compare two records (or two lists of records, one per replication unit): candidate minus
    baseline, in the mean of per-unit ns/packet. If either side has more than one unit, both
    sides are compared by unit means (between-unit variance)."""
    nb = len(base) if isinstance(base, list) else 1
    nc = len(cand) if isinstance(cand, list) else 1
    force = nb > 1 or nc > 1
    b, c = side_stats(base, force), side_stats(cand, force)
    w = welch(b.pop("_values"), c.pop("_values"))
    cb, cc = b.pop("_cost_values"), c.pop("_cost_values")
    wc = welch(cb, cc) if cb and cc else None
    delta = w["delta"]  # == c["ns_per_packet"] - b["ns_per_packet"]: one estimator
    first = cand[0] if isinstance(cand, list) else cand
    first_base = base[0] if isinstance(base, list) else base
    out = {
        "scenario": first.get("scenario"),
        "params": first.get("params"),
        "method": METHOD,
        "method_text": METHOD_TEXT,
        "estimator": ESTIMATOR,
        "unit_level": (c["unit_level"] if c["unit_level"] == b["unit_level"]
                       else f"{b['unit_level']} vs {c['unit_level']}"),
        "baseline": b,
        "candidate": c,
        "delta_ns_per_packet": delta,
        "ci95_ns": w["ci"],
        "significant": bool(w["significant"]),
        "p_value": w["p_value"],
        "df": w["df"],
        # pps change implied by the same estimator, so its sign always agrees with the delta
        "percent": (b["ns_per_packet"] / c["ns_per_packet"] - 1.0) * 100.0,
        "percent_ns": delta / b["ns_per_packet"] * 100.0,
        "direction": direction(delta),
        "environment_diff": fingerprint_diff(first_base.get("environment"), first.get("environment")),
        "warnings": [w for r in ((base if isinstance(base, list) else [base])
                                 + (cand if isinstance(cand, list) else [cand])) for w in r.get("warnings") or []],
    }
    if w["note"]:
        out["note"] = w["note"]
    if not force:
        out["caveat"] = CAVEAT_ONE_RUN
    # Rate says how many packets got through; where a side is not DUT-bound it measures the generator or
    # a shared core, so the cost-based delta (CPU accounting) is the headline and the rate's is marked.
    out["rate_not_dut_bound"] = any(side["bound"] not in (None, "dut-bound") for side in (b, c))
    out["cost_delta_ns"] = wc["delta"] if wc else None
    out["cost_ci95_ns"] = wc["ci"] if wc else None
    out["cost_significant"] = bool(wc["significant"]) if wc else None
    out["headline"] = "cost" if wc and out["rate_not_dut_bound"] else "rate"
    out["significant_raw"] = out["significant"]
    out["call"] = call_text(out)
    out["verdict"] = verdict(out)
    return out


def direction(delta: float) -> str:
    return "faster" if delta < 0 else ("slower" if delta > 0 else "same")


def verdict(cmp: dict) -> str:
    d = cmp["delta_ns_per_packet"]
    word = "faster" if d < 0 else "slower" if d > 0 else "no change"
    head = f"{d:+.2f} ns/packet ({word}), {cmp['percent']:+.2f}% pps"
    nb, nc = cmp["baseline"]["n"], cmp["candidate"]["n"]
    if cmp["ci95_ns"] is None:
        rate = f"{head}; n={nb} vs n={nc}: {cmp.get('note') or 'no interval'}"
    else:
        lo, hi = cmp["ci95_ns"]
        rate = (f"{head}; 95% CI [{lo:+.2f}, {hi:+.2f}] ns, {call_text(cmp)} "
                f"(n={nb} vs n={nc} {cmp['unit_level']} units)")
    if cmp.get("cost_delta_ns") is None:
        return rate
    cd, cci = cmp["cost_delta_ns"], cmp.get("cost_ci95_ns")
    cost = f"DUT cost {cd:+.2f} ns/packet" + (f" [{cci[0]:+.2f}, {cci[1]:+.2f}]" if cci else " (no interval)")
    if cmp.get("headline") == "cost":
        return f"{cost}; rate-based, not DUT-bound: {rate}"
    return f"{rate}; {cost}"


def kernel_of(rec: dict) -> str | None:
    """The kernel a record was measured on: its environment's ``kernel_variant`` (a scenario sweep's
    record, whose ``variant`` is the datapath it measured), else its ``variant`` (the in-kernel runner's
    records, whose variant is the kernel)."""
    env = rec.get("environment") or {}
    kernel = env.get("kernel_variant") if isinstance(env, dict) else None
    return str(kernel) if kernel not in (None, "") else rec.get("variant")


def row_params(rec: dict) -> dict:
    """The params that name a record's row: its params, plus ``variant`` when that is a datapath of a
    sweep (xdp_flow, tc_bpf, ...) rather than the kernel, so each datapath is a row of its own."""
    variant = rec.get("variant")
    if variant is None or variant == kernel_of(rec):
        return rec["params"]
    return dict(rec["params"], variant=variant)


def generator_mode(rec: dict) -> str | None:
    """How xdpgen sent (``live`` frames, or the AF_PACKET fallback ``packet``): the record's
    ``params.xdpgen_mode``, else what its repetitions' generator figures say; None for other tools."""
    if rec.get("tool") != "xdpgen":
        return None
    if rec["params"].get("xdpgen_mode") is not None:
        return str(rec["params"]["xdpgen_mode"])
    modes = sorted({str((r or {}).get("gen_figures", {}).get("mode")) for r in rec.get("reps") or []
                    if isinstance(r, dict) and isinstance(r.get("gen_figures"), dict)
                    and (r.get("gen_figures") or {}).get("mode") is not None} - {"live"})
    return "+".join(modes) if modes else "live"


def measurement(rec: dict, selected_by: str = "kernel") -> dict:
    """What must agree for two records to be compared: the params that change the measurement
    (every record param: packet size, duration, sampler, server, ...), the tool, the generator mode
    and the row's role besides the side's variant (a sweep's datapath). ``selected_by`` "variant":
    the side was chosen by the record's own variant, which then is the side and not part of the row."""
    out = dict(rec["params"] if selected_by == "variant" else row_params(rec))
    out["tool"] = rec.get("tool")
    mode = generator_mode(rec)
    if mode is not None:
        out["xdpgen_mode"] = mode
    return out


def _key(rec: dict, selected_by: str) -> tuple[str, str]:
    return rec["scenario"], params_key(measurement(rec, selected_by))


def _select(records: list[dict], variant: str | None, where: str) -> tuple[list[dict], str]:
    """The records of one side and how they were chosen. A named variant selects records whose own
    variant has that name (then the variant is the side), else records measured on the kernel of
    that name (kernel_of; a sweep's datapath then stays part of the row). No name: the side must
    hold one kernel variant; records of another are never pooled into it as more units."""
    if variant is not None:
        own = [r for r in records if r["variant"] == variant]
        if own:
            return own, "variant"
        return [r for r in records if kernel_of(r) == variant], "kernel"
    kernels = sorted({str(kernel_of(r)) for r in records})
    if len(kernels) > 1:
        raise RecordError(f"{where}: holds records of {len(kernels)} variants ({', '.join(kernels)}); they are "
                          "not replication units of one side: name the side's variant (baseline_variant / "
                          "candidate_variant)")
    return list(records), "kernel"


def _by_key(records: list[dict], selected_by: str, where: str) -> dict[tuple[str, str], list[dict]]:
    """Records by scenario + measurement; several records of one key are replication units and must
    name different units (replicate id, else run id)."""
    out: dict[tuple[str, str], list[dict]] = {}
    for rec in records:
        key = _key(rec, selected_by)
        for other in out.get(key, []):
            if replicate_of(other) == replicate_of(rec):
                raise RecordError(
                    f"{where}: ambiguous: {other['_path']} and {rec['_path']} are both "
                    f"scenario {rec['scenario']!r} variant {rec['variant']!r} params {rec['params']} "
                    f"of the same unit {replicate_of(rec)}; select one run directory or a variant")
        out.setdefault(key, []).append(rec)
    return out


_ABSENT = "(absent)"


def differing(mine: dict, theirs: dict) -> list[dict]:
    """The params whose values differ between two measurements: [{"param", "this", "other"}]."""
    keys = sorted(set(mine) | set(theirs))
    return [{"param": k, "this": mine.get(k, _ABSENT), "other": theirs.get(k, _ABSENT)}
            for k in keys if params_key({"v": mine.get(k, _ABSENT)}) != params_key({"v": theirs.get(k, _ABSENT)})]


def _closest(rec: dict, selected_by: str, others: list[tuple[dict, str, bool]]) -> tuple[dict | None, list[dict]]:
    """The other side's record nearest to rec: same scenario first, then fewest differing params,
    then one that is itself unmatched."""
    mine = dict(measurement(rec, selected_by), scenario=rec["scenario"])
    best, best_diff = None, []
    for other, other_by, paired in others:
        diff = differing(mine, dict(measurement(other, other_by), scenario=other["scenario"]))
        rank = (any(d["param"] == "scenario" for d in diff), len(diff), paired)
        if best is None or rank < best[0]:
            best, best_diff = (rank, other), diff
    return (best[1] if best else None), best_diff


def _diff_text(diff: list[dict]) -> str:
    return ", ".join(f"{d['param']} {d['this']} vs {d['other']}" for d in diff) or "nothing"


def match(base_records: list[dict], cand_records: list[dict], *, base_variant: str | None = None,
          cand_variant: str | None = None, base_where: str = "baseline",
          cand_where: str = "candidate") -> tuple[list[tuple[list[dict], list[dict]]], list[dict]]:
    """Pair records that measured the same thing: scenario, the params that change the measurement,
    tool, generator mode and row role (``measurement``). Returns (pairs of record lists, unmatched).

    Each side of a pair is the list of its replication units (one record each). Two records are
    never paired because they are alone: what does not agree is unmatched, each entry naming the
    params that differ from the closest record of the other side (``differs``). No pair at all is
    an error naming them.
    """
    if base_variant is None and cand_variant is None and base_records is cand_records:
        raise RecordError("comparing a directory with itself needs baseline_variant and candidate_variant")
    base_sel, base_by = _select(base_records, base_variant, base_where)
    cand_sel, cand_by = _select(cand_records, cand_variant, cand_where)
    if not base_sel:
        raise RecordError(f"{base_where}: no records of variant {base_variant!r}")
    if not cand_sel:
        raise RecordError(f"{cand_where}: no records of variant {cand_variant!r}")
    b = _by_key(base_sel, base_by, base_where)
    c = _by_key(cand_sel, cand_by, cand_where)
    common = sorted(set(b) & set(c), key=lambda k: (k[0], tuple(
        (name, _sort_value(v)) for name, v in sorted(b[k][0]["params"].items()))))
    pairs = [(b[k], c[k]) for k in common]
    unmatched = []
    for side, recs, other, by, other_by in (("baseline", b, c, base_by, cand_by),
                                            ("candidate", c, b, cand_by, base_by)):
        pool = [(r[0], other_by, k in recs) for k, r in other.items()]
        for k in sorted(recs):
            if k in other:
                continue
            rec = recs[k][0]
            near, diff = _closest(rec, by, pool)
            unmatched.append({"side": side, "scenario": k[0], "params": rec["params"], "record": rec["_path"],
                              "variant": rec.get("variant"), "closest": near.get("_path") if near else None,
                              "differs": diff})
    if not pairs:
        raise RecordError(
            f"no records measured the same thing between {base_where} and {cand_where}: "
            + "; ".join(f"{u['side']} {u['scenario']} {_params_text(u['params'])} differs in "
                        f"{_diff_text(u['differs'])}" for u in unmatched if u["side"] == "baseline"))
    return pairs, unmatched


def _params_text(p: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(p.items())) or "-"


def unmatched_text(u: dict) -> str:
    """One unmatched record, one line: which side, what it measured, what differs from the closest."""
    return (f"{u['side']} {u['scenario']} {_params_text(u['params'])} (differs from the closest "
            f"{'candidate' if u['side'] == 'baseline' else 'baseline'} in {_diff_text(u.get('differs') or [])})")


def multiple_comparisons(comparisons: list[dict], level: float = 0.95) -> dict:
    """Holm across the rows of one report: sets ``p_holm`` and ``significant_holm`` on every
    comparison and returns the family figures, with the rows chance alone would call significant.

    With more than one row tested, the call the reader sees is the corrected one: ``significant``
    becomes ``significant_holm``, ``significant_raw`` keeps the per-row call (interval excludes 0),
    and ``call`` / ``verdict`` say both. With one row tested the two are the same test."""
    for c in comparisons:
        c.setdefault("significant_raw", bool(c["significant"]))
    adj = holm([c["p_value"] if c["ci95_ns"] is not None else None for c in comparisons], level)
    tested = sum(1 for c in comparisons if c["ci95_ns"] is not None)
    for c, a in zip(comparisons, adj, strict=True):
        c["p_holm"] = a["p_holm"]
        c["significant_holm"] = bool(a["significant"]) and c["ci95_ns"] is not None
        c["decision"] = "holm" if tested > 1 else "raw"
        c["significant"] = c["significant_holm"] if tested > 1 else c["significant_raw"]
        c["call"] = call_text(c)
        c["verdict"] = verdict(c)
    return {"method": "holm", "level": level, "rows_tested": tested,
            "decision": "holm" if tested > 1 else "raw",
            "significant_raw": sum(1 for c in comparisons if c["significant_raw"]),
            "significant_holm": sum(1 for c in comparisons if c["significant_holm"]),
            "expected_by_chance": (1.0 - level) * tested,
            "chance_of_any": 1.0 - level ** tested if tested else 0.0}


def call_text(c: dict) -> str:
    """The decision as the reader sees it, short: "significant", "n.s.", with "(Holm)" when corrected
    across several rows and the raw per-row call beside it when the two differ; "no interval"."""
    if c["ci95_ns"] is None:
        return c.get("note") or "no interval"
    raw = c.get("significant_raw", c["significant"])
    if c.get("decision") != "holm":
        return "significant" if raw else "n.s."
    if c["significant"]:
        return "significant (Holm)"
    return "n.s. (Holm; raw: significant)" if raw else "n.s. (Holm)"


HOLM_NOTE = ("significance is Holm-adjusted across the rows (family-wise 5%); the raw per-row call "
             "(interval excludes 0) is shown beside it")


# ---------------------------------------------------------------------- sweeps

def _sort_value(v: Any) -> tuple:
    if isinstance(v, bool):
        return (1, str(v))
    if isinstance(v, (int, float)):
        return (0, float(v))
    try:
        return (0, float(v))
    except (TypeError, ValueError):
        return (1, str(v))


def sweep_tables(records: list[dict]) -> list[dict]:
    """Group records by scenario + variant; inside a group the params that vary
    define the sweep. Rows carry pps, ns_per_packet, delta_prev_ns, delta_base_ns, n.
    ns_per_packet is the comparison estimator (mean of per-unit ns/packet); records of
    the same params (rounds, runs) are the units of one row.

    One varying param: rows sorted by its value (numeric when possible), the
    first row is the baseline. Several varying params: rows in params order and
    ``varying`` lists them. Deltas are ns/packet differences (row minus ref).
    """
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for rec in records:
        groups[(rec["scenario"], rec["variant"])].append(rec)
    tables = []
    # In the order the scenarios were run (the first one is the reference of a scenarios table).
    order = sorted(groups.items(), key=lambda kv: (min(r.get("started", "") for r in kv[1]), kv[0]))
    for (scenario, variant), recs in order:
        keys = sorted({k for r in recs for k in r["params"]})
        varying = [k for k in keys if len({params_key({"v": r["params"].get(k)}) for r in recs}) > 1]
        points: dict[str, list[dict]] = {}
        for rec in recs:  # records of one params are replication units (rounds, runs) of one row
            points.setdefault(params_key(rec["params"]), []).append(rec)
        ordered = sorted(points.values(), key=lambda rs: tuple(_sort_value(rs[0]["params"].get(k)) for k in varying))
        rows = []
        for i, unit_recs in enumerate(ordered):
            side = side_stats(unit_recs)
            row = {"params": unit_recs[0]["params"], "pps": side["mean"], "ns_per_packet": side["ns_per_packet"],
                   "n": side["n"], "ci95": side["ci95"], "ci95_ns": side["ci95_ns"],
                   "unit_level": side["unit_level"], "repetitions": side["repetitions"],
                   "bound": side["bound"], "cost_ns": side["cost_ns"], "cost_ci95_ns": side["cost_ci95_ns"],
                   "cost_n": side["cost_n"],
                   "record": unit_recs[0].get("_path") if len(unit_recs) == 1 else [r.get("_path") for r in unit_recs],
                   "delta_prev_ns": None, "delta_base_ns": None}
            if i:
                row["delta_prev_ns"] = row["ns_per_packet"] - rows[-1]["ns_per_packet"]
                row["delta_base_ns"] = row["ns_per_packet"] - rows[0]["ns_per_packet"]
            rows.append(row)
        tables.append({"scenario": scenario, "variant": variant, "varying": varying, "rows": rows})
    return tables


# ----------------------------------------------------------------------- noise

def noise(records: list[dict], delta_ns: float = 1.0) -> dict:
    """Noise figures of a set of records.

    - pooled within-record stdev of ns/packet over records with n >= 2, and the
      repetitions per side a ``delta_ns`` difference would need at that noise;
    - A/A: records repeated with the same scenario, variant and params (several
      runs of one configuration) are compared pairwise; the share called
      significant is the false-positive rate (should be <= 5%). Records of different
      results paths (``_set``, set by the report) are never grouped together.
    """
    sq = 0.0
    dof = 0
    for rec in records:
        ns = ns_samples(rec["samples"])
        if len(ns) > 1:
            m = math.fsum(ns) / len(ns)
            sq += math.fsum((x - m) ** 2 for x in ns)
            dof += len(ns) - 1
    pooled = math.sqrt(sq / dof) if dof else None
    out: dict[str, Any] = {
        "pooled_stdev_ns": pooled,
        "delta_ns": delta_ns,
        "repetitions_needed": repetitions_needed(pooled, delta_ns) if pooled is not None else None,
    }
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for rec in records:  # ``_set``: the results path a record came from; A and B never share a group
        groups[(rec.get("_set", 0), rec["scenario"], rec["variant"], params_key(rec["params"]))].append(rec)
    comparisons = significant = 0
    for recs in groups.values():
        if len(recs) >= 2:
            aa = aa_false_positive_rate(recs)
            comparisons += aa["comparisons"]
            significant += aa["significant"]
    out["aa_comparisons"] = comparisons
    out["aa_significant"] = significant
    out["aa_false_positive_rate"] = significant / comparisons if comparisons else None
    # between-unit noise: groups with several units (rounds, runs, boots), unit means pooled
    usq, udof = 0.0, 0
    for recs in groups.values():
        if len(recs) >= 2:
            means = [math.fsum(v) / len(v) for v in (ns_samples(r["samples"]) for r in recs)]
            m = math.fsum(means) / len(means)
            usq += math.fsum((x - m) ** 2 for x in means)
            udof += len(means) - 1
    unit_sd = math.sqrt(usq / udof) if udof else None
    out["pooled_unit_stdev_ns"] = unit_sd
    out["units_needed"] = repetitions_needed(unit_sd, delta_ns) if unit_sd is not None else None
    out["aa_rounds"] = []
    for (_dummy, scenario, variant, _dummy), recs in groups.items():
        if len(recs) >= 2 * AA_PER_SIDE and all(replicate_of(r)[0] == "round" for r in recs):
            out["aa_rounds"].append(dict(aa_rounds(recs), scenario=scenario, variant=variant,
                                         params=recs[0]["params"]))
    return out


AA_PER_SIDE = 3


def aa_rounds(records: list[dict], per_side: int = AA_PER_SIDE, level: float = 0.95) -> dict:
    """A/A on interleaved rounds of ONE configuration: how often a compare is called significant.

    The rounds, in order, are labelled A B A B ...; every window of 2 x ``per_side`` consecutive
    rounds is one A/A compare (windows overlap, so the compares are not independent: the rate is an
    estimate). Each compare is made twice: by round means (between-round variance, how bench_compare
    compares rounds) and, for contrast, by pooling the repetitions of each side (within-run variance,
    a one-run compare). Also returns the per-round stdev of ns/packet and the minimum detectable effect
    (80% power, 95% two-sided) of an A/B with ``per_side`` rounds per side and with all the rounds
    split in two.
    """
    if per_side < 2:
        raise StatsError(f"per_side must be >= 2, got {per_side!r}")
    recs = sorted(records, key=lambda r: _sort_value(replicate_of(r)[1]))
    ids = [replicate_of(r)[1] for r in recs]
    if len(set(ids)) != len(ids):
        raise StatsError(f"A/A rounds: round ids repeat: {ids}")
    per = [ns_samples(r["samples"]) for r in recs]
    values = [math.fsum(v) / len(v) for v in per]
    n = len(values)
    if n < 2 * per_side:
        raise StatsError(f"A/A rounds: {n} rounds, need at least {2 * per_side} ({per_side} per side)")
    unit = summarize(values)
    compares = sig_units = sig_reps = tested_reps = 0
    for start in range(n - 2 * per_side + 1):
        window = list(range(start, start + 2 * per_side))
        a, b = window[0::2], window[1::2]
        w = welch([values[i] for i in a], [values[i] for i in b], level)
        if w["ci"] is not None:
            compares += 1
            sig_units += bool(w["significant"])
        r = welch([x for i in a for x in per[i]], [x for i in b for x in per[i]], level)
        if r["ci"] is not None:
            tested_reps += 1
            sig_reps += bool(r["significant"])
    sq = math.fsum(math.fsum((x - m) ** 2 for x in v) for v, m in zip(per, values, strict=True))
    dof = sum(len(v) - 1 for v in per)
    return {
        "rounds": n,
        "per_side": per_side,
        "mean_ns": unit["mean"],
        "round_stdev_ns": unit["stdev"],
        "within_stdev_ns": math.sqrt(sq / dof) if dof else None,
        "compares": compares,
        "significant": sig_units,
        "false_positive_rate": sig_units / compares if compares else None,
        # exact 95% interval of that rate as if the compares were independent (they overlap: wider still)
        "false_positive_interval": list(binomial_interval(sig_units, compares)) if compares else None,
        "repetition_level_compares": tested_reps,
        "repetition_level_significant": sig_reps,
        "repetition_level_false_positive_rate": sig_reps / tested_reps if tested_reps else None,
        "mde_ns_per_side": min_detectable_effect(unit["stdev"], per_side, level),
        "mde_ns_all_rounds": min_detectable_effect(unit["stdev"], n // 2, level),
        "mde_rounds_per_side": n // 2,
        # each stage's A/A by its repetitions in run order (disjoint windows: independent compares)
        "stages": (stages := aa_stages(recs)),
        "stage_lines": [stage_line(name, aa) for name, aa in stages.items()],
    }
