# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
name: ab_boot_plan
short_description: Interleaved boot order of an A/B kernel loop (A B B A ...), one replication unit per boot
version_added: 0.1.0
description:
  - "Returns one entry per boot, in the order to boot, C({boot, kernel, round, position, replicate}).
    C(boot) counts every boot from 1; C(round) is 1-based; C(replicate) is what the result records of
    that boot carry: C({level: boot, id: <boot, two digits>-<kernel>})."
  - C(abba) (the default) reverses every other round (A B, B A, A B, ...), so each kernel is booted as
    often before as after the other; C(abab) and C(rotated) are as in the
    P(xdplab.testbed.bench_schedule#filter) filter.
options:
  _input:
    description: The kernels (variant names), baseline first.
    type: list
    elements: str
    required: true
  boots:
    description: Boots per kernel, at least 2 (an interval over boots needs two per kernel).
    type: int
    default: 3
  order:
    description: C(abba), C(abab) or C(rotated).
    type: str
    default: abba
author: xdplab.testbed developers
"""

EXAMPLES = r"""
- name: Three boots of each kernel, A B B A A B
  ansible.builtin.debug:
    msg: "{{ ['baseline', 'patched'] | xdplab.testbed.ab_boot_plan(3) }}"
"""

RETURN = r"""
_value:
  description: The boots, in the order to boot them.
  type: list
  elements: dict
  sample:
    - {boot: 1, kernel: baseline, round: 1, position: 0, replicate: {level: boot, id: 01-baseline}}
    - {boot: 2, kernel: patched, round: 1, position: 1, replicate: {level: boot, id: 02-patched}}
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.module_utils.results._rounds import DEFAULT_BOOTS, boot_plan

MAX_BOOTS = 10000


def ab_boot_plan(kernels: list, boots: int = DEFAULT_BOOTS, order: str = "abba") -> list[dict]:
    try:
        if int(boots) > MAX_BOOTS:  # a plan is built whole: a huge count would exhaust memory
            raise ValueError(f"boots {boots!r} is more than {MAX_BOOTS}")
        return boot_plan(list(kernels), int(boots), order)
    except (TypeError, ValueError, OverflowError) as exc:
        raise AnsibleFilterError(f"ab_boot_plan: {exc}") from exc


class FilterModule:
    def filters(self):
        return {"ab_boot_plan": ab_boot_plan}
