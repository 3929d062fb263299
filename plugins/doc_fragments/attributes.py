# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment:
    # What the attributes every module documents mean. A module extends it and says only its support
    # (and, in details, what its own check mode or diff shows), as community.general's attributes fragment.
    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
"""

    # A module run through an action plugin of the same name (xdplab.testbed.attributes.action).
    ACTION = r"""
options: {}
attributes:
  action:
    description: Runs through an action plugin of the same name on the controller.
"""
