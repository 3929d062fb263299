#!/usr/bin/python
# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: bench_run
short_description: Run a traffic generator N times while sampling the DUT, and return a result record
version_added: 0.1.0
description:
  - Runs a packet generator on the target host (the generator) O(repetitions) times, separated by
    idle gaps of O(gap) seconds, and parses each run's own figures with the collection's parsers.
  - With O(dut) and O(counter), the action plugin of the same name first starts
    M(xdplab.testbed.bench_sample) on the DUT host (through that host's own connection, so real hosts
    over SSH and namespaces work alike), then runs the generator, cuts the DUT's counter series into
    one burst per repetition and cross-checks packets sent against packets the DUT counted. Each
    repetition is labelled C(generator-bound) (the DUT counted everything offered) or C(dut-bound)
    (loss above 1%).
  - Returns a result record v1 (see docs/architecture.md) and, with O(results_dir), writes it atomically on the
    controller.
author:
  - xdplab.testbed developers (!UNKNOWN)
options:
  tool:
    description:
      - The generator. C(xdpgen) is the collection's live-frame XDP generator, C(trafgen) netsniff-ng's
        trafgen (its configuration rendered from O(params)); C(command) runs O(command) as is and parses
        its output as O(parse_as).
      - C(xskgen) is the collection's AF_XDP TX generator and C(udpgen) its UDP socket sender (files/xsk);
        C(sockperf) runs C(sockperf tp) or C(pp) (C(mode) in O(params)) and C(iperf3) a UDP client, both against
        a server the action starts on the DUT (O(server)); C(testpmd) is DPDK's testpmd in txonly mode on
        a C(net_af_xdp) vdev, where DPDK is installed.
      - Any other name of the generator table (C(plugins/module_utils/traffic/_generator_table.py)) is
        accepted too; an unknown name fails before anything runs, listing the known ones.
    type: str
    default: xdpgen
  params:
    description:
      - Generator parameters, also stored in the record and used to match records for comparison
        (interface, pkt_size, count, duration, threads, cpu, batch, dst_mac, src_mac, src_ip, dst_ip,
        sport, dport, flows).
      - C(xskgen) adds queue, xsk_mode (auto, copy, zerocopy), busy_poll, tx_metadata (off, fill,
        request). C(sockperf) takes mode (tp, pp), pkt_size, duration, dst_ip, dport, mps; C(iperf3)
        pkt_size, duration, dst_ip, dport, bitrate, src_ip.
    type: dict
    default: {}
  binary:
    description: Path of the generator binary; default the tool's name on PATH.
    type: path
  command:
    description: Argument vector to run with O(tool=command); never passed through a shell.
    type: list
    elements: str
  parse_as:
    description: Parser for O(tool=command) output (a tool name known to M(xdplab.testbed.bench_parse)).
    type: str
  repetitions:
    description: How many times the generator runs; each is one sample of the record.
    type: int
    default: 3
  gap:
    description: Idle seconds between repetitions, so the DUT sampler sees separate bursts.
    type: float
    default: 0.6
  timeout:
    description: Seconds after which one generator run is killed and the point fails.
    type: float
    default: 120
  dut:
    description: Inventory hostname of the device under test (action plugin only).
    type: str
  counter:
    description: Counter spec on the DUT, as M(xdplab.testbed.bench_sample) takes it (action plugin only).
    type: dict
  sampler:
    description:
      - C(continuous) samples the DUT counter every O(sample_interval) during the runs (steady-state rate
        per repetition); C(snapshot) reads it only before and after each run (rate = delta / generator
        seconds; the harness-overhead baseline); C(none) records the generator's own rate.
      - C(server) takes the DUT's figures from the sink given in O(server) (C(xsksink) or C(udpsink)),
        the packets the receiving application got per repetition and its rate.
    type: str
    choices: [continuous, snapshot, none, server]
    default: continuous
  server:
    description:
      - A server or sink started on the DUT (M(xdplab.testbed.bench_server)) before the generator and
        stopped after the point, whatever happens (action plugin only). Keys are C(tool) is one of C(xsksink),
        C(udpsink), C(sockperf), C(iperf3); C(params), its parameters, and C(binary), its path.
      - Its CPU use (C(app_pct) of the server process while it received, and the host's C(softirq_pct))
        goes into the record's C(counters.server_cpu).
    type: dict
  sample_interval:
    description: Seconds between DUT counter readings with O(sampler=continuous).
    type: float
    default: 0.1
  lead:
    description: Seconds the DUT sampler runs before the generator starts.
    type: float
    default: 1.0
  ethtool_interfaces:
    description: DUT interfaces whose C(ethtool -S) deltas go into the record's counters.
    type: list
    elements: str
    default: []
  dut_cost:
    description:
      - With O(sampler=continuous), the DUT sampler also reads what the DUT's CPUs spend, and every
        repetition and the summary carry C(dut_cost) (the program stage from the attached program's
        run-time statistics, which need C(kernel.bpf_stats_enabled=1); the CPUs' busy shares; the total
        only where a method recovers a known cost on the host, else C(not_separable) saying why).
      - The repetitions' C(bound) is decided from the same accounting.
    type: bool
    default: true
  scenario:
    description: Scenario name stored in the record.
    type: str
    default: adhoc
  variant:
    description: Variant name stored in the record (e.g. baseline, patched).
    type: str
    default: baseline
  run_id:
    description: Run id stored in the record; default a new one.
    type: str
  results_dir:
    description: Directory on the controller; the record is written there atomically when given.
    type: path
  replicate:
    description:
      - The replication unit this record is, stored as the record's C(replicate)
        (C({level, id}), level one of C(repetition), C(run), C(boot), C(round)). Records of one
        scenario + params with different unit ids are compared by unit means (between-unit variance).
      - With it, the record file name carries the unit id, so every round keeps its own record.
    type: dict
  generator_max:
    description:
      - Generator-only maximum rate (packets/s) of this configuration, measured with the generator alone
        into a drop sink. A point is labelled C(generator-bound) only at 95% of it or more; without it,
        a point without DUT drops or loss is C(undetermined).
    type: float
  search:
    description:
      - NDR/PDR search instead of fixed repetitions, by binary search (RFC 2544 throughput) with final
        repetitions at the rate found. Each trial runs the generator once at the offered rate the search
        asks for (the params' C(rate) is set per trial), with the DUT counter read before and after; its
        loss ratio is counted against the offered load (rate x the generator's seconds).
      - Keys C(max_rate) (required, packets/s; the first trial), C(loss_ratio) (0 for NDR, for example
        0.005 for a PDR; default 0), C(min_rate), C(resolution) (fraction of the interval's upper end,
        default 0.01), C(final_repetitions) (default 3), C(max_trials) (default 40).
      - The record holds the final repetitions at the rate found, C(params.search) (NDR or PDR) and
        C(search) (the rate, its bounds, the method and every trial in order, as C(trail)). No rate that
        passes is a failure, with the trail in C(search).
    type: dict
  record_params:
    description:
      - Parameters stored in the record (and used to match records) that the generator does not take,
        for example the XDP mode of the DUT program.
    type: dict
    default: {}
  environment:
    description: Environment fingerprint of the DUT (M(xdplab.testbed.env_facts)), stored in the record.
    type: dict
    default: {}
  generator_environment:
    description: Environment fingerprint of the generator host, stored under C(environment.generator).
    type: dict
    default: {}
extends_documentation_fragment:
  - xdplab.testbed.attributes
  - xdplab.testbed.attributes.action
attributes:
  check_mode:
    support: none
    details: Sending traffic is the whole point; check mode is refused.
  diff_mode:
    support: none
  action:
    support: full
    details: The action plugin runs the DUT sampler and writes the record on the controller.
"""

EXAMPLES = r"""
- name: XDP_DROP rate of the DUT, three 2-second runs of xdpgen
  xdplab.testbed.bench_run:
    tool: xdpgen
    binary: /var/lib/xdplab/bin/xdpgen
    params:
      interface: veth0
      pkt_size: 64
      duration: 2
      dst_mac: "{{ dut_mac }}"
      src_ip: 198.18.0.1
      dst_ip: 198.18.0.2
    repetitions: 3
    dut: dut
    counter: {type: xdp, interface: veth0, action: drop}
    scenario: xdp_drop
    results_dir: "{{ playbook_dir }}/results/{{ run_id }}"
  delegate_to: gen
"""

RETURN = r"""
record:
  description: The result record v1.
  returned: success
  type: dict
record_path:
  description: Where the record was written on the controller.
  returned: when results_dir is given
  type: str
reps:
  description:
    - Per repetition, the generator's figures (C(gen_packets), C(gen_seconds), C(gen_pps)) and, with a DUT
      sampler, what the DUT counted (C(dut_packets), C(dut_pps)), C(loss) (share of sent packets not
      counted), C(bound) and, with O(dut_cost), C(dut_cost) (what the DUT's CPUs spent per packet over the
      steady interval of the rate).
  returned: success
  type: list
  elements: dict
bound:
  description:
    - Who set the point's rate, from the loss and the CPU accounting of its repetitions - C(dut-bound) (the
      DUT dropped, lost more than 1% of what was sent, or its CPUs were saturated), C(shared-core) (the DUT's
      receive path ran on a CPU the generator used), C(generator-bound) (the DUT's CPUs had time to spare),
      C(undetermined) (no CPU accounting).
  returned: success
  type: str
  sample: shared-core
runs:
  description: Raw generator runs (module side) - argv, rc, parsed figures, CPU use, wall times.
  returned: always
  type: list
  elements: dict
dut_cost_text:
  description: The summary's C(dut_cost) in words, for a progress line.
  returned: success
  type: str
  sample: DUT total not separable, program 62.73 ns/packet, busy dut 100% / generator 100%
boot_id:
  description: The generator host's boot id (tells whether the generator and the DUT share a kernel).
  returned: success (module side)
  type: str
"""

import os
import signal
import subprocess
import tempfile
import threading
import time
import traceback

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils.common._process_identity import boot_id
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._bench_run_spec import (
    ACTION_SPEC,
    GENERATOR_REQUIRED_IF,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._client_server_argv import parse_info
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._dut_counters import cpu_shares, read_proc_stat
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._generator_table import (
    CONFIG,
    Interrupt,
    command,
    generator,
    interrupt_after,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._output_parsers import ParseError, parse
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._xdpgen_trafgen_argv import GeneratorParamError


def build_argv(module: AnsibleModule, conf_dir: str) -> tuple[list[str], str]:
    p = module.params
    tool = p["tool"]
    if tool == "command":
        return list(p["command"]), p["parse_as"]
    argv, config = command(tool, p["params"])
    if config is not None:
        conf = os.path.join(conf_dir, CONFIG)
        with open(conf, "w", encoding="utf-8") as fh:
            fh.write(config)
        argv = [conf if a == CONFIG else a for a in argv]
    tool = generator(tool).parser
    binary = p["binary"] or module.get_bin_path(argv[0])
    if not binary or not os.access(binary, os.X_OK):
        module.fail_json(msg=f"generator {argv[0]!r} not found (binary={p['binary']!r}); "
                             "build it with the xdplab.testbed.generator role")
    return [binary, *argv[1:]], tool


def run_interrupted(module: AnsibleModule, argv: list[str], stop: Interrupt, timeout: float,
                    env: dict) -> subprocess.CompletedProcess:
    """Run a tool without a time limit of its own: wait for its readiness sign on stdout, let it
    run `stop.seconds` more (its window and its tail), then SIGINT it so that it prints its final
    statistics.

    The whole run, start-up included, is bounded by `timeout`; a tool that never shows the sign
    is killed and the failure names it with what it printed.
    """
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,  # noqa: S603
                            env=env, start_new_session=True)
    out: list[str] = []
    ready = threading.Event()

    def read_stdout() -> None:
        for line in proc.stdout:
            out.append(line)
            if not ready.is_set() and stop.ready.search(line):
                ready.set()

    err: list[str] = []
    readers = [threading.Thread(target=read_stdout, daemon=True),
               threading.Thread(target=lambda: err.extend(proc.stderr), daemon=True)]
    for reader in readers:
        reader.start()
    deadline = time.monotonic() + timeout
    try:
        while not ready.wait(0.05):
            if proc.poll() is not None or time.monotonic() > deadline:
                break
        if ready.is_set():
            time.sleep(max(0.0, min(stop.seconds, deadline - time.monotonic())))
        started = ready.is_set()
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(max(1.0, min(10.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for reader in readers:
            reader.join(5)
    stdout, stderr = "".join(out), "".join(err)
    if not started:
        what = "exited" if proc.returncode not in (None, -signal.SIGKILL, -signal.SIGINT) else "did not start"
        module.fail_json(msg=f"{os.path.basename(argv[0])} {what} before its sign of forwarding "
                             f"({stop.ready.pattern!r}) within {timeout} s",
                         cmd=argv, rc=proc.returncode, stdout=stdout, stderr=stderr)
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)


def run_once(module: AnsibleModule, argv: list[str], parser: str, timeout: float,
             stop: Interrupt | None = None) -> dict:
    env = dict(os.environ, LC_ALL="C")
    cpu0, t0, wall0 = read_proc_stat(), time.monotonic(), time.time()
    if stop is not None:
        proc = run_interrupted(module, argv, stop, timeout, env)
    else:
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env,  # noqa: S603
                                  check=False)
        except subprocess.TimeoutExpired as exc:
            module.fail_json(msg=f"{argv[0]} did not finish within {timeout} s and was killed", cmd=argv,
                             stdout=exc.stdout or "", stderr=exc.stderr or "")
    elapsed = time.monotonic() - t0
    cpu = cpu_shares(cpu0, read_proc_stat(), os.cpu_count() or 1)
    if proc.returncode != 0:
        tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-5:]
        module.fail_json(msg=f"{os.path.basename(argv[0])} failed (rc={proc.returncode}): {' / '.join(tail)}",
                         cmd=argv, rc=proc.returncode, stdout=proc.stdout, stderr=proc.stderr)
    try:
        parsed = parse(parser, proc.stdout)
    except ParseError as exc:
        module.fail_json(msg=f"cannot read {parser} output: {exc}", cmd=argv, rc=proc.returncode,
                         stdout=proc.stdout, stderr=proc.stderr)
    info = parse_info(os.path.basename(argv[0]), proc.stdout)
    if info:
        parsed["info"] = info
    return {"argv": argv, "rc": proc.returncode, "parsed": parsed, "cpu": cpu,
            "started_epoch": wall0, "elapsed": round(elapsed, 6)}


def main() -> None:
    module = AnsibleModule(
        # The action's options too (it passes only the generator's): one spec, as documented.
        argument_spec=ACTION_SPEC,
        required_if=GENERATOR_REQUIRED_IF,
        supports_check_mode=False,
    )
    p = module.params
    if p["repetitions"] < 1:
        module.fail_json(msg=f"repetitions must be >= 1, got {p['repetitions']!r}")
    if p["gap"] < 0 or p["timeout"] <= 0:
        module.fail_json(msg=f"gap must be >= 0 and timeout > 0, got gap={p['gap']!r} timeout={p['timeout']!r}")
    runs = []
    try:
        with tempfile.TemporaryDirectory(prefix="xdplab-gen-") as conf_dir:
            argv, parser = build_argv(module, conf_dir)
            stop = interrupt_after(p["tool"], p["params"]) if p["tool"] != "command" else None
            for i in range(p["repetitions"]):
                if i:
                    time.sleep(p["gap"])
                runs.append(run_once(module, argv, parser, p["timeout"], stop))
    except GeneratorParamError as exc:
        module.fail_json(msg=str(exc), params=p["params"])
    except Exception as exc:  # noqa: BLE001 - one top-level handler, reported with traceback
        module.fail_json(msg=f"generator run failed: {exc}", exception=traceback.format_exc(), runs=runs)
    module.exit_json(changed=True, runs=runs, tool=p["tool"], boot_id=boot_id())


if __name__ == "__main__":
    main()
