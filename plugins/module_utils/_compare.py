# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.
#
# A/B comparison in ns/packet (DESIGN "Comparison conventions"), matching of
# records by scenario + params, sweep tables, and the noise figures of a set of
# records (A/A false positives, repetitions for a 1 ns/packet difference).
"""A/B comparison, record matching, sweeps and noise of result records."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from ansible_collections.xdplab.testbed.plugins.module_utils._envfacts import fingerprint_diff
from ansible_collections.xdplab.testbed.plugins.module_utils._records_io import RecordError, params_key
from ansible_collections.xdplab.testbed.plugins.module_utils._stats import (
    aa_false_positive_rate,
    ns_samples,
    repetitions_needed,
    summarize,
    welch,
)

METHOD = "welch-t"
METHOD_TEXT = "Welch t-test on per-repetition ns/packet (1e9/pps), 95% two-sided interval"


def side_stats(record: dict) -> dict:
    """n, mean, stdev, ci95 (pps), ns_per_packet (1e9/mean) and ns stdev/ci95 of one record."""
    s = summarize(record["samples"])
    ns = ns_samples(record["samples"])
    ns_sum = summarize(ns)
    out = {"n": s["n"], "mean": s["mean"], "stdev": s["stdev"], "ci95": s["ci95"],
           "ns_per_packet": s["ns_per_packet"], "stdev_ns": ns_sum["stdev"],
           "ci95_ns": ns_sum["ci95"], "record": record.get("_path"),
           "run_id": record.get("run_id"), "variant": record.get("variant")}
    if s["n"] == 1:
        out["note"] = "n=1, no interval"
    return out


def compare_records(base: dict, cand: dict) -> dict:
    """Compare two records: candidate minus baseline in ns/packet."""
    b, c = side_stats(base), side_stats(cand)
    w = welch(ns_samples(base["samples"]), ns_samples(cand["samples"]))
    delta = c["ns_per_packet"] - b["ns_per_packet"]
    out = {
        "scenario": cand.get("scenario"),
        "params": cand.get("params"),
        "method": METHOD,
        "method_text": METHOD_TEXT,
        "baseline": b,
        "candidate": c,
        "delta_ns_per_packet": delta,
        "ci95_ns": w["ci"],
        "significant": bool(w["significant"]),
        "p_value": w["p_value"],
        "df": w["df"],
        "percent": (c["mean"] - b["mean"]) / b["mean"] * 100.0,
        "percent_ns": delta / b["ns_per_packet"] * 100.0,
        "direction": "faster" if delta < 0 else ("slower" if delta > 0 else "same"),
        "environment_diff": fingerprint_diff(base.get("environment"), cand.get("environment")),
    }
    if w["note"]:
        out["note"] = w["note"]
    out["verdict"] = verdict(out)
    return out


def verdict(cmp: dict) -> str:
    d = cmp["delta_ns_per_packet"]
    word = "faster" if d < 0 else "slower" if d > 0 else "no change"
    head = f"{d:+.2f} ns/packet ({word}), {cmp['percent']:+.2f}% pps"
    nb, nc = cmp["baseline"]["n"], cmp["candidate"]["n"]
    if cmp["ci95_ns"] is None:
        return f"{head}; n={nb} vs n={nc}: n=1, no interval"
    lo, hi = cmp["ci95_ns"]
    sig = "significant" if cmp["significant"] else "not significant"
    return f"{head}; 95% CI [{lo:+.2f}, {hi:+.2f}] ns, {sig} (n={nb} vs n={nc})"


def _by_key(records: list[dict], variant: str | None, where: str) -> dict[tuple[str, str], dict]:
    out: dict[tuple[str, str], dict] = {}
    for rec in records:
        if variant is not None and rec["variant"] != variant:
            continue
        key = (rec["scenario"], params_key(rec["params"]))
        if key in out:
            raise RecordError(
                f"{where}: ambiguous: {out[key]['_path']} and {rec['_path']} are both "
                f"scenario {rec['scenario']!r} variant {rec['variant']!r} params {rec['params']}; "
                "select one run directory or a variant")
        out[key] = rec
    return out


def match(base_records: list[dict], cand_records: list[dict], *, base_variant: str | None = None,
          cand_variant: str | None = None, base_where: str = "baseline",
          cand_where: str = "candidate") -> tuple[list[tuple[dict, dict]], list[dict]]:
    """Pair records by scenario + params. Returns (pairs, unmatched descriptions).

    Two single records are paired as given. No pair at all is an error.
    """
    if len(base_records) == 1 and len(cand_records) == 1 and base_variant is None and cand_variant is None:
        return [(base_records[0], cand_records[0])], []
    if base_variant is None and cand_variant is None and base_records is cand_records:
        raise RecordError("comparing a directory with itself needs baseline_variant and candidate_variant")
    b = _by_key(base_records, base_variant, base_where)
    c = _by_key(cand_records, cand_variant, cand_where)
    if not b:
        raise RecordError(f"{base_where}: no records of variant {base_variant!r}")
    if not c:
        raise RecordError(f"{cand_where}: no records of variant {cand_variant!r}")
    common = sorted(set(b) & set(c), key=lambda k: (k[0], tuple(
        (name, _sort_value(v)) for name, v in sorted(b[k]["params"].items()))))
    pairs = [(b[k], c[k]) for k in common]
    unmatched = [{"side": side, "scenario": k[0], "params": recs[k]["params"], "record": recs[k]["_path"]}
                 for side, recs, other in (("baseline", b, c), ("candidate", c, b))
                 for k in sorted(recs) if k not in other]
    if not pairs:
        raise RecordError(
            f"no records can be matched by scenario and params between {base_where} "
            f"({', '.join(sorted({k[0] for k in b}))}) and {cand_where} "
            f"({', '.join(sorted({k[0] for k in c}))})")
    return pairs, unmatched


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
        recs = sorted(recs, key=lambda r: tuple(_sort_value(r["params"].get(k)) for k in varying))
        rows = []
        for i, rec in enumerate(recs):
            s = summarize(rec["samples"])
            row = {"params": rec["params"], "pps": s["mean"], "ns_per_packet": s["ns_per_packet"],
                   "n": s["n"], "ci95": s["ci95"], "record": rec.get("_path"),
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
      significant is the false-positive rate (should be <= 5%).
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
    for rec in records:
        groups[(rec["scenario"], rec["variant"], params_key(rec["params"]))].append(rec)
    comparisons = significant = 0
    for recs in groups.values():
        if len(recs) >= 2:
            aa = aa_false_positive_rate(recs)
            comparisons += aa["comparisons"]
            significant += aa["significant"]
    out["aa_comparisons"] = comparisons
    out["aa_significant"] = significant
    out["aa_false_positive_rate"] = significant / comparisons if comparisons else None
    return out
