# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
name: ktap
short_description: The kernel selftests' KTAP output, read and judged
version_added: 0.1.0
description:
  - Reads the output of C(run_kselftest.sh) (TAP version 13 around each program's own KTAP) into its
    programs and cases, counts them by status, and lists every case that neither passed nor is explained.
  - An explanation says why an emulated device cannot pass a case (C(stats.check_pause)) or a whole
    program (C(csum.py)). An explanation of a case that passed is reported as stale.
options:
  _input:
    description: The runner's output.
    type: str
    required: true
  explained:
    description: Case or program name to the reason it cannot pass on this lab.
    type: dict
    default: {}
author: xdplab.testbed developers
"""

EXAMPLES = r"""
- name: Judge the driver selftests of one NIC
  ansible.builtin.set_fact:
    __ktap: "{{ __run.stdout | xdplab.testbed.ktap(explained={'stats.check_pause': 'no pause counters'}) }}"
"""

RETURN = r"""
_value:
  description: C(programs) (each with C(cases)), C(totals) by status, and C(problems), one line each.
  type: dict
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.module_utils.results import _ktap


def ktap(text: object, explained: dict | None = None) -> dict:
    if not isinstance(text, str):
        raise AnsibleFilterError(f"ktap needs the runner's output as a string, got {type(text).__name__}")
    explained = explained or {}
    if not isinstance(explained, dict) or not all(isinstance(v, str) and v for v in explained.values()):
        raise AnsibleFilterError(f"ktap: explained must map names to non-empty reasons, got {explained!r}")
    try:
        programs = _ktap.parse(text)
    except _ktap.KtapError as exc:
        raise AnsibleFilterError(f"ktap: {exc}; the output ends with: {text[-400:]!r}") from None
    return {"programs": programs, "totals": _ktap.totals(programs), "problems": _ktap.judge(programs, explained)}


class FilterModule:
    def filters(self):
        return {"ktap": ktap}
