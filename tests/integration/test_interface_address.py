# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The interface_address module on a real veth in a namespace of its own: IPv4 and IPv6 test addresses
added (the interface brought up), recorded in the ledger before, left alone on a re-run; undone by the
module (state=absent) and by the ledger (state=cleaned), the interface down again as it was found; an
address someone else configured refused and kept; check mode and bad input change nothing."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from test_neighbour import run_module, sh

pytestmark = pytest.mark.root

V4, V6 = "198.18.10.1/24", "2001:db8:10::1/64"


@pytest.fixture
def ns(tmp_path):
    name = f"xdplab-ad-{uuid.uuid4().hex[:8]}"
    sh("ip", "netns", "add", name)
    sh("ip", "-n", name, "link", "add", "ad0", "type", "veth", "peer", "name", "ad1")
    sh("ip", "-n", name, "link", "set", "ad1", "up")  # ad0 stays down: the module brings it up
    yield name, str(tmp_path / "ledger")
    sh("ip", "netns", "delete", name, check=False)


def state(ns: str) -> tuple[set[str], bool]:
    """ad0's addresses (with prefix, link-local left out) and whether it is administratively up."""
    link = json.loads(sh("ip", "-n", ns, "-j", "addr", "show", "dev", "ad0").stdout)[0]
    addrs = {f"{a['local']}/{a['prefixlen']}" for a in link.get("addr_info", []) if a.get("scope") != "link"}
    return addrs, "UP" in link["flags"]


def ledger_entries(ledger: str) -> dict[str, dict]:
    if not Path(ledger).exists():
        return {}
    return {e["key"]["address"]: e for e in (json.loads(p.read_text()) for p in Path(ledger).iterdir())}


def test_added_recorded_and_cleaned_by_the_ledger(ns):
    name, ledger = ns
    for addr in (V4, V6):
        out = run_module(name, "interface_address", {"interface": "ad0", "address": addr, "up": True,
                                                     "ledger_dir": ledger, "run_id": "20261202T000000Z-abcdef"})
        assert out.get("changed") is True and not out.get("failed"), out
    assert state(name) == ({V4, V6}, True)
    entries = ledger_entries(ledger)
    assert set(entries) == {V4, V6}
    assert entries[V4]["set_up"] is True and entries[V6]["set_up"] is False, entries
    assert all(e["kind"] == "addr" and e["netns"] == name and e["key"]["interface"] == "ad0" for e in entries.values())

    again = run_module(name, "interface_address", {"interface": "ad0", "address": V4, "up": True,
                                                   "ledger_dir": ledger})
    assert again.get("changed") is False, again

    cleaned = run_module(name, "ledger", {"dir": ledger, "state": "cleaned"})
    assert not cleaned.get("failed"), cleaned
    assert state(name) == (set(), False)
    assert ledger_entries(ledger) == {}


def test_module_absent_puts_back_what_it_found(ns):
    name, ledger = ns
    sh("ip", "-n", name, "link", "set", "ad0", "up")  # up already: absent leaves it up
    assert run_module(name, "interface_address", {"interface": "ad0", "address": V6, "up": True,
                                                  "ledger_dir": ledger}).get("changed") is True
    assert ledger_entries(ledger)[V6]["set_up"] is False
    out = run_module(name, "interface_address", {"interface": "ad0", "address": V6, "state": "absent",
                                                 "ledger_dir": ledger})
    assert out.get("changed") is True and out["after"] == {"present": False, "up": True}, out
    assert state(name) == (set(), True)
    assert ledger_entries(ledger) == {}
    # without a ledger entry, absent touches nothing
    sh("ip", "-n", name, "addr", "add", V4, "dev", "ad0")
    out = run_module(name, "interface_address", {"interface": "ad0", "address": V4, "state": "absent",
                                                 "ledger_dir": ledger})
    assert out.get("changed") is False and state(name) == ({V4}, True), out


def test_someone_elses_address_refused_and_kept(ns):
    name, ledger = ns
    sh("ip", "-n", name, "addr", "add", "198.18.10.1/28", "dev", "ad1")  # same IP, other port and prefix
    out = run_module(name, "interface_address", {"interface": "ad0", "address": V4, "up": True,
                                                 "ledger_dir": ledger})
    assert out.get("failed") and "198.18.10.1" in out["msg"] and "already configured" in out["msg"], out
    assert state(name) == (set(), False)
    assert ledger_entries(ledger) == {}
    ad1 = json.loads(sh("ip", "-n", name, "-j", "addr", "show", "dev", "ad1").stdout)[0]["addr_info"]
    assert any(a["local"] == "198.18.10.1" and a["prefixlen"] == 28 for a in ad1)


@pytest.mark.parametrize(("address", "needle"), [("198.18.10.1", "prefix length"),
                                                 ("198.18.10.300/24", "198.18.10.300"), ("fe80::zz/64", "fe80::zz")])
def test_bad_address_named_nothing_changed(ns, address, needle):
    name, ledger = ns
    out = run_module(name, "interface_address", {"interface": "ad0", "address": address, "up": True,
                                                 "ledger_dir": ledger})
    assert out.get("failed") and needle in out["msg"], out
    assert state(name) == (set(), False) and ledger_entries(ledger) == {}


def test_check_mode_changes_and_records_nothing(ns):
    name, ledger = ns
    out = run_module(name, "interface_address", {"interface": "ad0", "address": V4, "up": True,
                                                 "ledger_dir": ledger, "_ansible_check_mode": True})
    assert out.get("changed") is True and out["after"] == {"present": True, "up": True}, out
    assert state(name) == (set(), False) and ledger_entries(ledger) == {}
