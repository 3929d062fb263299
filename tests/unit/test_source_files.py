# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""source_files: sources into a build directory in one call, written only where they differ, so that
make on the target rebuilds only what changed (an unchanged file keeps its mtime)."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import _run_module
import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _source_files as sf

ROOT = Path(__file__).resolve().parents[2]


def run_module(args: dict, check: bool = False, diff: bool = False) -> dict:
    return _run_module.run_module("source_files", dict(args, _ansible_check_mode=check, _ansible_diff=diff))


def contents(**files: bytes) -> dict[str, str]:
    return {name.replace("_", "."): base64.b64encode(data).decode() for name, data in files.items()}


def args(dest: Path, **files: bytes) -> dict:
    return {"src": [f"/c/{n}" for n in contents(**files)], "dest": str(dest), "contents": contents(**files)}


def test_plan_writes_what_differs_and_chmods_what_only_has_another_mode():
    files = {"a.c": b"A", "b.c": b"B", "c.c": b"C", "d.c": b"D"}
    now = {"a.c": (sf.sha256(b"A"), 0o644), "b.c": (sf.sha256(b"old"), 0o644), "c.c": (sf.sha256(b"C"), 0o600),
           "d.c": None}
    assert sf.plan(files, now, 0o644) == {"write": ["b.c", "d.c"], "chmod": ["c.c"], "unchanged": ["a.c"]}


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "../x", "x\0"])
def test_names_that_are_not_plain_file_names_are_refused(name):
    with pytest.raises(sf.SourceFilesError, match="not a plain file name"):
        sf.check_name(name)


@pytest.mark.parametrize("mode", ["644x", "04755", "1777", "-1"])
def test_bad_modes_are_refused_by_value(mode):
    with pytest.raises(sf.SourceFilesError, match=repr(mode).replace("-", r"\-")):
        sf.parse_mode(mode)


def test_module_writes_once_then_leaves_unchanged_files_and_their_mtime_alone(tmp_path):
    res = run_module(args(tmp_path, Makefile=b"all:\n", tool_c=b"int main(void){return 0;}\n"))
    assert res["changed"] and res["written"] == ["Makefile", "tool.c"], res
    assert (tmp_path / "tool.c").read_bytes() == b"int main(void){return 0;}\n"
    assert oct((tmp_path / "tool.c").stat().st_mode & 0o777) == "0o644"
    old = 1_000_000_000
    for name in ("Makefile", "tool.c"):
        os.utime(tmp_path / name, (old, old))
    again = run_module(args(tmp_path, Makefile=b"all:\n", tool_c=b"int main(void){return 0;}\n"))
    assert not again["changed"] and again["unchanged"] == ["Makefile", "tool.c"], again
    changed = run_module(args(tmp_path, Makefile=b"all:\n", tool_c=b"int main(void){return 1;}\n"))
    assert changed["changed"] and changed["written"] == ["tool.c"], changed
    assert (tmp_path / "Makefile").stat().st_mtime == old and (tmp_path / "tool.c").stat().st_mtime > old
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]


def test_module_fixes_a_mode_without_rewriting(tmp_path):
    run_module(args(tmp_path, tool_c=b"x"))
    (tmp_path / "tool.c").chmod(0o600)
    ino = (tmp_path / "tool.c").stat().st_ino
    res = run_module(args(tmp_path, tool_c=b"x"))
    assert res["changed"] and res["chmod"] == ["tool.c"] and res["written"] == [], res
    assert (tmp_path / "tool.c").stat().st_ino == ino and (tmp_path / "tool.c").stat().st_mode & 0o777 == 0o644


def test_check_mode_reports_and_writes_nothing_with_a_diff(tmp_path):
    (tmp_path / "Makefile").write_bytes(b"old\n")
    res = run_module(args(tmp_path, Makefile=b"new\n", tool_c=b"x"), check=True, diff=True)
    assert res["changed"] and res["written"] == ["Makefile", "tool.c"], res
    assert (tmp_path / "Makefile").read_bytes() == b"old\n" and not (tmp_path / "tool.c").exists()
    old = sf.sha256(b"old\n")
    assert f"Makefile sha256:{old} mode 0644" in res["diff"]["before"]
    assert "tool.c absent" in res["diff"]["before"] and f"tool.c sha256:{sf.sha256(b'x')}" in res["diff"]["after"]
    # a directory an earlier task would create: everything would be written, nothing is
    fresh = run_module(args(tmp_path / "new", tool_c=b"x"), check=True)
    assert fresh["changed"] and fresh["written"] == ["tool.c"] and not (tmp_path / "new").exists(), fresh


def test_bad_input_names_the_value_and_touches_nothing(tmp_path):
    (tmp_path / "tool.c").mkdir()
    res = run_module(args(tmp_path, tool_c=b"x", Makefile=b"m"))
    assert res.get("failed") and "is not a regular file" in res["msg"] and str(tmp_path / "tool.c") in res["msg"], res
    assert not (tmp_path / "Makefile").exists()
    missing = run_module(args(tmp_path / "nope", tool_c=b"x"))
    assert missing.get("failed") and str(tmp_path / "nope") in missing["msg"], missing
    bad = run_module({"src": ["/c/x"], "dest": str(tmp_path), "contents": {"../x": "eA=="}})
    assert bad.get("failed") and "'../x'" in bad["msg"], bad
    mode = run_module(dict(args(tmp_path, Makefile=b"m"), mode="0o644"))
    assert mode.get("failed") and "'0o644'" in mode["msg"], mode
    assert not (tmp_path / "Makefile").exists()


@pytest.mark.parametrize(("data", "word"), [(2147483646, "is a int, not a base64 string"),
                                            ("not base64!", "is not valid base64"),
                                            (None, "is a NoneType")])
def test_contents_that_are_not_base64_strings_are_named(tmp_path, data, word):
    # found by tests/unit/test_hostile_input.py: an int reached base64 and raised TypeError out of the module
    with pytest.raises(sf.SourceFilesError, match="'tool.c'"):
        sf.decode("tool.c", data)
    res = run_module({"src": ["/c/tool.c"], "dest": str(tmp_path), "contents": {"tool.c": data, "Makefile": "bQ=="}})
    assert res.get("failed") and "'tool.c'" in res["msg"] and word in res["msg"], res
    assert not (tmp_path / "Makefile").exists()
