# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action for xdplab.testbed.source_files: read the files on the controller and hand their contents to
the module on the target in one call (module_utils/common/_source_files.py says why)."""

from __future__ import annotations

import base64
import os

from ansible.plugins.action import ActionBase
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _source_files as sf


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        src = args.get("src")
        if isinstance(src, str):
            src = [src]
        if not isinstance(src, list) or not src:
            return dict(result, failed=True, msg=f"src must be a non-empty list of files, got {src!r}")
        files: dict[str, str] = {}
        try:
            for path in src:
                name = sf.check_name(os.path.basename(str(path)))
                if name in files:
                    raise sf.SourceFilesError(f"two sources have the base name {name!r} ({path})")
                with open(path, "rb") as fh:
                    files[name] = base64.b64encode(fh.read()).decode("ascii")
        except (sf.SourceFilesError, OSError) as exc:
            return dict(result, failed=True, msg=f"source_files: {exc}")
        args["contents"] = files
        result.update(self._execute_module("xdplab.testbed.source_files", module_args=args, task_vars=task_vars))
        return result
