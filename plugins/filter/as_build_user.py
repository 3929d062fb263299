# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
name: as_build_user
short_description: The argv prefix that runs a command of a fetched kernel source as the build user
version_added: 0.1.0
description:
  - Returns the same setpriv prefix the kernel modules use (util-linux setpriv with the user's uid, gid
    and groups, no_new_privs, and the caller's TMPDIR left behind), with the user named, so setpriv
    resolves it on the build host. An empty user gives an empty list (the command runs as the caller).
options:
  _input:
    description: The build user's name, or an empty string for none.
    type: str
    required: true
author: xdplab.testbed developers
"""

EXAMPLES = r"""
- name: Run make as the unprivileged build user
  ansible.builtin.command:
    argv: "{{ (kernel_build_user | xdplab.testbed.as_build_user) + ['make', '-C', tree, 'olddefconfig'] }}"
"""

RETURN = r"""
_value:
  description: The argv prefix, or an empty list.
  type: list
  elements: str
"""

import re

from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.module_utils.kernel._build_logic import setpriv_argv

_USER_RE = re.compile(r"^(?:[a-z_][a-z0-9_-]{0,31})?\Z")  # useradd(8)'s names (empty: no build user)


def as_build_user(user):
    if not isinstance(user, str) or not _USER_RE.match(user):
        raise AnsibleFilterError(f"as_build_user: the build user must be a user name (lowercase letters, digits, "
                                 f"'_' and '-', at most 32), got {user!r}")
    return setpriv_argv(user, user)


class FilterModule:
    def filters(self):
        return {"as_build_user": as_build_user}
