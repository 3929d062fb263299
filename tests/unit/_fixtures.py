# SPDX-License-Identifier: GPL-3.0-or-later
"""Reading the captured tool output under tests/unit/fixtures: every file's first line says where it
came from (``#xdplab-fixture: ...``); a test reads the text without that line."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
MARK = "#xdplab-fixture:"


def read_fixture(rel: str | Path) -> str:
    """The fixture's text without its provenance line(s); AssertionError when its first line is not one."""
    path = FIXTURES / rel
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert lines and lines[0].startswith(MARK), f"{path.relative_to(FIXTURES)} does not say where it came from"
    return "".join(ln for ln in lines if not ln.startswith(MARK))
