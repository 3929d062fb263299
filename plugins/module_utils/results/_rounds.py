# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Interleaved rounds: the order in which a benchmark measures its configurations. Private to the
xdplab.testbed collection.

Measuring A A A then B B B puts any drift of the machine (thermal, other load, a slow leak) into the
difference between A and B. Rounds interleave them: every round measures every configuration once,
so drift falls on all alike, and each round is one replication unit (``replicate`` level "round").

Boots of an A/B loop (``boot_plan``) follow the same orders: each boot into a kernel is one unit
(``replicate`` level "boot"), and the mirrored order (A B B A A B ...) puts every kernel as often
before as after the other, so a drift that is linear in time falls on both alike.
"""

from __future__ import annotations

ORDERS = ("abab", "rotated", "abba")
MIN_BOOTS = 2
DEFAULT_BOOTS = 3


def schedule(items: list, rounds: int, order: str = "abab") -> list[dict]:
    """[{"round": r, "item": x, "position": i}] for every round r (1-based) and item.

    abab: the same order every round (A B C A B C ...). rotated: round r starts (r-1) steps later
    (A B C, B C A, C A B, ...), so no configuration always runs first after a pause. abba: every
    other round is reversed (A B C, C B A, A B C, ...); with two items it is A B B A A B.
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
        ordered = items[shift:] + items[:shift]
        if order == "abba" and r % 2:
            ordered = ordered[::-1]
        for i, item in enumerate(ordered):
            out.append({"round": r + 1, "item": item, "position": i})
    return out


def boot_plan(kernels: list, boots: int = DEFAULT_BOOTS, order: str = "abba") -> list[dict]:
    """The boots of an A/B loop, in order: [{"boot", "kernel", "round", "position", "replicate"}].

    ``boots`` is the number of boots per kernel (at least 2: an interval over boots needs two per
    kernel; 3 by default). ``boot`` counts all boots from 1; ``replicate`` is what the records of
    that boot carry, ``{"level": "boot", "id": "<boot, two digits>-<kernel>"}``, so the ids sort in
    boot order and name the kernel.
    """
    if isinstance(boots, bool) or not isinstance(boots, int) or boots < MIN_BOOTS:
        raise ValueError(f"boots per kernel must be an integer >= {MIN_BOOTS}, got {boots!r}")
    if not isinstance(kernels, list) or len(kernels) < 2:
        raise ValueError(f"kernels must be a list of at least two names, got {kernels!r}")
    names = [str(k) for k in kernels]
    if len(set(names)) != len(names):
        raise ValueError(f"kernels must be distinct, got {kernels!r}")
    out = []
    for i, step in enumerate(schedule(names, boots, order), start=1):
        kernel = step["item"]
        out.append({"boot": i, "kernel": kernel, "round": step["round"], "position": step["position"],
                    "replicate": {"level": "boot", "id": f"{i:02d}-{kernel}"}})
    return out
