# SPDX-License-Identifier: GPL-3.0-or-later
"""docs/architecture.md names every module, filter, module_utils package and common file, so a reader
finds where each piece sits in the loop; a new one that is not placed there fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def _stems(folder: str) -> list[str]:
    return sorted(p.stem for p in (ROOT / folder).glob("*.py") if not p.name.startswith("__"))


PIECES = ([("module", s) for s in _stems("plugins/modules")] + [("filter", s) for s in _stems("plugins/filter")]
          + [("common file", s) for s in _stems("plugins/module_utils/common")]
          + [("package", p.name) for p in sorted((ROOT / "plugins/module_utils").iterdir())
             if p.is_dir() and not p.name.startswith("__")])


@pytest.mark.parametrize(("what", "name"), PIECES, ids=lambda x: x)
def test_every_piece_is_placed(what, name):
    spelled = {"common file": (f"({name}", f" {name})", f"({name})"), "package": (f"    {name} ",)}.get(
        what, (f"`{name}`",))
    assert any(s in DOC for s in spelled), f"docs/architecture.md does not name the {what} {name}"


@pytest.mark.parametrize("playbook", ["ab.yml", "kselftest.yml", "teardown.yml"])
def test_the_loop_and_kselftest_are_there(playbook):
    assert f"playbooks/{playbook}" in DOC


def test_the_run_playbooks_named_are_those_that_begin_a_run():
    # The lifecycle paragraph lists the playbooks that begin and end a run through the run role, and says
    # which playbooks acting on test hosts do not.
    paragraph = DOC[DOC.index("Every run\nplaybook"):DOC.index("The state ledger on each host")]
    named = set(re.findall(r"`(\w+\.yml)`", paragraph))
    begin = {p.name for p in (ROOT / "playbooks").glob("*.yml") if "tasks_from: begin" in p.read_text()}
    assert "teardown.yml" in begin and "`playbooks/teardown.yml`" in paragraph
    assert named - {"kselftest.yml", "kernel_install.yml"} == begin - {"teardown.yml"}, (sorted(named), sorted(begin))
    for name in ("kselftest.yml", "kernel_install.yml"):
        assert (name in begin) != (name in paragraph), f"{name}: the paragraph says it is not a run playbook"
