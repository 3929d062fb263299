# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""vmlab_link on real taps in a namespace of its own (the taps a guest's QEMU would open, made here
with `ip tuntap`): the wire made both ways and left alone on a re-run, each tap's ledger entry written
with the filter's preference and handle, and `ledger state=cleaned` taking off exactly the wire: a
clsact qdisc found in place stays, and so does someone else's filter on it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.root

ROOT = Path(__file__).resolve().parents[2]
COLLECTIONS = ROOT / ".collections"
MODULES = ROOT / "plugins" / "modules"
# lab 7: guest 0's igb NIC and guest 1's, joined by link "wire0"; guest 0's second NIC and guest 1's too
GUESTS = [{"name": "vmgen", "index": 0, "nics": [{"model": "igb", "name": "igb0", "link": "wire0"},
                                                 {"model": "virtio-net-pci", "name": "vnet0", "link": "wire1"}]},
          {"name": "vmdut", "index": 1, "nics": [{"model": "igb", "name": "igb0", "link": "wire0"},
                                                 {"model": "virtio-net-pci", "name": "vnet0", "link": "wire1"}]}]
TAPS = ["vl7g0n1", "vl7g1n1", "vl7g0n2", "vl7g1n2"]


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True, check=check)


def run_module(name: str, args: dict) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="vmlab-link-args-", delete=False) as f:
        json.dump({"ANSIBLE_MODULE_ARGS": args}, f)
    try:
        r = subprocess.run([sys.executable, str(MODULES / f"{name}.py"), f.name], capture_output=True, text=True,
                           check=False, env={**os.environ, "PYTHONPATH": str(COLLECTIONS)})
    finally:
        os.unlink(f.name)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    assert lines, f"no JSON from {name}: rc={r.returncode} stderr={r.stderr!r}"
    return json.loads(lines[-1])


def filters(ns: str, tap: str) -> list[dict]:
    """The tap's ingress filters with options (the u32 hash table headers left out)."""
    out = json.loads(sh("tc", "-n", ns, "-j", "filter", "show", "dev", tap, "ingress").stdout or "[]")
    return [f for f in out if "options" in f and f["options"].get("fh", "").count(":") == 2]


def has_clsact(ns: str, tap: str) -> bool:
    qdiscs = json.loads(sh("tc", "-n", ns, "-j", "qdisc", "show", "dev", tap).stdout or "[]")
    return any(q.get("kind") == "clsact" for q in qdiscs)


@pytest.fixture
def lab(tmp_path):
    ns = f"xdplab-vl-{uuid.uuid4().hex[:8]}"
    sh("ip", "netns", "add", ns)
    for tap in TAPS:
        sh("ip", "-n", ns, "tuntap", "add", "dev", tap, "mode", "tap")
    yield ns, str(tmp_path / "ledger")
    sh("ip", "netns", "delete", ns, check=False)


def test_wire_recorded_then_cleaned_leaving_what_was_there(lab):
    ns, ledger = lab
    # found in place on one tap: a clsact qdisc with someone else's filter (pref 5, classifying ICMP)
    sh("tc", "-n", ns, "qdisc", "add", "dev", "vl7g1n2", "clsact")
    sh("tc", "-n", ns, "filter", "add", "dev", "vl7g1n2", "ingress", "protocol", "ip", "pref", "5", "u32",
       "match", "ip", "protocol", "1", "0xff", "flowid", "1:1")
    args = {"netns": ns, "lab_id": 7, "guests": GUESTS, "ledger_dir": ledger, "run_id": "20261202T000000Z-abcdef"}

    out = run_module("vmlab_link", args)
    assert out.get("changed") is True, out
    assert sorted(map(sorted, out["pairs"])) == [["vl7g0n1", "vl7g1n1"], ["vl7g0n2", "vl7g1n2"]]
    peers = {"vl7g0n1": "vl7g1n1", "vl7g1n1": "vl7g0n1", "vl7g0n2": "vl7g1n2", "vl7g1n2": "vl7g0n2"}
    for tap, peer in peers.items():
        ours = [f for f in filters(ns, tap) if f["pref"] == 1]
        assert len(ours) == 1, (tap, ours)
        assert ours[0]["options"]["actions"][0]["to_dev"] == peer

    entries = {}
    for path in Path(ledger).iterdir():
        data = json.loads(path.read_text())
        entries[data["key"]["interface"]] = data
    assert set(entries) == set(TAPS)
    for tap, entry in entries.items():
        assert (entry["kind"], entry["netns"], entry["pref"], entry["filter"]) == ("tc", ns, 1, "u32"), entry
        assert entry["created_clsact"] is (tap != "vl7g1n2"), entry
        assert entry["run_id"] == args["run_id"]

    again = run_module("vmlab_link", args)
    assert again.get("changed") is False, again

    cleaned = run_module("ledger", {"dir": ledger, "state": "cleaned"})
    assert not cleaned.get("failed"), cleaned
    assert list(Path(ledger).iterdir()) == []
    for tap in TAPS:
        assert not [f for f in filters(ns, tap) if f["pref"] == 1], tap
    # the qdisc found in place stays with its owner's filter; the ones the wire made are gone
    assert has_clsact(ns, "vl7g1n2")
    theirs = filters(ns, "vl7g1n2")
    assert [f["pref"] for f in theirs] == [5], theirs
    assert [tap for tap in TAPS if has_clsact(ns, tap)] == ["vl7g1n2"]


def test_foreign_filter_at_our_preference_refused_and_kept(lab):
    ns, ledger = lab
    sh("tc", "-n", ns, "qdisc", "add", "dev", "vl7g0n1", "clsact")
    sh("tc", "-n", ns, "filter", "add", "dev", "vl7g0n1", "ingress", "protocol", "ip", "pref", "1", "u32",
       "match", "ip", "protocol", "17", "0xff", "flowid", "1:1")
    before = filters(ns, "vl7g0n1")
    out = run_module("vmlab_link", {"netns": ns, "lab_id": 7, "guests": GUESTS, "ledger_dir": ledger})
    assert out.get("failed") and "vl7g0n1" in out["msg"] and "preference 1" in out["msg"], out
    assert filters(ns, "vl7g0n1") == before


def test_stale_wire_of_ours_is_replaced(lab):
    ns, ledger = lab
    args = {"netns": ns, "lab_id": 7, "guests": GUESTS, "ledger_dir": ledger}
    assert run_module("vmlab_link", args).get("changed") is True
    # a guest's taps re-made by a restarted QEMU keep their names; here a wire pointing elsewhere
    sh("tc", "-n", ns, "filter", "del", "dev", "vl7g0n1", "ingress", "pref", "1", "u32")
    sh("tc", "-n", ns, "filter", "add", "dev", "vl7g0n1", "ingress", "protocol", "all", "pref", "1", "u32",
       "match", "u32", "0", "0", "action", "mirred", "egress", "redirect", "dev", "vl7g0n2")
    out = run_module("vmlab_link", args)
    assert out.get("changed") is True, out
    ours = filters(ns, "vl7g0n1")
    assert len(ours) == 1 and ours[0]["options"]["actions"][0]["to_dev"] == "vl7g1n1", ours


def test_check_mode_records_and_changes_nothing(lab):
    ns, ledger = lab
    out = run_module("vmlab_link", {"netns": ns, "lab_id": 7, "guests": GUESTS, "ledger_dir": ledger,
                                    "_ansible_check_mode": True})
    assert out.get("changed") is True, out
    assert not Path(ledger).exists() or list(Path(ledger).iterdir()) == []
    assert not any(has_clsact(ns, tap) for tap in TAPS)


def test_missing_tap_named_and_nothing_recorded(lab):
    ns, ledger = lab
    sh("ip", "-n", ns, "link", "delete", "vl7g1n2")
    out = run_module("vmlab_link", {"netns": ns, "lab_id": 7, "guests": GUESTS, "ledger_dir": ledger})
    assert out.get("failed") and "vl7g1n2" in out["msg"] and "vmdut" in out["msg"], out
    # every tap is checked before any is wired: the pair whose taps exist is not half made either
    assert not Path(ledger).exists() or list(Path(ledger).iterdir()) == []
    assert not any(has_clsact(ns, tap) for tap in TAPS if tap != "vl7g1n2")
