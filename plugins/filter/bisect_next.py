# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
name: bisect_next
short_description: The next prefix a performance bisection measures, or its result
version_added: 0.2.0
description:
  - "Given the steps taken so far (C({prefix, decision}) each, in order; decision C(moved), C(not_moved),
    C(undecided) or C(skip)), returns C({next, step, alpha}) for the prefix to measure next (patches 1..next),
    its number among the measured steps and its error level, or C({next: null, result}) when the
    bisection is over (docs/bisect.md). A prefix already measured is never measured again."
options:
  _input:
    description: The steps so far.
    type: list
    elements: dict
    required: true
  patches:
    description: The number of patches of the series.
    type: int
    required: true
  alpha:
    description: The error of the whole bisection.
    type: float
    default: 0.05
  patch_ids:
    description:
      - The series' patch-ids, in order. Given, every step must carry the patch-ids of its prefix (C(patch_ids))
        and they must be the series' first ones; a step of another series is an error naming both.
    type: list
    elements: str
author: xdplab.testbed developers
"""

EXAMPLES = r"""
- name: The first step of a bisection of 6 patches
  ansible.builtin.debug:
    msg: "{{ [] | xdplab.testbed.bisect_next(6) }}"   # {next: 6, step: 1, alpha: 0.01}
"""

RETURN = r"""
_value:
  description: C({next, step, alpha}) or C({next, result}) with C(result.verdict) culprit, range, no_culprit,
    undecided or unmeasurable.
  type: dict
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.module_utils.results._bisect import BisectError, next_step


def bisect_next(steps: list, patches: int, alpha: float = 0.05, patch_ids: list | None = None) -> dict:
    try:
        return next_step(int(patches), list(steps), float(alpha), None if patch_ids is None else list(patch_ids))
    except (BisectError, OverflowError, TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"bisect_next: {exc}") from exc


class FilterModule:
    def filters(self):
        return {"bisect_next": bisect_next}
