# SPDX-License-Identifier: GPL-3.0-or-later
"""The HTML report in a real browser: Debian's headless chromium opens report.html as a user
would (a file, nothing fetched), its screenshot is not blank and shows the plot, and the
table rows are in the DOM it built."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.common._atomic_files import write_json_atomic
from ansible_collections.xdplab.testbed.plugins.module_utils.results import _render_png, _report
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_schema import build_record, record_filename
from matplotlib.image import imread

SCENARIOS = [("xdp_drop", 9.1e6), ("xdp_tx", 4.2e6), ("xdp_redirect", 3.3e6), ("tc_drop", 2.9e6),
             ("nft_drop", 1.4e6)]


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("chromium")
    assert exe, "chromium is missing: it is in requirements-apt.txt, run `make deps-test`"
    argv = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
            "--hide-scrollbars", *args]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0, f"{argv} failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture
def page(tmp_path):
    run = tmp_path / "20261201T010000Z-abcdef"
    run.mkdir()
    for i, (scen, pps) in enumerate(SCENARIOS):
        rec = build_record(run_id="20261201T010000Z-abcdef", scenario=scen, variant="baseline", tool="xdpgen",
                           params={"pkt_size": 64, "duration": 2}, samples=[pps * 0.98, pps, pps * 1.02],
                           environment={"kernel": "6.1.0", "cpu_model": "Test CPU"},
                           started=f"2026-12-01T01:0{i}:00Z", duration_s=10.0)
        write_json_atomic(str(run / record_filename(scen, "baseline", rec["params"])), rec)
    dest = run / "report.html"
    _report.render(_report.build([str(run)]), "html", str(dest))
    return dest


def test_html_report_in_headless_chromium(page, tmp_path):
    shot = tmp_path / "shot.png"
    chromium(f"--screenshot={shot}", "--window-size=1280,1600", page.as_uri(), profile=tmp_path / "profile1")
    img = imread(str(shot))[:, :, :3]
    assert img.shape[0] >= 1000 and img.shape[1] >= 1000
    not_white = (img < 0.95).any(axis=2).mean()
    assert not_white > 0.03, f"screenshot is (nearly) blank: {not_white:.3%} of pixels drawn"
    # The plot's bar colour is on screen: the data: URI image was decoded and laid out.
    bar_rgb = np.array([int(_render_png.BARS[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    bar_pixels = (np.abs(img - bar_rgb) < 0.02).all(axis=2).sum()
    assert bar_pixels > 2000, f"the plot's bars are not on the screenshot ({bar_pixels} pixels)"

    dom = chromium("--dump-dom", page.as_uri(), profile=tmp_path / "profile2").stdout
    assert dom.count('<tr class="row">') == len(SCENARIOS)
    for scen, _dummy in SCENARIOS:
        assert f"<td>{scen}</td>" in dom
    assert 'id="warnings"' in dom and "Short bursts: 2 s per repetition" in dom


def _scroll_width(page: Path, tmp_path: Path, name: str) -> tuple[int, int]:
    """The page's scroll width and the window's inner width in headless chromium at 1280 px, by a
    script appended to a copy of the page that writes both into the DOM once it has loaded."""
    probe = tmp_path / f"{name}-probe.html"
    probe.write_text(page.read_text().replace(
        "</body></html>",
        "<script>window.addEventListener('load', function () {document.body.setAttribute('data-sw', "
        "document.documentElement.scrollWidth + ' ' + window.innerWidth);});</script></body></html>"))
    dom = chromium("--window-size=1280,1000", "--virtual-time-budget=5000", "--dump-dom", probe.as_uri(),
                   profile=tmp_path / f"profile-{name}").stdout
    sw, inner = dom.split('data-sw="', 1)[1].split('"', 1)[0].split()
    return int(sw), int(inner)


def _cost_record(scen, variant, pkt, shift, kernel):
    ns = [1500.0 + shift, 1510.0 + shift, 1490.0 + shift]
    return build_record(run_id="20261201T010000Z-abcdef", scenario=scen, variant=variant, tool="xdpgen",
                        params={"pkt_size": pkt, "duration": 10, "sample": "dut_steady_rate", "xdpgen_mode": "packet"},
                        samples=[1e9 / x for x in ns],
                        environment={"kernel": kernel, "cpu_model": "Test CPU", "kernel_cmdline": "quiet " * 90},
                        started="2026-12-01T01:00:00Z", duration_s=30.0,
                        extra={"bound": "generator-bound", "warnings": ["xdpgen sent from an AF_PACKET socket"],
                               "reps": [{"loss": -0.02, "dut_cost": {"ns_per_packet": 300.0 + i + shift}}
                                        for i in range(3)]})


def test_html_pages_fit_1280_px_without_horizontal_scrolling(page, tmp_path):
    sw, inner = _scroll_width(page, tmp_path, "run")
    assert sw <= inner <= 1280, f"run page: scroll width {sw} px in a {inner} px window"
    for d, variant, kernel in (("a", "baseline", "6.18.0"), ("b", "patched", "6.18.0-patched-long-local-version")):
        for i, scen in enumerate(("xdp_drop", "xdp_redirect_cpumap", "tc_drop", "nft_drop", "xdp_tx")):
            for pkt in (64, 1500):
                rec = _cost_record(scen, variant, pkt, 25.0 if (d, i, pkt) == ("b", 0, 64) else 0.0, kernel)
                (tmp_path / d).mkdir(exist_ok=True)
                write_json_atomic(str(tmp_path / d / record_filename(scen, variant, rec["params"])), rec)
    (tmp_path / "cmp").mkdir()
    dest = tmp_path / "cmp" / "report.html"
    _report.render(_report.build([str(tmp_path / "a"), str(tmp_path / "b")]), "html", str(dest))
    sw, inner = _scroll_width(dest, tmp_path, "cmp")
    assert sw <= inner <= 1280, f"comparison page: scroll width {sw} px in a {inner} px window"


def test_trend_page_in_headless_chromium(tmp_path):
    """A trend of 20 runs with a step in the DUT cost at run #13: the page fits 1280 px, the plot is on
    the screenshot, and the change point is in the DOM chromium built."""
    from ansible_collections.xdplab.testbed.plugins.module_utils.results import _render_trend, _trend

    rng = np.random.default_rng(5)
    for i in range(20):
        rid = f"20261207T12{i:02d}00Z-{i:06x}"
        costs = 60.0 + (350.0 if i >= 12 else 0.0) + rng.normal(0, 1.0, 3)
        rec = build_record(run_id=rid, scenario="xdp_drop", variant="baseline", tool="xdpgen",
                           params={"pkt_size": 64, "duration": 5}, samples=list(1e9 / (17000 + rng.normal(0, 300, 3))),
                           environment={"kernel": "6.18.0",
                                        "xdp": {"veth0": {"program": "xdp_drop" if i < 12 else "xdp_drop_work"}}},
                           started=f"2026-12-07T12:{i:02d}:00Z", duration_s=15.0,
                           extra={"bound": "shared-core", "reps": [{"dut_cost": {"ns_per_packet": c}} for c in costs]})
        rec["summary"]["dut_cost"] = {"ns_per_packet": float(costs.mean())}
        (tmp_path / "results" / rid).mkdir(parents=True)
        write_json_atomic(str(tmp_path / "results" / rid / record_filename("xdp_drop", "baseline", rec["params"])), rec)
    (tmp_path / "trend").mkdir()
    dest = tmp_path / "trend" / "report.html"
    _render_trend.render(_trend.build([str(tmp_path / "results")]), "html", str(dest))
    sw, inner = _scroll_width(dest, tmp_path, "trend")
    assert sw <= inner <= 1280, f"trend page: scroll width {sw} px in a {inner} px window"
    shot = tmp_path / "trend.png"
    chromium(f"--screenshot={shot}", "--window-size=1280,1600", dest.as_uri(), profile=tmp_path / "profile-shot")
    img = imread(str(shot))[:, :, :3]
    red = np.array([int(_render_png.SLOWER[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    assert (np.abs(img - red) < 0.03).all(axis=2).sum() > 100, "the change point's dashed line is not on screen"
    dom = chromium("--dump-dom", dest.as_uri(), profile=tmp_path / "profile-dom").stdout
    assert "xdp_drop/baseline duration=5 pkt_size=64: run #13 (20261207T121200Z-00000c): DUT cost" in dom
    assert "xdp.veth0.program xdp_drop -&gt; xdp_drop_work" in dom
