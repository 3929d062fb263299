# SPDX-License-Identifier: GPL-3.0-or-later
"""bench_run end to end on namespaces of its own: a good point, and bad input that fails early and clearly.

Every case runs the real action plugin through ansible-playbook against a gen <-> dut veth pair in
two namespaces this test creates (and removes, whatever happens).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import playbook_run
import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic import _dut_cost

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PREFIX = f"xbt{os.getpid() % 100000}-"

pytestmark = pytest.mark.root

PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Namespaces and the veth pair
      xdplab.testbed.netns_topology:
        namespaces: ["{p}gen", "{p}dut"]
        links:
          - name: gen-dut
            a: {{netns: "{p}gen", ifname: veth0, address: 198.18.0.1/24}}
            b: {{netns: "{p}dut", ifname: veth0, address: 198.18.0.2/24}}
        # no IPv6 on the link: its neighbour discovery and MLD reports would reach the DUT's counter
        sysctls:
          "{p}gen": {{net.ipv6.conf.veth0.disable_ipv6: 1}}
          "{p}dut": {{net.ipv6.conf.veth0.disable_ipv6: 1}}
        state: "{{{{ topo_state }}}}"
"""

CASES = """
- hosts: localhost
  gather_facts: false
  vars:
    xdpgen: /var/lib/xdplab/bin/xdpgen
  tasks:
    - name: Attach XDP_DROP to the DUT
      xdplab.testbed.xdp_prog:
        interface: veth0
        object: /var/lib/xdplab/xdp/xdp_drop.o
        state: "{{ 'attached' if attach | bool else 'detached' }}"
      delegate_to: dut

    - name: Run the case
      xdplab.testbed.bench_run: "{{ case }}"
      delegate_to: gen
      register: out
      ignore_errors: true

    - name: Save the result
      ansible.builtin.copy:
        content: "{{ out | to_json }}"
        dest: "{{ result_file }}"
        mode: "0644"
"""


def ansible_env() -> dict:
    return dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))


@pytest.fixture(scope="module")
def bed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bench")
    subprocess.run(["make", "-s", "-C", str(ROOT / "files/xdp"), "OUT=/var/lib/xdplab/xdp"], check=True)
    subprocess.run(["make", "-s", "-C", str(ROOT / "files/xdpgen")], check=True)
    os.makedirs("/var/lib/xdplab/bin", exist_ok=True)
    subprocess.run(["install", "-m", "0755", str(ROOT / "files/xdpgen/xdpgen"), "/var/lib/xdplab/bin/xdpgen"],
                   check=True)
    (tmp / "topo.yml").write_text(PLAYBOOK.format(p=PREFIX))
    (tmp / "cases.yml").write_text(CASES)
    (tmp / "hosts.yml").write_text(json.dumps({"all": {"hosts": {
        "localhost": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
        "gen": {"ansible_connection": "xdplab.testbed.netns", "xdplab_netns": f"{PREFIX}gen",
                "ansible_python_interpreter": sys.executable},
        "dut": {"ansible_connection": "xdplab.testbed.netns", "xdplab_netns": f"{PREFIX}dut",
                "ansible_python_interpreter": sys.executable},
    }}}))

    def topo(state):
        playbook_run.run([str(BIN / "ansible-playbook"), "-i", str(tmp / "hosts.yml"), str(tmp / "topo.yml"),
                          "-e", f"topo_state={state}"], cwd=ROOT, env=ansible_env(), check=True,
                         capture_output=True, text=True)

    topo("present")
    try:
        yield tmp
    finally:
        # The cases attach the DUT's counter and leave it for the next case: detach it (and its ledger
        # entry) before the namespaces go, so this module leaves nothing behind on its own.
        subprocess.run([str(BIN / "ansible"), "-i", str(tmp / "hosts.yml"), "dut", "-m", "xdplab.testbed.xdp_prog",
                        "-a", "interface=veth0 state=detached"],
                       cwd=ROOT, env=ansible_env(), capture_output=True, text=True, timeout=300, check=False)
        topo("absent")


def mac(netns: str) -> str:
    out = subprocess.run(["ip", "netns", "exec", netns, "cat", "/sys/class/net/veth0/address"],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def run_case(bed: Path, case: dict, attach: bool = True) -> dict:
    result = bed / "result.json"
    result.unlink(missing_ok=True)
    extra = {"case": case, "attach": attach, "result_file": str(result)}
    proc = playbook_run.run([str(BIN / "ansible-playbook"), "-i", str(bed / "hosts.yml"), str(bed / "cases.yml"),
                             "-e", json.dumps(extra)], cwd=ROOT, env=ansible_env(), capture_output=True, text=True,
                            timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(result.read_text())


def base_case(**kw) -> dict:
    case = {
        "tool": "xdpgen", "binary": "/var/lib/xdplab/bin/xdpgen", "repetitions": 2, "dut": "dut",
        "params": {"interface": "veth0", "pkt_size": 64, "duration": 2, "dst_mac": mac(f"{PREFIX}dut")},
        "counter": {"type": "xdp", "interface": "veth0", "action": "drop"}, "scenario": "it",
    }
    case.update(kw)
    return case


def test_a_good_point_cross_checks_sent_and_received(bed):
    out = run_case(bed, base_case())
    assert not out.get("failed"), out.get("msg")
    rec = out["record"]
    assert rec["schema"] == "xdplab.result/v1"
    assert rec["params"]["sample"] == "dut_steady_rate"
    assert rec["summary"]["n"] == 2 == len(out["reps"])
    for rep in out["reps"]:
        assert rep["dut_packets"] > 0
        assert rep["loss"] < 0.01
        # no loss alone proves nothing about who set the rate: the label comes from the repetition's CPU
        # accounting (dut_cost), with no calibration - shared-core when the DUT's receive path ran on a
        # generator CPU, else dut-bound only with the DUT's CPUs saturated
        cost = rep["dut_cost"]
        if cost["not_separable"].startswith(_dut_cost.SHARED_REASON.split("{", 1)[0]):
            assert rep["bound"] == "shared-core", (rep["bound"], cost)
        else:
            assert rep["bound"] == ("dut-bound" if cost["busy"]["dut"] >= _dut_cost.SATURATED
                                    else "generator-bound"), (rep["bound"], cost)
        # the steady rate comes from the DUT's counter, not from the generator's claim
        assert rep["dut_pps"] != rep["gen_pps"]
    assert rec["counters"]["dut_packets"] >= 0.99 * rec["counters"]["gen_packets"]
    # xdpgen's mode (live frames, or its socket path where the kernel refuses them) is in every
    # repetition; the socket path is named in the params (records pair only within a mode) and warned of
    modes = {rep["gen_figures"]["mode"] for rep in out["reps"]}
    assert len(modes) == 1 and modes <= {"live", "packet"}, modes
    if modes == {"packet"}:
        assert rec["params"]["xdpgen_mode"] == "packet"
        assert any("AF_PACKET socket" in w for w in rec["warnings"]), rec["warnings"]
    else:
        assert "xdpgen_mode" not in rec["params"], rec["params"]
    # nothing else to warn of on a quiet link (no surplus, no loss) but the bpf_stats switch, when off
    expected = {"AF_PACKET socket"} if modes == {"packet"} else set()
    if rec["params"].get("bpf_stats") == "off":
        expected.add("kernel.bpf_stats_enabled was 0")
    assert all(any(e in w for e in expected) for w in rec["warnings"]), rec["warnings"]


def test_non_numeric_packet_size_is_named_and_nothing_starts(bed):
    case = base_case()
    case["params"]["pkt_size"] = "abc"
    out = run_case(bed, case)
    assert out["failed"]
    assert "pkt_size" in out["msg"] and "'abc'" in out["msg"]
    assert "runs" not in out  # refused before the generator or the sampler started


def test_a_results_directory_others_could_write_is_refused_before_anything_starts(bed, tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    results.chmod(0o777)
    out = run_case(bed, base_case(results_dir=str(results)))
    assert out["failed"] and f"results directory '{results}' is group/world-writable" in out["msg"], out["msg"]
    assert "runs" not in out and not list(results.iterdir())


def test_undefined_dut_host_is_named(bed):
    out = run_case(bed, base_case(dut="dutt"))
    assert out["failed"]
    assert "'dutt'" in out["msg"]


def test_nonexistent_counter_interface_is_named(bed):
    out = run_case(bed, base_case(counter={"type": "xdp", "interface": "nosuch0", "action": "drop"}))
    assert out["failed"]
    assert "nosuch0" in out["msg"]


def test_dut_that_receives_nothing_fails_the_point(bed):
    # The DUT's counter sees none of the traffic (its loopback's rx_packets, while the frames go to its
    # veth): it stays flat whatever the generator sends, live frames or xdpgen's socket path, and the
    # point must fail naming it.
    out = run_case(bed, base_case(counter={"type": "netdev", "interface": "lo", "stat": "rx_packets"}))
    assert out["failed"]
    assert "did not move" in out["msg"] and "rx_packets of lo" in out["msg"]


def test_testpmd_af_xdp_pmd_through_bench_run(bed):
    """DPDK testpmd (Debian's dpdk-dev) over a net_af_xdp vdev, stopped after its window by SIGINT,
    cross-checked against the DUT's XDP drop counter like any other generator."""
    case = base_case(tool="testpmd", binary="/usr/bin/dpdk-testpmd")
    case["params"] = {"interface": "veth0", "duration": 2, "dst_mac": mac(f"{PREFIX}dut")}
    out = run_case(bed, case)
    assert not out.get("failed"), out.get("msg")
    assert out["record"]["tool"] == "testpmd"
    for rep in out["reps"]:
        assert rep["gen_pps"] > 10000
        assert rep["dut_packets"] > 10000
