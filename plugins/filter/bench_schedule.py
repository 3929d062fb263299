# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
name: bench_schedule
short_description: Interleaved rounds of a list of configurations (ABAB, rotated or ABBA)
version_added: 0.1.0
description:
  - Returns one entry per round and configuration, C({round, item, position}), rounds 1-based.
  - C(abab) keeps the same order in every round; C(rotated) starts each round one step later;
    C(abba) reverses every other round (A B, B A, A B, ...).
options:
  _input:
    description: The configurations (scenario names, variants, ...), in their base order.
    type: list
    elements: raw
    required: true
  rounds:
    description: Number of rounds, at least 1.
    type: int
    required: true
  order:
    description: C(abab), C(rotated) or C(abba).
    type: str
    default: abab
author: xdplab.testbed developers
"""

EXAMPLES = r"""
- name: Four rounds of two scenarios, rotated
  ansible.builtin.debug:
    msg: "{{ ['xdp_drop', 'tc_drop'] | xdplab.testbed.bench_schedule(4, 'rotated') }}"
"""

RETURN = r"""
_value:
  description: The schedule, in the order to run it.
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.module_utils.results._rounds import schedule

MAX_ROUNDS = 10000


def bench_schedule(items: list, rounds: int, order: str = "abab") -> list[dict]:
    try:
        if int(rounds) > MAX_ROUNDS:  # a schedule is built whole: a huge count would exhaust memory
            raise ValueError(f"rounds {rounds!r} is more than {MAX_ROUNDS}")
        return schedule(list(items), int(rounds), order)
    except (TypeError, ValueError, OverflowError) as exc:
        raise AnsibleFilterError(f"bench_schedule: {exc}") from exc


class FilterModule:
    def filters(self):
        return {"bench_schedule": bench_schedule}
