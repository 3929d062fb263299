#!/usr/bin/python
# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
---
module: packages_missing
short_description: Which of some Debian packages are not installed, without opening the apt cache
version_added: "0.2.0"
description:
  - Reads the dpkg status database with one C(dpkg-query) call and returns the names that are not
    installed (or not at the version asked), so that M(ansible.builtin.apt) is handed only those and
    skipped when there are none. Opening the apt cache is what makes apt slow when nothing is missing.
  - Changes nothing on the host.
  - Takes the names M(ansible.builtin.apt) takes. V(pkg), V(pkg:arch), V(pkg=version) and V(pkg/suite)
    are looked up (a package installed from any suite counts for V(pkg/suite)). Any other shape
    (a wildcard, a comparison, a path) is returned as missing, for apt to decide.
author:
  - xdplab.testbed contributors (!UNKNOWN)
extends_documentation_fragment:
  - xdplab.testbed.attributes
attributes:
  check_mode:
    support: full
    details: Only reads, so it runs the same in check mode.
  diff_mode:
    support: none
    details: Nothing to show; it changes nothing.
options:
  names:
    description: The package names.
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: Find which toolchain packages are missing
  xdplab.testbed.packages_missing:
    names: [clang, llvm, libbpf-dev]
  register: __toolchain

- name: Install only those
  ansible.builtin.apt:
    name: "{{ __toolchain.missing }}"
    state: present
  when: __toolchain.missing | length > 0
"""

RETURN = r"""
missing:
  description: The names, as given and in their order, that are not installed as asked.
  returned: always
  type: list
  elements: str
  sample: ["netsniff-ng"]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _command, _dpkg_status


def main() -> None:
    module = AnsibleModule(argument_spec={"names": {"type": "list", "elements": "str", "required": True}},
                           supports_check_mode=True)
    names = module.params["names"]
    argv = _dpkg_status.query_argv(names)
    stdout = ""
    if argv:
        # rc 1 means some name is not known to dpkg at all: that name is missing, the others are listed.
        try:
            _rc, stdout, _stderr = _command.run(module, argv, what="dpkg-query", ok=(0, 1))
        except _command.CommandError as exc:
            module.fail_json(**exc.fail_kwargs())
    module.exit_json(changed=False, missing=_dpkg_status.missing(names, stdout))


if __name__ == "__main__":
    main()
