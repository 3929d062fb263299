#!/usr/bin/python
# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
---
module: bisect_series
short_description: Cut a patch series into one file per patch, for the prefixes of a bisection
description:
  - "Reads a series as the kernel role does (patch files, C(git format-patch) mboxes, a C(b4 am) mbox or a
    thread saved from lore, cut with C(git mailsplit), cover letter and replies left out, C([PATCH k/N]) order)
    and writes each patch to O(dest) as C(NNNN-<patch-id>.patch), so that a prefix of the series (patches
    1..k) is the first k files (playbooks/bisect.yml, docs/bisect.md)."
  - Unchanged files are not written again.
version_added: "0.2.0"
author:
  - xdplab.testbed contributors (!UNKNOWN)
options:
  patches:
    description: The series, in order, as C({path}) entries (a downloaded series is given by its path).
    type: list
    elements: dict
    required: true
  dest:
    description: The directory the patches are written to (created).
    type: path
    required: true
extends_documentation_fragment:
  - xdplab.testbed.attributes
attributes:
  check_mode:
    support: full
    details: Reads the series and returns its patches, writes nothing.
  diff_mode:
    support: none
requirements:
  - git (git mailsplit, git patch-id)
"""

EXAMPLES = r"""
- name: One file per patch of a b4 am mbox
  xdplab.testbed.bisect_series:
    patches: [{path: /home/dev/v2_20261201_dev_net_pktgen.mbx}]
    dest: "{{ run_results_dir }}/series"
  register: series
"""

RETURN = r"""
patches:
  description: The patches in series order; C(entry) is the patch as a kernel role series entry.
  returned: always
  type: list
  elements: dict
  sample: [{"index": 1, "subject": "pktgen: add a knob", "patch_id": "5e1f...", "name": "v2.mbx#2",
            "path": "/results/bisect-1/series/0001-5e1f0a2b3c4d.patch",
            "entry": {"path": "/results/bisect-1/series/0001-5e1f0a2b3c4d.patch"}}]
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils.kernel import _build_logic as _kernel
from ansible_collections.xdplab.testbed.plugins.module_utils.kernel import _mailsplit


def main() -> None:
    module = AnsibleModule(
        argument_spec={"patches": {"type": "list", "elements": "dict", "required": True},
                       "dest": {"type": "path", "required": True}},
        supports_check_mode=True,
    )
    patch_id = _mailsplit.module_patch_id(module)

    entries = module.params["patches"]
    if not entries:
        module.fail_json(msg="a bisection needs a series of at least one patch, got none")
    items: list[tuple[_kernel.PatchInfo, str]] = []
    for n, entry in enumerate(entries):
        path = entry.get("path") if isinstance(entry, dict) else None
        if not path or set(entry) - {"path"}:
            module.fail_json(msg=f"patches[{n}] must be {{path: <file>}} (download a series first), got {entry!r}")
        try:
            with open(path, "rb") as fh:
                text = fh.read().decode("utf-8", "surrogateescape")
            items += _kernel.read_series(os.path.basename(path), text, patch_id, start=len(items) + 1)
        except OSError as exc:
            module.fail_json(msg=f"patch {path!r} cannot be read: {exc.strerror}")
        except _kernel.KernelError as exc:
            module.fail_json(msg=str(exc))
    ids = [info.patch_id for info, _text in items]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        module.fail_json(msg=f"the series lists the same change twice (patch-id {dup})")
    dest = module.params["dest"]
    changed = False
    out = []
    for info, text in items:
        target = os.path.join(dest, f"{info.index:04d}-{info.patch_id[:12]}.patch")
        data = text.encode("utf-8", "surrogateescape")
        try:
            with open(target, "rb") as fh:
                same = fh.read() == data
        except OSError:
            same = False
        if not same:
            changed = True
            if not module.check_mode:
                os.makedirs(dest, exist_ok=True)
                tmp = target + ".tmp"
                with open(tmp, "wb") as fh:
                    fh.write(data)
                os.replace(tmp, target)
        out.append({"index": info.index, "subject": info.subject, "patch_id": info.patch_id, "name": info.name,
                    "path": target, "entry": {"path": target}})
    module.exit_json(changed=changed, patches=out)


if __name__ == "__main__":
    main()
