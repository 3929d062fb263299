# SPDX-License-Identifier: GPL-3.0-or-later
"""Every plugin's DOCUMENTATION, EXAMPLES and RETURN parse as YAML and say what ansible-doc needs."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = sorted(
    p for kind in ("modules", "connection", "filter") for p in (ROOT / "plugins" / kind).glob("*.py")
    if not p.name.startswith("_")
)


def doc_strings(path: Path) -> dict[str, str]:
    out = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id in ("DOCUMENTATION", "EXAMPLES", "RETURN"):
                    out[target.id] = node.value.value
    return out


@pytest.mark.parametrize("path", PLUGINS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_docs_parse(path):
    docs = doc_strings(path)
    assert "DOCUMENTATION" in docs, f"{path.name}: no DOCUMENTATION"
    doc = yaml.safe_load(docs["DOCUMENTATION"])
    assert doc.get("short_description"), path.name
    name_key = "module" if path.parent.name == "modules" else "name"
    assert doc.get(name_key) == path.stem, f"{path.name}: {name_key} is {doc.get(name_key)!r}"
    if path.parent.name == "connection":
        return
    examples = yaml.safe_load(docs.get("EXAMPLES", ""))
    assert examples, f"{path.name}: no examples"
    if path.parent.name == "modules":
        assert "RETURN" in docs, path.name
        yaml.safe_load(docs["RETURN"])
        assert {"check_mode", "diff_mode"} <= set(doc.get("attributes", {})), f"{path.name}: attributes"
        # examples call the module by its fully qualified name, never by the short one
        fqcn = f"xdplab.testbed.{path.stem}"
        tasks = [t for t in examples if isinstance(t, dict)]
        assert any(fqcn in t for t in tasks), f"{path.name}: no example uses {fqcn}"
        assert not any(path.stem in t for t in tasks), f"{path.name}: an example uses the short name"


def test_ansible_doc_renders_every_module():
    names = [f"xdplab.testbed.{p.stem}" for p in PLUGINS if p.parent.name == "modules"]
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-doc"), "-j", *names],
                          capture_output=True, text=True, cwd=ROOT, check=False)
    assert proc.returncode == 0 and "ERROR" not in proc.stderr, proc.stderr[-2000:]


@pytest.mark.parametrize("kind", ["filter", "connection"])
def test_ansible_doc_renders_every_plugin_of_a_kind(kind):
    """As the modules, in text: a description item written "a: b" is a YAML mapping that parses, then
    fails the rendering (ansible-test's ansible-doc test found one in a filter)."""
    names = [f"xdplab.testbed.{p.stem}" for p in PLUGINS if p.parent.name == kind]
    assert names, kind
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-doc"), "-t", kind, *names],
                          capture_output=True, text=True, cwd=ROOT, check=False)
    assert proc.returncode == 0 and "ERROR" not in proc.stderr, proc.stderr[-2000:]


MODULES = [p for p in PLUGINS if p.parent.name == "modules"]
FRAGMENT = ROOT / "plugins" / "doc_fragments" / "attributes.py"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_the_attributes_block_comes_from_the_shared_fragment(path):
    """What check_mode, diff_mode and action mean is written once (plugins/doc_fragments/attributes.py);
    a module says its support and, in details, what its own check mode or diff does."""
    doc = yaml.safe_load(doc_strings(path)["DOCUMENTATION"])
    fragments = doc.get("extends_documentation_fragment") or []
    assert "xdplab.testbed.attributes" in fragments, path.name
    attributes = doc.get("attributes") or {}
    assert {"check_mode", "diff_mode"} <= set(attributes), path.name
    for name, attribute in attributes.items():
        assert "description" not in attribute, f"{path.name}: attribute {name} repeats the fragment's description"
        assert attribute.get("support") in ("full", "partial", "none", "N/A"), f"{path.name}: {name}"
    assert ("action" in attributes) == ("xdplab.testbed.attributes.action" in fragments), path.name
    assert ("action" in attributes) == (ROOT / "plugins" / "action" / path.name).exists(), path.name
