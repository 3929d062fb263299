# SPDX-License-Identifier: GPL-3.0-or-later
"""README's support table: every row names what checks it, tests that exist, or says plainly that
nothing here tests it."""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
UNTESTED = "documented, not tested here"


def support_rows(text: str) -> list[list[str]]:
    section = text.split("\n## Support\n", 1)[1].split("\n## ", 1)[0]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in section.splitlines()
            if line.startswith("|")]
    assert rows and rows[0] == ["what", "supported", "checked by"], rows[:1]
    return rows[2:]


def row_problems(row: list[str]) -> list[str]:
    what, _supported, checked = row
    named = [name for name in re.findall(r"`([^`]+)`", checked) if "/" in name]
    missing = [name for name in named if not (ROOT / name).exists()]
    problems = [f"{what}: names {name}, which does not exist" for name in missing]
    if not named and checked != UNTESTED:
        problems.append(f"{what}: neither a test nor {UNTESTED!r}: {checked!r}")
    return problems


def test_every_row_is_checked_or_marked():
    rows = support_rows((ROOT / "README.md").read_text())
    assert len(rows) >= 10
    problems = [problem for row in rows for problem in row_problems(row)]
    assert not problems, problems
    for needed in ("controller Python", "ansible-core", "target OS and Python", "live frames", "ethtool netlink",
                   "TX metadata", "zero copy: igb", "zero copy: virtio-net", "NICs measured"):
        assert any(needed in row[0] for row in rows), f"the support table has no row for {needed}"


def test_a_row_without_a_check_is_refused():
    assert row_problems(["kernel 5.4", "works", "yes"])
    assert row_problems(["kernel 5.4", "works", "`tests/integration/test_gone.py`"])
    assert not row_problems(["kernel 5.4", "works", UNTESTED])
