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
