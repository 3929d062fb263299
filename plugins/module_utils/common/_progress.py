# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.
"""Progress of long loops (sweep steps, scenarios, rounds): elapsed time and an ETA from the mean
time of the steps done so far."""

from __future__ import annotations

import datetime


def duration(seconds: float) -> str:
    """1h02m, 4m05s, 37s."""
    s = max(0, int(round(seconds)))
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    if h:
        return f"{h}h{m:02d}m"
    if m:
        return f"{m}m{sec:02d}s"
    return f"{sec}s"


def eta(done: int, total: int, started: float, now: float) -> dict:
    """Steps done of total since `started` (epoch seconds) at `now`: elapsed, remaining (None before
    the first step is done), the finish time (UTC) and a one-line text."""
    if total <= 0 or done < 0 or done > total:
        raise ValueError(f"progress: done={done} of total={total} is not a progress")
    elapsed = max(0.0, now - started)
    remaining = None if done == 0 else elapsed / done * (total - done)
    out = {"done": done, "total": total, "elapsed_s": round(elapsed, 1),
           "remaining_s": None if remaining is None else round(remaining, 1)}
    text = f"{done}/{total} done, {duration(elapsed)} elapsed"
    if remaining is None:
        text += ", ETA after the first step"
    elif done == total:
        text += ", finished"
    else:
        end = datetime.datetime.fromtimestamp(now + remaining, tz=datetime.UTC)
        text += f", ETA {duration(remaining)} (about {end:%H:%M:%S} UTC)"
        out["finish_utc"] = end.strftime("%Y-%m-%dT%H:%M:%SZ")
    out["text"] = text
    return out


def still_running(task: str, host: str, attempts: int, retries: int, delay: float, elapsed: float) -> str:
    """The line for one poll of a step that is still running (an async job not finished yet): done
    polls, elapsed time and how long until the wait gives up. Not a failure, so not "FAILED"."""
    if attempts < 1 or retries < attempts or delay < 0 or elapsed < 0:
        raise ValueError(f"progress: poll {attempts} of {retries} every {delay} s after {elapsed} s is not a wait")
    left = (retries - attempts) * delay
    return (f"RUNNING: [{host}]: {task}: {duration(elapsed)} elapsed, poll {attempts} of {retries}, "
            f"gives up in {duration(left)}")
