# SPDX-License-Identifier: GPL-3.0-or-later
"""bench_run's stop of a tool with no time limit of its own (testpmd): the window opens at the
tool's own sign that forwarding has started, however long its start-up takes."""

from __future__ import annotations

import re
import sys
import textwrap
import time

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._generator_table import (
    Interrupt,
    interrupt_after,
)
from ansible_collections.xdplab.testbed.plugins.modules import bench_run

# A stand-in for testpmd: a slow start-up, then the sign, then one line per 0.1 s until SIGINT,
# after which it prints how long it forwarded (from the sign to the signal) and exits 0.
FAKE = textwrap.dedent("""
    import signal, sys, time
    time.sleep(float(sys.argv[1]))
    if sys.argv[2] == "sign":
        print("txonly packet forwarding - ports=1 - cores=1 - streams=1", flush=True)
    start = time.monotonic()
    def done(*_):
        print(f"forwarded {time.monotonic() - start:.3f}", flush=True)
        sys.exit(0)
    signal.signal(signal.SIGINT, done)
    while True:
        time.sleep(0.1)
""")


class Failed(Exception):
    pass


class FakeModule:
    def fail_json(self, **kwargs):
        raise Failed(kwargs)


def run(startup: float, sign: str, window: float, timeout: float):
    stop = interrupt_after("testpmd", {"duration": window})
    argv = [sys.executable, "-c", FAKE, str(startup), sign]
    t0 = time.monotonic()
    proc = bench_run.run_interrupted(FakeModule(), argv, stop, timeout, {})
    return proc, time.monotonic() - t0


def test_testpmd_sign_matches_the_captured_output():
    stop = interrupt_after("testpmd", {"duration": 2})
    with open("tests/unit/fixtures/testpmd/af_xdp_veth_txonly_here.txt", encoding="utf-8") as fh:
        text = fh.read()
    assert stop.ready.search(text)
    # one --stats-period past the window: the block that ends the window is printed before SIGINT
    assert stop.window == 2 and stop.seconds == 3
    assert interrupt_after("xskgen", {"duration": 2}) is None


@pytest.mark.parametrize("startup", [0.0, 1.5])
def test_window_opens_at_the_sign_not_at_the_start(startup):
    proc, wall = run(startup, "sign", 1.0, 20)
    forwarded = float(re.search(r"forwarded ([\d.]+)", proc.stdout).group(1))
    assert proc.returncode == 0
    # The whole window and testpmd's one-period tail, whatever the start-up took; no fixed allowance
    # eats into it.
    assert 2.0 <= forwarded < 3.0
    assert wall >= startup + 2.0


def test_tool_that_never_shows_the_sign_fails_naming_it():
    with pytest.raises(Failed) as exc:
        run(0.0, "silent", 1.0, 1.5)
    msg = exc.value.args[0]["msg"]
    assert "sign of forwarding" in msg and "within 1.5 s" in msg


def test_tool_that_exits_before_the_sign_fails():
    stop = Interrupt(re.compile("never"), 1.0)
    with pytest.raises(Failed) as exc:
        bench_run.run_interrupted(FakeModule(), [sys.executable, "-c", "print('EAL: error')"], stop, 10, {})
    assert "exited before its sign" in exc.value.args[0]["msg"]
    assert "EAL: error" in exc.value.args[0]["stdout"]
