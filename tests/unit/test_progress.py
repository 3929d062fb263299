# SPDX-License-Identifier: GPL-3.0-or-later
"""Progress lines of long loops: elapsed, ETA from the mean step time, finish time."""

from __future__ import annotations

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.common._progress import duration, eta, still_running

T0 = 1_764_550_800.0  # 2025-12-01T01:00:00Z


def test_eta_from_mean_step_time():
    p = eta(3, 12, T0, T0 + 90)
    assert p["remaining_s"] == 270.0
    assert p["finish_utc"] == "2025-12-01T01:06:00Z"
    assert p["text"] == "3/12 done, 1m30s elapsed, ETA 4m30s (about 01:06:00 UTC)"


def test_eta_before_the_first_step_and_at_the_end():
    assert eta(0, 5, T0, T0 + 2)["remaining_s"] is None
    assert eta(0, 5, T0, T0 + 2)["text"].endswith("ETA after the first step")
    assert eta(5, 5, T0, T0 + 3700)["text"] == "5/5 done, 1h01m elapsed, finished"


@pytest.mark.parametrize("done,total", [(6, 5), (-1, 5), (0, 0)])
def test_eta_refuses_nonsense(done, total):
    with pytest.raises(ValueError, match="is not a progress"):
        eta(done, total, T0, T0)


@pytest.mark.parametrize("s,text", [(0, "0s"), (59.6, "1m00s"), (245, "4m05s"), (3720, "1h02m")])
def test_duration(s, text):
    assert duration(s) == text


def test_still_running_reads_as_progress():
    line = still_running("Run make (follow the build with tail -f /var/cache/b/xdplab-build.log)", "localhost",
                         5, 229, 30, 152)
    assert line == ("RUNNING: [localhost]: Run make (follow the build with tail -f /var/cache/b/xdplab-build.log): "
                    "2m32s elapsed, poll 5 of 229, gives up in 1h52m")
    assert "FAILED" not in line and "RETRYING" not in line


@pytest.mark.parametrize("attempts,retries,delay,elapsed", [(0, 5, 1, 0), (6, 5, 1, 0), (1, 5, -1, 0), (1, 5, 1, -3)])
def test_still_running_refuses_nonsense(attempts, retries, delay, elapsed):
    with pytest.raises(ValueError, match="is not a wait"):
        still_running("t", "h", attempts, retries, delay, elapsed)
