# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
name: sweep_plan
short_description: Plan a benchmark sweep (matrix x variants x repetitions, interleaved) within a time budget
version_added: 0.1.0
description:
  - Expands a parameter matrix into points, and orders the steps so that every repetition visits every
    point and the variants of a point alternate A B, B A, A B, ... (slow drift falls on both sides).
  - Estimates the sweep's duration and fails, before anything runs, when it exceeds O(budget), saying
    "this sweep needs ~N s ..., budget M s".
options:
  _input:
    description: The matrix, a dict of parameter name to list of values; a scalar is a one-value axis.
    type: dict
    required: true
  variants:
    description: Variant names, or C({name, params}) dicts whose params are added to every point.
    type: list
    elements: raw
    default: [baseline]
  repetitions:
    description: Repetitions per (point, variant); each is one step.
    type: int
    default: 3
  seconds_per_rep:
    description: Seconds one generator run lasts.
    type: float
    default: 2
  overhead:
    description: Fixed seconds per step (task start, DUT sampler lead, gaps) on top of the run.
    type: float
    default: 4
  budget:
    description: Seconds the sweep may take; C(0) means no budget.
    type: float
    default: 0
author: xdplab.testbed developers
"""

EXAMPLES = r"""
- name: Plan a burst sweep of two variants
  ansible.builtin.set_fact:
    sweep: >-
      {{ {'burst': [0, 8, 32], 'pkt_size': [200, 1400]}
         | xdplab.testbed.sweep_plan(variants=['clone_off', 'clone_on'], repetitions=3,
                                     seconds_per_rep=2, budget=600) }}
"""

RETURN = r"""
_value:
  description:
    - C(steps) (each with C(index), C(rep), C(point), C(params), C(sweep) (the matrix values alone),
      C(variant), C(key)), C(estimate_s), C(budget_s) and C(msg).
  type: dict
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.module_utils.results._sweep import SweepError, check_budget, plan


def sweep_plan(matrix, variants=None, repetitions=3, seconds_per_rep=2.0, overhead=4.0, budget=0):
    try:
        steps = plan(matrix, variants, int(repetitions))
        out = check_budget(steps, float(seconds_per_rep), float(overhead), float(budget or 0) or None)
    except (SweepError, OverflowError, TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"sweep_plan: {exc}") from exc
    return dict(out, steps=steps)


class FilterModule:
    def filters(self):
        return {"sweep_plan": sweep_plan}
