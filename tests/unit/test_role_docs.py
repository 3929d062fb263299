# SPDX-License-Identifier: GPL-3.0-or-later
"""Every role documents itself as `ansible-doc -t role` shows it: each option that defaults/main.yml
sets has that value as its `default` in meta/argument_specs.yml (not null), and each role has a
README with an example playbook that uses it."""

from __future__ import annotations

import pathlib
import re

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
ROLES = sorted(p.parent.parent.name for p in ROOT.glob("roles/*/meta/argument_specs.yml"))


def undocumented_defaults(role_dir: pathlib.Path) -> dict[str, tuple]:
    """option -> (argument_specs default, defaults/main.yml value) where they differ."""
    defaults_file = role_dir / "defaults" / "main.yml"
    defaults = (yaml.safe_load(defaults_file.read_text()) or {}) if defaults_file.exists() else {}
    specs = yaml.safe_load((role_dir / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    wrong = {}
    for entry in specs.values():
        for name, option in (entry.get("options") or {}).items():
            if name in defaults and option.get("default") != defaults[name]:
                wrong[name] = (option.get("default"), defaults[name])
    return wrong


def test_there_are_roles():
    assert len(ROLES) >= 9, ROLES


@pytest.mark.parametrize("role", ROLES)
def test_argument_specs_carry_the_real_defaults(role):
    wrong = undocumented_defaults(ROOT / "roles" / role)
    assert not wrong, f"roles/{role}: argument_specs default differs from defaults/main.yml: {wrong}"


def test_a_missing_default_is_seen(tmp_path):
    # The check must go red for a spec without the default its defaults/main.yml sets.
    (tmp_path / "defaults").mkdir()
    (tmp_path / "meta").mkdir()
    (tmp_path / "defaults" / "main.yml").write_text("x_repetitions: 3\n")
    (tmp_path / "meta" / "argument_specs.yml").write_text(
        "argument_specs:\n  main:\n    options:\n      x_repetitions: {type: int, description: n}\n")
    assert undocumented_defaults(tmp_path) == {"x_repetitions": (None, 3)}


@pytest.mark.parametrize("role", ROLES)
def test_role_has_a_readme_with_an_example(role):
    readme = ROOT / "roles" / role / "README.md"
    assert readme.exists(), f"roles/{role}/README.md is missing"
    text = readme.read_text()
    blocks = re.findall(r"```ya?ml\n(.*?)```", text, re.S)
    assert blocks, f"roles/{role}/README.md has no ```yaml example"
    plays = [yaml.safe_load(block) for block in blocks]
    uses = f"xdplab.testbed.{role}"
    assert any(uses in yaml.safe_dump(play) for play in plays), f"no example of roles/{role}/README.md uses {uses}"
    assert "ansible-doc -t role" in text, f"roles/{role}/README.md does not point to its options"
    options = {name for entry in yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())
               ["argument_specs"].values() for name in entry.get("options") or {}}
    unknown = {name for play in plays for name in _example_vars(play, uses)} - options
    assert not unknown, f"roles/{role}/README.md's example sets variables the role does not take: {sorted(unknown)}"


def _example_vars(node, uses: str) -> set[str]:
    """The vars an example passes to the role `uses` (a roles: entry or an include_role task)."""
    found: set[str] = set()
    if isinstance(node, list):
        for item in node:
            found |= _example_vars(item, uses)
    elif isinstance(node, dict):
        include = node.get("ansible.builtin.include_role") or {}
        if node.get("role") == uses or include.get("name") == uses:
            found |= set(node.get("vars") or {})
        for value in node.values():
            found |= _example_vars(value, uses)
    return found
