# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
name: series_paths
short_description: A patch series with relative paths made absolute against where ansible-playbook runs
version_added: 0.2.0
description:
  - Returns the series (kernel role patch entries, C({path}) or C({url, sha256})) with every relative
    C(path) joined to O(base), by default the controller's working directory, the directory the user
    ran C(ansible-playbook) in. Entries with a URL or an absolute path are returned as they are.
  - Why it exists. Ansible runs a module on the controller in the playbook's directory, so a relative
    path typed on the command line (C(-e ab_series=...)) would be looked for under C(playbooks/) and
    not where the user typed it. The kernel role applies it to each variant's patches.
options:
  _input:
    description: The series.
    type: list
    elements: dict
    required: true
  base:
    description: The directory relative paths are taken from (default the controller's working directory).
    type: path
author: xdplab.testbed developers
"""

EXAMPLES = r"""
- name: The candidate kernel, its series given relative to where ansible-playbook was run
  ansible.builtin.set_fact:
    __patches: "{{ ab_series | xdplab.testbed.series_paths }}"
"""

RETURN = r"""
_value:
  description: The series, relative paths made absolute.
  type: list
  elements: dict
  sample:
    - {path: /home/dev/linux/0001-net-foo.patch}
"""

import os

from ansible.errors import AnsibleFilterError


def series_paths(series: list, base: str | None = None) -> list[dict]:
    if not isinstance(series, list):
        raise AnsibleFilterError(f"series_paths: a series is a list of patch entries, got {series!r}")
    root = base or os.getcwd()
    out = []
    for n, entry in enumerate(series):
        if not isinstance(entry, dict):
            raise AnsibleFilterError(f"series_paths: entry {n} ({entry!r}) is not a {{path}} or "
                                     "{url, sha256} mapping")
        entry = dict(entry)
        path = entry.get("path")
        if isinstance(path, str) and path and not os.path.isabs(os.path.expanduser(path)):
            entry["path"] = os.path.normpath(os.path.join(root, path))
        out.append(entry)
    return out


class FilterModule:
    def filters(self):
        return {"series_paths": series_paths}
