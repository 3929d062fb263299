# SPDX-License-Identifier: GPL-3.0-or-later
"""tests/playbook_run.py: the guard against ansible-core's result-thread race, with stand-in commands."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from playbook_run import run

# Prints the marker the way ansible-core's dying result thread does, then hangs as the play would,
# unless the flag file exists (the second attempt) or `always` is given.
STAND_IN = r"""
import os, sys, time
flag, mode = sys.argv[1], sys.argv[2]
if mode == "always" or not os.path.exists(flag):
    open(flag, "w").close()
    sys.stderr.write("Exception in thread Thread-2 (results_thread_main):\nKeyError: 'x'\n")
    sys.stderr.flush()
    time.sleep(600)
print("PLAY RECAP ok=1 failed=0")
"""


def test_race_once_is_run_again_and_passes(tmp_path):
    t0 = time.monotonic()
    proc = run([sys.executable, "-c", STAND_IN, str(tmp_path / "flag"), "once"], timeout=60)
    assert proc.returncode == 0 and proc.attempts == 2
    assert "failed=0" in proc.stdout
    assert "result thread died (attempt 1)" not in proc.stderr  # the second run's own stderr
    assert time.monotonic() - t0 < 30


def test_race_twice_fails_at_once_naming_it(tmp_path):
    t0 = time.monotonic()
    proc = run([sys.executable, "-c", STAND_IN, str(tmp_path / "flag"), "always"], timeout=60)
    assert proc.returncode == -9 and proc.attempts == 2
    assert "result thread died (attempt 2)" in proc.stderr and "KeyError" in proc.stderr
    assert time.monotonic() - t0 < 30
    with pytest.raises(subprocess.CalledProcessError):
        run([sys.executable, "-c", STAND_IN, str(tmp_path / "flag"), "always"], timeout=60, check=True)


def test_plain_runs_pass_through_rc_output_and_timeout(tmp_path):
    proc = run([sys.executable, "-c", "import sys; print('out'); print('e' * 100000, file=sys.stderr); sys.exit(3)"])
    assert (proc.returncode, proc.stdout, len(proc.stderr), proc.attempts) == (3, "out\n", 100001, 1)
    t0 = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        run([sys.executable, "-c", "import time; time.sleep(60)"], timeout=1)
    assert time.monotonic() - t0 < 10
    with pytest.raises(ValueError, match="always captures"):
        run([sys.executable, "-c", "pass"], capture_output=False)


def test_stderr_written_while_watched_arrives_whole():
    # the child writes through the same open file the guard reads, without pause for about a second:
    # every line must arrive, in order, none overwritten
    script = ("import sys, time\n"
              "t0, i = time.monotonic(), 0\n"
              "while time.monotonic() - t0 < 1.5:\n"
              "    sys.stderr.write(f'line {i:07d}\\n'); sys.stderr.flush(); i += 1\n"
              "print(i)\n")
    proc = run([sys.executable, "-c", script], timeout=60)
    assert proc.returncode == 0
    assert proc.stderr.splitlines() == [f"line {i:07d}" for i in range(int(proc.stdout))]
