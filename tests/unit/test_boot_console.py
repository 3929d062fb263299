# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a console showed since a reboot: the lines a failed boot is reported with."""

from __future__ import annotations

import base64

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.filter.boot_console import boot_console
from ansible_collections.xdplab.testbed.plugins.module_utils.kernel import _boot_console as bc
from hypothesis import given
from hypothesis import strategies as st

# A QEMU serial log: the earlier boot, then GRUB's menu (drawn with escapes), the one-shot kernel's
# panic, panic=5's reset, and the default kernel coming up again.
BEFORE = b"xdplab-init: vmdut up, 6.12.117-vmlab\r\n"
AFTER = (
    b"\x1b[0m\x1b[30m\x1b[47m\x1b[2J\x1b[01;01H      GNU GRUB  version 2.06-13+deb12u1\r\n"
    b"\x1b[04;02H*Debian GNU/Linux, with Linux 6.12.117-vmlab-panic\x1b[K"
    b"\x1b[05;02H Debian GNU/Linux, with Linux 6.12.117-vmlab      \x1b[K\x1b[23;01H   Booting `Debian GNU/Linux, "
    b"with Linux 6.12.117-vmlab-panic'\r\n"
    b"[    2.481220] Kernel panic - not syncing: xdplab.testbed boot-panic test series: this kernel panics at boot\r\n"
    b"[    2.482001] CPU: 0 UID: 0 PID: 1 Comm: swapper/0 Not tainted 6.12.117-vmlab-panic #1\r\n"
    b"[    2.490000] Rebooting in 5 seconds..\r\n"
    b"\x1b[2J      GNU GRUB  version 2.06-13+deb12u1\r\n"
    b"xdplab-init: vmdut up, 6.12.117-vmlab\r\n"
)


def test_the_panic_and_the_kernel_that_came_back_are_named_from_the_reboot_on():
    seen = bc.excerpt(BEFORE + AFTER, since=len(BEFORE))
    assert seen["signs"] == [
        "Booting `Debian GNU/Linux, with Linux 6.12.117-vmlab-panic'",
        "[ 2.481220] Kernel panic - not syncing: xdplab.testbed boot-panic test series: this kernel panics at boot",
        "[ 2.490000] Rebooting in 5 seconds..",
        "xdplab-init: vmdut up, 6.12.117-vmlab",
    ]
    assert seen["tail"][-1] == "xdplab-init: vmdut up, 6.12.117-vmlab" and seen["bytes"] == len(AFTER)
    assert not any("\x1b" in line or "\r" in line or "  " in line for line in seen["signs"] + seen["tail"])
    # GRUB's menu, drawn with cursor moves, comes out one entry per line
    assert "Debian GNU/Linux, with Linux 6.12.117-vmlab" in seen["tail"]
    # from the start, the earlier boot's line is there too
    assert bc.excerpt(BEFORE + AFTER)["signs"][0] == "xdplab-init: vmdut up, 6.12.117-vmlab"


def test_a_log_that_shrank_is_read_whole_and_counts_are_kept():
    seen = bc.excerpt(AFTER, since=len(AFTER) + 100, tail=2, most=1)
    assert seen["bytes"] == len(AFTER) and len(seen["tail"]) == 2 and len(seen["signs"]) == 1
    assert bc.excerpt(AFTER, tail=0)["tail"] == []


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"data": "text"}, "must be bytes"),
    ({"data": b"", "since": -1}, "since -1"),
    ({"data": b"", "since": True}, "since True"),
    ({"data": b"", "tail": -2}, "tail -2"),
])
def test_bad_input_is_named(kwargs, message):
    with pytest.raises(bc.ConsoleError, match=message):
        bc.excerpt(**kwargs)


def test_the_filter_reads_slurp_content_and_names_bad_base64():
    content = base64.b64encode(BEFORE + AFTER).decode()
    assert boot_console(content, since=len(BEFORE))["signs"][1].endswith("this kernel panics at boot")
    with pytest.raises(AnsibleFilterError, match="not base64"):
        boot_console("not base64!")


@given(st.binary(max_size=400), st.integers(min_value=0, max_value=500))
def test_any_bytes_give_clean_lines(data, since):
    seen = bc.excerpt(data, since=since)
    for line in seen["signs"] + seen["tail"]:
        assert line == line.strip() and line and not any(ord(c) < 32 and c != "\t" for c in line)
