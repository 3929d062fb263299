# SPDX-License-Identifier: GPL-3.0-or-later
"""ansible-playbook as the tests run it: subprocess.run, guarded against ansible-core's result-thread race.

ansible-core 2.19's result thread can die of a KeyError in ``_convert_wire_task_result_to_raw``
(ansible/ansible#85879, a race seen under load); the play then waits for that result for ever, and a
test would hang until its own timeout. ``run`` watches the playbook's stderr: when the thread dies it
kills that run's process group at once and runs the playbook once more. A run that takes the run lock
takes over the dead run's lock and cleans what its ledger lists, so a second run starts clean. Any
other outcome, including the race twice, is returned (or raised) as subprocess.run would.

Written here rather than taken from a library: no test runner or subprocess wrapper knows this race.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time

RESULTS_THREAD_DIED = b"(results_thread_main)"
ATTEMPTS = 2


def _once(argv, cwd, env, timeout, deadline_note):
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,  # noqa: S603
                                stdout=out, stderr=err, start_new_session=True)
        deadline = None if timeout is None else time.monotonic() + timeout
        died = timed_out = False
        seen = 0
        while True:
            try:
                proc.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                pass
            # pread, not seek + read: the child writes through the same open file, and moving its
            # offset would make it overwrite what it wrote before
            chunk = os.pread(err.fileno(), max(0, os.fstat(err.fileno()).st_size - seen), seen)
            if RESULTS_THREAD_DIED in chunk:
                died = True
                time.sleep(2)  # the traceback's last lines
                break
            # keep the tail: the marker may straddle two reads
            seen += max(0, len(chunk) - len(RESULTS_THREAD_DIED))
            if deadline is not None and time.monotonic() > deadline:
                timed_out = True
                break
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
    if timed_out:
        raise subprocess.TimeoutExpired(argv, timeout, output=stdout, stderr=stderr + deadline_note)
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr), died


def run(argv, *, cwd=None, env=None, timeout=None, check=False, capture_output=True, text=True):
    """subprocess.run(argv, capture_output=True, text=True, ...) for ansible-playbook, with the race
    guard above. ``capture_output`` and ``text`` are accepted for a drop-in call and must stay True.
    The result carries ``attempts`` (1, or 2 after the race)."""
    if not (capture_output and text):
        raise ValueError("playbook_run.run always captures text output")
    for attempt in range(1, ATTEMPTS + 1):
        proc, died = _once(argv, cwd, env, timeout, f"\n[playbook_run: no end within {timeout} s]")
        proc.attempts = attempt
        if not died:
            break
        proc.stderr += f"\n[playbook_run: ansible-core's result thread died (attempt {attempt}); run killed]"
    if check and proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, argv, proc.stdout, proc.stderr)
    return proc
