# SPDX-License-Identifier: GPL-3.0-or-later
"""Every file under tests/unit/fixtures says where it came from in its first line (CONTRIBUTING: parsers
are tested against real captured tool output, each capture saying where and how it was captured)."""

from __future__ import annotations

import pytest
from _fixtures import FIXTURES, MARK, read_fixture

FILES = sorted(p.relative_to(FIXTURES) for p in FIXTURES.rglob("*") if p.is_file())


def test_the_fixtures_are_found():
    assert len(FILES) >= 47


@pytest.mark.parametrize("rel", FILES, ids=str)
def test_each_fixture_says_where_it_came_from(rel):
    first = (FIXTURES / rel).read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith(MARK) and len(first) > len(MARK) + 20, f"{rel}: first line {first[:80]!r}"
    read_fixture(rel)
