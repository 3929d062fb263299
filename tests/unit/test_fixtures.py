# SPDX-License-Identifier: GPL-3.0-or-later
"""Every file under tests/unit/fixtures says where it came from in its first line (CONTRIBUTING: parsers
are tested against real captured tool output, each capture saying where and how it was captured).

Files kept byte for byte (a distribution's own files, which a first line would change) live in a
directory whose PROVENANCE file says, one line per file, where each came from."""

from __future__ import annotations

import pytest
from _fixtures import FIXTURES, MARK, read_fixture

BYTE_EXACT = sorted(p.parent for p in FIXTURES.rglob("PROVENANCE"))
FILES = sorted(p.relative_to(FIXTURES) for p in FIXTURES.rglob("*")
               if p.is_file() and not any(d in p.parents for d in BYTE_EXACT))


def test_the_fixtures_are_found():
    assert len(FILES) >= 47


@pytest.mark.parametrize("rel", FILES, ids=str)
def test_each_fixture_says_where_it_came_from(rel):
    first = (FIXTURES / rel).read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith(MARK) and len(first) > len(MARK) + 20, f"{rel}: first line {first[:80]!r}"
    read_fixture(rel)


@pytest.mark.parametrize("tree", BYTE_EXACT, ids=lambda d: str(d.relative_to(FIXTURES)))
def test_each_byte_exact_file_is_named_in_its_provenance(tree):
    listed = {ln.split(":", 1)[0] for ln in (tree / "PROVENANCE").read_text(encoding="utf-8").splitlines()
              if ln and not ln.startswith("#")}
    files = {str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file() and p.name != "PROVENANCE"}
    assert files, f"{tree}: no files"
    assert files == listed, f"{tree}: unlisted {sorted(files - listed)}, listed but absent {sorted(listed - files)}"
