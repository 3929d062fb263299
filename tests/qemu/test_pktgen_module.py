# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The xdplab.testbed.pktgen module on the real in-kernel pktgen, INSIDE the QEMU guest.

tests/qemu/test_pktgen_runner.py boots the guest kernel with qemu_exec and runs this file there with
XDPLAB_IN_GUEST=1; on the host (no pktgen in its kernel) this module is skipped as a whole because
that runner is what executes it. The module is run as Ansible runs it (args file, JSON back).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import run_module_file

IN_GUEST = os.environ.get("XDPLAB_IN_GUEST") == "1" or (
    os.uname().nodename == "xdplab-guest" and Path("/run/xdplab-out").is_dir())
if not IN_GUEST:
    pytest.skip("runs inside the QEMU guest (tests/qemu/test_pktgen_runner.py boots it)", allow_module_level=True)

pytestmark = pytest.mark.qemu

ROOT = Path(__file__).resolve().parents[2]
MODULE = ROOT / "plugins" / "modules" / "pktgen.py"
PG = Path("/proc/net/pktgen")


def run_module(args: dict, _tmp_path: Path) -> dict:
    return run_module_file(MODULE, args)


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)  # noqa: S603,S607


def configured_devices() -> list[str]:
    out = []
    for thread in PG.glob("kpktgend_*"):
        for line in thread.read_text().splitlines():
            if line.startswith(("Running:", "Stopped:")):
                out += line.split()[1:]
    return out


def rx_packets(dev: str) -> int:
    return int(Path(f"/sys/class/net/{dev}/statistics/rx_packets").read_text())


@pytest.fixture
def dummy():
    ip("link", "add", "h9pg0", "type", "dummy")
    ip("link", "set", "h9pg0", "up")
    yield "h9pg0"
    ip("link", "del", "h9pg0", check=False)


@pytest.fixture
def veth():
    ip("link", "add", "h9pv0", "type", "veth", "peer", "name", "h9pv1")
    ip("link", "set", "h9pv0", "up")
    ip("link", "set", "h9pv1", "up")
    yield "h9pv0"
    ip("link", "del", "h9pv0", check=False)


def test_count_run_on_dummy_with_burst_and_clone(dummy, tmp_path):
    res = run_module({"interface": dummy, "count": 50000, "pkt_size": 64, "burst": 8, "clone_skb": 16,
                      "dst": "198.18.0.2", "dst_mac": "02:00:00:00:00:02"}, tmp_path)
    assert not res.get("failed"), res
    assert res["changed"] is True
    assert res["packets"] == 50000 and res["errors"] == 0
    assert res["pps"] > 1000
    assert res["devices"][0]["device"] == dummy and res["devices"][0]["pkt_size"] == 64
    assert f"{dummy}: burst 8" in res["commands"] and f"{dummy}: clone_skb 16" in res["commands"]
    assert res["cpu"]["system_pct"] > 0
    assert configured_devices() == [], "pktgen was not reset after the run"


def test_veth_counts_what_pktgen_says_it_sent(veth, tmp_path):
    before = rx_packets("h9pv1")
    res = run_module({"interface": veth, "count": 3000, "pkt_size": 60, "dst": "198.18.0.2",
                      "udp_src_min": 9, "udp_src_max": 40, "flags": ["UDPSRC_RND"]}, tmp_path)
    assert not res.get("failed"), res
    assert res["packets"] == 3000
    # the peer also sees the few frames the new link sends itself (neighbour discovery)
    assert 3000 <= rx_packets("h9pv1") - before <= 3020


def test_two_threads_duration(dummy, tmp_path):
    threads = sorted(int(p.name.split("_")[1]) for p in PG.glob("kpktgend_*"))
    use = threads[:2]
    res = run_module({"interface": dummy, "threads": use, "duration": 1, "pkt_size": 64}, tmp_path)
    assert not res.get("failed"), res
    names = [f"{dummy}@{t}" for t in use] if len(use) > 1 else [dummy]
    assert [d["device"] for d in res["devices"]] == names
    assert 0.8 <= res["seconds"] <= 5, res["seconds"]
    assert res["packets"] > 0


def test_veth_refuses_burst_with_the_kernel_reason_and_nothing_stays(veth, tmp_path):
    res = run_module({"interface": veth, "count": 100, "burst": 8}, tmp_path)
    assert res.get("failed"), res
    assert "refused 'burst 8' on h9pv0" in res["msg"] and "errno 524" in res["msg"], res["msg"]
    assert configured_devices() == []


def test_missing_interface_and_thread(tmp_path):
    res = run_module({"interface": "h9nope0", "count": 10}, tmp_path)
    assert res.get("failed") and "interface 'h9nope0' does not exist" in res["msg"], res
    res = run_module({"interface": "lo", "count": 10, "threads": [63]}, tmp_path)
    assert res.get("failed") and "thread(s) [63] do not exist" in res["msg"], res


def ledger_entries(ledger: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(ledger.glob("*.json"))] if ledger.is_dir() else []


def test_started_then_stopped(dummy, tmp_path):
    ledger = tmp_path / "ledger"
    res = run_module({"state": "started", "interface": dummy, "duration": 600, "pkt_size": 64,
                      "ledger_dir": str(ledger)}, tmp_path)
    assert not res.get("failed"), res
    # recorded before it wrote 'start': the starter's identity, and that pktgen needs a reset
    [entry] = ledger_entries(ledger)
    assert entry["kind"] == "process" and entry["key"]["pid"] == res["pid"], entry
    assert entry["pktgen"] == str(PG) and entry["tool"] == "pktgen", entry
    time.sleep(0.5)
    assert dummy in configured_devices()
    running = [ln for p in PG.glob("kpktgend_*") for ln in p.read_text().splitlines() if ln.startswith("Running:")]
    assert any(dummy in ln for ln in running), running
    res = run_module({"state": "stopped", "ledger_dir": str(ledger)}, tmp_path)
    assert not res.get("failed"), res
    assert res["changed"] is True and res["packets"] > 0
    assert configured_devices() == []
    assert ledger_entries(ledger) == []
    # nothing left to stop: not changed
    res = run_module({"state": "stopped"}, tmp_path)
    assert res["changed"] is False and not res.get("failed"), res


def test_a_run_killed_after_start_is_undone_by_the_ledger(dummy, tmp_path):
    # The play died after pktgen started: nothing calls state=stopped. `ledger state=cleaned` stops the
    # starter (its identity checked) and resets pktgen, and the entry goes.
    ledger = tmp_path / "ledger"
    res = run_module({"state": "started", "interface": dummy, "duration": 600, "pkt_size": 64,
                      "ledger_dir": str(ledger)}, tmp_path)
    assert not res.get("failed"), res
    time.sleep(0.5)
    assert dummy in configured_devices()
    out = run_module_file(ROOT / "plugins" / "modules" / "ledger.py", {"state": "cleaned", "dir": str(ledger)})
    assert not out.get("failed"), out
    assert configured_devices() == []
    assert not Path(f"/proc/{res['pid']}").exists() or "Z" in Path(f"/proc/{res['pid']}/stat").read_text().split()[2]
    assert ledger_entries(ledger) == []


def test_a_blocking_run_records_itself_and_a_killed_one_is_undone(dummy, tmp_path):
    # state=run: the module's own process is in the ledger while pktgen runs, and the entry goes with
    # the run; a run SIGKILLed with its play (nothing resets pktgen) is stopped and reset by the ledger.
    ledger = tmp_path / "ledger"
    res = run_module({"interface": dummy, "count": 2000, "pkt_size": 64, "ledger_dir": str(ledger)}, tmp_path)
    assert not res.get("failed") and res["packets"] == 2000, res
    assert ledger_entries(ledger) == [], "a finished run left its ledger entry"
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"interface": dummy, "duration": 600, "pkt_size": 64,
                                                        "ledger_dir": str(ledger)}}))
    proc = subprocess.Popen([sys.executable, str(MODULE), str(args)],  # noqa: S603
                            env=dict(os.environ, PYTHONPATH=str(ROOT / ".collections")),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while dummy not in configured_devices() and time.monotonic() < deadline:
        time.sleep(0.2)
    [entry] = ledger_entries(ledger)
    assert entry["key"]["pid"] == proc.pid and entry["pktgen"] == str(PG) and entry["tool"] == "pktgen", entry
    proc.kill()
    proc.wait()
    assert dummy in configured_devices(), "pktgen stopped with the process: the kill tests nothing"
    out = run_module_file(ROOT / "plugins" / "modules" / "ledger.py", {"state": "cleaned", "dir": str(ledger)})
    assert not out.get("failed"), out
    assert configured_devices() == [] and ledger_entries(ledger) == []


def test_check_mode_configures_nothing(dummy, tmp_path):
    res = run_module({"interface": dummy, "count": 10, "_ansible_check_mode": True}, tmp_path)
    assert not res.get("failed") and res["changed"] is True, res
    assert configured_devices() == []
