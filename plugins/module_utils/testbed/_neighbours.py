# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Neighbour (ARP/NDP) entry states by name, for the neighbour module. Private to the xdplab.testbed
collection. Putting a recorded entry back is the ledger's neigh row (state/_kinds.py)."""

from __future__ import annotations

from ansible_collections.xdplab.testbed.plugins.module_utils.common._validate import ValidationError

# NUD states by name (include/uapi/linux/neighbour.h).
NUD = {"incomplete": 0x01, "reachable": 0x02, "stale": 0x04, "delay": 0x08, "probe": 0x10, "failed": 0x20,
       "noarp": 0x40, "permanent": 0x80, "none": 0x00}


def nud_name(value: int) -> str:
    """The name of a NUD state bit set (the most lasting one when several are set)."""
    for name in ("permanent", "noarp", "reachable", "stale", "delay", "probe", "failed", "incomplete"):
        if value & NUD[name]:
            return name
    return "none"


def nud_value(name: str) -> int:
    """The bit of a NUD state name; ValidationError naming it when there is none."""
    if name not in NUD:
        raise ValidationError(f"neighbour state must be one of {', '.join(NUD)}, got {name!r}")
    return NUD[name]
