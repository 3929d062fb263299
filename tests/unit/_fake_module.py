# SPDX-License-Identifier: GPL-3.0-or-later
"""A stand-in for AnsibleModule in the tuning restore tests: records commands and warnings, moves files
with os.replace, and keeps its state and ledger directories under the test's tmp_path."""

from __future__ import annotations

import os


class FakeModule:
    check_mode = False
    _diff = False

    def __init__(self, tmp_path, **params):
        self.params = dict(params, state_dir=str(tmp_path / "state"), grub_file=str(tmp_path / "grub"),
                           ledger_dir=str(tmp_path / "ledger"), run_id=None)
        self.warnings: list[str] = []
        self.calls: list[list[str]] = []

    def warn(self, msg):
        self.warnings.append(msg)

    def get_bin_path(self, name, required=False):
        return f"/usr/sbin/{name}"

    def run_command(self, argv, environ_update=None):
        self.calls.append(list(argv))
        return 0, "", ""

    def atomic_move(self, src, dst):
        os.replace(src, dst)
