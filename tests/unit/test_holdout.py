# SPDX-License-Identifier: GPL-3.0-or-later
"""Hold-outs: record sets in fixtures/holdout whose answers (answers.json) make_holdout.py computed
from the definitions with numpy and scipy alone. Every format must give those answers."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.results import _render_html, _render_png, _report
from matplotlib.colors import to_hex

HOLD = Path(__file__).resolve().parent / "fixtures" / "holdout"
ANSWERS = json.loads((HOLD / "answers.json").read_text())


def _flat(s: str) -> str:
    return " ".join(s.replace("&#x27;", "'").split())


def _formats(report):
    return {"text": _flat(_report.render_text(report)), "markdown": _flat(_report.render_text(report, True)),
            "html": _flat(_render_html.render_html(report))}


def _ab(case):
    return _report.build([str(HOLD / case / "a"), str(HOLD / case / "b")])


def _check_delta(report, c, ans):
    ci = f"[{ans['ci'][0]:+.2f}, {ans['ci'][1]:+.2f}]"
    assert c["delta_ns_per_packet"] == pytest.approx(ans["delta"], rel=1e-9, abs=1e-9)
    assert c["ci95_ns"] == pytest.approx(ans["ci"], rel=1e-9)
    for name, doc in _formats(report).items():
        assert f"{ans['delta']:+.2f}" in doc and ci in doc, name
    rows = list(csv.DictReader(io.StringIO(_report.render_csv(report))))
    row = next(r for r in rows if json.loads(r["params"]) == c["params"])
    assert (row["delta_ns_per_packet"], row["ci95_ns_lo"], row["ci95_ns_hi"]) == (
        f"{ans['delta']:.2f}", f"{ans['ci'][0]:.2f}", f"{ans['ci'][1]:.2f}")


def test_mismatched_params():
    report, ans = _ab("mismatch"), ANSWERS["mismatch"]
    assert len(report["comparisons"]) == ans["pairs"]
    _check_delta(report, report["comparisons"][0], ans)
    docs = _formats(report)
    for scenario, diff in ans["unmatched"].items():
        assert any(u["scenario"] == scenario for u in report["unmatched"])
        for name, doc in docs.items():
            assert f"{scenario}" in doc and f"in {diff}" in doc, (name, scenario, diff)


def test_stalled_repetition_row():
    report = _report.build([str(HOLD / "stalled" / "run")])
    rows = list(csv.DictReader(io.StringIO(_report.render_csv(report))))
    docs = _formats(report)
    for pkt, ans in ANSWERS["stalled"]["rows"].items():
        row = next(r for r in report["rows"] if str(r["params"]["pkt_size"]) == pkt)
        assert row["ns_per_packet"] == pytest.approx(ans["ns"], rel=1e-9) and row["n"] == ans["n"]
        assert row["ci95_ns"] == pytest.approx(ans["ci"], rel=1e-9)
        c = next(r for r in rows if json.loads(r["params"])["pkt_size"] == int(pkt))
        assert (c["ns_per_packet"], c["ns_ci95_lo"], c["ns_ci95_hi"], c["n"]) == (
            f"{ans['ns']:.2f}", f"{ans['ci'][0]:.2f}", f"{ans['ci'][1]:.2f}", str(ans["n"]))
        for name, doc in docs.items():
            assert f"{ans['ns']:.2f}" in doc and f"[{ans['ci'][0]:.2f}, {ans['ci'][1]:.2f}]" in doc, name


def test_rounds_are_units():
    report, ans = _ab("rounds"), ANSWERS["rounds"]
    (c,) = report["comparisons"]
    assert [c["baseline"]["n"], c["candidate"]["n"]] == ans["n"] and c["unit_level"] == "round"
    assert c["p_value"] == pytest.approx(ans["p"], rel=1e-9)
    _check_delta(report, c, ans)


def test_ties_have_no_interval():
    report, ans = _ab("ties"), ANSWERS["ties"]
    (c,) = report["comparisons"]
    assert c["ci95_ns"] is None and c["significant"] is ans["significant"]
    assert c["delta_ns_per_packet"] == pytest.approx(ans["delta"], rel=1e-6)
    for name, doc in _formats(report).items():
        assert "no interval" in doc and "sig." not in doc.replace("n.s.", ""), name
    (row,) = csv.DictReader(io.StringIO(_report.render_csv(report)))
    assert row["significant"] == "" and row["ci95_ns_lo"] == ""


def test_ten_rows_one_real_effect():
    report, ans = _ab("ten"), ANSWERS["ten"]
    fig_colours = [to_hex(p.get_facecolor()) for p in _render_png.figure(report).axes[0].patches]
    rows = {json.loads(r["params"])["pkt_size"]: r for r in csv.DictReader(io.StringIO(_report.render_csv(report)))}
    for k, c in enumerate(report["comparisons"]):
        a = ans[str(c["params"]["pkt_size"])]
        assert c["p_value"] == pytest.approx(a["p"], rel=1e-8, abs=1e-300)
        assert c["p_holm"] == pytest.approx(a["p_holm"], rel=1e-8, abs=1e-300)
        assert c["significant"] is a["significant"] and c["significant_raw"] is a["significant_raw"]
        assert rows[c["params"]["pkt_size"]]["significant"] == str(a["significant"]).lower()
        colour = _render_png.SLOWER if a["delta"] > 0 else _render_png.FASTER
        want = colour if a["significant"] else _render_png.NEUTRAL
        assert fig_colours[k] == want
    assert sum(c["significant"] for c in report["comparisons"]) == 1
    assert report["multiple"]["significant_holm"] == 1


@pytest.mark.parametrize("case", ["ten", "mismatch", "stalled"])
def test_png_text_is_not_clipped(case):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    report = _report.build([str(HOLD / case / "run")]) if case == "stalled" else _ab(case)
    fig = _render_png.figure(report)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    # everything drawn (titles, labels, tick labels in view, annotations, the notices) lies in the picture
    drawn = fig.get_tightbbox(renderer)
    w, h = fig.get_size_inches()
    assert drawn.x0 >= -0.01 and drawn.y0 >= -0.01 and drawn.x1 <= w + 0.01 and drawn.y1 <= h + 0.01, (drawn, w, h)
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    assert any(t.get_label() == "notices" for t in texts)
