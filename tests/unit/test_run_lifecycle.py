# SPDX-License-Identifier: GPL-3.0-or-later
"""One run lifecycle: every entry playbook begins and ends through the xdplab.testbed.run role (the end
in an always section), nothing else takes the lock, adds the embedded hosts or cleans the ledgers,
and no YAML writes ledger entries or names tuning snapshot files."""

from __future__ import annotations

import pathlib
import re

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
ENTRY_PLAYBOOKS = ["bench.yml", "scenarios_run.yml", "bench_perf.yml", "pktgen_burst.yml", "teardown.yml"]
# What only the run role does.
RUN_ONLY = {"xdplab.testbed.run_lock", "ansible.builtin.add_host"}


def tasks(node, path=()):
    """(task, the keys of the blocks/sections that hold it) for every task in a play or task list."""
    if isinstance(node, list):
        for item in node:
            yield from tasks(item, path)
    elif isinstance(node, dict):
        for section in ("tasks", "pre_tasks", "post_tasks", "block", "rescue", "always", "handlers"):
            if section in node:
                yield from tasks(node[section], (*path, section))
        if not any(k in node for k in ("tasks", "block", "hosts", "import_playbook")):
            yield node, path


def run_role_calls(doc) -> list[tuple[str, tuple]]:
    out = []
    for task, path in tasks(doc):
        inc = task.get("ansible.builtin.include_role")
        if inc and inc.get("name") == "xdplab.testbed.run":
            out.append((inc.get("tasks_from"), path))
    return out


@pytest.mark.parametrize("name", ENTRY_PLAYBOOKS)
def test_entry_playbook_begins_and_ends_through_the_run_role(name):
    doc = yaml.safe_load((ROOT / "playbooks" / name).read_text())
    calls = run_role_calls(doc)
    assert [c for c, _dummy in calls] == ["begin", "end"], f"{name}: run role calls {calls}"
    end_path = calls[1][1]
    assert "always" in end_path or "post_tasks" in end_path, f"{name}: the end is not in an always section"


@pytest.mark.parametrize("path", sorted((ROOT / "playbooks").glob("*.yml")) + sorted((ROOT / "roles").glob(
    "[!r]*/tasks/*.yml")), ids=lambda p: str(p.relative_to(ROOT)))
def test_only_the_run_role_locks_adds_hosts_or_calls_the_ledger(path):
    rel = str(path.relative_to(ROOT))
    # The lab in a box has a lifecycle of its own (its guests outlive a run): its down step cleans the
    # lab's own ledger. Like everything else it never writes an entry by hand.
    lab = rel.startswith("roles/vmlab/")
    text = path.read_text()
    for task, _dummy in tasks(yaml.safe_load(text) or []):
        used = RUN_ONLY & set(task)
        assert not used, f"{rel}: {task.get('name')!r} uses {used}: that is the run role's (begin/end)"
        ledger = task.get("xdplab.testbed.ledger")
        if lab and ledger is not None:
            assert ledger.get("state") == "cleaned", f"{rel}: {task.get('name')!r} writes a ledger entry by hand"
            continue
        assert ledger is None, (f"{rel}: {task.get('name')!r} calls the ledger: its entries are the modules', "
                                "the undo is the run role's")
    # Tuning snapshot files are named by the tuning modules (Python); YAML never rebuilds the names.
    assert not re.search(r"/var/lib/xdplab/tuning/|\bnic-\{\{|(irq|host)-\{\{", text), rel


def test_run_role_variables_are_typed_and_prefixed():
    role = ROOT / "roles" / "run"
    defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text())
    private = yaml.safe_load((role / "vars" / "main.yml").read_text())
    specs = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    assert set(specs) == {"begin", "end"}
    typed = {k for spec in specs.values() for k in spec["options"]}
    assert set(defaults) == typed, f"untyped {set(defaults) - typed}, typed but no default {typed - set(defaults)}"
    assert all(k.startswith("run_") for k in defaults) and all(k.startswith("__run_") for k in private)
    for spec in specs.values():
        for name, opt in spec["options"].items():
            assert opt.get("type") and opt.get("description"), name
