# SPDX-License-Identifier: GPL-3.0-or-later
"""The prose of Python source (docstrings and the DOCUMENTATION, EXAMPLES and RETURN blocks), for the
tests that look for values or names in code and not in what documents it."""

from __future__ import annotations

import ast

DOC_NAMES = {"DOCUMENTATION", "EXAMPLES", "RETURN"}


def prose_ids(tree: ast.AST) -> set[int]:
    """id() of every string constant of tree that is a docstring or a documentation block."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in DOC_NAMES for t in node.targets):
            skip.add(id(node.value))
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skip.add(id(first.value))
    return skip
