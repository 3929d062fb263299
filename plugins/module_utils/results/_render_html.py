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
    RATE_MARK,
    RATE_MARK_TEXT,
    cost_delta_text,
    cost_text,
    env_lines,
    noise_lines,
    notices,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.results._text_layout import params_text

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em auto;max-width:1150px;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;font-size:.85em;max-width:100%}
th,td{border:1px solid #ccc;padding:.25em .45em;overflow-wrap:anywhere}
th{background:#eef2f7}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.faster td.delta{color:#2a9d4b;font-weight:bold}tr.slower td.delta{color:#c0392b;font-weight:bold}
.warn{background:#fff4d6;border-left:4px solid #e0a800;padding:.5em 1em}
pre{background:#f6f8fa;padding:.8em;white-space:pre-wrap;overflow-wrap:anywhere}img{max-width:100%}
"""


def _e(v: object) -> str:
    return html.escape(str(v))


def _num(v: float | None, fmt: str = "{:.2f}") -> str:
    return "-" if v is None else fmt.format(v)


def _ci(ci: list[float | None] | None, fmt: str = "{:.2f}") -> str:
    if not ci:
        return "no interval"
    return "[" + ", ".join("unbounded" if x is None else fmt.format(x) for x in ci) + "]"


def warnings(report: dict) -> list[str]:
    """What a reader must know before trusting the numbers, one sentence each (the report's notices)."""
    return [text for _kind, text in notices(report)]


def _summary_table(report: dict) -> list[str]:
    if "comparisons" in report:
        head = ["scenario", "params", "base pps", "base ns/pkt", "base 95% CI ns", "n", "cand pps", "cand ns/pkt",
                "cand 95% CI ns", "n", "delta ns/pkt", "delta 95% CI ns",
                "Holm" if (report.get("multiple") or {}).get("decision") == "holm" else "call", "raw"]
        cmps = report["comparisons"]
        with_bound = any(c["baseline"].get("bound") or c["candidate"].get("bound") for c in cmps)
        with_cost = any(c.get("cost_delta_ns") is not None for c in cmps)
        head += (["bound A/B"] if with_bound else []) + (["DUT cost delta [95% CI]"] if with_cost else [])
        body = []
        for c in report["comparisons"]:
            b, k = c["baseline"], c["candidate"]
            sig = "-" if c["ci95_ns"] is None else ("sig." if c["significant"] else "n.s.")
            raw = "-" if c["ci95_ns"] is None else ("sig." if c.get("significant_raw", c["significant"]) else "n.s.")
            mark = RATE_MARK if c.get("rate_not_dut_bound") else ""
            cls = c["direction"] if c["ci95_ns"] is not None and c["significant"] else "same"
            cells = [(c["scenario"], ""), (params_text(c["params"]), ""), (f"{b['mean']:.0f}", "num"),
                     (_num(b["ns_per_packet"]), "num"), (_ci(b.get("ci95_ns")), "num"), (b["n"], "num"),
                     (f"{k['mean']:.0f}", "num"), (_num(k["ns_per_packet"]), "num"), (_ci(k.get("ci95_ns")), "num"),
                     (k["n"], "num"), (f"{c['delta_ns_per_packet']:+.2f}{mark} ({c['direction']})", "num delta"),
                     (_ci(c["ci95_ns"], "{:+.2f}"), "num"), (sig, ""), (raw, "")]
            cells += [(f"{b.get('bound') or '-'}/{k.get('bound') or '-'}", "")] if with_bound else []
            cells += [(cost_delta_text(c), "num")] if with_cost else []
            body.append((cls, cells))
    else:
        rows = [r for t in report.get("sweeps") or [] for r in t["rows"]]
        with_cost = any(r.get("cost_ns") is not None for r in rows)
        with_bound = any(r.get("bound") for r in rows)
        head = ["scenario", "variant", "params", "Mpps", "Mpps 95% CI", "ns/packet", "ns 95% CI", "d prev ns",
                "d first ns", "n"] + (["DUT cost ns [95% CI]"] if with_cost else []) + (["bound"] if with_bound else [])
        body = []
        for t in report.get("sweeps") or []:
            for r in t["rows"]:
                mpps_ci = pps_interval(r, 1e6)
                cells = [(t["scenario"], ""), (t["variant"], ""), (params_text(r["params"]), ""),
                         (f"{r['pps'] / 1e6:.3f}", "num"), (_ci(mpps_ci, "{:.3f}"), "num"),
                         (_num(r["ns_per_packet"]), "num"), (_ci(ns_interval(r)), "num"),
                         (_num(r["delta_prev_ns"], "{:+.2f}"), "num"), (_num(r["delta_base_ns"], "{:+.2f}"), "num"),
                         (r["n"], "num")]
                cells += [(cost_text(r), "num")] if with_cost else []
                cells += [(r.get("bound") or "-", "")] if with_bound else []
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
    found = notices(report)
    if found:
        out += ['<h2>Warnings</h2><div class="warn" id="warnings"><ul>'] + [
            f"<li><b>{_e(kind.upper())}</b>: {_e(text)}</li>" for kind, text in found] + ["</ul></div>"]
    out += ["<h2>Summary</h2>"] + _summary_table(report)
    if any(c.get("rate_not_dut_bound") for c in report.get("comparisons") or []):
        out.append(f"<p>{_e(RATE_MARK_TEXT)}</p>")
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
    out += ["<h2>Noise</h2>"] + [f"<p>{_e(line)}</p>" for line in noise_lines(report["noise"])]
    out.append("</body></html>")
    return "\n".join(out) + "\n"
