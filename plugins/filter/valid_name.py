# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
name: valid_name
short_description: Check a name with the collection's validator for its kind, or fail naming it
version_added: 0.1.0
description:
  - Returns the name unchanged when it is a valid name of the given kind, and fails the task naming the
    value otherwise. Roles and templates use it on every name that reaches a file name, a command line,
    an nftables ruleset or a QEMU option, with the same rules as the modules.
options:
  _input:
    description: The name.
    type: raw
    required: true
  kind:
    description: Kind of name.
    type: str
    required: true
    choices: [ifname, netns, ledger_name, pktgen_device, run_id, record_name, qemu_id, nft_name, nft_family, ip]
  where:
    description: What the name is, for the error message (a variable name).
    type: str
    default: ""
author: xdplab.testbed developers
"""

EXAMPLES = r"""
- name: Refuse a run id that would move the results directory
  ansible.builtin.set_fact:
    run_dir: "{{ results_root }}/{{ run_id | xdplab.testbed.valid_name('run_id', 'bench_run_id') }}"
"""

RETURN = r"""
_value:
  description: The name, unchanged.
  type: raw
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.module_utils.common._validate import ValidationError, check


def valid_name(value, kind, where=""):
    try:
        return check(kind, value, where)
    except ValidationError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self):
        return {"valid_name": valid_name}
