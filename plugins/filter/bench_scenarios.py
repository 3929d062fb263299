# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
name: bench_scenarios
short_description: The bench role's scenario table with the user's own programs added as rows
version_added: 0.3.0
description:
  - Returns the collection's scenario table with one row per entry of the bench role's O(programs)
    (C(bench_programs)) - the program attached to the DUT's port (XDP) or put on its clsact ingress (tc),
    counted by its own run count (BPF run-time statistics), so it needs no counter map.
  - Each row's C(own) says what the role builds (C(source), a C(.bpf.c) file compiled with the collection's
    clang flags) or copies (C(object)) to C(<xdp_dir>/own/<name>.o) on the DUT.
  - A bad entry fails naming the scenario and the bad value.
options:
  _input:
    description: The collection's scenario table (name to row).
    type: dict
    required: true
  programs:
    description: >-
      Scenario name to C({source: path} | {object: path}), with optional C(hook) (C(xdp), the default, or
      C(tc)), C(program) (an XDP program's function name, when the object holds several) and C(section).
    type: dict
    required: true
  xdp_dir:
    description: Directory of the compiled programs on the DUT (the bench role's C(bench_xdp_dir)).
    type: path
    required: true
author: xdplab.testbed developers
"""

EXAMPLES = r"""
- name: Show the row of a program of your own
  ansible.builtin.debug:
    msg: "{{ (table | xdplab.testbed.bench_scenarios({'mine': {'source': '/src/mine.bpf.c'}}, '/srv/xdp')).mine }}"
"""

RETURN = r"""
_value:
  description: The table, the collection's rows first, then the user's, by scenario name.
  type: dict
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._own_programs import OwnProgramError, scenario_rows


def bench_scenarios(table: dict, programs: dict, xdp_dir: str) -> dict:
    try:
        return {**table, **scenario_rows(programs, table, str(xdp_dir))}
    except OwnProgramError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self):
        return {"bench_scenarios": bench_scenarios}
