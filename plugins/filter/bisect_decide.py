# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
name: bisect_decide
short_description: The decision of one step of a performance bisection after its boots so far
version_added: 0.2.0
description:
  - Welch's interval over boots of the prefix against the base at the look's level (the step's alpha divided
    by the number of looks) decides C(moved) (it excludes 0), C(not_moved) (it lies within +-threshold), or
    C(continue) to the next look (C(next_boots)), C(undecided) after the last (docs/bisect.md).
  - With no O(threshold) (0), the threshold is the loop's minimum detectable effect at O(boots) boots per
    kernel from the base's boot-to-boot stdev, returned as C(threshold).
options:
  _input:
    description: The per-boot ns/packet of the base and of the prefix, C({baseline, candidate}) as
      P(xdplab.testbed.bench_compare#module) returns them in a row's C(boot_ns_per_packet).
    type: dict
    required: true
  threshold:
    description: ns/packet; 0 for the default.
    type: float
    default: 0
  alpha:
    description: The step's error level.
    type: float
    required: true
  looks:
    description: Boots per kernel at each look.
    type: list
    elements: int
    default: [3, 5, 8]
  boots:
    description: Boots per kernel of the loop, for the default threshold.
    type: int
    default: 3
author: xdplab.testbed developers
"""

EXAMPLES = r"""
- name: Decide a step
  ansible.builtin.set_fact:
    __d: "{{ row.boot_ns_per_packet | xdplab.testbed.bisect_decide(alpha=0.01, threshold=300) }}"
"""

RETURN = r"""
_value:
  description: C({decision, boots, delta, ci, level, direction, next_boots, threshold}).
  type: dict
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.module_utils.results._bisect import (
    DEFAULT_LOOKS,
    BisectError,
    decide,
    default_threshold,
)


def bisect_decide(values: dict, alpha: float, threshold: float = 0, looks: list | None = None,
                  boots: int = 3) -> dict:
    try:
        base, prefix = list(values["baseline"]), list(values["candidate"])
        limit = float(threshold) or default_threshold(base[: int(boots)], int(boots))
        out = decide(base, prefix, limit, float(alpha), [int(n) for n in looks or DEFAULT_LOOKS])
    except (BisectError, KeyError, OverflowError, TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"bisect_decide: {exc!s} (values {values!r})") from exc
    return dict(out, threshold=limit)


class FilterModule:
    def filters(self):
        return {"bisect_decide": bisect_decide}
