# SPDX-License-Identifier: GPL-3.0-or-later
"""CONTRIBUTING.md's recipes say how many files each takes and name them: the count is the number of
files named, and every file named exists (a placeholder such as <tool> stands for a new file in a folder
that exists). Recipe 4's count is also shown by a worked example in tests/unit/test_ledger_kinds.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEXT = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
RECIPES = re.findall(r"^## (Recipe \d+: .+?)\n(.*?)(?=^## |\Z)", TEXT, re.MULTILINE | re.DOTALL)
# "Files (7): `a`, `b`, ..." and "Files for <case> (+4): ..." paragraphs (up to a blank line).
FILES = re.compile(r"^Files(?: for [^(]+)? \((\+?\d+)\): (.*?)(?=\n\n|\nFiles|\Z)", re.MULTILINE | re.DOTALL)


def test_every_recipe_counts_its_files():
    assert len(RECIPES) >= 4
    for title, body in RECIPES:
        assert re.search(r"^Files \(\d+\): ", body, re.MULTILINE), f"{title}: no 'Files (N): ...' line"


@pytest.mark.parametrize(("title", "count", "paths"),
                         [(t, c, re.findall(r"`([^`]+)`", p)) for t, body in RECIPES for c, p in FILES.findall(body)],
                         ids=lambda x: x if isinstance(x, str) and x.startswith("Recipe") else None)
def test_the_count_is_the_files_named_and_they_exist(title, count, paths):
    assert int(count.lstrip("+")) == len(paths) == len(set(paths)), f"{title}: says {count}, names {paths}"
    for path in paths:
        fixed = path.split("<")[0]
        target = ROOT / fixed if "<" not in path else (ROOT / fixed).parent if not fixed.endswith("/") else ROOT / fixed
        assert target.exists(), f"{title}: {path} ({target.relative_to(ROOT)}) does not exist"
