# SPDX-License-Identifier: GPL-3.0-or-later
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
import threading
import time

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.state._ledger import Holder, LockHeld, acquire, release
from conftest import (
    LOCK,
    OUR_NETNS,
    alive,
    assert_records_intact,
    bench,
    clsact_qdiscs,
    leftovers,
    netns_names,
    nft_tables,
    note_xdpgen,
    our_ledger_entries,
    read_lock,
    sh,
    sigkill_playbook,
    tc_filters,
    teardown,
    wait_until,
    xdp_attachments,
    xdpgen_pids,
)

pytestmark = pytest.mark.root


def grab_lock_after(run):
    """Take the run lock the moment `run` releases it (polling every 10 ms), for the test's pid."""
    def spin():
        # First the run must have taken the lock itself.
        while (read_lock(LOCK) or Holder(0, None, "", None, "")).pid != run.pid:
            if run.proc.poll() is not None:
                return
            time.sleep(0.05)
        while True:
            try:
                state, _prev = acquire(LOCK, os.getpid(), run_id="h8-faults-inspect")
                spin.got, spin.previous_free = True, state == "acquired"
                return
            except LockHeld:
                if run.proc.poll() is not None and time.monotonic() > spin.deadline:
                    return
                time.sleep(0.01)
    spin.got = spin.previous_free = False
    spin.deadline = time.monotonic() + 600
    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    return _Grab(thread, spin)


class _Grab:
    def __init__(self, thread, spin):
        self.thread, self.spin = thread, spin

    def join(self, timeout):
        self.spin.deadline = time.monotonic() + timeout
        self.thread.join(timeout + 1)

    @property
    def got(self):
        return self.spin.got

    @property
    def previous_free(self):
        return self.spin.previous_free


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


def test_xdp_attach_fails_halfway_through_the_hosts(tmp_path, host_before):
    """Breaks: XDP_REDIRECT attaches xdp_drop to the sink, then the DUT attach fails (its devmap entry
    names an egress interface that does not exist). The test bed is kept (xdplab_keep_testbed) so what
    the failed scenario left inside the namespaces can be seen.

    After: the run fails naming the bad interface, no XDP program, clsact qdisc or nftables table is
    left in any namespace (the sink's program was detached), the ledger lists only the kept namespaces,
    the lock is free; playbooks/teardown.yml then removes the kept test bed and nothing is left.
    """
    run = bench(tmp_path, "attach", ["xdp_redirect"], bench_dut_egress_interface="h8nosuch0",
                xdplab_keep_testbed=True)
    grab = grab_lock_after(run)  # another run waiting for the lock would replace the kept test bed
    try:
        rc = run.wait()
        grab.join(30)
        assert grab.got, "could not take the run lock after the run to inspect the kept test bed"
        assert rc != 0, f"the run passed with a bad egress interface; log {run.log_path}"
        assert "h8nosuch0" in run.text(), "the failure does not name the bad interface"
        assert set(OUR_NETNS) <= netns_names(), "the kept test bed is gone"
        for ns in OUR_NETNS:
            assert xdp_attachments(ns) == [], f"XDP program left in {ns}: {xdp_attachments(ns)}"
            assert tc_filters(ns) == [] and clsact_qdiscs(ns) == set(), f"tc state left in {ns}"
            assert nft_tables(ns) == set(), f"nftables tables left in {ns}: {nft_tables(ns)}"
        kept = [e for e in our_ledger_entries() if " netns " not in e]
        assert kept == [], f"ledger entries other than the kept namespaces: {kept}"
        assert grab.previous_free, "the run lock was not released by the run"
        assert_records_intact(run, set(), incomplete=True)
    finally:
        release(LOCK, os.getpid())
        down = teardown(tmp_path)
        rc_down = down.wait()
    assert rc_down == 0, f"teardown failed; log {down.log_path}"
    assert leftovers(host_before) == []


def test_playbook_sigkilled_then_teardown_and_rerun(tmp_path, host_before):
    """Breaks: ansible-playbook itself is SIGKILLed while the second scenario measures (its workers and
    the generator are orphaned, nothing of the playbook's always: runs).

    After: the lock names a dead holder (stale), the ledger lists what the run created; teardown.yml
    takes the stale lock over and removes exactly that, leaving nothing; the killed run's completed
    record is intact and its directory INCOMPLETE; the next bench run completes with valid records
    and leaves nothing behind.
    """
    run = bench(tmp_path, "sigkill", ["xdp_drop", "xdp_tx"])
    try:
        wait_until(run.records, 240, "the first scenario's record", run.proc)
        seen = note_xdpgen(xdpgen_pids())
        wait_until(lambda: note_xdpgen(xdpgen_pids() - seen), 120, "the second scenario's generator",
                   run.proc, step=0.05)
    except BaseException:
        run.kill_all()
        raise
    sigkill_playbook(run)  # the orphans (workers, the generator) finish their current step and exit
    holder = read_lock(LOCK)
    assert holder is not None and holder.pid == run.pid and not alive(holder.pid), (
        f"expected a stale lock of the killed run {run.pid}, got {holder}")
    assert our_ledger_entries(), "the killed run left no ledger entries although its namespaces exist"
    assert_records_intact(run, {"xdp_drop"}, incomplete=True)

    down = teardown(tmp_path)
    assert down.wait() == 0, f"teardown failed; log {down.log_path}"
    # teardown names the killed run's lock and why it took it over (run_lock's warning, which Ansible
    # may wrap over several lines): the holder by pid and start time, and that it is gone
    said = " ".join(down.text().split())
    assert (f"took over the run lock of pid {holder.pid} (start {holder.pid_start}) on" in said
            and "that process is gone" in said), down.text()[-2000:]
    assert leftovers(host_before) == []
    assert_records_intact(run, {"xdp_drop"}, incomplete=True)

    again = bench(tmp_path, "rerun", ["xdp_drop"])
    assert again.wait() == 0, f"the next run failed; log {again.log_path}"
    assert_records_intact(again, {"xdp_drop"}, incomplete=False)
    assert leftovers(host_before) == []
