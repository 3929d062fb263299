# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
name: run_id
short_description: A new run id, or the given one checked
version_added: 0.1.0
description:
  - "The one definition of a run id, C(20261129T215000Z-1a2b3c): the UTC start time and 6 random hex
    digits. It names the results directory, the run lock's holder and every ledger entry of a run."
  - An empty input gives a new id; a given id is returned when it has that form, and refused naming the
    value otherwise, so that it can never move the results directory (C(../x)) or reach a command line.
options:
  _input:
    description: A run id to check, or an empty string (or none) for a new one.
    type: str
    required: true
author: xdplab.testbed developers
"""

EXAMPLES = r"""
- name: Choose the run id once (set_fact, so it is not drawn again at every use)
  ansible.builtin.set_fact:
    run_id: "{{ bench_run_id | default('') | xdplab.testbed.run_id }}"
"""

RETURN = r"""
_value:
  description: The run id.
  type: str
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_schema import RUN_ID_RE, new_run_id


def run_id(value: object) -> str:
    if value is None or value == "":
        return new_run_id()
    if not isinstance(value, str) or not RUN_ID_RE.match(value):
        raise AnsibleFilterError(f"run id {value!r} is not of the form 20261129T215000Z-1a2b3c "
                                 "(UTC time, '-', 6 lowercase hex digits)")
    return value


class FilterModule:
    def filters(self):
        return {"run_id": run_id}
