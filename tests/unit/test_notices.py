# SPDX-License-Identifier: GPL-3.0-or-later
"""Every warning and caveat in every format: the one-run caveat, short bursts, xdpgen's mode, the
bottleneck label, loss and surplus, and Holm, in text, Markdown, CSV, HTML and the PNG's foot
(whose text must lie inside the picture)."""

from __future__ import annotations

import csv
import io

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.common._atomic_files import write_json_atomic
from ansible_collections.xdplab.testbed.plugins.module_utils.results import _render_html, _render_png, _report
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_schema import build_record, record_filename
from matplotlib.backends.backend_agg import FigureCanvasAgg

MODE_WARNING = ("xdpgen sent from an AF_PACKET socket: the generator's kernel refuses BPF_PROG_RUN live frames; "
                "the rate is not that of live frames")


def _put(d, scenario, variant="baseline", pkt=64, bound="dut-bound", loss=0.0, duration=10, shift=0.0,
         warnings=None):
    ns = [100.0 + shift, 101.0 + shift, 99.0 + shift]
    r = build_record(run_id="20261129T215000Z-aaaaaa", scenario=scenario, variant=variant, tool="xdpgen",
                     params={"pkt_size": pkt, "duration": duration}, samples=[1e9 / x for x in ns],
                     started="2026-11-29T21:50:00Z", duration_s=30.0,
                     extra={"bound": bound, "reps": [{"loss": loss}] * 3, "warnings": warnings or []})
    d.mkdir(parents=True, exist_ok=True)
    write_json_atomic(str(d / record_filename(scenario, variant, r["params"])), r)


@pytest.fixture
def run(tmp_path):
    d = tmp_path / "run"
    _put(d, "xdp_drop", duration=2, warnings=[MODE_WARNING])
    _put(d, "xdp_tx", bound="generator-bound", warnings=[MODE_WARNING])
    _put(d, "tc_drop", bound="shared-core", loss=-0.02)
    _put(d, "nft_drop", loss=0.05)
    return d


NEEDLES = {
    "caveat": "CAVEAT: one back-to-back run per side",
    "short": "Short bursts: 2 s per repetition",
    "mode": "xdp_drop/baseline duration=2 pkt_size=64, xdp_tx/baseline duration=10 pkt_size=64: xdpgen sent from "
            "an AF_PACKET socket",
    "generator-bound": "Generator-bound: xdp_tx/baseline",
    "shared-core": "Shared core: tc_drop/baseline",
    "surplus": "tc_drop/baseline duration=10 pkt_size=64: 2.00% surplus",
    "loss": "nft_drop/baseline duration=10 pkt_size=64: 5.00% loss",
}


def _flat(text: str) -> str:
    return " ".join(text.replace("&#x27;", "'").replace("<b>", "").replace("</b>", "").split())


def _png_notes(report) -> str:
    fig = _render_png.figure(report)
    (notes,) = [t for t in fig.texts if t.get_label() == "notices"]
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    box, page = notes.get_window_extent(canvas.get_renderer()), fig.bbox
    assert page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0 and box.y1 <= page.y1, (box, page)
    return _flat(notes.get_text())


def test_every_notice_in_every_format(run, tmp_path):
    report = _report.build([str(run)])
    text = _flat(_report.render_text(report))
    md = _flat(_report.render_text(report, markdown=True))
    page = _flat(_render_html.render_html(report))
    png = _png_notes(report)
    for key, needle in NEEDLES.items():
        for name, doc in (("text", text), ("markdown", md), ("html", page)):
            assert needle in doc, (key, name)
        if key not in ("mode",):  # the PNG's foot is wrapped: check the sentence's start
            assert needle.split(":", maxsplit=1)[0] in png, (key, png)
    assert text.count("xdpgen sent from an AF_PACKET socket") == 1  # once, naming its rows
    rows = {r["scenario"]: r for r in csv.DictReader(io.StringIO(_report.render_csv(report)))}
    assert "Generator-bound: xdp_tx/baseline" in rows["xdp_tx"]["notices"]
    assert "AF_PACKET" in rows["xdp_drop"]["notices"] and "AF_PACKET" not in rows["nft_drop"]["notices"]
    assert "5.00% loss" in rows["nft_drop"]["notices"] and "caveat: one back-to-back" in rows["nft_drop"]["notices"]


def test_holm_note_in_every_format(tmp_path):
    for i in range(3):
        _put(tmp_path / "a", "xdp_drop", pkt=64 + i)
        _put(tmp_path / "b", "xdp_drop", variant="patched", pkt=64 + i, shift=5.0 if i == 0 else 0.0)
    report = _report.build([str(tmp_path / "a"), str(tmp_path / "b")])
    needle = "NOTE: 3 rows tested: significance is Holm-adjusted"
    assert needle in _flat(_report.render_text(report))
    assert needle in _flat(_report.render_text(report, markdown=True))
    assert needle in _flat(_render_html.render_html(report))
    assert needle in _png_notes(report)
    (row, *_rest) = list(csv.DictReader(io.StringIO(_report.render_csv(report))))
    assert "note: 3 rows tested: significance is Holm-adjusted" in row["notices"]
