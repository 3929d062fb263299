# SPDX-License-Identifier: GPL-3.0-or-later
"""With several rows tested, the call the reader sees is Holm's, the raw call beside it, in every
format: text, Markdown, CSV, HTML, PNG colours, the verdict, ``significant`` and the cover letter."""

from __future__ import annotations

import csv
import io

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.common._atomic_files import write_json_atomic
from ansible_collections.xdplab.testbed.plugins.module_utils.results import _render_html, _render_png, _report
from ansible_collections.xdplab.testbed.plugins.module_utils.results._compare import compare_records
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_schema import build_record, record_filename
from matplotlib.colors import to_hex

BASE_NS = [100.0, 101.0, 99.0, 100.5, 99.5]
SHIFT = {0: 20.0, 1: 1.5}  # row 0: a real effect; row 1: raw p ~ 0.017, Holm over 10 rows: n.s.


def _rec(ns, variant, pkt):
    return build_record(run_id="20261129T215000Z-aaaaaa", scenario="xdp_drop", variant=variant, tool="xdpgen",
                        params={"pkt_size": pkt}, samples=[1e9 / x for x in ns], started="2026-11-29T21:50:00Z",
                        duration_s=10.0)


@pytest.fixture
def report(tmp_path):
    for i in range(10):
        pkt = 64 + i
        for d, v, shift in (("a", "baseline", 0.0), ("b", "patched", SHIFT.get(i, 0.0))):
            r = _rec([x + shift for x in BASE_NS], v, pkt)
            (tmp_path / d).mkdir(exist_ok=True)
            write_json_atomic(str(tmp_path / d / record_filename(r["scenario"], v, r["params"])), r)
    return _report.build([str(tmp_path / "a"), str(tmp_path / "b")])


def _row(report, pkt):
    return next(c for c in report["comparisons"] if c["params"]["pkt_size"] == pkt)


def test_marginal_row_is_raw_significant_but_not_after_holm(report):
    real, marginal = _row(report, 64), _row(report, 65)
    assert marginal["p_value"] == pytest.approx(0.017, abs=0.004)
    assert marginal["significant_raw"] is True and marginal["significant_holm"] is False
    assert marginal["significant"] is False  # what bench_compare and bench_report return
    assert marginal["call"] == "n.s. (Holm; raw: significant)"
    assert "n.s. (Holm; raw: significant)" in marginal["verdict"]
    assert real["significant"] is True and real["call"] == "significant (Holm)"
    assert report["multiple"]["decision"] == "holm"
    assert report["rows"][1]["significant"] is False and report["rows"][1]["significant_raw"] is True


def test_one_row_keeps_the_raw_call():
    c = compare_records(_rec(BASE_NS, "baseline", 64), _rec([x + 1.5 for x in BASE_NS], "patched", 64))
    assert c["significant"] is True and c["call"] == "significant"


def _cells(text, needle):
    """The cells of a row, over every table it appears in (a wide table is split to stay in 100 columns)."""
    out = []
    for ln in text.splitlines():
        if needle in ln:
            out += [x.strip() for x in ln.strip("|").split("|")] if "|" in ln else ln.split()
    return out


def _holm_raw(text, needle):
    cells = [c for c in _cells(text, needle) if needle not in c]
    i = next(k for k, c in enumerate(cells) if c in ("sig.", "n.s."))
    return cells[i:i + 2]


def test_text_and_markdown_show_holm_then_raw(report):
    text = _report.render_text(report)
    header = next(ln for ln in text.splitlines() if ln.startswith("scenario/params") and "raw" in ln)
    assert header.split()[-2:] == ["Holm", "raw"]
    assert _holm_raw(text, "pkt_size=65") == ["n.s.", "sig."]
    assert _holm_raw(text, "pkt_size=64") == ["sig.", "sig."]
    assert "The call column is Holm's" in " ".join(text.split())
    md = _report.render_text(report, markdown=True)
    assert _holm_raw(md, "pkt_size=65") == ["n.s.", "sig."]


def test_csv_significant_is_holm_raw_beside(report):
    rows = {r["params"]: r for r in csv.DictReader(io.StringIO(_report.render_csv(report)))}
    m = rows['{"pkt_size": 65}']
    assert (m["significant"], m["significant_raw"], m["decision"]) == ("false", "true", "holm")
    assert float(m["p_holm"]) > 0.05 > float(m["p_value"])


def test_html_row_class_and_cells_are_holm(report):
    page = _render_html.render_html(report)
    row = next(ln for ln in page.splitlines() if "pkt_size=65" in ln and "<tr" in ln)
    assert row.startswith('<tr class="row same">')
    assert row.endswith("<td>n.s.</td><td>sig.</td></tr>")
    real = next(ln for ln in page.splitlines() if "pkt_size=64" in ln and "<tr" in ln)
    assert real.startswith('<tr class="row slower">')


def test_png_colours_are_holm(report):
    fig = _render_png.figure(report)
    (ax,) = fig.axes
    colours = [to_hex(p.get_facecolor()) for p in ax.patches]
    assert colours[0] == _render_png.SLOWER  # the real effect
    assert colours[1] == _render_png.NEUTRAL  # raw-significant, Holm n.s.: grey
    assert "Holm-adjusted" in ax.get_title()


def test_cover_letter_cell_is_holm_with_raw_beside():
    from ansible_collections.xdplab.testbed.plugins.module_utils.results._render_ab import _delta_cell

    row = {"delta_ns_per_packet": 1.5, "ci95_ns": [0.3, 2.7], "significant": False, "significant_raw": True,
           "decision": "holm"}
    assert _delta_cell(row) == "+1.50 [+0.30, +2.70] slower, n.s. (Holm; raw: sig.)"
    assert _delta_cell(dict(row, significant=True)) == "+1.50 [+0.30, +2.70] slower"
