# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The end-of-run summary table of bench.yml. Private to the xdplab.testbed collection."""

from __future__ import annotations

import json
import os

from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_schema import SCHEMA
from ansible_collections.xdplab.testbed.plugins.module_utils.results._statistics import no_spread, ns_samples, summarize

HEADER = ("scenario", "variant", "pps", "ns/packet", "+-ns (95%)", "n", "bound", "loss")
CAVEAT = ("n counts repetitions of one back-to-back run: the +-ns interval shows within-run noise only, "
          "not the difference between runs (use bench_rounds for that)")


def _ns(rec: dict) -> tuple[float, str]:
    """ns/packet and its 95% half-width, by the comparison estimator: mean of per-repetition ns/packet."""
    ns = ns_samples(rec["samples"])
    s = summarize(ns)
    if not s["ci95"]:
        return s["mean"], "n=1, no interval"
    if no_spread(ns):
        return s["mean"], "zero variance, no interval"
    return s["mean"], f"{(s['ci95'][1] - s['ci95'][0]) / 2:.2f}"


def worst_loss(rec: dict) -> float | None:
    """Largest loss of the repetitions, signed (a share of the packets sent): a negative one is a
    surplus (packets not ours); None when the repetitions do not say."""
    losses = [r.get("loss") for r in rec.get("reps") or [] if isinstance(r, dict)
              and isinstance(r.get("loss"), (int, float)) and not isinstance(r.get("loss"), bool)]
    return max(losses, key=abs) if losses else None


def _loss(rec: dict) -> str:
    worst = worst_loss(rec)
    if worst is None:
        return "-"
    return f"{100 * worst:.2f}%" + (" surplus" if worst < 0 else "")


def rows(records: list[dict]) -> list[tuple[str, ...]]:
    out = []
    for rec in records:
        s = rec["summary"]
        ns, half = _ns(rec)
        out.append((
            rec["scenario"], rec["variant"], f"{s['mean']:.0f}", f"{ns:.2f}", half,
            str(s["n"]), rec.get("bound", "-"), _loss(rec),
        ))
    return out


def table(records: list[dict]) -> str:
    body = [HEADER, *rows(records)]
    widths = [max(len(r[i]) for r in body) for i in range(len(HEADER))]
    lines = ["  ".join(c.rjust(w) if i >= 2 else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
             for r in body]
    lines.insert(1, "-" * len(lines[0]))
    for rec in records:
        for w in rec.get("warnings") or []:
            lines.append(f"WARNING: {rec['scenario']}/{rec['variant']}: {w}")
    if records and not any(rec.get("replicate") for rec in records):
        lines.append(f"Caveat: {CAVEAT}.")
    return "\n".join(lines)


def load_run(run_dir: str) -> list[dict]:
    """Records v1 of one run directory, in the order they were started; other JSON files are skipped."""
    records = []
    for name in sorted(os.listdir(run_dir)):
        if not name.endswith(".json") or name == "run.json":
            continue
        with open(os.path.join(run_dir, name), encoding="utf-8") as fh:
            data = json.load(fh)
        if isinstance(data, dict) and data.get("schema") == SCHEMA:
            records.append(data)
    records.sort(key=lambda r: (r.get("started", ""), r.get("scenario", "")))
    return records
