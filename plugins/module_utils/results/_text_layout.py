# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.
#
# How every text rendering of results lays out its cells, tables and paragraphs in WIDTH columns: the
# run report, the A/B by boot's cover letter and the HTML and PNG captions share it.
"""Cells, tables and paragraphs of the text reports, in WIDTH columns."""

from __future__ import annotations

import textwrap

WIDTH = 100  # columns of the cover-letter text and the Markdown


def fixed2(v: float | None) -> str:
    """A figure with two decimals, or '-'."""
    return "-" if v is None else f"{v:.2f}"


def signed2(v: float | None) -> str:
    """A difference with its sign and two decimals, or ''."""
    return "" if v is None else f"{v:+.2f}"


def params_text(p: dict) -> str:
    """A record's params as 'key=value ...' in key order, or '-'."""
    return " ".join(f"{k}={v}" for k, v in sorted(p.items())) or "-"


def common_params(params: list[dict]) -> dict:
    """The params every dict has with the same value."""
    if not params:
        return {}
    return {k: v for k, v in params[0].items() if all(p.get(k, object()) == v for p in params[1:])}


def one_table(headers: list[str], rows: list[list[str]], markdown: bool) -> list[str]:
    """A table as it comes: Markdown pipes, or text columns (the first left-aligned, the rest right)."""
    if markdown:
        rule = "|" + "|".join("---:" if i else "---" for i in range(len(headers))) + "|"
        out = ["| " + " | ".join(headers) + " |", rule]
        return out + ["| " + " | ".join(r) + " |" for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    fmt = "  ".join(f"{{:<{w}}}" if i == 0 else f"{{:>{w}}}" for i, w in enumerate(widths))
    return [fmt.format(*headers), fmt.format(*("-" * w for w in widths))] + [fmt.format(*r) for r in rows]


def fitted_table(headers: list[str], rows: list[list[str]], markdown: bool) -> list[str]:
    """A table in WIDTH columns: when its columns do not fit, they are split over several tables, each
    led by the first column (the row's name), so no cell is cut and no line is wider than WIDTH."""
    sep = 3 if markdown else 2
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    chunks: list[list[int]] = [[]]
    used = widths[0] + (4 if markdown else 0)
    for i in range(1, len(headers)):
        if chunks[-1] and used + sep + widths[i] > WIDTH:
            chunks.append([])
            used = widths[0] + (4 if markdown else 0)
        chunks[-1].append(i)
        used += sep + widths[i]
    out: list[str] = []
    for k, cols in enumerate(chunks):
        idx = [0] + cols
        out += ([""] if k else []) + one_table([headers[i] for i in idx], [[r[i] for i in idx] for r in rows],
                                               markdown)
    return out


def wrap_text(text: str, markdown: bool, indent: str = "") -> list[str]:
    """A paragraph in WIDTH columns (Markdown joins the lines back into one paragraph)."""
    return textwrap.wrap(text, WIDTH, subsequent_indent=indent, break_on_hyphens=False)
