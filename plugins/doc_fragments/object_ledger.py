# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment:
    # The ledger options of the modules that make a kernel object on the DUT (packet_hook, neighbour).
    DOCUMENTATION = r"""
options:
  ledger_dir:
    description:
      - The state ledger directory. Before it changes anything the module records there what it makes and
        what it finds in place, so that C(xdplab.testbed.ledger state=cleaned) removes only its own objects
        and puts back what it replaced.
    type: path
    default: /var/lib/xdplab/ledger
  run_id:
    description: Run id written into the ledger entry.
    type: str
"""
