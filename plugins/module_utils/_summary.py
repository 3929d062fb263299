# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The end-of-run summary table of bench.yml. Private to the xdplab.testbed collection."""

from __future__ import annotations

import json
import os

from ansible_collections.xdplab.testbed.plugins.module_utils._record import SCHEMA

HEADER = ("scenario", "variant", "pps", "ns/packet", "+-ns (95%)", "n", "bound", "loss")


def _ci_ns(summary: dict) -> str:
    ci = summary.get("ci95")
    if not ci:
        return "n=1, no interval"
    lo, hi = ci
    if lo <= 0:
        return "inf"
    # half-width of the interval, carried over to ns/packet
    return f"{(1e9 / lo - 1e9 / hi) / 2:.2f}"


def rows(records: list[dict]) -> list[tuple[str, ...]]:
    out = []
    for rec in records:
        s = rec["summary"]
        losses = [r.get("loss") for r in rec.get("reps", []) if r.get("loss") is not None]
        out.append((
            rec["scenario"], rec["variant"], f"{s['mean']:.0f}", f"{s['ns_per_packet']:.2f}", _ci_ns(s),
            str(s["n"]), rec.get("bound", "-"), f"{100 * max(losses):.2f}%" if losses else "-",
        ))
    return out


def table(records: list[dict]) -> str:
    body = [HEADER, *rows(records)]
    widths = [max(len(r[i]) for r in body) for i in range(len(HEADER))]
    lines = ["  ".join(c.rjust(w) if i >= 2 else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
             for r in body]
    lines.insert(1, "-" * len(lines[0]))
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
