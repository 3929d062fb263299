# SPDX-License-Identifier: GPL-3.0-or-later
"""The integration suite as a whole leaves nothing of ours behind on the host.

Each test cleans up after itself; this checks the sum at the end of the session: no new entry in the
host's ledger (a test that forgets `ledger_dir` writes there), no namespace, no /run/xdplab or
/var/lib/xdplab/ledger file that was not there before.
"""

from __future__ import annotations

import os

import pytest

WATCHED = ("/var/lib/xdplab/ledger", "/run/netns", "/run/xdplab")


def _listing() -> set[str]:
    found = set()
    for top in WATCHED:
        for dirpath, dirnames, filenames in os.walk(top):
            found.update(os.path.join(dirpath, n) for n in dirnames + filenames)
    return found


@pytest.fixture(scope="session", autouse=True)
def nothing_left_behind():
    before = _listing()
    yield
    left = sorted(_listing() - before)
    assert not left, f"the integration tests left these behind: {left}"
