# SPDX-License-Identifier: GPL-3.0-or-later
"""State ledger entries, teardown order and the run lock (module_utils/state/_ledger.py)."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import time

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _process_identity as _proc
from ansible_collections.xdplab.testbed.plugins.module_utils.state._ledger import (
    LedgerError,
    LockHeld,
    acquire,
    check_entry,
    entries,
    entry_id,
    owner_alive,
    pid_start_time,
    qemu_entry,
    read_lock,
    record,
    release,
    scan,
    teardown_plan,
)

HOST = socket.gethostname()
OTHER_BOOT = "00000000-0000-4000-8000-000000000000"


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


@pytest.mark.parametrize(
    ("kind", "key", "netns", "message"),
    [
        ("bogus", {}, None, "got 'bogus'"),
        ("netns", {}, None, "needs 'name'"),
        ("netns", {"name": "../etc"}, None, "'../etc'"),
        ("netns", {"name": "a;rm -rf /"}, None, "'a;rm -rf /'"),
        ("xdp", {"interface": "veth0"}, "ns/../x", "'ns/../x'"),
        ("qemu", {"pid": 1}, None, "pid > 1"),
        ("tuning", {"state_file": "relative.json"}, None, "absolute path"),
        ("tuning", {"state_file": "/var/lib/../../etc/shadow"}, None, "without '..'"),
        ("nft", {"family": "inet"}, None, "needs 'table'"),
        ("qemu", {"pid": 4242, "owner": True}, None, "owner must be a pid"),
        ("qemu", {"pid": 4242, "owner_start": -1}, None, "owner_start must be a start time"),
    ],
)
def test_bad_entries_name_the_value(kind, key, netns, message):
    with pytest.raises(LedgerError) as exc:
        check_entry(kind, key, netns)
    assert message in str(exc.value)


def test_record_is_idempotent_and_private(tmp_path):
    d = str(tmp_path / "ledger")
    e = check_entry("netns", {"name": "xdplab-dut"})
    path, created = record(d, e, "run1")
    assert created
    assert record(d, e, "run2") == (path, False)  # same object, same file, untouched
    assert json.loads(open(path).read())["run_id"] == "run1"
    assert oct(os.stat(d).st_mode & 0o777) == "0o700"
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    assert [x for _dummy, x in entries(d)][0]["key"] == {"name": "xdplab-dut"}


def test_same_interface_in_two_namespaces_are_two_entries():
    a = check_entry("xdp", {"interface": "veth0"}, "xdplab-gen")
    b = check_entry("xdp", {"interface": "veth0"}, "xdplab-dut")
    assert entry_id(a) != entry_id(b)


def test_world_writable_ledger_dir_is_refused(tmp_path):
    d = tmp_path / "ledger"
    d.mkdir()
    os.chmod(d, 0o777)  # noqa: S103 - the permissive mode is what this test checks is refused
    with pytest.raises(LedgerError, match="world-writable"):
        record(str(d), check_entry("netns", {"name": "x"}))


def test_unreadable_entry_is_reported_with_its_path(tmp_path):
    # One unreadable entry no longer hides the others: scan() names it, entries() lists the rest
    # (the ledger module sets it aside and still cleans everything else).
    d = tmp_path / "ledger"
    d.mkdir(mode=0o700)
    (d / "netns-broken.json").write_text("{not json")
    good, _dummy = record(str(d), check_entry("netns", {"name": "x"}))
    items, bad = scan(str(d))
    assert [p for p, _dummy in items] == [good] and [p for p, _dummy in entries(str(d))] == [good]
    assert [os.path.basename(p) for p, _dummy in bad] == ["netns-broken.json"]


def test_teardown_order_and_objects_inside_doomed_namespaces():
    items = [
        ("p1", check_entry("netns", {"name": "xdplab-dut"})),
        ("p2", check_entry("xdp", {"interface": "veth0"}, "xdplab-dut")),
        ("p3", check_entry("xdp", {"interface": "eth1"})),
        ("p4", check_entry("qemu", {"pid": 4242, "cmdline_sha256": "0" * 64})),
        ("p5", check_entry("nft", {"family": "inet", "table": "xdplab_bench"})),
    ]
    plan = [p for p, _dummy in teardown_plan(items)]
    assert plan[:4] == ["p4", "p3", "p5", "p1"]  # processes, interfaces, nft, then namespaces
    assert plan[4] == "p2"  # goes with its namespace: last, found gone


def test_lock_acquire_reentrant_release(tmp_path):
    path = str(tmp_path / "run.lock")
    me = os.getpid()
    assert acquire(path, me, run_id="r1") == ("acquired", None)
    assert acquire(path, me, run_id="r1")[0] == "held"
    held = read_lock(path)
    assert held.pid_start == pid_start_time(me)
    assert (held.boot_id, held.machine_id) == (_proc.boot_id(), _proc.machine_id()) and held.machine_id
    assert release(path, me)
    assert not os.path.exists(path)
    assert not release(path, me)
    # nothing of the lock outlives it: no guard file beside it (a fresh host had none before)
    assert os.listdir(tmp_path) == []


def test_reentry_is_judged_on_the_full_identity(tmp_path):
    """Same pid and hostname but another start time, boot or machine: another holder, not a re-entry."""
    path = str(tmp_path / "run.lock")
    me = os.getpid()
    ident = {"pid_start": pid_start_time(me), "boot_id": _proc.boot_id(), "machine_id": _proc.machine_id()}
    acquire(path, me, HOST, "r1", **ident)
    assert acquire(path, me, HOST, "r1", **ident)[0] == "held"
    for field, other in (("pid_start", ident["pid_start"] + 1), ("boot_id", OTHER_BOOT), ("machine_id", "f" * 32)):
        with pytest.raises(LockHeld):
            acquire(path, me, HOST, "r1", **dict(ident, **{field: other}))
        # nor does it release someone else's lock
        assert not release(path, me, HOST, **dict(ident, **{field: other}))
    assert read_lock(path).run_id == "r1"


def test_live_holder_is_named_and_kept(tmp_path):
    path = str(tmp_path / "run.lock")
    holder = os.getppid()  # alive for the whole test
    acquire(path, holder, run_id="first")
    with pytest.raises(LockHeld) as exc:
        acquire(path, os.getpid(), run_id="second")
    assert f"pid {holder} (start {pid_start_time(holder)}) on {HOST}" in str(exc.value), exc.value
    assert "run first" in str(exc.value) and "it is running" in str(exc.value)
    assert read_lock(path).pid == holder


def test_dead_holder_is_taken_over(tmp_path):
    path = str(tmp_path / "run.lock")
    gone = dead_pid()
    acquire(path, gone, run_id="killed")
    status, previous = acquire(path, os.getpid(), run_id="next")
    assert status == "taken-over"
    assert previous.pid == gone and previous.run_id == "killed"
    assert read_lock(path).pid == os.getpid()


def test_reused_pid_is_not_the_holder(tmp_path):
    path = str(tmp_path / "run.lock")
    me = os.getpid()
    acquire(path, me, run_id="old")
    data = json.loads(open(path).read())
    data["pid_start"] = data["pid_start"] - 1  # same pid, another process start: the old holder is gone
    open(path, "w").write(json.dumps(data))
    assert acquire(path, os.getppid(), run_id="new")[0] == "taken-over"


@pytest.mark.parametrize("field, value", [("machine_id", "0123456789abcdef0123456789abcdef"),
                                          ("boot_id", OTHER_BOOT), ("machine_id", None)])
def test_a_dead_looking_holder_of_a_clone_or_another_boot_is_never_taken_over(tmp_path, field, value):
    """Cloned lab machines share the hostname (and often everything else): a holder whose pid is free
    here but that ran on another machine id, or another boot, or named no machine, may be running
    there. Refused, naming it and the token that takes it over; only that token does."""
    path = str(tmp_path / "run.lock")
    gone = dead_pid()
    ident = {"pid_start": 1234, "boot_id": _proc.boot_id(), "machine_id": _proc.machine_id()}
    acquire(path, gone, HOST, "clone", **dict(ident, **{field: value}))
    holder = read_lock(path)
    with pytest.raises(LockHeld) as exc:
        acquire(path, os.getpid(), run_id="next")
    msg = str(exc.value)
    assert f"pid {gone} (start 1234) on {HOST}" in msg and f"run_lock_takeover={holder.token()}" in msg, msg
    assert f"remove {path}" in msg
    with pytest.raises(LockHeld):
        acquire(path, os.getpid(), steal=f"{gone}:1234@{'e' * 32}/{OTHER_BOOT}")  # another holder's name
    with pytest.raises(LockHeld):
        acquire(path, os.getpid(), steal="true")
    assert read_lock(path).run_id == "clone"
    assert acquire(path, os.getpid(), steal=holder.token())[0] == "taken-over"


def test_a_live_holder_is_not_taken_over_even_when_named(tmp_path):
    path = str(tmp_path / "run.lock")
    acquire(path, os.getppid(), run_id="live")
    with pytest.raises(LockHeld, match="it is running"):
        acquire(path, os.getpid(), steal=read_lock(path).token())


@pytest.mark.parametrize("content", ["{trunc", "", '{"pid": 5}', '{"pid": true, "host": "h", "since": "s"}',
                                     "\x00\xff garbage", '["pid"]'])
def test_a_garbage_lock_file_is_not_taken_over_silently(tmp_path, content):
    path = tmp_path / "run.lock"
    path.write_text(content)
    with pytest.raises(LockHeld, match="not a readable xdplab lock") as exc:
        acquire(str(path), os.getpid())
    token = read_lock(str(path)).token()
    assert token.startswith("unreadable:") and token in str(exc.value)
    assert path.read_text() == content
    assert acquire(str(path), os.getpid(), steal=token)[0] == "taken-over"


def test_a_symlinked_lock_is_not_followed_nor_taken_over(tmp_path):
    target = tmp_path / "elsewhere"
    target.write_text("precious")
    path = tmp_path / "run.lock"
    path.symlink_to(target)
    with pytest.raises(LockHeld, match="not a readable xdplab lock"):
        acquire(str(path), os.getpid())
    assert target.read_text() == "precious" and path.is_symlink()


def test_qemu_entry_hashes_the_cmdline_and_names_its_owner():
    """The entry of a QEMU process: the sha256 of its NUL-separated argv as /proc/PID/cmdline has it,
    and this process as the owner; while the owner lives the entry is in use, after it is stale."""
    proc = subprocess.Popen(["sleep", "30"])  # noqa: S607 - a stand-in process
    try:
        entry = qemu_entry(proc.pid, ["sleep", "30"])
        # Right after a vfork()+exec the new image's arguments may not be set up yet (empty cmdline).
        for _dummy in range(500):
            with open(f"/proc/{proc.pid}/cmdline", "rb") as fh:
                cmdline = fh.read()
            if cmdline:
                break
            time.sleep(0.01)
        assert entry["key"]["cmdline_sha256"] == hashlib.sha256(cmdline).hexdigest(), (entry, cmdline)
        assert entry["key"]["owner"] == os.getpid()
        assert entry["key"]["owner_start"] == pid_start_time(os.getpid())
        assert owner_alive(entry["key"])
        assert not owner_alive(dict(entry["key"], owner=dead_pid()))
        assert not owner_alive(dict(entry["key"], owner_start=entry["key"]["owner_start"] + 1)), "a reused pid"
        assert not owner_alive({"pid": proc.pid})
    finally:
        proc.kill()
        proc.wait()


def test_forget_inside_drops_only_the_objects_of_that_namespace(tmp_path):
    from ansible_collections.xdplab.testbed.plugins.module_utils.state import _ledger as L

    d = str(tmp_path)
    L.record(d, L.check_entry("xdp", {"interface": "veth0"}, "xdplab-dut"))
    L.record(d, L.check_entry("tc", {"interface": "veth0"}, "xdplab-dut"))
    L.record(d, L.check_entry("xdp", {"interface": "veth0"}, "xdplab-sink"))
    L.record(d, L.check_entry("netns", {"name": "xdplab-dut"}))
    assert len(L.forget_inside(d, "xdplab-dut")) == 2
    left = sorted((e["kind"], e.get("netns") or e["key"].get("name")) for _dummy, e in L.entries(d))
    assert left == [("netns", "xdplab-dut"), ("xdp", "xdplab-sink")]
