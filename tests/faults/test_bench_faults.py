"""Faults injected into real bench.yml runs on the default virtual test bed.

Each case states what it breaks and asserts what must hold afterwards: nothing of ours left on the
host (namespaces, veths, XDP programs, tc filters and qdiscs, nftables tables, generator processes),
the ledger and the tuning state directory empty, the run lock released, every record of a completed
point intact (record v1, summary recomputable from its samples), the interrupted run marked
INCOMPLETE, and the next run working.
"""

from __future__ import annotations

import os
import signal

import pytest
from conftest import (
    assert_records_intact,
    bench,
    leftovers,
    note_xdpgen,
    sh,
    wait_until,
    xdpgen_pids,
)

pytestmark = pytest.mark.root


def first_record(run) -> list[str]:
    return run.records()


def test_generator_killed_mid_run(tmp_path, host_before):
    """Breaks: the generator (xdpgen) of the second scenario is SIGKILLed mid-measurement.

    After: the run fails, the first scenario's record is intact and valid, no record was written for
    the killed point, the run stays INCOMPLETE, nothing is left behind, and the lock is free.
    """
    run = bench(tmp_path, "genkill", ["xdp_drop", "xdp_tx"])
    try:
        wait_until(lambda: first_record(run), 240, "the first scenario's record", run.proc)
        seen = note_xdpgen(xdpgen_pids())
        victims = wait_until(lambda: note_xdpgen(xdpgen_pids() - seen), 120,
                             "the second scenario's generator", run.proc, step=0.05)
        for pid in victims:
            os.kill(pid, signal.SIGKILL)
        rc = run.wait()
    except BaseException:
        run.kill_all()
        raise
    assert rc != 0, f"the run passed although its generator was killed; log {run.log_path}"
    assert "xdp_tx" in run.text(), "the failure is not the xdp_tx point"
    assert_records_intact(run, {"xdp_drop"}, incomplete=True)
    assert leftovers(host_before) == []


def test_dut_namespace_deleted_mid_run(tmp_path, host_before):
    """Breaks: the DUT namespace is deleted (ip netns delete xdplab-dut) while the generator runs.

    After: the run fails naming the problem, no record claims a rate for the broken point, nothing of
    ours is left (in particular no tuning snapshot for the vanished DUT port, no ledger entry), the
    lock is free.
    """
    run = bench(tmp_path, "dutdel", ["xdp_drop"])
    try:
        wait_until(lambda: note_xdpgen(xdpgen_pids()), 240, "the generator to run", run.proc, step=0.05)
        sh(["ip", "netns", "delete", "xdplab-dut"])
        rc = run.wait()
    except BaseException:
        run.kill_all()
        raise
    assert rc != 0, f"the run passed although the DUT namespace was deleted; log {run.log_path}"
    assert_records_intact(run, set(), incomplete=True)
    assert leftovers(host_before) == []
