# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/bisect.yml end to end, CI-sized, on the embedded QEMU DUT: the project's bisection test
series (files/patches/bisect: patch 2 does not build alone, patch 3 makes it build, patch 4 busy-waits
4000 ns per pktgen transmit, 1, 3 and 5 change nothing measurable), given as a reviewer gets it: one
mbox with its cover letter.

1. The series: the culprit in the middle is named by subject and patch-id, the prefix that does not
   build is skipped and named, every step is in the report; then a step's record and one of its boots
   are removed and the same run id measures that step alone, its other boots kept.
2. A null series (patches 1-3, their prefix 3 taken from the cache the first test filled): the
   bisection ends "no patch moves ns/packet by >= X", X stated.

The base kernel comes from molecule/kernel's cache (same source, config and targets). No kernel is a
failure, not a skip."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import IN_GUEST, ROOT, ansible_playbook, only_run_dir

pytestmark = [pytest.mark.qemu, pytest.mark.root, pytest.mark.skipif(IN_GUEST, reason="runs QEMU: host side only")]

SERIES = ROOT / "files" / "patches" / "bisect"
PATCHES = sorted(SERIES.glob("000[1-9]-*.patch"))
KERNEL_ARGS = {"kernel_build_targets": ["bzImage", "modules"]}
THRESHOLD = 1500.0
CULPRIT = "pktgen: busy-wait 4000 ns per transmit (the bisect test series' culprit)"


def bisect(tmp_path: Path, **extra) -> subprocess.CompletedProcess:
    args = dict(KERNEL_ARGS, xdplab_results_root=str(tmp_path), ab_repetitions=2, ab_duration=1,
                bisect_threshold=THRESHOLD)
    args.update(extra)
    return ansible_playbook("playbooks/bisect.yml", "-e", json.dumps(args), timeout=3600)


def patch_id(path: Path) -> str:
    out = subprocess.run(["git", "patch-id", "--stable"], input=path.read_bytes(), capture_output=True,
                         check=True).stdout.decode()
    return out.split()[0]


def report(run: Path) -> dict:
    text = (run / "bisect.txt").read_text()
    md = (run / "bisect.md").read_text()
    assert max(len(line) for line in (text + md).splitlines()) <= 100, text + md
    return yaml.safe_load((run / "bisect.yml").read_text()) | {"text": text}


def test_the_culprit_is_located_around_a_patch_that_does_not_build_and_resumes(tmp_path):
    assert len(PATCHES) == 5
    mbox = tmp_path.parent / f"{tmp_path.name}-series.mbx"
    mbox.write_text((SERIES / "0000-cover-letter.patch").read_text() + "".join(p.read_text() for p in PATCHES))
    proc = bisect(tmp_path, bisect_series=[{"path": str(mbox)}])
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-2000:]
    run = only_run_dir(tmp_path)
    rep = report(run)
    # the cover letter is left out: 5 patches, in order, with git's patch-ids
    assert [p["patch_id"] for p in rep["series"]] == [patch_id(p) for p in PATCHES], rep["series"]
    assert rep["result"]["verdict"] == "culprit" and rep["result"]["first"] == 4, rep["result"]
    (culprit,) = rep["culprit"]["patches"]
    assert culprit["subject"] == CULPRIT and culprit["patch_id"] == patch_id(PATCHES[3]), culprit
    steps = {s["prefix"]: s for s in rep["steps"]}
    # the whole series, the middle (2 does not build: skipped, named), then 3 and 4
    assert [s["prefix"] for s in rep["steps"]] == [5, 2, 3, 4], rep["steps"]
    assert steps[2]["decision"] == "skip" and "does not apply or build" in steps[2]["reason"], steps[2]
    assert steps[5]["decision"] == "moved" and steps[5]["direction"] == "slower", steps[5]
    assert steps[3]["decision"] == "not_moved", steps[3]
    assert -THRESHOLD < steps[3]["ci"][0] and steps[3]["ci"][1] < THRESHOLD, steps[3]
    assert steps[4]["decision"] == "moved" and steps[4]["ci"][0] > 0, steps[4]
    # at least the 4000 ns the patch waits, less than twice it (the emulation's overhead)
    assert 3000 < rep["culprit"]["delta_ns_per_packet"] < 8000, rep["culprit"]
    for s in (steps[3], steps[4], steps[5]):
        boots = sorted(d.name for d in (run / f"step-{s['prefix']:02d}").glob("boot-*"))
        assert len(boots) == 2 * s["boots"] and s["boots"] in (3, 5, 8), (s, boots)
    assert rep["cost"]["boots"] == sum(2 * steps[k]["boots"] for k in (3, 4, 5)), rep["cost"]
    assert CULPRIT in rep["text"] and "patch-id " + culprit["patch_id"] in rep["text"], rep["text"]
    assert "skipped (do not apply, build or boot): prefix 1-2" in rep["text"], rep["text"]
    assert not (run / "INCOMPLETE").exists()

    # Resume: step 4's record and its last boot are gone (as after a kill during it); the same run id
    # reuses steps 5, 2 and 3 and the boots of step 4 that are left.
    step4 = run / "step-04"
    (step4 / "STEP.json").unlink()
    last = sorted(step4.glob("boot-*"))[-1]
    kept = sorted(step4.glob("boot-*"))[0].stat().st_ino
    for f in last.iterdir():
        f.unlink()
    last.rmdir()
    again = bisect(tmp_path, bisect_series=[{"path": str(mbox)}], bisect_run_id=run.name)
    assert again.returncode == 0, again.stdout[-8000:] + again.stderr[-2000:]
    assert re.search(r"3\s+steps\s+already\s+done", again.stdout), again.stdout[-6000:]
    assert re.findall(r"step \d: prefix 1-(\d) of", again.stdout) == ["4"], again.stdout[-6000:]
    assert sorted(step4.glob("boot-*"))[0].stat().st_ino == kept
    assert report(run)["result"]["first"] == 4


def test_a_null_series_ends_with_no_patch_moving_by_the_threshold(tmp_path):
    proc = bisect(tmp_path, bisect_series=[{"path": str(p)} for p in PATCHES[:3]])
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-2000:]
    rep = report(only_run_dir(tmp_path))
    assert rep["result"]["verdict"] == "no_culprit" and rep["culprit"] is None, rep["result"]
    assert [s["prefix"] for s in rep["steps"]] == [3] and rep["steps"][0]["decision"] == "not_moved", rep["steps"]
    assert f"no patch moves ns/packet by >= {THRESHOLD:.0f} ns/packet" in rep["text"].splitlines()[0], rep["text"]
    assert rep["threshold_ns"] == THRESHOLD and rep["threshold_source"] == "given"
