# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Boot the guest kernel with the collection's own runner (xdplab.testbed.qemu_exec, see conftest.py)
and run tests/qemu/test_netdevsim_tuning.py inside it. No kernel is a failure, not a skip: these tests
are the only place where coalesce, ring and pause are applied for real.
"""

from __future__ import annotations

import pytest
from conftest import IN_GUEST, run_guest_tests

pytestmark = [pytest.mark.qemu, pytest.mark.root]


@pytest.mark.skipif(IN_GUEST, reason="already inside the guest: no nested QEMU")
def test_netdevsim_tuning_inside_guest():
    run_guest_tests("test_netdevsim_tuning.py", min_passed=6, cpus=1, timeout=900)
