# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Safety on real processes and files (no test bed needed, a few seconds): a signal only reaches the
process that was recorded (pid + start time + boot id), the run lock is never seen half written nor
taken over twice, a remote lock left by a dead controller is cleared from the controller, unreadable
ledger entries are set aside, and directories another user could write to are refused."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import time

import pytest
from ansible_collections.xdplab.testbed.plugins.action.run_lock import holder_dead_here
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _process_identity as _proc
from ansible_collections.xdplab.testbed.plugins.module_utils.state._ledger import (
    Holder,
    LedgerError,
    LockHeld,
    acquire,
    check_entry,
    qemu_entry,
    read_lock,
    record,
    scan,
    set_aside,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _host_knobs as th
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning._plan_and_snapshots import (
    SnapshotStore,
    TuningInputError,
)

OTHER_BOOT = "00000000-0000-0000-0000-000000000000"


@pytest.fixture
def victim():
    """Someone else's process: it must survive everything below."""
    proc = subprocess.Popen(["sleep", "60"], start_new_session=True)  # noqa: S607 - test helper
    yield proc
    proc.kill()
    proc.wait()


def alive(proc: subprocess.Popen) -> bool:
    return proc.poll() is None


# ---- class 2: identity before every signal ------------------------------------------------------

def test_latency_pidfile_that_survived_a_reboot_signals_nobody(tmp_path, victim):
    pidfile = tmp_path / "cpu_dma_latency.pid"
    ident = _proc.identity(victim.pid)
    pidfile.write_text(json.dumps(dict(ident, boot_id=OTHER_BOOT)))
    assert th.stop_latency_holder(str(pidfile)) is False
    time.sleep(0.1)
    assert alive(victim) and not pidfile.exists()


@pytest.mark.parametrize("content", ["{pid}\n", '{{"pid": {pid}, "start": 1, "boot_id": "{boot}"}}',
                                     '{{"pid": 1, "start": 0, "boot_id": "{boot}"}}', "garbage"])
def test_latency_pidfile_naming_a_foreign_or_reused_pid_signals_nobody(tmp_path, victim, content):
    pidfile = tmp_path / "cpu_dma_latency.pid"
    pidfile.write_text(content.format(pid=victim.pid, boot=_proc.boot_id()))
    assert th.holder_pid(str(pidfile)) is None
    th.stop_latency_holder(str(pidfile))
    time.sleep(0.1)
    assert alive(victim)


def test_latency_pidfile_of_a_process_that_does_not_hold_the_device(tmp_path, victim):
    # right pid, start time and boot id, but not a holder of /dev/cpu_dma_latency: not ours
    pidfile = tmp_path / "cpu_dma_latency.pid"
    pidfile.write_text(json.dumps(_proc.identity(victim.pid)))
    th.stop_latency_holder(str(pidfile))
    time.sleep(0.1)
    assert alive(victim)


@pytest.mark.parametrize("pid", [1, 0, -1, os.getpid()])
def test_pid_1_groups_and_ourselves_are_never_signalled(pid):
    with pytest.raises(_proc.ProcessIdentityError):
        _proc.send({"pid": pid, "start": 0, "boot_id": _proc.boot_id()}, 0)


def test_reused_pid_is_not_signalled_and_the_real_one_is(victim):
    ident = _proc.identity(victim.pid)
    assert not _proc.send(dict(ident, start=ident["start"] + 1), signal.SIGTERM)
    assert not _proc.send(dict(ident, boot_id=OTHER_BOOT), signal.SIGTERM)
    time.sleep(0.1)
    assert alive(victim)
    assert _proc.stop(ident, signal.SIGTERM, timeout=2) in ("stopped", "killed")
    victim.wait(2)
    assert _proc.stop(ident) == "gone"


def test_ledger_qemu_entry_of_a_reused_pid_is_not_killed(tmp_path, victim):
    # the entry names this pid with its command line, but the process started later than recorded
    entry = qemu_entry(victim.pid, ["sleep", "60"])
    key = dict(entry["key"], start=entry["key"]["start"] - 1)
    check_entry("qemu", key)
    from ansible_collections.xdplab.testbed.plugins.modules.ledger import Cleaner

    class M:
        def get_bin_path(self, *a, **k):
            return "/usr/sbin/ip"
    Cleaner(M()).remove({"kind": "qemu", "key": key, "netns": None})
    time.sleep(0.1)
    assert alive(victim)
    Cleaner(M()).remove({"kind": "qemu", "key": entry["key"], "netns": None})  # the real identity: killed
    victim.wait(2)
    assert not alive(victim)


# ---- class 3: lock and ledger ------------------------------------------------------------------

def _race(path, barrier, results, i):
    barrier.wait()
    try:
        results.put(acquire(path, os.getpid(), run_id=f"r{i}")[0])
    except LockHeld:
        results.put("refused")
    # Stay alive until every racer has tried: a winner that exited early would be a dead holder, and
    # a slow racer would then rightly take the lock over from it.
    barrier.wait(10)


def test_two_runs_never_both_take_over_a_stale_lock(tmp_path):
    path = str(tmp_path / "lock" / "run.lock")
    for _round in range(5):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as fh:  # a stale holder: a pid that does not exist
            json.dump({"pid": 4194304, "pid_start": 1, "host": os.uname().nodename, "since": "x",
                       "boot_id": _proc.boot_id(), "machine_id": _proc.machine_id()}, fh)
        ctx = multiprocessing.get_context("fork")
        barrier, results = ctx.Barrier(4), ctx.Queue()
        procs = [ctx.Process(target=_race, args=(path, barrier, results, i)) for i in range(4)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(10)
        got = sorted(results.get(timeout=5) for _dummy in procs)
        assert got.count("taken-over") == 1 and got.count("refused") == 3, got
        os.unlink(path)


def test_lock_is_never_seen_empty(tmp_path):
    path = str(tmp_path / "run.lock")
    seen = []
    ctx = multiprocessing.get_context("fork")
    stop = ctx.Event()

    def reader():
        bad = 0
        while not stop.is_set():
            if os.path.exists(path):
                h = read_lock(path)
                bad += h is not None and h.pid == 0
        os._exit(1 if bad else 0)
    r = ctx.Process(target=reader)
    r.start()
    for _dummy in range(200):
        acquire(path, os.getpid())
        os.unlink(path)
    stop.set()
    r.join(10)
    seen.append(r.exitcode)
    assert seen == [0], "a reader saw a lock file that was not whole"


def test_remote_lock_of_a_dead_controller_is_cleared_from_the_controller(tmp_path):
    """The lock lives on a target; its holder ran on the controller "ctl-x" (this machine's /proc stands
    for the controller's). The target cannot check ctl-x's pids; the controller can."""
    path = str(tmp_path / "run.lock")
    dead = subprocess.Popen(["true"])  # noqa: S607
    dead.wait()
    acquire(path, dead.pid, host="ctl-x", pid_start=12345, boot_id=_proc.boot_id(), machine_id="c" * 32)
    holder = dict(read_lock(path).__dict__)
    with pytest.raises(LockHeld, match="cannot tell"):  # the target alone: never
        acquire(path, os.getpid(), host="ctl-x")
    assert not holder_dead_here(holder)  # another machine id: the controller cannot judge it either
    holder = dict(holder, machine_id=_proc.machine_id())
    os.unlink(path)
    acquire(path, dead.pid, host="ctl-x", pid_start=12345, boot_id=_proc.boot_id(), machine_id=_proc.machine_id())
    assert holder_dead_here(holder)  # the controller: its own pid is gone
    status, prev = acquire(path, os.getpid(), host="ctl-x", stale=Holder(**dict(read_lock(path).__dict__)))
    assert status == "taken-over" and prev.pid == dead.pid
    assert read_lock(path).pid == os.getpid()


def test_holder_alive_on_the_controller_is_not_cleared(victim):
    me = os.uname().nodename
    live = {"pid": victim.pid, "pid_start": _proc.start_time(victim.pid), "host": me, "boot_id": _proc.boot_id(),
            "machine_id": _proc.machine_id()}
    assert not holder_dead_here(live)
    assert not holder_dead_here(dict(live, host="elsewhere"))
    assert not holder_dead_here(dict(live, boot_id=OTHER_BOOT)), "another boot (or a clone) cannot be judged"
    assert not holder_dead_here(dict(live, machine_id="c" * 32)), "a clone with our hostname cannot be judged"
    assert holder_dead_here(dict(live, pid_start=live["pid_start"] + 1))


def test_a_stale_holder_that_changed_is_not_taken_over(tmp_path):
    path = str(tmp_path / "run.lock")
    acquire(path, 4194000, host="ctl-a", pid_start=1)
    first = read_lock(path)
    os.unlink(path)
    acquire(path, 4194001, host="ctl-a", pid_start=2)  # another run took it meanwhile
    with pytest.raises(LockHeld):
        acquire(path, os.getpid(), host="ctl-b", stale=first)


def test_truncated_ledger_entries_are_set_aside_and_the_rest_listed(tmp_path):
    d = tmp_path / "ledger"
    good, _dummy = record(str(d), check_entry("netns", {"name": "xdplab-t1"}))
    (d / "netns-trunc.json").write_text('{"kind": "netns", "key": {"na')
    (d / "netns-empty.json").write_text("")
    os.symlink("/etc/passwd", d / "netns-link.json")
    (d / "netns-bad.json").write_text(json.dumps({"kind": "netns", "key": {"name": "-rf"}}))
    items, bad = scan(str(d))
    assert [p for p, _dummy in items] == [good]
    assert sorted(os.path.basename(p) for p, _dummy in bad) == [
        "netns-bad.json", "netns-empty.json", "netns-link.json", "netns-trunc.json"]
    for p, _dummy in bad:
        assert set_aside(p).startswith(p + ".unreadable-")
    assert scan(str(d)) == ([(good, items[0][1])], [])


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702])
def test_writable_ledger_and_snapshot_dirs_are_refused(tmp_path, mode):
    d = tmp_path / "shared"
    d.mkdir()
    os.chmod(d, mode)
    with pytest.raises(LedgerError, match="writable"):
        record(str(d), check_entry("netns", {"name": "x"}))
    with pytest.raises(TuningInputError, match="writable"):
        SnapshotStore(str(d)).save("nic-x", "nic", "x", {"mtu": 1500})


def test_symlinked_or_foreign_dirs_are_refused(tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(LedgerError, match="symlink"):
        record(str(link), check_entry("netns", {"name": "x"}))
    with pytest.raises(TuningInputError, match="symlink"):
        SnapshotStore(str(link)).save("nic-x", "nic", "x", {"mtu": 1500})
    if os.geteuid() == 0:
        foreign = tmp_path / "foreign"
        foreign.mkdir(mode=0o700)
        os.chown(foreign, 65534, 65534)
        with pytest.raises(LedgerError, match="owned by uid 65534"):
            record(str(foreign), check_entry("netns", {"name": "x"}))


def test_snapshot_symlink_is_not_followed(tmp_path):
    d = tmp_path / "state"
    d.mkdir(mode=0o700)
    (d / "nic-x.json").symlink_to("/etc/hostname")
    with pytest.raises(TuningInputError):
        SnapshotStore(str(d)).load("nic-x")
