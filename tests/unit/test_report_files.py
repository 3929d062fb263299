# SPDX-License-Identifier: GPL-3.0-or-later
"""bench_report leaves a run's own files alone unless results names that run, and is idempotent:
a re-run that renders the same bytes reports changed=false and leaves dest untouched."""

from __future__ import annotations

import os

import pytest
from test_report import ansible, put


@pytest.fixture
def run(tmp_path):
    for size, pps in ((64, 5.0e6), (128, 4.8e6)):
        put(tmp_path / "runs" / "run1", params={"pkt_size": size}, samples=[pps, pps * 1.001, pps * 0.999])
    own = tmp_path / "runs" / "run1" / "report.txt"
    own.write_text("the run's own report\n")
    return tmp_path / "runs" / "run1"


@pytest.mark.parametrize("fmt", ["text", "png"])
def test_rerun_is_not_changed(run, tmp_path, fmt):
    out = tmp_path / "out"
    out.mkdir()
    dest = out / f"report.{fmt}"
    args = {"results": [str(run)], "format": fmt, "dest": str(dest)}
    rc, res = ansible("bench_report", args)
    assert rc == 0 and res["changed"] is True, res
    before = os.stat(dest)
    rc, res = ansible("bench_report", args)
    assert rc == 0 and res["changed"] is False, res
    after = os.stat(dest)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert os.listdir(out) == [dest.name]  # no temp file left
    rc, res = ansible("bench_report", dict(args, _ansible_check_mode=True))
    assert rc == 0 and res["changed"] is False, res


@pytest.mark.parametrize("how", ["record files", "parent directory"])
def test_a_runs_own_report_is_not_replaced(run, how):
    records = sorted(str(p) for p in run.glob("*.json"))
    results = [records[0]] if how == "record files" else [str(run.parent)]
    rc, res = ansible("bench_report", {"results": results, "format": "text", "dest": str(run / "report.txt")})
    assert rc != 0 and "whose own files this report must not replace" in res["msg"], res
    assert (run / "report.txt").read_text() == "the run's own report\n"


def test_the_run_named_by_results_gets_its_report(run):
    rc, res = ansible("bench_report", {"results": [str(run)], "format": "text", "dest": str(run / "report.txt")})
    assert rc == 0 and res["changed"] is True, res
    assert (run / "report.txt").read_text().startswith("Environment")


def test_a_directory_dest_gets_each_format_under_its_own_name(run, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    rc, res = ansible("bench_report", {"results": [str(run)], "dest": str(out)})
    assert rc == 0 and res["changed"] is True, res
    names = {"text": "report.txt", "markdown": "report.md", "csv": "report.csv", "png": "report.png",
             "html": "report.html"}
    assert res["files"] == {fmt: str(out / name) for fmt, name in names.items()}, res["files"]
    assert sorted(os.listdir(out)) == sorted(names.values())
    assert (out / "report.txt").read_text().startswith("Environment")
    assert (out / "report.png").read_bytes().startswith(b"\x89PNG")
    # the same again: nothing changes; some formats only: those files
    rc, res = ansible("bench_report", {"results": [str(run)], "dest": str(out)})
    assert rc == 0 and res["changed"] is False, res
    rc, res = ansible("bench_report", {"results": [str(run)], "dest": str(out), "format": ["csv", "markdown"]})
    assert rc == 0 and res["files"] == {"csv": str(out / "report.csv"), "markdown": str(out / "report.md")}, res


def test_several_formats_into_one_file_are_refused_naming_dest(run, tmp_path):
    dest = tmp_path / "report.txt"
    rc, res = ansible("bench_report", {"results": [str(run)], "dest": str(dest), "format": ["text", "csv"]})
    assert rc != 0 and f"dest '{dest}' must be an existing directory" in res["msg"], res
    assert not dest.exists()
