# SPDX-License-Identifier: GPL-3.0-or-later
"""Modules stay thin: no module's main() is longer than MAX_MAIN_LINES (STYLE.md, "Modules").

A main that grows past it hides logic that belongs in a named helper or in module_utils with unit
tests; the argument spec can sit in a module-level ARGUMENT_SPEC.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODULES = sorted((ROOT / "plugins" / "modules").glob("*.py"))
MAX_MAIN_LINES = 60


def main_lines(source: str) -> int | None:
    """Lines of the module-level main(), decorators and docstring included; None without one."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name == "main":
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            return node.end_lineno - first + 1
    return None


def test_there_are_modules():
    assert len(MODULES) > 20


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.stem)
def test_main_is_short(path):
    lines = main_lines(path.read_text(encoding="utf-8"))
    assert lines is not None, f"plugins/modules/{path.name} has no main()"
    assert lines <= MAX_MAIN_LINES, (f"plugins/modules/{path.name}: main() is {lines} lines, more than "
                                     f"{MAX_MAIN_LINES}: move its steps into named helpers")


def test_a_long_main_is_measured():
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_MAIN_LINES))
    assert main_lines(f"import os\n\ndef main():\n{body}\n") == MAX_MAIN_LINES + 1
    assert main_lines("def other():\n    pass\n") is None
