# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_pktgen against a fake /proc/net/pktgen tree: command planning, pgset result checks, refusals,
duration runs stopped by 'stop', results parsed from real captured device files."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import _run_module
import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._pktgen_proc import (
    Pktgen,
    PktgenError,
    check_spec,
    commands,
    cpu_share,
    cpu_times,
    device_names,
)

FIX = Path(__file__).parent / "fixtures" / "pktgen"
RESULT = (FIX / "qemu_device_dummy0_burst8_clone64.txt").read_text()


class FakePktgen:
    """A small pktgen: device files answer 'Result: OK: <cmd>' or a refusal, pgctrl start blocks
    until stop (endless) or returns (count), finished devices show the captured result block."""

    def __init__(self, root: Path, threads=(0, 1), refuse: dict | None = None, endless_block: bool = True):
        self.root = root
        self.refuse = refuse or {}
        self.writes: list[tuple[str, str]] = []
        self.devices: dict[str, str] = {}
        self.stopped = threading.Event()
        self.endless_block = endless_block
        root.mkdir(parents=True, exist_ok=True)
        (root / "pgctrl").write_text("Packet Generator\n")
        for t in threads:
            (root / f"kpktgend_{t}").write_text("Running: \nStopped: \nResult: OK\n")

    def _thread_text(self) -> str:
        return "Running: \nStopped: " + " ".join(self.devices) + " \nResult: OK\n"

    def read(self, path: str) -> str:
        name = Path(path).name
        if name.startswith("kpktgend_"):
            return self._thread_text()
        return self.devices.get(name, "")

    def write(self, path: str, text: str) -> None:
        name, cmd = Path(path).name, text.strip()
        self.writes.append((name, cmd))
        word = cmd.split()[0]
        if word in self.refuse:
            if isinstance(self.refuse[word], int):
                raise OSError(self.refuse[word], "refused")
            self.devices[name] = f"Params: ...\nResult: {self.refuse[word]}\n"
            return
        if name == "pgctrl":
            if cmd == "reset":
                self.devices.clear()
            elif cmd == "start":
                counts = [c for n, c in self.writes if c.startswith("count ")]
                if counts and counts[-1] == "count 0" and self.endless_block:
                    assert self.stopped.wait(10), "start blocked and nobody wrote stop"
                for dev in self.devices:
                    self.devices[dev] = RESULT.replace("ifname: dummy0", f"ifname: {dev}")
            elif cmd == "stop":
                self.stopped.set()
            return
        if name.startswith("kpktgend_"):
            if word == "add_device":
                self.devices[cmd.split()[1]] = "Result: OK: add_device\n"
            return
        if name not in self.devices:
            raise OSError(2, "No such file or directory")
        self.devices[name] = f"Params: ...\nResult: OK: {cmd}\n"


def spec(**kw):
    base = {"interface": "dummy0", "count": 1000}
    base.update(kw)
    return check_spec(base)


# ---------------------------------------------------------------- planning


def test_commands_single_thread_like_functions_sh():
    s = spec(pkt_size=64, burst=32, clone_skb=64, dst="198.18.0.2", dst_mac="02:00:00:00:00:02",
             udp_src_min=9, udp_src_max=1032, flows=1024, flowlen=8, flags=["UDPSRC_RND"])
    assert commands(s) == [
        ("kpktgend_0", "rem_device_all"), ("kpktgend_0", "add_device dummy0"),
        ("dummy0", "count 1000"), ("dummy0", "clone_skb 64"), ("dummy0", "pkt_size 64"), ("dummy0", "delay 0"),
        ("dummy0", "burst 32"), ("dummy0", "dst 198.18.0.2"), ("dummy0", "dst_mac 02:00:00:00:00:02"),
        ("dummy0", "udp_src_min 9"), ("dummy0", "udp_src_max 1032"), ("dummy0", "flows 1024"),
        ("dummy0", "flowlen 8"), ("dummy0", "flag UDPSRC_RND")]


def test_commands_threads_use_dev_at_thread_and_duration_means_count_0():
    s = spec(threads=[0, 1], count=0, duration=2.0, queue_map_cpu=True, src="198.18.0.1", src_max="198.18.0.9",
             queue_map_min=0, queue_map_max=1)
    assert device_names(s) == [(0, "dummy0@0"), (1, "dummy0@1")]
    cmds = commands(s)
    assert cmds[:4] == [("kpktgend_0", "rem_device_all"), ("kpktgend_0", "add_device dummy0@0"),
                        ("kpktgend_1", "rem_device_all"), ("kpktgend_1", "add_device dummy0@1")]
    dev1 = [c for f, c in cmds if f == "dummy0@1"]
    assert dev1[0] == "count 0"
    assert "src_min 198.18.0.1" in dev1 and "src_max 198.18.0.9" in dev1
    assert dev1[-3:] == ["queue_map_min 0", "queue_map_max 1", "flag QUEUE_MAP_CPU"]


@pytest.mark.parametrize(("kw", "needle"), [
    ({"interface": "eth0@1"}, "'eth0@1'"),
    ({"interface": "x" * 16}, "network device name"),
    ({"threads": []}, "threads"),
    ({"threads": [0, 0]}, "[0, 0]"),
    ({"count": 0}, "needs a duration"),
    ({"count": -1}, "-1"),
    ({"duration": 0}, "duration"),
    ({"pkt_size": 20}, "pkt_size must be an integer 42..65535, got 20"),
    ({"burst": 0}, "burst"),
    ({"clone_skb": -3}, "-3"),
    ({"dst": "198.18.0.300"}, "'198.18.0.300'"),
    ({"dst_max": "198.18.0.9"}, "dst_max needs dst"),
    ({"dst": "198.18.0.9", "dst_max": "198.18.0.1"}, "dst_max 198.18.0.1 is below dst 198.18.0.9"),
    ({"udp_src_min": 10, "udp_src_max": 9}, "udp_src_max 9 is below udp_src_min 10"),
    ({"udp_dst_min": 70000}, "70000"),
    ({"dst_mac": "02:00:00:00:02"}, "'02:00:00:00:02'"),
    ({"flags": ["NOPE"]}, "flag 'NOPE' is unknown"),
    ({"bogus": 1}, "unknown parameter(s) bogus"),
])
def test_bad_spec_names_the_value(kw, needle):
    base = {"interface": "dummy0", "count": 10}
    base.update(kw)
    with pytest.raises(PktgenError) as exc:
        check_spec(base)
    assert needle in str(exc.value)


# ---------------------------------------------------------------- running


def test_count_run_configures_starts_and_parses(tmp_path):
    fake = FakePktgen(tmp_path / "pg")
    pg = Pktgen(str(tmp_path / "pg"), fake)
    s = spec(burst=8, clone_skb=64, pkt_size=64)
    pg.configure(s)
    pg.start_blocking(None, timeout=5)
    res = pg.results([d for _dummy, d in device_names(s)])
    assert fake.writes[0] == ("pgctrl", "reset")
    assert ("dummy0", "burst 8") in fake.writes and fake.writes[-1] == ("pgctrl", "start")
    assert res["pps"] == 2158546.0 and res["packets"] == 200000
    assert res["devices"][0]["device"] == "dummy0"
    pg.reset()
    assert fake.devices == {}


def test_duration_run_is_stopped_after_the_duration(tmp_path):
    fake = FakePktgen(tmp_path / "pg")
    pg = Pktgen(str(tmp_path / "pg"), fake)
    s = spec(count=0, duration=0.3, threads=[0, 1])
    pg.configure(s)
    seconds = pg.start_blocking(s["duration"], timeout=5)
    assert 0.25 <= seconds < 5
    assert ("pgctrl", "stop") in fake.writes
    res = pg.results([d for _dummy, d in device_names(s)])
    assert [d["device"] for d in res["devices"]] == ["dummy0@0", "dummy0@1"]
    # all packets over the wall span (the longest device), not the sum of the per-device rates
    span = max(d["usec"] for d in res["devices"]) / 1e6
    assert res["pps"] == res["packets"] / span


def test_count_run_over_timeout_is_stopped_and_fails(tmp_path):
    fake = FakePktgen(tmp_path / "pg")
    fake.writes.append(("x", "count 0"))  # make the fake block like an endless run

    pg = Pktgen(str(tmp_path / "pg"), fake)
    with pytest.raises(PktgenError, match="did not finish its count within 0.2 s"):
        pg.start_blocking(None, timeout=0.2)
    assert ("pgctrl", "stop") in fake.writes


def test_refused_write_names_command_and_reason(tmp_path):
    fake = FakePktgen(tmp_path / "pg", refuse={"burst": 524})
    pg = Pktgen(str(tmp_path / "pg"), fake)
    with pytest.raises(PktgenError) as exc:
        pg.configure(spec(burst=8))
    assert "refused 'burst 8' on dummy0: not supported by this device/driver (errno 524" in str(exc.value)


def test_result_line_not_ok_fails(tmp_path):
    fake = FakePktgen(tmp_path / "pg", refuse={"pkt_size": 'No such parameter "pkt_size"'})
    pg = Pktgen(str(tmp_path / "pg"), fake)
    with pytest.raises(PktgenError, match=r"refused 'pkt_size 60' on dummy0: Result: No such parameter"):
        pg.configure(spec())


def test_missing_thread_and_missing_pktgen(tmp_path):
    FakePktgen(tmp_path / "pg", threads=(0,))
    pg = Pktgen(str(tmp_path / "pg"), FakePktgen(tmp_path / "pg", threads=(0,)))
    with pytest.raises(PktgenError, match=r"thread\(s\) \[3\] do not exist .*\[0\]"):
        pg.configure(spec(threads=[0, 3]))
    with pytest.raises(PktgenError, match="no .*/pgctrl: this kernel has no pktgen"):
        Pktgen(str(tmp_path / "nope")).available()


def test_results_of_an_unfinished_device_fail(tmp_path):
    fake = FakePktgen(tmp_path / "pg")
    pg = Pktgen(str(tmp_path / "pg"), fake)
    pg.configure(spec())
    with pytest.raises(PktgenError, match="no finished run"):
        pg.results(["dummy0"])


def test_cpu_share():
    a = cpu_times("cpu  100 0 200 1000 0 0 10 0 0 0\ncpu0 1 2 3\n")
    b = cpu_times("cpu  110 0 260 1020 0 0 20 0 0 0\n")
    assert cpu_share(a, b) == {"system_pct": 60.0, "softirq_pct": 10.0, "busy_pct": 80.0}
    with pytest.raises(PktgenError):
        cpu_times("intr 1 2\n")


# ---------------------------------------------------------------- the module (check mode, bad input)


def run_module(args: dict) -> dict:
    return _run_module.run_module("pktgen", args)


def test_module_check_mode_returns_the_commands_and_writes_nothing(tmp_path):
    FakePktgen(tmp_path / "pg")
    before = {p.name: p.read_text() for p in (tmp_path / "pg").iterdir()}
    res = run_module({"_ansible_check_mode": True, "proc_dir": str(tmp_path / "pg"), "interface": "dummy0",
                      "count": 10, "burst": 4})
    assert res["changed"] is True and not res.get("failed"), res
    assert res["commands"][:3] == ["pgctrl: reset", "kpktgend_0: rem_device_all", "kpktgend_0: add_device dummy0"]
    assert "dummy0: burst 4" in res["commands"]
    assert {p.name: p.read_text() for p in (tmp_path / "pg").iterdir()} == before


@pytest.mark.parametrize(("args", "needle"), [
    ({"interface": "dummy0", "count": 10, "pkt_size": 7}, "pkt_size must be an integer 42..65535, got 7"),
    ({"interface": "dummy0", "count": 10, "threads": [5]}, "thread(s) [5] do not exist"),
    ({"interface": "dummy0", "count": 10, "udp_src_max": 10}, "udp_src_min"),
    ({"count": 10}, "interface"),
])
def test_module_bad_input_fails_naming_it(tmp_path, args, needle):
    FakePktgen(tmp_path / "pg")
    res = run_module(dict(args, proc_dir=str(tmp_path / "pg"), _ansible_check_mode=True))
    assert res.get("failed") and needle in res["msg"], res


def test_module_without_pktgen_says_so(tmp_path):
    res = run_module({"proc_dir": str(tmp_path / "none"), "interface": "dummy0", "count": 1})
    assert res.get("failed") and "this kernel has no pktgen" in res["msg"], res


# ---------------------------------------------------------------- state=started: returns once running


class RunningAfter(FakePktgen):
    """Lists the devices as 'Running:' once ``after`` reads of a thread file have passed (a slow CPU)."""

    def __init__(self, root: Path, after: int | None) -> None:
        super().__init__(root)
        self.after, self.reads = after, 0

    def read(self, path: str) -> str:
        if Path(path).name.startswith("kpktgend_"):
            self.reads += 1
            if self.after is not None and self.reads > self.after:
                return "Running: " + " ".join(self.devices) + " \nStopped: \nResult: OK\n"
        return super().read(path)


def blocking_pgctrl(root: Path) -> None:
    """pgctrl as a FIFO nobody reads: the background starter's write blocks like pktgen's 'start'."""
    (root / "pgctrl").unlink()
    os.mkfifo(root / "pgctrl")


def test_started_returns_only_once_the_devices_run(tmp_path):
    fake = RunningAfter(tmp_path / "pg", after=6)
    blocking_pgctrl(tmp_path / "pg")
    pg = Pktgen(str(tmp_path / "pg"), fake)
    pg.configure(spec(count=0, duration=60))
    seen = []
    pid = pg.start_background(seen.append, ["dummy0"], timeout=10)
    try:
        assert seen == [pid] and fake.reads > 6  # recorded first, then polled until running
        assert Path(f"/proc/{pid}").exists()
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def test_started_that_never_runs_is_stopped_and_fails(tmp_path):
    fake = RunningAfter(tmp_path / "pg", after=None)
    blocking_pgctrl(tmp_path / "pg")
    pg = Pktgen(str(tmp_path / "pg"), fake)
    pg.configure(spec(count=0, duration=60))
    seen = []
    with pytest.raises(PktgenError, match=r"did not list dummy0 as running within 0.3 s"):
        pg.start_background(seen.append, ["dummy0"], timeout=0.3)
    assert fake.writes[-1] == ("pgctrl", "stop")
    os.kill(seen[0], signal.SIGKILL)
    os.waitpid(seen[0], 0)


def test_started_whose_starter_fails_says_so(tmp_path):
    fake = RunningAfter(tmp_path / "pg", after=None)
    (tmp_path / "pg" / "pgctrl").unlink()
    (tmp_path / "pg" / "pgctrl").mkdir()  # the starter's open() fails
    pg = Pktgen(str(tmp_path / "pg"), fake)
    pg.configure(spec(count=0, duration=60))
    with pytest.raises(PktgenError, match=r"background start exited with status 1 before dummy0 ran"):
        pg.start_background(None, ["dummy0"], timeout=10)


def test_started_short_count_that_already_finished_is_fine(tmp_path):
    fake = RunningAfter(tmp_path / "pg", after=None)  # never seen running: it was done before the first read
    pg = Pktgen(str(tmp_path / "pg"), fake)
    pg.configure(spec(count=10))
    pid = pg.start_background(None, ["dummy0"], timeout=10)
    assert (tmp_path / "pg" / "pgctrl").read_text().startswith("start\n") and pid > 0
