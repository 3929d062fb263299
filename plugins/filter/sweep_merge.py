# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
name: sweep_merge
short_description: Grow a sweep point's result record by one step's record
version_added: 0.1.0
description:
  - A sweep runs each (point, variant) one repetition at a time, interleaved; this adds the record of
    one step to the point's record so far (samples, repetitions, packet counters, bound), recomputing
    the summary. The point's record is rewritten after every step, so a later failure leaves it intact.
options:
  _input:
    description: The step's record v1 (what M(xdplab.testbed.bench_run) returns as C(record)).
    type: dict
    required: true
  previous:
    description: The point's record so far; omitted or null for the first step.
    type: raw
author: xdplab.testbed developers
"""

EXAMPLES = r"""
- name: Keep the point's record
  ansible.builtin.set_fact:
    points: >-
      {{ points | combine({step.key: (point.record
                                      | xdplab.testbed.sweep_merge(points[step.key] | default(None)))}) }}
"""

RETURN = r"""
_value:
  description: The merged record v1.
  type: dict
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.module_utils.results._sweep import SweepError, merge_record


def sweep_merge(record, previous=None):
    try:
        return merge_record(previous or None, record)
    except (SweepError, KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"sweep_merge: {exc}") from exc


class FilterModule:
    def filters(self):
        return {"sweep_merge": sweep_merge}
