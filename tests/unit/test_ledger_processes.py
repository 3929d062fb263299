# SPDX-License-Identifier: GPL-3.0-or-later
"""Background processes in the ledger: a process is recorded (pid + start time + boot id) after its pid
exists and before its program runs (common._process_identity.spawn_recorded); a failed record runs
nothing; `ledger state=cleaned` stops only the recorded process, and only while it is still that
process, and removes the server log it names (nothing outside bench_server's log directory)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from _fake_module import FakeModule
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _process_identity as _proc
from ansible_collections.xdplab.testbed.plugins.module_utils.state import _kinds, _ledger
from ansible_collections.xdplab.testbed.plugins.modules import ledger as ledger_module


def _wait_gone(proc: subprocess.Popen, timeout: float = 5.0) -> int | None:
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        return None


def test_the_entry_exists_before_the_program_runs(tmp_path):
    marker = tmp_path / "ran"
    seen = {}

    def record(pid: int) -> None:
        _ledger.record_process(str(tmp_path / "ledger"), pid, None, "run1", tool="probe")
        time.sleep(0.3)  # the program must still not have run
        seen["ran_before_recorded"] = marker.exists()
        seen["pid"] = pid

    proc = _proc.spawn_recorded([sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"], record)
    assert proc.wait(10) == 0
    assert seen["ran_before_recorded"] is False and marker.exists()
    [(path, entry)] = _ledger.entries(str(tmp_path / "ledger"))
    assert entry["kind"] == "process" and entry["key"]["pid"] == seen["pid"] == proc.pid
    assert entry["tool"] == "probe" and entry["run_id"] == "run1"
    assert entry["key"]["boot_id"] == _proc.boot_id()


def test_a_record_that_fails_runs_nothing_and_reaps_the_gate(tmp_path):
    marker = tmp_path / "ran"

    def record(pid: int) -> None:
        raise _ledger.LedgerError("ledger directory is world-writable")

    with pytest.raises(_ledger.LedgerError, match="world-writable"):
        _proc.spawn_recorded([sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"], record)
    time.sleep(0.2)
    assert not marker.exists()


def test_the_gate_exits_without_running_the_program_when_its_parent_dies(tmp_path):
    # The module is SIGKILLed between recording and releasing: the gate sees end of file, runs nothing.
    marker = tmp_path / "ran"
    script = (
        "import os, sys\n"
        "sys.path[:0] = " + repr(sys.path) + "\n"
        "from ansible_collections.xdplab.testbed.plugins.module_utils.common import _process_identity as p\n"
        "def record(pid):\n"
        "    print(pid, flush=True)\n"
        "    os._exit(9)\n"
        f"p.spawn_recorded([sys.executable, '-c', \"open({str(marker)!r}, 'w').close()\"], record)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=20, check=False)
    assert out.returncode == 9, out.stderr
    gate = int(out.stdout.split()[0])
    for _dummy in range(100):
        if _proc.start_time(gate) is None:
            break
        time.sleep(0.05)
    assert _proc.start_time(gate) is None
    assert not marker.exists()


def test_bad_process_entries_name_the_value():
    with pytest.raises(_ledger.LedgerError, match="needs 'start'"):
        _ledger.check_entry("process", {"pid": 4242, "boot_id": _proc.boot_id()})
    with pytest.raises(_ledger.LedgerError, match="pid > 1"):
        _ledger.check_entry("process", {"pid": 1, "start": 5, "boot_id": _proc.boot_id()})
    with pytest.raises(_ledger.LedgerError, match="boot id"):
        _ledger.check_entry("process", {"pid": 4242, "start": 5, "boot_id": "x"})
    with pytest.raises(_ledger.LedgerError, match="gone before it could be recorded"):
        proc = subprocess.Popen(["true"])
        proc.wait()
        _ledger.process_entry(proc.pid)


def _cleaner(tmp_path):
    return ledger_module.Cleaner(FakeModule(tmp_path))


def _entry(proc: subprocess.Popen, **undo) -> dict:
    return dict(_ledger.process_entry(proc.pid), **undo)


def test_cleaned_stops_the_recorded_process(tmp_path):
    proc = subprocess.Popen(["sleep", "60"])
    try:
        _cleaner(tmp_path).remove(_entry(proc, tool="sockperf"))
        assert _wait_gone(proc) is not None
    finally:
        proc.kill()
        proc.wait()


def test_cleaned_leaves_a_pid_that_is_another_process_now(tmp_path):
    # Same pid, other start time (the pid was reused, or the host rebooted): not signalled.
    proc = subprocess.Popen(["sleep", "60"])
    try:
        entry = _entry(proc)
        entry["key"]["start"] -= 1
        _cleaner(tmp_path).remove(entry)
        other_boot = _entry(proc)
        other_boot["key"]["boot_id"] = "00000000-0000-4000-8000-000000000000"
        _cleaner(tmp_path).remove(other_boot)
        assert _wait_gone(proc, 0.5) is None
    finally:
        proc.kill()
        proc.wait()


def test_cleaned_removes_the_server_log_it_names_and_nothing_else(tmp_path, monkeypatch):
    logs = tmp_path / "run-xdplab"
    logs.mkdir()
    monkeypatch.setattr(_kinds, "SERVER_LOG_DIR", str(logs))
    ours = logs / "bench-server-iperf3-1-2.log"
    for path in (ours, logs / "bench-server-iperf3-1-2.log.json", logs / "keep.log", tmp_path / "bench-server-x.log"):
        path.write_text("x")
    proc = subprocess.Popen(["sleep", "60"])
    try:
        entries = [_entry(proc, tool="iperf3", log=str(log))
                   for log in (ours, logs / "keep.log", tmp_path / "bench-server-x.log")]
        for entry in entries:
            _cleaner(tmp_path).remove(entry)
    finally:
        proc.kill()
        proc.wait()
    assert sorted(p.name for p in logs.iterdir()) == ["keep.log"]
    assert (tmp_path / "bench-server-x.log").exists()


def test_cleaned_refuses_a_pktgen_directory_other_than_procs(tmp_path):
    proc = subprocess.Popen(["sleep", "60"])
    try:
        entry = _entry(proc, tool="pktgen", pktgen="/etc")
        with pytest.raises(RuntimeError, match="'/etc' is not /proc/net/pktgen"):
            _cleaner(tmp_path).remove(entry)
    finally:
        proc.kill()
        proc.wait()


def test_processes_go_first_in_teardown(tmp_path):
    proc = subprocess.Popen(["sleep", "60"])
    try:
        items = [("b", _ledger.check_entry("netns", {"name": "xdplab-dut"})),
                 ("a", _ledger.check_entry("xdp", {"interface": "veth0"}, "xdplab-dut")),
                 ("c", _ledger.process_entry(proc.pid, "xdplab-dut"))]
        assert [e["kind"] for _p, e in _ledger.teardown_plan(items)][0] == "process"
    finally:
        proc.kill()
        proc.wait()


def test_bench_server_records_its_server_and_stop_forgets_it(tmp_path, monkeypatch):
    from ansible_collections.xdplab.testbed.plugins.modules import bench_server

    class Exit(Exception):
        pass

    class Module:
        def __init__(self, **params):
            self.params = dict(binary=None, ready_timeout=0.3, stop_timeout=2.0, ledger_dir=str(tmp_path / "ledger"),
                               run_id="r1", params={}, **params)
            self.result = None

        def get_bin_path(self, name):
            return {"iperf3": "/bin/sleep"}.get(name)

        def exit_json(self, **kw):
            self.result = kw
            raise Exit

        def fail_json(self, **kw):
            self.result = dict(kw, failed=True)
            raise Exit

    monkeypatch.setattr(bench_server, "LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.setattr(bench_server, "server_argv", lambda spec: ["iperf3", "30"])
    monkeypatch.setattr(bench_server, "current_netns", lambda: None)
    started = Module(state="started", tool="iperf3")
    with pytest.raises(Exit):
        bench_server.start(started)
    res = started.result
    assert not res.get("failed"), res
    [(path, entry)] = _ledger.entries(str(tmp_path / "ledger"))
    assert entry["key"]["pid"] == res["pid"] and entry["log"] == res["log"] and entry["tool"] == "iperf3"
    assert json.loads(open(path).read())["run_id"] == "r1"
    stopped = Module(state="stopped", pid=res["pid"], log=res["log"])
    with pytest.raises(Exit):
        bench_server.stop(stopped)
    assert _ledger.entries(str(tmp_path / "ledger")) == []
    assert not os.path.exists(res["log"])


def test_the_callers_ancestors_are_never_signalled():
    """A record naming the process that runs us (ansible-playbook, a shell around it) - its real
    identity, start time and boot id right - still gets no signal; signal 0 so that nothing is sent."""
    from ansible_collections.xdplab.testbed.plugins.module_utils.common import _process_identity as _proc

    for pid in _proc.ancestors():
        if pid > 1:
            with pytest.raises(_proc.ProcessIdentityError, match=f"pid {pid}: it is an ancestor"):
                _proc.send(_proc.identity(pid), 0)
    assert os.getppid() in _proc.ancestors()
