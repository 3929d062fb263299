# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
name: ab_guest_plan
short_description: What one boot of an A/B kernel loop runs inside the booted kernel (pktgen scenarios)
version_added: 0.2.0
description:
  - "Returns the plan that C(roles/scenarios/files/pktgen_guest.py) runs in one boot of
    C(playbooks/ab.yml): every scenario O(repetitions) times, interleaved, each record named by the
    boot's kernel (its C(variant)) and carrying the boot as its C(replicate)."
  - The scenarios are rows of one table, C(AB_SCENARIOS) in C(results/_ab_guest_plan.py),
    C(pktgen_xmit) (burst 1, a fresh skb per packet) and C(pktgen_burst) (burst 32 with xmit_more,
    clone_skb 64). An unknown name is an error naming it and the known ones.
options:
  _input:
    description: One entry of the P(xdplab.testbed.ab_boot_plan#filter) filter.
    type: dict
    required: true
  run_id:
    description: The loop's run id.
    type: str
    required: true
  scenarios:
    description: Scenario names, in the order of a round.
    type: list
    elements: str
    required: true
  repetitions:
    description: Repetitions of each scenario in the boot (not independent evidence, the boot is the unit).
    type: int
    default: 3
  duration:
    description: Seconds of each repetition.
    type: float
    default: 2
  base:
    description: pktgen settings common to every step (addresses, MACs, UDP ports).
    type: dict
  environment:
    description: Keys added to every record's environment (the kernel's series, say).
    type: dict
  expect_kernel:
    description: The release the booted kernel must report; another one fails the boot.
    type: str
author: xdplab.testbed developers
"""

EXAMPLES = r"""
- name: The plan of the first boot
  ansible.builtin.set_fact:
    plan: "{{ (['baseline', 'patched'] | xdplab.testbed.ab_boot_plan(3) | first)
              | xdplab.testbed.ab_guest_plan(run_id='ab-1', scenarios=['pktgen_xmit'], repetitions=3) }}"
"""

RETURN = r"""
_value:
  description: The guest plan (JSON for pktgen_guest.py).
  type: dict
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.module_utils.results._ab_guest_plan import boot_guest_plan


def ab_guest_plan(boot, run_id, scenarios, repetitions=3, duration=2.0, base=None, environment=None,
                  expect_kernel=None):
    try:
        return boot_guest_plan(str(run_id), dict(boot), list(scenarios), int(repetitions), float(duration),
                               base=base, environment=environment, expect_kernel=expect_kernel or None)
    except (OverflowError, TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"ab_guest_plan: {exc}") from exc


class FilterModule:
    def filters(self):
        return {"ab_guest_plan": ab_guest_plan}
