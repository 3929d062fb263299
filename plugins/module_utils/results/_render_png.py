# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.
#
# The report's picture, drawn from the data _report.build returns (matplotlib, Agg):
# - one point per scenario (the default run): one bar per scenario, Mpps and ns/packet,
#   each with its 95% interval;
# - sweeps (records of one scenario/variant differing in a param): one line per
#   scenario/variant against that param, Mpps and ns/packet, 95% intervals as error bars;
# - A/B: one horizontal bar per compared row, delta ns/packet with its 95% interval.
# figure() returns the matplotlib Figure so tests can count what was drawn.
"""PNG rendering of xdplab.testbed reports."""

from __future__ import annotations

import io
from typing import Any

from ansible_collections.xdplab.testbed.plugins.module_utils.results._text_layout import params_text

FASTER = "#2a9d4b"
SLOWER = "#c0392b"
NEUTRAL = "#8c8c8c"
BARS = "#4c72b0"


def pps_interval(row: dict, scale: float = 1.0) -> list[float | None] | None:
    """95% interval of a row's packet rate divided by ``scale``, or None (n=1): its ns/packet interval
    in pps; the upper end is None (unbounded) when the ns interval reaches 0."""
    ci = row.get("ci95")
    return [None if x is None else x / scale for x in ci] if ci else None


def ns_interval(row: dict) -> list[float] | None:
    """95% interval of a row's ns/packet, or None (n=1): the row's own ``ci95_ns``, computed with its
    point (results._compare.side_stats), so the point always lies inside it."""
    ci = row.get("ci95_ns")
    return list(ci) if ci else None


def _err(values: list[float], intervals: list[list[float] | None]) -> list[list[float]]:
    """matplotlib yerr (two rows: below, above); zero where there is no interval."""
    below = [0.0 if ci is None else max(0.0, v - ci[0]) for v, ci in zip(values, intervals, strict=True)]
    above = [0.0 if ci is None or ci[1] is None else max(0.0, ci[1] - v)
             for v, ci in zip(values, intervals, strict=True)]
    return [below, above]


def kind(report: dict) -> str:
    """ab, scenarios (one point per scenario/variant), sweep, or mixed (both)."""
    if "comparisons" in report:
        return "ab"
    tables = report.get("sweeps") or []
    singles = [t for t in tables if len(t["rows"]) == 1]
    sweeps = [t for t in tables if len(t["rows"]) > 1]
    if singles and sweeps:
        return "mixed"
    return "sweep" if sweeps else "scenarios"


def _cover(ax: Any, lo: float, hi: float, axis: str = "y") -> None:
    """Make the axis limits include [lo, hi] with a margin (bars start at 0)."""
    get = ax.get_ylim if axis == "y" else ax.get_xlim
    set_ = ax.set_ylim if axis == "y" else ax.set_xlim
    cur_lo, cur_hi = get()
    span = (hi - lo) or abs(hi) or 1.0
    set_(min(cur_lo, lo - 0.05 * span), max(cur_hi, hi + 0.08 * span))


def _bar_panel(ax: Any, labels: list[str], values: list[float], intervals: list, ylabel: str, title: str,
               fmt: str) -> None:
    xs = list(range(len(values)))
    ax.bar(xs, values, 0.6, color=BARS, yerr=_err(values, intervals), capsize=5, ecolor="#222222")
    ax.set_xticks(xs)
    ax.set_xticklabels(labels, rotation=20 if len(labels) > 3 else 0, ha="right" if len(labels) > 3 else "center",
                       fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    tops = [v if ci is None or ci[1] is None else max(v, ci[1]) for v, ci in zip(values, intervals, strict=True)]
    _cover(ax, 0.0, max(tops) if tops else 1.0)
    for x, v, top, ci in zip(xs, values, tops, intervals, strict=True):
        ax.annotate(fmt.format(v) + ("\nn=1, no interval" if ci is None else ""), (x, top),
                    textcoords="offset points", xytext=(0, 3), ha="center", fontsize=7)


def _scenarios(axes: tuple, tables: list[dict]) -> None:
    variants = {t["variant"] for t in tables}
    labels = [t["scenario"] + (f"\n{t['variant']}" if len(variants) > 1 else "") for t in tables]
    rows = [t["rows"][0] for t in tables]
    mpps = [r["pps"] / 1e6 for r in rows]
    mpps_ci = [pps_interval(r, 1e6) for r in rows]
    ns = [r["ns_per_packet"] for r in rows]
    ns_ci = [ns_interval(r) for r in rows]
    n_note = "n=" + ",".join(str(n) for n in sorted({r["n"] for r in rows}))
    _bar_panel(axes[0], labels, mpps, mpps_ci, "Mpps", f"Packet rate, 95% interval ({n_note})", "{:.2f}")
    _bar_panel(axes[1], labels, ns, ns_ci, "ns/packet", f"ns/packet, lower is faster ({n_note})", "{:.1f}")


def _x_values(table: dict) -> tuple[list, list[str] | None, str]:
    """x positions of a sweep's rows: the varying param's values when numeric, else row indices
    with the params as tick labels."""
    rows = table["rows"]
    if len(table["varying"]) == 1:
        key = table["varying"][0]
        raw = [r["params"].get(key) for r in rows]
        try:
            return [float(x) for x in raw], None, key
        except (TypeError, ValueError):
            return list(range(len(rows))), [str(x) for x in raw], key
    if not table["varying"]:  # repeated runs of one configuration (A/A): one point per record
        return list(range(len(rows))), [f"#{i + 1}" for i in range(len(rows))], "repeated run (same params)"
    labels = [params_text({k: r["params"].get(k) for k in table["varying"]}) for r in rows]
    return list(range(len(rows))), labels, ", ".join(table["varying"])


def _sweeps(axes: tuple, tables: list[dict], xkey: str) -> None:
    a1, a2 = axes
    ticklabels = None
    lo1, hi1, lo2, hi2 = [], [], [], []
    for t in tables:
        xs, labels, _dummy = _x_values(t)
        ticklabels = labels or ticklabels
        label = f"{t['scenario']}/{t['variant']}"
        mpps = [r["pps"] / 1e6 for r in t["rows"]]
        mpps_ci = [pps_interval(r, 1e6) for r in t["rows"]]
        ns = [r["ns_per_packet"] for r in t["rows"]]
        ns_ci = [ns_interval(r) for r in t["rows"]]
        a1.errorbar(xs, mpps, yerr=_err(mpps, mpps_ci), marker="o", capsize=3, label=label)
        a2.errorbar(xs, ns, yerr=_err(ns, ns_ci), marker="o", capsize=3, label=label)
        lo1 += [v if ci is None else ci[0] for v, ci in zip(mpps, mpps_ci, strict=True)]
        hi1 += [v if ci is None or ci[1] is None else ci[1] for v, ci in zip(mpps, mpps_ci, strict=True)]
        lo2 += [v if ci is None else ci[0] for v, ci in zip(ns, ns_ci, strict=True)]
        hi2 += [v if ci is None else ci[1] for v, ci in zip(ns, ns_ci, strict=True)]
    _cover(a1, min(lo1), max(hi1))
    _cover(a2, min(lo2), max(hi2))
    for ax, ylabel, title in ((a1, "Mpps", f"Packet rate over {xkey}"), (a2, "ns/packet", f"ns/packet over {xkey}")):
        ax.set_xlabel(xkey)
        ax.set_ylabel(ylabel)
        ax.set_title(title + " (95% interval)", fontsize=10)
        ax.grid(alpha=0.3)
        if ticklabels:
            ax.set_xticks(range(len(ticklabels)))
            ax.set_xticklabels(ticklabels, rotation=20, ha="right", fontsize=7)
    a1.legend(fontsize=7)


def _common(params: list[dict]) -> dict:
    if not params:
        return {}
    return {k: v for k, v in params[0].items() if all(p.get(k, object()) == v for p in params[1:])}


def _ab(ax: Any, cmps: list[dict]) -> None:
    labels, deltas, intervals, colors = [], [], [], []
    common = _common([c["params"] or {} for c in cmps]) if len(cmps) > 1 else {}
    for c in cmps:
        own = {k: v for k, v in (c["params"] or {}).items() if k not in common}
        labels.append(c["scenario"] + (f"\n{params_text(own)}" if own else ""))
        d = c["delta_ns_per_packet"]
        deltas.append(d)
        intervals.append(c["ci95_ns"])
        if c["ci95_ns"] is None or not c["significant"]:
            colors.append(NEUTRAL)
        else:
            colors.append(FASTER if d < 0 else SLOWER)
    ys = list(range(len(cmps)))
    ax.barh(ys, deltas, 0.6, color=colors, xerr=_err(deltas, intervals), capsize=5, ecolor="#222222")
    ax.axvline(0.0, color="#222222", linewidth=0.8)
    ax.set_yticks(ys)
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()  # first row on top, as in the table
    lows = [d if ci is None else min(d, ci[0]) for d, ci in zip(deltas, intervals, strict=True)] + [0.0]
    highs = [d if ci is None else max(d, ci[1]) for d, ci in zip(deltas, intervals, strict=True)] + [0.0]
    _cover(ax, min(lows), max(highs), axis="x")
    # Room on the right for the figures written beside each bar, inside the axes.
    lo, hi = ax.get_xlim()
    ax.set_xlim(lo, hi + 0.6 * (hi - lo))
    for y, d, ci, c in zip(ys, deltas, intervals, cmps, strict=True):
        note = "n=1, no interval" if ci is None else f"CI [{ci[0]:+.2f}, {ci[1]:+.2f}] {c.get('call', '')}"
        ax.annotate(f"{d:+.2f} ns {note}, n={c['baseline']['n']}/{c['candidate']['n']}", (hi, y),
                    textcoords="offset points", xytext=(4, 0), va="center", fontsize=7)
    base = cmps[0]["baseline"].get("variant", "baseline") if cmps else "baseline"
    cand = cmps[0]["candidate"].get("variant", "candidate") if cmps else "candidate"
    ax.set_xlabel(f"delta ns/packet ({cand} minus {base}); negative = faster"
                  + (f"; all rows: {params_text(common)}" if common else ""))
    holm_used = any(c.get("decision") == "holm" for c in cmps)
    ax.set_title("A/B: delta ns/packet, 95% interval; green faster, red slower, grey not significant"
                 + (" (Holm-adjusted)" if holm_used else ""), fontsize=10)
    ax.grid(axis="x", alpha=0.3)


NOTE_LINES = 14  # at most this many lines of notices under the plot; the rest are counted
NOTE_LINE_IN = 0.15  # inches per line of notices (7 pt text)


def _note_lines(report: dict, width_in: float) -> list[str]:
    """The report's notices (caveat, warnings, Holm) wrapped to the figure's width, for its foot."""
    import textwrap

    from ansible_collections.xdplab.testbed.plugins.module_utils.results._report import notices

    chars = int(width_in * 72 / 7 * 1.6)  # 7 pt DejaVu Sans: about 1.6 characters per em
    lines = []
    for kind, text in notices(report):
        lines += textwrap.wrap(f"{kind.upper()}: {text}", chars, subsequent_indent="   ")
    if len(lines) > NOTE_LINES:
        lines = lines[:NOTE_LINES - 1] + [f"... {len(lines) - NOTE_LINES + 1} more lines in the text report"]
    return lines


def _with_notes(fig: Any, report: dict) -> Any:
    """Lay the figure out with room at its foot for the notices, and write them there."""
    w, h = fig.get_size_inches()
    lines = _note_lines(report, w)
    if not lines:
        fig.tight_layout()
        return fig
    foot = NOTE_LINE_IN * len(lines) + 0.2
    fig.set_size_inches(w, h + foot)
    frac = foot / (h + foot)
    fig.tight_layout(rect=(0.0, frac, 1.0, 1.0))
    fig.text(0.01, frac - 0.05 / (h + foot), "\n".join(lines), ha="left", va="top", fontsize=7,
             label="notices")
    return fig


def figure(report: dict) -> Any:
    """The report's Figure (not saved). Axes carry their role in their label:
    scenarios-mpps, scenarios-ns, sweep-mpps-<key>, sweep-ns-<key>, ab-delta; the notices under
    the plot are the text labelled "notices"."""
    from matplotlib.figure import Figure

    k = kind(report)
    if k == "ab":
        cmps = report["comparisons"]
        fig = Figure(figsize=(10, max(2.5, 0.55 * len(cmps) + 1.6)))
        ax = fig.add_subplot(1, 1, 1, label="ab-delta")
        if cmps:
            _ab(ax, cmps)
        else:
            ax.text(0.5, 0.5, "no matched records to compare", ha="center", transform=ax.transAxes)
        return _with_notes(fig, report)
    tables = report.get("sweeps") or []
    singles = [t for t in tables if len(t["rows"]) == 1]
    by_key: dict[str, list[dict]] = {}
    for t in tables:
        if len(t["rows"]) > 1:
            by_key.setdefault(_x_values(t)[2], []).append(t)
    nrows = (1 if singles else 0) + len(by_key) or 1
    fig = Figure(figsize=(11, 4.2 * nrows))
    row = 1
    if singles:
        axes = (fig.add_subplot(nrows, 2, 1, label="scenarios-mpps"),
                fig.add_subplot(nrows, 2, 2, label="scenarios-ns"))
        _scenarios(axes, singles)
        row += 1
    for key, group in by_key.items():
        axes = (fig.add_subplot(nrows, 2, 2 * row - 1, label=f"sweep-mpps-{key}"),
                fig.add_subplot(nrows, 2, 2 * row, label=f"sweep-ns-{key}"))
        _sweeps(axes, group, key)
        row += 1
    if not tables:
        ax = fig.add_subplot(1, 1, 1, label="empty")
        ax.text(0.5, 0.5, "no records", ha="center", transform=ax.transAxes)
    return _with_notes(fig, report)


def png_bytes(report: dict, dpi: int = 110) -> bytes:
    buf = io.BytesIO()
    figure(report).savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def render_png(report: dict, path: str) -> None:
    with open(path, "wb") as fh:
        fh.write(png_bytes(report))
