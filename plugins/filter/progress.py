# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
name: progress
short_description: Elapsed time and ETA of a loop of steps (sweeps, scenarios, rounds)
version_added: 0.1.0
description:
  - From the steps done, the total and the loop's start time, the elapsed time, the time left
    (mean time per step done so far times the steps left) and the finish time in UTC.
options:
  _input:
    description: Steps done so far.
    type: int
    required: true
  total:
    description: Steps in the loop.
    type: int
    required: true
  started:
    description: When the loop started, epoch seconds (for example C(now().timestamp()) before it).
    type: float
    required: true
author:
  - xdplab.testbed contributors
"""

EXAMPLES = r"""
- name: Progress
  ansible.builtin.debug:
    msg: "[{{ i + 1 }}/{{ steps | length }}] {{ (i + 1) | xdplab.testbed.progress(steps | length, started) }}"
"""

RETURN = r"""
_value:
  description: One line, e.g. C(3/12 done, 1m20s elapsed, ETA 4m00s (about 01:52:10 UTC)).
  type: str
"""

import time

from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.module_utils.common._progress import eta


def progress(done, total, started):
    try:
        return eta(int(done), int(total), float(started), time.time())["text"]
    except (TypeError, ValueError, OverflowError) as exc:  # OverflowError: int() of an infinite count
        raise AnsibleFilterError(f"progress: {exc}") from exc


class FilterModule:
    def filters(self):
        return {"progress": progress}
