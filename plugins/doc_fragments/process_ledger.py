# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment:
    # The ledger options of the modules that leave a process running in the background (bench_server, pktgen).
    DOCUMENTATION = r"""
options:
  ledger_dir:
    description:
      - The state ledger directory. With O(state=started) the module records there the background
        process (a C(process) entry - pid, start time, boot id - with what stopping it leaves to clean)
        once its pid exists and before it runs anything, so that C(xdplab.testbed.ledger state=cleaned)
        stops it after a killed run, and only while that pid is still that process. O(state=stopped)
        drops the entry.
      - An empty string records nothing.
    type: path
    default: /var/lib/xdplab/ledger
  run_id:
    description: Run id written into the ledger entry.
    type: str
"""
