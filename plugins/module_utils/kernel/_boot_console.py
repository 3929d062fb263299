# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a host's serial console showed while it booted a kernel: the lines a failed boot is judged by.

PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.

A kernel installed on a DUT is booted once (``grub-reboot``); when the host comes back on another
kernel, or not at all, the kernel role fails naming the kernel and what the console showed from the
moment of the reboot: panics, oopses, GRUB's errors, and the last lines. The console is a log file
on the controller (the lab's QEMU serial log; on a real lab, a serial-over-LAN capture). GRUB draws
its menu with terminal escapes; they are removed. No library reads kernel console logs, hence this.
"""

from __future__ import annotations

import re

# GRUB draws its menu by moving the cursor: each move starts a new line of text.
_CURSOR_MOVES = re.compile(r"\x1b\[[0-9]*(?:;[0-9]*)?[Hf]")
# Terminal escapes (CSI sequences, charset selection) and other control characters but tab.
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()#][0-9A-Za-z]|\x1b[=>78cDEHM]|[\x00-\x08\x0b-\x1f\x7f]")
# Lines that say why a boot failed or which kernel came up.
_SIGNS = re.compile(
    r"Kernel panic|not syncing|Oops|BUG:|general protection fault|Unable to mount root|VFS: |"
    r"Rebooting in|error: |Booting `|xdplab-init: .* up,",
)


class ConsoleError(ValueError):
    """Bad input; the message names it."""


def excerpt(data: bytes, since: int = 0, tail: int = 8, most: int = 24) -> dict:
    """The console from byte ``since`` on (a file that shrank since is read whole: it was rotated).

    Returns ``signs``: the lines showing panics, oopses, GRUB errors, the entry GRUB booted and the
    lab init's "up" line, at most ``most`` of them, in order; ``tail``: the last ``tail`` lines;
    ``bytes``: how much console was read.
    """
    if not isinstance(data, (bytes, bytearray)):
        raise ConsoleError(f"console data must be bytes, got {type(data).__name__}")
    if isinstance(since, bool) or not isinstance(since, int) or since < 0:
        raise ConsoleError(f"since {since!r} must be a byte offset >= 0")
    if isinstance(tail, bool) or not isinstance(tail, int) or tail < 0 or \
            isinstance(most, bool) or not isinstance(most, int) or most < 0:
        raise ConsoleError(f"tail {tail!r} and most {most!r} must be counts >= 0")
    part = bytes(data[since:]) if since <= len(data) else bytes(data)
    text = part.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    text = _ESCAPES.sub("", _CURSOR_MOVES.sub("\n", text))
    lines = [" ".join(line.split()) for line in text.split("\n") if line.strip()]
    signs = [line for line in lines if _SIGNS.search(line)]
    return {"signs": signs[:most], "tail": lines[-tail:] if tail else [], "bytes": len(part)}
