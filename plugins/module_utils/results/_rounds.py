# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Interleaved rounds: the order in which a benchmark measures its configurations. Private to the
xdplab.testbed collection.

Measuring A A A then B B B puts any drift of the machine (thermal, other load, a slow leak) into the
difference between A and B. Rounds interleave them: every round measures every configuration once,
so drift falls on all alike, and each round is one replication unit (``replicate`` level "round").
"""

from __future__ import annotations

ORDERS = ("abab", "rotated")


def schedule(items: list, rounds: int, order: str = "abab") -> list[dict]:
    """[{"round": r, "item": x, "position": i}] for every round r (1-based) and item.

    abab: the same order every round (A B C A B C ...). rotated: round r starts (r-1) steps later
    (A B C, B C A, C A B, ...), so no configuration always runs first after a pause.
    """
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise ValueError(f"rounds must be an integer >= 1, got {rounds!r}")
    if order not in ORDERS:
        raise ValueError(f"round order must be one of {', '.join(ORDERS)}, got {order!r}")
    if not isinstance(items, list) or not items:
        raise ValueError(f"items must be a non-empty list, got {items!r}")
    out = []
    for r in range(rounds):
        shift = r % len(items) if order == "rotated" else 0
        for i, item in enumerate(items[shift:] + items[:shift]):
            out.append({"round": r + 1, "item": item, "position": i})
    return out
