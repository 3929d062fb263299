# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.
#
# Renderings of a trend (results._trend.build): text (100 columns) and Markdown with the report's
# table, wrapping and notices; CSV, one line per row and run; PNG (matplotlib, Agg), one row of
# panels per series with each run's interval, the fitted levels and the change points; HTML, one
# self-contained page. The helpers are the single-run report's (_report, _render_png, _render_html).
"""Text, Markdown, CSV, PNG and HTML renderings of a trend across runs."""

from __future__ import annotations

import base64
import csv
import io
import json
from typing import Any

from ansible_collections.xdplab.testbed.plugins.module_utils.results._render_html import CSS, _e
from ansible_collections.xdplab.testbed.plugins.module_utils.results._render_png import (
    BARS,
    SLOWER,
    _cover,
    _err,
    _with_notes,
    ns_interval,
    pps_interval,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.results._report import (
    FOOTER,
    FORMATS,
    _csv2,
    _csv_ci,
    ci_text,
    cost_text,
    env_lines,
    notices,
    row_notices,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.results._text_layout import (
    WIDTH,
    fitted_table,
    fixed2,
    signed2,
    wrap_text,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.results._trend import QUANTITIES

ORDER_TEXT = {"time": "in order of start time", "kernel": "in order of kernel release, then start time"}


def _quantity(q: str) -> str:
    return QUANTITIES[q][1]


def change_text(c: dict) -> str:
    """One change point as every format writes it: where, which quantity, the levels and the size."""
    word = "slower" if c["size"] > 0 else "faster"
    text = (f"run #{c['position']} ({c['run_id']}): {_quantity(c['quantity'])} {c['before']:.2f} -> "
            f"{c['after']:.2f} ns/packet ({c['size']:+.2f} ns/packet, {word}; p <= {c['p_bonferroni']:.2g}, "
            f"Bonferroni over {c['splits']} splits)")
    if c.get("changed"):
        text += "; changed since the run before: " + ", ".join(
            f"{d['key']} {d['baseline']} -> {d['candidate']}" for d in c["changed"])
    return text


def _series_notes(report: dict) -> list[str]:
    out = []
    for s in report["series"]:
        for q in QUANTITIES:
            res = s.get(q)
            if res and res.get("note"):
                out.append(f"{s['name']} ({_quantity(q)}): {res['note']}")
            if s.get(f"{q}_missing"):
                out.append(f"{s['name']}: no {_quantity(q)} in run(s) {', '.join(s[f'{q}_missing'])}; its "
                           f"{_quantity(q)} series skips them (a cost is never guessed)")
    return out


def with_notes(report: dict) -> dict:
    """The report with its own notes (ties in the order, series too short to test, missing costs) where
    the report's notices read them."""
    return dict(report, notes=list(report.get("order_notes") or []) + _series_notes(report))


def _mark(row: dict) -> str:
    marks = [f"{q} {row[f'{q}_change_ns']:+.2f}" for q in QUANTITIES if row[f"{q}_change_ns"] is not None]
    return ("<- " + ", ".join(marks)) if marks else ""


def _stage_text(row: dict) -> str:
    return cost_text({"cost_ns": row["program_ns"], "cost_ci95_ns": row["program_ci95_ns"]})


def _cells(report: dict, s: dict) -> tuple[list[str], list[list[str]]]:
    rows = [r for r in report["rows"] if (r["scenario"], r["variant"], r["params"]) ==
            (s["scenario"], s["variant"], s["params"])]
    with_kernel = report["order"] == "kernel" or len({r["kernel"] for r in rows}) > 1
    with_cost = any(r["cost_ns"] is not None for r in rows)
    with_stage = any(r["program_ns"] is not None for r in rows)
    head = ["#", "run"] + (["kernel"] if with_kernel else []) + ["pps", "ns/packet", "95% CI ns", "d prev ns", "n"]
    head += (["DUT cost ns [95% CI]"] if with_cost else []) + (["program ns [95% CI]"] if with_stage else [])
    head.append("change ns/packet")
    body = []
    for r in rows:
        cells = [str(r["position"]), r["run_id"]] + ([r["kernel"] or "-"] if with_kernel else [])
        cells += [f"{r['pps']:.0f}", fixed2(r["ns_per_packet"]), ci_text(r["ci95_ns"]), signed2(r["delta_prev_ns"]),
                  str(r["n"])]
        cells += ([cost_text(r)] if with_cost else []) + ([_stage_text(r)] if with_stage else []) + [_mark(r)]
        body.append(cells)
    return head, body


def _title(report: dict) -> str:
    return (f"Trend of {len(report['runs'])} runs, {ORDER_TEXT[report['order']]}: {len(report['series'])} row(s), "
            f"{len(report['change_points'])} change point(s)")


def render_text(report: dict, markdown: bool = False) -> str:
    report = with_notes(report)
    h = (lambda s: f"## {s}") if markdown else (lambda s: f"{s}\n{'=' * len(s)}")
    out = wrap_text(_title(report), markdown) + [""]
    out += [h("Environment (the latest run)"), ""]
    env = env_lines(report["environment"], WIDTH)
    out += (["```"] + env + ["```"]) if markdown else env
    out.append("")
    for kind, text in notices(report):
        out += wrap_text(("- " if markdown else "") + f"{kind.upper()}: {text}", markdown, indent="  ")
    out += ["", h("Change points"), ""]
    if report["change_points"]:
        out += [w for c in report["change_points"]
                for w in wrap_text(("- " if markdown else "") + f"{c['name']}: {change_text(c)}", markdown, "  ")]
    else:
        out.append("No row moved beyond its noise.")
    out += [""] + wrap_text(f"Method: {report['method_text']}.", markdown) + [""]
    for s in report["series"]:
        out += [h(s["name"]), ""] + fitted_table(*_cells(report, s), markdown) + [""]
    out += wrap_text(FOOTER, markdown)
    return "\n".join(out) + "\n"


def render_csv(report: dict) -> str:
    report = with_notes(report)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["scenario", "variant", "params", "position", "run_id", "started", "kernel", "pps", "pps_ci95_lo",
                "pps_ci95_hi", "ns_per_packet", "ns_ci95_lo", "ns_ci95_hi", "n", "delta_prev_ns", "delta_base_ns",
                "rate_level_ns", "rate_change_ns", "cost_ns", "cost_ci95_ns_lo", "cost_ci95_ns_hi", "cost_n",
                "cost_level_ns", "cost_change_ns", "program_ns", "program_ci95_ns_lo", "program_ci95_ns_hi",
                "program_n", "program_level_ns", "program_change_ns", "bound", "notices"])
    for s in report["series"]:
        for r in report["rows"]:
            if (r["scenario"], r["variant"], r["params"]) != (s["scenario"], s["variant"], s["params"]):
                continue
            w.writerow([r["scenario"], r["variant"], json.dumps(r["params"], sort_keys=True), r["position"],
                        r["run_id"], r["started"], r["kernel"] or "", f"{r['pps']:.2f}", *_csv_ci(pps_interval(r)),
                        f"{r['ns_per_packet']:.2f}", *_csv_ci(ns_interval(r)), r["n"], _csv2(r["delta_prev_ns"]),
                        _csv2(r["delta_base_ns"]), _csv2(r["rate_level_ns"]), _csv2(r["rate_change_ns"]),
                        _csv2(r["cost_ns"]), *_csv_ci(r["cost_ci95_ns"]), r["cost_n"] or "",
                        _csv2(r["cost_level_ns"]), _csv2(r["cost_change_ns"]), _csv2(r["program_ns"]),
                        *_csv_ci(r["program_ci95_ns"]), r["program_n"] or "", _csv2(r["program_level_ns"]),
                        _csv2(r["program_change_ns"]), r["bound"] or "",
                        " | ".join(row_notices(report, s["name"]))])
    return buf.getvalue()


# ----------------------------------------------------------------------- PNG

def _mpps_of_ns(v: float) -> float:
    """A level in ns/packet as Mpps (1e3 / ns)."""
    return 1e3 / v


def _same(v: float) -> float:
    return v


def _panel(ax: Any, s: dict, quantity: str, report: dict) -> None:
    """One panel of a series: every run's point with its 95% interval, the fitted levels (segment means)
    and a dashed line at each change point, labelled with its size."""
    pts = s["points"]
    if quantity == "pps":
        use = pts
        ys = [p["pps"] / 1e6 for p in use]
        cis = [pps_interval(p, 1e6) for p in use]
        result, scale, ylabel, title = s["rate"], _mpps_of_ns, "Mpps", "Packet rate"
    else:
        field = QUANTITIES[quantity][0]
        use = [p for p in pts if p[field] is not None]
        ys = [p[field] for p in use]
        cis = [p[field.replace("_ns", "_ci95_ns")] for p in use]
        result, scale, ylabel = s[quantity], _same, "ns/packet"
        title = {"cost": "DUT cost per packet", "program": "program stage per packet"}[quantity]
    xs = [p["position"] for p in use]
    ax.errorbar(xs, ys, yerr=_err(ys, cis), fmt="o", color=BARS, capsize=3, markersize=4)
    lows = [y if ci is None else ci[0] for y, ci in zip(ys, cis, strict=True)]
    highs = [y if ci is None or ci[1] is None else ci[1] for y, ci in zip(ys, cis, strict=True)]
    for seg in result["segments"]:
        level = scale(seg["level"])
        ax.hlines(level, seg["first_position"] - 0.4, seg["last_position"] + 0.4, colors="#444444",
                  linewidth=1.2)
        lows.append(level)
        highs.append(level)
    _cover(ax, min(lows), max(highs))
    for c in result["change_points"]:
        ax.axvline(c["position"] - 0.5, color=SLOWER, linestyle="--", linewidth=1)
        ax.annotate(f"{c['size']:+.1f} ns", (c["position"] - 0.5, 1.0), xycoords=("data", "axes fraction"),
                    xytext=(3, -10), textcoords="offset points", color=SLOWER, fontsize=7)
    ax.set_xticks(xs)
    kernels = report["order"] == "kernel"
    ax.set_xticklabels([(p["kernel"] if kernels else str(p["position"])) for p in use],
                       rotation=30 if kernels else 0, ha="right" if kernels else "center", fontsize=7)
    ax.set_xlabel("kernel release" if kernels else f"run ({ORDER_TEXT['time']})", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(f"{s['name']}: {title}", fontsize=9)
    ax.grid(alpha=0.3)


def figure(report: dict) -> Any:
    """The trend's Figure: per series a panel of its rate (Mpps) and, where any series' records carry
    them, a panel of its DUT cost and one of its program stage. Axes are labelled trend-pps-<row>,
    trend-cost-<row>, trend-program-<row> (trend-no<quantity>-<row> when that row has none); the notices
    under the plot are the text labelled "notices"."""
    from matplotlib.figure import Figure

    report = with_notes(report)
    series = report["series"]
    costs = [q for q in ("cost", "program") if any(s[q] for s in series)]
    cols = 1 + len(costs)
    fig = Figure(figsize=(5.5 * max(2, cols), 3.4 * max(1, len(series))))
    for i, s in enumerate(series):
        _panel(fig.add_subplot(len(series), cols, cols * i + 1, label=f"trend-pps-{s['name']}"), s, "pps", report)
        for j, q in enumerate(costs):
            if s[q]:
                _panel(fig.add_subplot(len(series), cols, cols * i + 2 + j, label=f"trend-{q}-{s['name']}"), s, q,
                       report)
                continue
            ax = fig.add_subplot(len(series), cols, cols * i + 2 + j, label=f"trend-no{q}-{s['name']}")
            ax.axis("off")
            ax.text(0.5, 0.5, f"no {_quantity(q)} in these records", ha="center", va="center",
                    transform=ax.transAxes)
    fig.suptitle(_title(report) + "; dashed: change point, grey: level", fontsize=10)
    return _with_notes(fig, report)


def png_bytes(report: dict, dpi: int = 100) -> bytes:
    buf = io.BytesIO()
    figure(report).savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


# ----------------------------------------------------------------------- HTML

def render_html(report: dict) -> str:
    report = with_notes(report)
    title = _title(report)
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>xdplab.testbed: {_e(title)}</title>", f"<style>{CSS}</style></head><body>",
           f"<h1>{_e(title)}</h1>",
           f"<p>{report['records']} result record(s) from {_e(', '.join(report['results']))}.</p>",
           f'<p id="method">{_e(report["method_text"])}.</p>', f'<p id="footer">{_e(FOOTER)}</p>']
    found = notices(report)
    if found:
        out += ['<h2>Warnings</h2><div class="warn" id="warnings"><ul>'] + [
            f"<li><b>{_e(kind.upper())}</b>: {_e(text)}</li>" for kind, text in found] + ["</ul></div>"]
    out.append("<h2>Change points</h2>")
    if report["change_points"]:
        out.append('<ul id="changes">' + "".join(f"<li>{_e(c['name'])}: {_e(change_text(c))}</li>"
                                                 for c in report["change_points"]) + "</ul>")
    else:
        out.append('<p id="changes">No row moved beyond its noise.</p>')
    img = base64.b64encode(png_bytes(report)).decode("ascii")
    out += ["<h2>Plots</h2>", f'<img id="plot" alt="{_e(title)}" src="data:image/png;base64,{img}">']
    for s in report["series"]:
        head, body = _cells(report, s)
        out += [f"<h2>{_e(s['name'])}</h2>", '<table class="series">',
                "<thead><tr>" + "".join(f"<th>{_e(x)}</th>" for x in head) + "</tr></thead><tbody>"]
        out += ["<tr>" + "".join(f'<td class="num">{_e(x)}</td>' if i >= 2 else f"<td>{_e(x)}</td>"
                                 for i, x in enumerate(cells)) + "</tr>" for cells in body]
        out.append("</tbody></table>")
    out += ["<h2>Environment (the latest run)</h2>",
            "<pre>" + _e("\n".join(env_lines(report.get("environment") or {}))) + "</pre>"]
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def render(report: dict, fmt: str, path: str) -> None:
    """Write the trend in fmt to path (the caller makes path a temp file)."""
    if fmt == "png":
        with open(path, "wb") as fh:
            fh.write(png_bytes(report))
        return
    if fmt not in TEXT_RENDERERS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(TEXT_RENDERERS[fmt](report))


def _render_markdown(report: dict) -> str:
    return render_text(report, markdown=True)


# Every format of _report.FORMATS but png (bytes, written above), by name.
TEXT_RENDERERS = {"text": render_text, "markdown": _render_markdown, "csv": render_csv, "html": render_html}
