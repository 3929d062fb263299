# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.
#
# One self-contained HTML page per run or comparison, from the data _report.build returns:
# warnings first (n=1, short bursts, generator-bound figures, incomplete runs), the summary
# table, the picture (PNG as a data: URI), the environment, for A/B the environment diff,
# and the noise figures. No external resources: the file can be mailed or archived alone.
"""HTML rendering of xdplab.testbed reports."""

from __future__ import annotations

import base64
import html
import json
import os

from ansible_collections.xdplab.testbed.plugins.module_utils.results._compare import unmatched_text
from ansible_collections.xdplab.testbed.plugins.module_utils.results._render_png import (
    ns_interval,
    png_bytes,
    pps_interval,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.results._report import (
    FOOTER,
    _noise_lines,
    _params,
    env_lines,
)

# Repetitions shorter than this (seconds) are bursts: start-up, caches and IRQ moderation weigh in.
SHORT_BURST_S = 5.0

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em auto;max-width:1150px;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;font-size:.9em}th,td{border:1px solid #ccc;padding:.3em .6em}
th{background:#eef2f7}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.faster td.delta{color:#2a9d4b;font-weight:bold}tr.slower td.delta{color:#c0392b;font-weight:bold}
.warn{background:#fff4d6;border-left:4px solid #e0a800;padding:.5em 1em}
pre{background:#f6f8fa;padding:.8em;overflow-x:auto}img{max-width:100%}
"""


def _e(v: object) -> str:
    return html.escape(str(v))


def _num(v: float | None, fmt: str = "{:.2f}") -> str:
    return "-" if v is None else fmt.format(v)


def _ci(ci: list[float | None] | None, fmt: str = "{:.2f}") -> str:
    if not ci:
        return "no interval"
    return "[" + ", ".join("unbounded" if x is None else fmt.format(x) for x in ci) + "]"


def _duration(params: dict | None) -> float | None:
    try:
        return float((params or {}).get("duration"))
    except (TypeError, ValueError):
        return None


def _paths(record: str | list[str] | None) -> list[str]:
    """A row's or side's record: one path, or a list of paths when it pools several records (the
    rounds of an interleaved run)."""
    if record is None:
        return []
    return [p for p in record if p] if isinstance(record, list) else [record]


def warnings(report: dict) -> list[str]:
    """What a reader must know before trusting the numbers, one sentence each."""
    out = []
    meta = report.get("record_meta") or {}
    if report.get("incomplete"):
        out.append("Records from incomplete runs are included: " + ", ".join(report["incomplete"]))
    if "comparisons" in report:
        items = [{"name": f"{c['scenario']} {_params(c['params'])}", "params": c["params"],
                  "n": min(c["baseline"]["n"], c["candidate"]["n"]),
                  "records": _paths(c["baseline"].get("record")) + _paths(c["candidate"].get("record")),
                  "warnings": c.get("warnings")}
                 for c in report["comparisons"]]
    else:
        items = [{"name": f"{t['scenario']}/{t['variant']} {_params(r['params'])}", "params": r["params"], "n": r["n"],
                  "records": _paths(r.get("record")), "warnings": r.get("warnings")}
                 for t in report.get("sweeps") or [] for r in t["rows"]]
    n1 = [i["name"] for i in items if i["n"] < 2]
    if n1:
        out.append(f"n=1, no interval: {', '.join(n1)}. One repetition cannot show its own noise; "
                   "repeat (3 or more) before comparing.")
    short = sorted({d for i in items if (d := _duration(i["params"])) is not None and d < SHORT_BURST_S})
    if short:
        out.append(f"Short bursts: {', '.join(f'{d:g} s' for d in short)} per repetition (under "
                   f"{SHORT_BURST_S:g} s); start-up, caches and interrupt moderation weigh in. "
                   "Use longer repetitions for numbers to publish.")
    gen = sorted({i["name"] for i in items
                  if any((meta.get(p) or {}).get("bound") == "generator-bound" for p in i["records"])})
    if gen:
        out.append(f"Generator-bound: {', '.join(gen)}. The DUT counted everything the generator sent, "
                   "so the figure is the generator's rate, a lower bound of what the DUT can do.")
    for i in items:
        out += [f"{i['name']}: {w}" for w in i["warnings"] or []]
    return out


def _summary_table(report: dict) -> list[str]:
    if "comparisons" in report:
        head = ["scenario", "params", "base pps", "base ns/pkt", "base 95% CI ns", "n", "cand pps", "cand ns/pkt",
                "cand 95% CI ns", "n", "delta ns/pkt", "delta 95% CI ns",
                "Holm" if (report.get("multiple") or {}).get("decision") == "holm" else "call", "raw"]
        body = []
        for c in report["comparisons"]:
            b, k = c["baseline"], c["candidate"]
            sig = "-" if c["ci95_ns"] is None else ("sig." if c["significant"] else "n.s.")
            raw = "-" if c["ci95_ns"] is None else ("sig." if c.get("significant_raw", c["significant"]) else "n.s.")
            cls = c["direction"] if c["ci95_ns"] is not None and c["significant"] else "same"
            cells = [(c["scenario"], ""), (_params(c["params"]), ""), (f"{b['mean']:.0f}", "num"),
                     (_num(b["ns_per_packet"]), "num"), (_ci(b.get("ci95_ns")), "num"), (b["n"], "num"),
                     (f"{k['mean']:.0f}", "num"), (_num(k["ns_per_packet"]), "num"), (_ci(k.get("ci95_ns")), "num"),
                     (k["n"], "num"), (f"{c['delta_ns_per_packet']:+.2f} ({c['direction']})", "num delta"),
                     (_ci(c["ci95_ns"], "{:+.2f}"), "num"), (sig, ""), (raw, "")]
            body.append((cls, cells))
    else:
        head = ["scenario", "variant", "params", "Mpps", "Mpps 95% CI", "ns/packet", "ns 95% CI", "d prev ns",
                "d first ns", "n"]
        body = []
        for t in report.get("sweeps") or []:
            for r in t["rows"]:
                mpps_ci = pps_interval(r, 1e6)
                cells = [(t["scenario"], ""), (t["variant"], ""), (_params(r["params"]), ""),
                         (f"{r['pps'] / 1e6:.3f}", "num"), (_ci(mpps_ci, "{:.3f}"), "num"),
                         (_num(r["ns_per_packet"]), "num"), (_ci(ns_interval(r)), "num"),
                         (_num(r["delta_prev_ns"], "{:+.2f}"), "num"), (_num(r["delta_base_ns"], "{:+.2f}"), "num"),
                         (r["n"], "num")]
                body.append(("", cells))
    out = ['<table id="summary">', "<thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr></thead>",
           "<tbody>"]
    for cls, cells in body:
        out.append(f'<tr class="{("row " + cls).strip()}">' + "".join(
            f'<td class="{c}">{_e(v)}</td>' if c else f"<td>{_e(v)}</td>" for v, c in cells) + "</tr>")
    out.append("</tbody></table>")
    return out


def _title(report: dict) -> str:
    names = [os.path.basename(os.path.normpath(p)) for p in report.get("results") or []]
    if "comparisons" in report:
        if len(names) == 2:
            return f"A/B: {names[0]} (baseline) vs {names[1]} (candidate)"
        cmps = report["comparisons"]
        if cmps:
            return f"A/B in {names[0]}: {cmps[0]['baseline']['variant']} vs {cmps[0]['candidate']['variant']}"
    return f"Run {names[0]}" if names else "Report"


def render_html(report: dict) -> str:
    title = _title(report)
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>xdplab.testbed: {_e(title)}</title>", f"<style>{CSS}</style></head><body>",
           f"<h1>{_e(title)}</h1>",
           f"<p>{report.get('records', 0)} result record(s) from {_e(', '.join(report.get('results') or []))}.</p>",
           f'<p id="footer">{_e(FOOTER)}</p>']
    warns = warnings(report)
    if warns:
        out += ['<h2>Warnings</h2><div class="warn" id="warnings"><ul>'] + [f"<li>{_e(w)}</li>" for w in warns] + [
            "</ul></div>"]
    out += ["<h2>Summary</h2>"] + _summary_table(report)
    if report.get("unmatched"):
        out.append('<p>Unmatched (not compared: no record of the other side measured the same thing):</p>'
                   '<ul id="unmatched">' + "".join(f"<li>{_e(unmatched_text(u))}</li>" for u in report["unmatched"])
                   + "</ul>")
    img = base64.b64encode(png_bytes(report)).decode("ascii")
    out += ["<h2>Plots</h2>", f'<img id="plot" alt="{_e(title)}" src="data:image/png;base64,{img}">']
    out += ["<h2>Environment</h2>", "<pre>" + _e("\n".join(env_lines(report.get("environment") or {}))) + "</pre>"]
    if "comparisons" in report:
        out.append("<h2>Environment diff (what changed besides the variant)</h2>")
        diff = report.get("environment_diff") or []
        if not diff:
            out.append("<p>No difference in the environment fingerprints.</p>")
        else:
            out.append('<table id="envdiff"><thead><tr><th>key</th><th>baseline</th><th>candidate</th></tr>'
                       "</thead><tbody>")
            out += [f"<tr><td>{_e(d['key'])}</td><td>{_e(json.dumps(d['baseline']))}</td>"
                    f"<td>{_e(json.dumps(d['candidate']))}</td></tr>" for d in diff]
            out.append("</tbody></table>")
        if report["comparisons"]:
            out.append(f"<p>Method: {_e(report['comparisons'][0].get('method_text', ''))}.</p>")
    out += ["<h2>Noise</h2>"] + [f"<p>{_e(line)}</p>" for line in _noise_lines(report["noise"])]
    out.append("</body></html>")
    return "\n".join(out) + "\n"
