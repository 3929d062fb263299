# SPDX-License-Identifier: GPL-3.0-or-later
"""The neighbour module on a real veth in a namespace of its own: a permanent entry made, read back and
left alone on a re-run; undone by the module (state=absent) and by the ledger (state=cleaned), an entry
found in place coming back exactly and a learned one never recreated; bad input refused before any
change."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COLLECTIONS = ROOT / ".collections"
MODULES = ROOT / "plugins" / "modules"
ADDR, OURS, THEIRS = "198.18.0.2", "02:00:00:00:00:02", "02:00:00:00:00:99"


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True, check=check)


def run_module(ns: str, name: str, args: dict) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="neigh-args-", delete=False) as f:
        json.dump({"ANSIBLE_MODULE_ARGS": args}, f)
    try:
        r = subprocess.run(["ip", "netns", "exec", ns, sys.executable, str(MODULES / f"{name}.py"), f.name],
                           capture_output=True, text=True, check=False,
                           env={**os.environ, "PYTHONPATH": str(COLLECTIONS)})
    finally:
        os.unlink(f.name)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    assert lines, f"no JSON from {name}: rc={r.returncode} stderr={r.stderr!r}"
    return json.loads(lines[-1])


def table(ns: str) -> list[dict]:
    """The port's neighbour entries for ADDR as ip shows them (dst, lladdr, state)."""
    out = json.loads(sh("ip", "-n", ns, "-j", "neigh", "show", "to", ADDR, "dev", "nb0").stdout or "[]")
    return [{"lladdr": e.get("lladdr"), "state": e.get("state")} for e in out]


@pytest.fixture
def ns(tmp_path):
    name = f"xdplab-nb-{uuid.uuid4().hex[:8]}"
    sh("ip", "netns", "add", name)
    sh("ip", "-n", name, "link", "add", "nb0", "type", "veth", "peer", "name", "nb1")
    for dev in ("nb0", "nb1"):
        sh("ip", "-n", name, "link", "set", dev, "up")
    sh("ip", "-n", name, "addr", "add", "198.18.0.1/24", "dev", "nb0")
    yield name, str(tmp_path / "ledger")
    sh("ip", "netns", "delete", name, check=False)


def test_made_once_then_left_alone_then_undone(ns):
    name, ledger = ns
    args = {"interface": "nb0", "address": ADDR, "lladdr": OURS, "ledger_dir": ledger, "run_id": "t1"}
    res = run_module(name, "neighbour", args)
    assert res["changed"] is True and res["before"] is None, res
    assert table(name) == [{"lladdr": OURS, "state": ["PERMANENT"]}]
    (entry,) = [json.loads(p.read_text()) for p in Path(ledger).glob("neigh-*.json")]
    assert entry["key"] == {"address": ADDR, "interface": "nb0"} and entry["previous"] is None
    again = run_module(name, "neighbour", args)
    assert again["changed"] is False and again["before"] == {"lladdr": OURS, "state": "permanent"}
    gone = run_module(name, "neighbour", {**args, "state": "absent"})
    assert gone["changed"] is True and table(name) == [] and list(Path(ledger).glob("neigh-*")) == []
    assert run_module(name, "neighbour", {**args, "state": "absent"})["changed"] is False


@pytest.mark.parametrize("undo", ["module", "ledger"])
def test_an_entry_found_in_place_comes_back_exactly(ns, undo):
    name, ledger = ns
    sh("ip", "-n", name, "neigh", "replace", ADDR, "lladdr", THEIRS, "nud", "permanent", "dev", "nb0")
    args = {"interface": "nb0", "address": ADDR, "lladdr": OURS, "ledger_dir": ledger}
    res = run_module(name, "neighbour", args)
    assert res["changed"] is True and res["before"] == {"lladdr": THEIRS, "state": "permanent"}
    assert table(name) == [{"lladdr": OURS, "state": ["PERMANENT"]}]
    # a second task of the same run keeps the first record: what was found, not ours
    run_module(name, "neighbour", {**args, "lladdr": "02:00:00:00:00:03"})
    if undo == "module":
        run_module(name, "neighbour", {**args, "state": "absent"})
    else:
        res = run_module(name, "ledger", {"state": "cleaned", "dir": ledger})
        assert not res.get("failed"), res
    assert table(name) == [{"lladdr": THEIRS, "state": ["PERMANENT"]}]
    assert list(Path(ledger).glob("neigh-*")) == []


def test_a_learned_entry_is_not_recreated_by_hand(ns):
    name, ledger = ns
    sh("ip", "-n", name, "neigh", "replace", ADDR, "lladdr", THEIRS, "nud", "stale", "dev", "nb0")
    res = run_module(name, "neighbour", {"interface": "nb0", "address": ADDR, "lladdr": OURS, "ledger_dir": ledger})
    assert res["before"] == {"lladdr": THEIRS, "state": "stale"}
    assert not run_module(name, "ledger", {"state": "cleaned", "dir": ledger}).get("failed")
    assert table(name) == []  # ours is gone; the kernel learns the neighbour again when it needs it


@pytest.mark.parametrize("bad, words", [
    ({"lladdr": "02:00:00:00:00"}, "lladdr must be a MAC address"),
    ({"lladdr": "02:00:00:00:00:02 nud noarp"}, "lladdr must be a MAC address"),
    ({"address": "198.18.0"}, "is not an IP address"),
    ({"interface": "nb0; ip link del nb0"}, "interface"),
    ({"interface": "nosuch0"}, "interface 'nosuch0' not found"),
])
def test_bad_input_is_named_and_nothing_changes(ns, bad, words):
    name, ledger = ns
    sh("ip", "-n", name, "neigh", "replace", ADDR, "lladdr", THEIRS, "nud", "permanent", "dev", "nb0")
    res = run_module(name, "neighbour", {"interface": "nb0", "address": ADDR, "lladdr": OURS, "ledger_dir": ledger,
                                         **bad})
    assert res.get("failed") is True and words in res["msg"], res
    assert table(name) == [{"lladdr": THEIRS, "state": ["PERMANENT"]}]
    assert not Path(ledger).exists() or list(Path(ledger).iterdir()) == []
