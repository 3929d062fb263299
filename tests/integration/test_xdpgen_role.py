# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The generator role for real: build xdpgen from a copy of files/xdpgen into temporary dirs,
run again (nothing changes), change the source (rebuilt), check mode on a fresh host (nothing
built, nothing fails), and the verify step catching a binary that is not xdpgen."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from _roleplay import run_role

pytestmark = pytest.mark.root

ROOT = Path(__file__).resolve().parents[2]


def play(tmp_path: Path, extra: dict, check: bool = False) -> dict:
    return run_role("generator", tmp_path, extra, check=check)


def changed_tasks(out: dict) -> list[str]:
    return [t["task"]["name"].split(" : ", 1)[-1] for p in out["plays"] for t in p["tasks"]
            if t["hosts"].get("localhost", {}).get("changed")]


def failed_msgs(out: dict) -> list[str]:
    return [str(t["hosts"]["localhost"].get("msg")) for p in out["plays"] for t in p["tasks"]
            if t["hosts"].get("localhost", {}).get("failed")]


@pytest.fixture
def dirs(tmp_path):
    src = tmp_path / "files-xdpgen"
    src.mkdir()
    for name in ("xdpgen.c", "Makefile"):
        shutil.copy2(ROOT / "files/xdpgen" / name, src / name)
    return {"generator_install_deps": False, "generator_source_dir": str(src),
            "generator_build_dir": str(tmp_path / "bin"), "generator_src_dir": str(tmp_path / "src")}


def test_role_builds_once_then_only_on_change(tmp_path, dirs):
    first = play(tmp_path, dirs)
    assert first["rc"] == 0, failed_msgs(first) or first["stderr"]
    assert "Compile xdpgen if its source changed" in changed_tasks(first)
    binary = Path(dirs["generator_build_dir"]) / "xdpgen"
    assert subprocess.run([binary, "--version"], capture_output=True, text=True,  # noqa: S603
                          check=True).stdout.startswith("xdpgen ")

    second = play(tmp_path, dirs)
    assert second["rc"] == 0
    assert changed_tasks(second) == [], "second run changed something"
    assert first["stats"]["localhost"]["changed"] >= 1 and second["stats"]["localhost"]["changed"] == 0

    src = Path(dirs["generator_source_dir"]) / "xdpgen.c"
    src.write_text(src.read_text() + "\n/* changed by test_xdpgen_role */\n")
    mtime = binary.stat().st_mtime_ns
    third = play(tmp_path, dirs)
    assert third["rc"] == 0
    assert {"Copy the xdpgen sources", "Compile xdpgen if its source changed"} <= set(changed_tasks(third))
    assert binary.stat().st_mtime_ns > mtime


def test_role_check_mode_on_fresh_host_builds_nothing(tmp_path, dirs):
    out = play(tmp_path, dirs, check=True)
    assert out["rc"] == 0, failed_msgs(out) or out["stderr"]
    assert not (Path(dirs["generator_build_dir"]) / "xdpgen").exists()
    assert not Path(dirs["generator_src_dir"]).exists()


def test_role_verify_rejects_a_binary_that_is_not_xdpgen(tmp_path, dirs):
    # A build "succeeds" but produces something else: the verify step must say so.
    mk = Path(dirs["generator_source_dir"]) / "Makefile"
    mk.write_text("all:\n\tprintf '#!/bin/sh\\necho notxdpgen\\n' > $(OUT)/xdpgen && chmod +x $(OUT)/xdpgen\n")
    out = play(tmp_path, dirs)
    assert out["rc"] != 0
    assert any("does not answer as xdpgen" in m for m in failed_msgs(out)), failed_msgs(out)
