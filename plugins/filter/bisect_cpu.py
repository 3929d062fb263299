# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
name: bisect_cpu
short_description: The CPU cost per packet of a bisection step's two kernels, from their records
version_added: 0.2.0
description:
  - One value per boot (its records' CPU time over their packets), the mean over boots per kernel and the
    prefix's minus the base's (docs/bisect.md). The CPU time is the DUT's CPU accounting
    (C(summary.dut_cost.ns_per_packet)) or pktgen's own (each device's C(usec_cpu) over its C(packets)).
  - V(None) when a record of either kernel carries neither; a cost is never guessed.
options:
  _input:
    description: The step's records (parsed result files of its C(boot-*) directories).
    type: list
    elements: dict
    required: true
  base:
    description: The base kernel's name.
    type: str
    required: true
  prefix:
    description: The prefix kernel's name.
    type: str
    required: true
author: xdplab.testbed developers
"""

EXAMPLES = r"""
- name: CPU per packet of a step
  ansible.builtin.set_fact:
    __cpu: "{{ records | xdplab.testbed.bisect_cpu('baseline', 'bisect') }}"
"""

RETURN = r"""
_value:
  description: C({base, prefix, delta, boots, source, values}) in CPU ns per packet, or V(None).
  type: dict
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.module_utils.results._bisect import step_cpu


def bisect_cpu(records: list, base: str, prefix: str) -> dict | None:
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise AnsibleFilterError(f"bisect_cpu: the records must be a list of mappings, got {type(records).__name__}")
    try:
        return step_cpu(records, str(base), str(prefix))
    except (AttributeError, OverflowError, TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"bisect_cpu: records that carry no CPU figures it can read: {exc}") from exc


class FilterModule:
    def filters(self):
        return {"bisect_cpu": bisect_cpu}
