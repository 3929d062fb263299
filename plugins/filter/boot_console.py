# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
name: boot_console
short_description: What a serial console log showed since a byte offset (panics, GRUB errors, last lines)
version_added: 0.2.0
description:
  - Reads a serial console log (the base64 content M(ansible.builtin.slurp) returns) from byte O(since), removes
    terminal escapes, and returns the lines that say why a boot failed (kernel panics, oopses, "Unable to mount
    root", GRUB errors), the entry GRUB booted, the lab init's "up" line, and the last lines.
  - The kernel role names these when a kernel it booted once did not come up.
options:
  _input:
    description: The log's content, base64 (M(ansible.builtin.slurp)'s C(content)).
    type: str
    required: true
  since:
    description: Byte offset to read from (the log's size before the reboot). A log shorter than that is read whole.
    type: int
    default: 0
  tail:
    description: How many last lines to return.
    type: int
    default: 8
author: xdplab.testbed developers
"""

EXAMPLES = r"""
- name: What the console showed since the reboot
  ansible.builtin.debug:
    msg: "{{ (console.content | xdplab.testbed.boot_console(since=size_before)).signs }}"
"""

RETURN = r"""
_value:
  description: C(signs) (list of lines), C(tail) (list of lines), C(bytes) (how much was read).
  type: dict
"""

import base64
import binascii

from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.module_utils.kernel import _boot_console


def boot_console(content, since=0, tail=8):
    try:
        data = base64.b64decode(content or "", validate=True)
    except (binascii.Error, TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"boot_console: the console content is not base64: {exc}") from exc
    try:
        return _boot_console.excerpt(data, since=int(since), tail=int(tail))
    except (_boot_console.ConsoleError, OverflowError, TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"boot_console: {exc}") from exc


class FilterModule:
    def filters(self):
        return {"boot_console": boot_console}
