# SPDX-License-Identifier: GPL-3.0-or-later
"""Neighbour entry states (testbed/_neighbours.py) and the MAC address check the neighbour module and
the ledger's neigh row share (common/_validate.lladdr)."""

from __future__ import annotations

import re

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _validate
from ansible_collections.xdplab.testbed.plugins.module_utils.state import _kinds
from ansible_collections.xdplab.testbed.plugins.module_utils.testbed import _neighbours


@pytest.mark.parametrize(("bits", "name"), [(0x80, "permanent"), (0x80 | 0x02, "permanent"), (0x40, "noarp"),
                                            (0x02 | 0x04, "reachable"), (0x04, "stale"), (0x20, "failed"),
                                            (0x00, "none")])
def test_the_most_lasting_state_names_a_bit_set(bits, name):
    assert _neighbours.nud_name(bits) == name
    assert _neighbours.nud_value(name) & bits == _neighbours.nud_value(name)


def test_an_unknown_state_is_refused_naming_it():
    with pytest.raises(_validate.ValidationError, match="got 'forever'"):
        _neighbours.nud_value("forever")


@pytest.mark.parametrize(("value", "want"), [(" 02:AA:00:00:00:01\n", "02:aa:00:00:00:01"),
                                             ("02:00:00:00:00:01", "02:00:00:00:00:01")])
def test_lladdr_is_taken_lower_case(value, want):
    assert _validate.lladdr(value) == want


@pytest.mark.parametrize("value", ["02:00:00:00:00", "02:00:00:00:00:01:02", "02-00-00-00-00-01", 2, None,
                                   "02:00:00:00:00:0g", "02:00:00:00:00:01\n02:00:00:00:00:02"])
def test_a_bad_lladdr_is_refused_naming_it(value):
    with pytest.raises(_validate.ValidationError, match=re.escape(f"got {value!r}")):
        _validate.lladdr(value)


def test_only_an_entry_set_by_hand_is_put_back():
    assert _kinds.restorable_neighbour({"lladdr": "02:00:00:00:00:01", "state": "permanent"}) == \
        {"lladdr": "02:00:00:00:00:01", "state": "permanent"}
    assert _kinds.restorable_neighbour({"lladdr": "02:00:00:00:00:01", "state": "reachable"}) is None
    assert _kinds.restorable_neighbour(None) is None
    with pytest.raises(_kinds.LedgerError, match="recorded neighbour lladdr"):
        _kinds.restorable_neighbour({"lladdr": "nonsense", "state": "noarp"})
