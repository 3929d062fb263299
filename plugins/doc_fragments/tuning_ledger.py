# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment:
    # The ledger options of the tuning modules (nic_tuning, irq_affinity, host_tuning).
    DOCUMENTATION = r"""
options:
  ledger_dir:
    description:
      - The state ledger directory. Before the first change the module records there its snapshot file
        (a C(tuning) entry), so that C(xdplab.testbed.ledger state=cleaned) restores it after an
        interrupted run; a restore that reads back equal drops the entry with the snapshot.
      - An empty string records nothing.
    type: path
    default: /var/lib/xdplab/ledger
  run_id:
    description: Run id written into the ledger entry.
    type: str
"""
