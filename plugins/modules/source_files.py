#!/usr/bin/python
# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
---
module: source_files
short_description: Source files into a build directory on a target, in one call, changing only what differs
version_added: "0.2.0"
description:
  - Puts files from the controller into one directory of the target so that make there rebuilds only
    what really changed. A file whose content differs (or that is missing) is written atomically and
    gets a new mtime; a file with the same content keeps its mtime, only its mode is corrected.
    Files in the directory that are not named are left alone. That is what M(ansible.builtin.copy)
    does file by file.
  - The action plugin reads the files on the controller and sends them all in one module call. Copying
    them one by one starts Python on the target once or twice per file, which costs seconds per file on
    an emulated guest.
  - For sources, not data. All the files together may be at most 4 MiB.
author:
  - xdplab.testbed contributors (!UNKNOWN)
extends_documentation_fragment:
  - xdplab.testbed.attributes
  - xdplab.testbed.attributes.action
attributes:
  action:
    support: full
    details: The action plugin reads O(src) on the controller.
  check_mode:
    support: full
    details: Compares the contents and reports what would be written.
  diff_mode:
    support: full
    details: Names the files that would be written or have their mode changed.
options:
  src:
    description:
      - Files on the controller. Each goes into O(dest) under its base name, so the base names must be
        distinct.
    type: list
    elements: path
    required: true
  dest:
    description: The directory on the target. It must exist (in check mode it may not, yet).
    type: path
    required: true
  mode:
    description: The permission bits of every file, in octal.
    type: str
    default: "0644"
  contents:
    description:
      - Set by the action plugin from O(src), never by hand. Maps each base name to the file's content,
        base64 encoded.
    type: dict
"""

EXAMPLES = r"""
- name: Copy the sources
  xdplab.testbed.source_files:
    src:
      - "{{ role_path }}/files/Makefile"
      - "{{ role_path }}/files/tool.c"
    dest: /var/lib/xdplab/tool/src
  become: true
"""

RETURN = r"""
written:
  description: The files written (missing before, or with other content).
  returned: always
  type: list
  elements: str
  sample: ["tool.c"]
chmod:
  description: The files whose content was right and whose mode was corrected.
  returned: always
  type: list
  elements: str
  sample: []
unchanged:
  description: The files left as they were.
  returned: always
  type: list
  elements: str
  sample: ["Makefile"]
"""

import os
import traceback

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _source_files as sf
from ansible_collections.xdplab.testbed.plugins.module_utils.common._atomic_files import atomic_write


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "src": {"type": "list", "elements": "path", "required": True},
            "dest": {"type": "path", "required": True},
            "mode": {"type": "str", "default": "0644"},
            "contents": {"type": "dict", "no_log": True},
        },
        supports_check_mode=True,
    )
    dest = module.params["dest"]
    try:
        mode = sf.parse_mode(module.params["mode"])
        files = {sf.check_name(name): sf.decode(name, data)
                 for name, data in (module.params["contents"] or {}).items()}
        if not files:
            raise sf.SourceFilesError("no file contents: the xdplab.testbed.source_files action sends them")
        sf.check_sizes(files)
        # In check mode the directory may be one an earlier task would have created: all would be written.
        if not os.path.isdir(dest) and not module.check_mode:
            raise sf.SourceFilesError(f"destination directory {dest} does not exist")
        now = sf.current(dest, list(files)) if os.path.isdir(dest) else dict.fromkeys(files)
        todo = sf.plan(files, now, mode)
    except (sf.SourceFilesError, ValueError, OSError) as exc:
        module.fail_json(msg=str(exc))
    changed = bool(todo["write"] or todo["chmod"])
    result = {"changed": changed, "written": todo["write"], "chmod": todo["chmod"], "unchanged": todo["unchanged"]}
    if module._diff:
        before, after = sf.describe(now, files, mode)
        result["diff"] = {"before": before, "after": after, "before_header": dest, "after_header": dest}
    if module.check_mode or not changed:
        module.exit_json(**result)
    try:
        for name in todo["write"]:
            data = files[name]

            def writer(tmp: str, data: bytes = data) -> None:
                with open(tmp, "wb") as fh:
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
            atomic_write(os.path.join(dest, name), writer, mode)
        for name in todo["chmod"]:
            os.chmod(os.path.join(dest, name), mode)
    except OSError as exc:
        module.fail_json(msg=f"writing the sources into {dest} failed: {exc}", exception=traceback.format_exc(),
                         **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
