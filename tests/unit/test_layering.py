# SPDX-License-Identifier: GPL-3.0-or-later
"""The layering of plugins/module_utils (docs/architecture.md), checked by walking every import.

Each package may import only the packages listed for it; module_utils never imports modules, action
or other plugins; results never imports state; and no file sits outside a package.
"""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
MU = ROOT / "plugins" / "module_utils"
PREFIX = "ansible_collections.xdplab.testbed.plugins."

# package -> the other packages it may import (itself always allowed).
ALLOWED = {
    "common": set(),
    "state": {"common", "tuning", "xdp"},
    "testbed": {"common"},
    "xdp": {"common"},
    "kernel": {"common"},
    "tuning": {"common"},
    "traffic": {"common", "xdp"},
    "results": {"common", "traffic", "tuning", "xdp"},
}


def imports_of(path: pathlib.Path) -> list[str]:
    """Every ansible_collections.xdplab.testbed.plugins.* name imported by a file, lazy imports too."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PREFIX):
            names += [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names += [alias.name for alias in node.names if alias.name.startswith(PREFIX)]
    return [name[len(PREFIX):] for name in names]


def violations(package: str, imported: list[str]) -> list[str]:
    bad = []
    for name in imported:
        parts = name.split(".")
        if parts[0] != "module_utils":
            bad.append(f"imports plugins.{name} (module_utils never imports modules or plugins)")
        elif len(parts) > 1 and parts[1] != package and parts[1] not in ALLOWED[package]:
            allowed = sorted(ALLOWED[package]) or "nothing else"
            bad.append(f"imports module_utils.{parts[1]} ({package} may import {allowed})")
    return bad


def _files():
    return sorted(p for p in MU.rglob("*.py") if p.parent != MU)


def test_every_package_is_in_the_table():
    packages = {p.name for p in MU.iterdir() if p.is_dir() and not p.name.startswith("__")}
    assert packages == set(ALLOWED)
    for package in packages:
        doc = ast.get_docstring(ast.parse((MU / package / "__init__.py").read_text(encoding="utf-8")))
        assert doc, f"module_utils/{package}/__init__.py says nothing of what it holds"


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_each_package_states_the_imports_this_test_enforces(package):
    """The layering a reader finds at the top of a package is the one checked here, word for word."""
    doc = ast.get_docstring(ast.parse((MU / package / "__init__.py").read_text(encoding="utf-8"))) or ""
    match = re.search(r"^Imports from module_utils: (.+)\.$", doc, re.MULTILINE)
    assert match, f"module_utils/{package}/__init__.py has no line 'Imports from module_utils: ...'"
    stated = set() if match.group(1) == "nothing else" else set(match.group(1).split(", "))
    assert stated == ALLOWED[package]


def test_no_module_utils_file_outside_a_package():
    assert [p.name for p in MU.glob("*.py") if p.name != "__init__.py"] == []


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(MU)))
def test_imports_follow_the_layering(path):
    package = path.relative_to(MU).parts[0]
    assert violations(package, imports_of(path)) == []


def test_the_rule_catches_an_inversion(tmp_path):
    # A results file that imports the ledger, and one that imports a module: both must be named.
    src = tmp_path / "x.py"
    src.write_text("from ansible_collections.xdplab.testbed.plugins.module_utils.state import _ledger\n"
                   "def f():\n"
                   "    from ansible_collections.xdplab.testbed.plugins.modules.ledger import main\n")
    found = violations("results", imports_of(src))
    assert len(found) == 2 and "module_utils.state" in found[0] and "plugins.modules.ledger" in found[1]
