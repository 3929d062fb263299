# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""sockperf (tp and pp) and iperf3 for real through bench_run on two namespaces (generator and DUT as
separate inventory hosts, the server started on the DUT by bench_server), and a parameter the tool
itself rejects failing with the tool's own message and leaving no server behind."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import playbook_run
import pytest

pytestmark = pytest.mark.root

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK = ROOT / ".venv" / "bin" / "ansible-playbook"
TAG = f"h9t{os.getpid() % 10000}"
GEN, DUT = f"{TAG}-gen", f"{TAG}-dut"

PLAY = """
- name: sockperf and iperf3 through bench_run
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Run the point
      xdplab.testbed.bench_run:
        tool: "{{ item.tool }}"
        params: "{{ item.params }}"
        repetitions: 1
        sampler: none
        dut: dut
        server: "{{ item.server }}"
        scenario: tools
        variant: "{{ item.name }}"
      delegate_to: gen
      loop: "{{ points }}"
      register: out
      ignore_errors: "{{ expect_fail | default(false) | bool }}"  # the test reads the failure
    - name: Results
      ansible.builtin.copy:
        dest: "{{ dest }}"
        content: "{{ out.results | to_json }}"
        mode: "0644"
"""


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True, check=check)  # noqa: S603


@pytest.fixture(scope="module")
def bed():
    sh("ip", "netns", "add", GEN)
    sh("ip", "netns", "add", DUT)
    try:
        sh("ip", "link", "add", f"{TAG}a", "netns", GEN, "type", "veth", "peer", "name", f"{TAG}b", "netns", DUT)
        for ns, dev, addr in ((GEN, f"{TAG}a", "198.18.0.1/24"), (DUT, f"{TAG}b", "198.18.0.2/24")):
            sh("ip", "-n", ns, "addr", "add", addr, "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        yield
    finally:
        sh("ip", "netns", "del", GEN, check=False)
        sh("ip", "netns", "del", DUT, check=False)


def run(tmp_path: Path, points: list[dict], expect_fail: bool = False) -> list[dict]:
    inv = tmp_path / "hosts.yml"
    inv.write_text(json.dumps({"all": {
        "vars": {"ansible_python_interpreter": "{{ ansible_playbook_python }}"},
        "hosts": {"localhost": {"ansible_connection": "local"},
                  "gen": {"ansible_connection": "xdplab.testbed.netns", "xdplab_netns": GEN},
                  "dut": {"ansible_connection": "xdplab.testbed.netns", "xdplab_netns": DUT}}}}))
    play = tmp_path / "play.yml"
    play.write_text(PLAY)
    dest = tmp_path / "out.json"
    proc = playbook_run.run([str(PLAYBOOK), "-i", str(inv), str(play), "-e",  # noqa: S603
                             json.dumps({"points": points, "dest": str(dest), "expect_fail": expect_fail})],
                            cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert dest.exists(), proc.stdout[-4000:] + proc.stderr[-2000:]
    # no server left running in the DUT namespace
    pids = sh("ip", "netns", "pids", DUT).stdout.split()
    assert pids == [], f"processes left in {DUT}: {pids}"
    return json.loads(dest.read_text())


def test_sockperf_tp_pp_and_iperf3_for_real(bed, tmp_path):
    points = [
        {"name": "sockperf_tp", "tool": "sockperf",
         "params": {"mode": "tp", "pkt_size": 64, "duration": 1, "dst_ip": "198.18.0.2", "dport": 11111},
         "server": {"tool": "sockperf", "params": {"dport": 11111}}},
        {"name": "sockperf_pp", "tool": "sockperf",
         "params": {"mode": "pp", "pkt_size": 64, "duration": 1, "dst_ip": "198.18.0.2", "dport": 11111},
         "server": {"tool": "sockperf", "params": {"dport": 11111}}},
        {"name": "iperf3", "tool": "iperf3",
         "params": {"pkt_size": 256, "duration": 1, "dst_ip": "198.18.0.2", "dport": 5201, "bitrate": "0"},
         "server": {"tool": "iperf3", "params": {"dport": 5201}}},
    ]
    results = {r["item"]["name"]: r for r in run(tmp_path, points)}
    for name, r in results.items():
        assert not r.get("failed"), (name, r.get("msg"))
        rec = r["record"]
        assert rec["tool"] == r["item"]["tool"] and rec["samples"][0] > 100, (name, rec["samples"])
        assert "server_cpu" in rec["counters"], rec["counters"]
    # ping-pong is latency-bound: far fewer round trips per second than one-way messages
    assert results["sockperf_pp"]["record"]["samples"][0] < results["sockperf_tp"]["record"]["samples"][0]
    print({n: round(r["record"]["samples"][0]) for n, r in results.items()})


def test_tool_rejecting_a_parameter_fails_with_its_message(bed, tmp_path):
    # the server listens on 5201, the client asks 5202: iperf3 itself fails the point
    points = [{"name": "iperf3_noserver", "tool": "iperf3",
               "params": {"pkt_size": 256, "duration": 1, "dst_ip": "198.18.0.2", "dport": 5202},
               "server": {"tool": "iperf3", "params": {"dport": 5201}}}]
    (r,) = run(tmp_path, points, expect_fail=True)
    assert r.get("failed"), r
    assert "iperf3" in r["msg"] and ("refused" in r["msg"].lower() or "unable to connect" in r["msg"].lower()), r["msg"]
