#!/usr/bin/python
# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: bench_sample
short_description: Sample a DUT packet counter while a generator runs elsewhere
version_added: 0.1.0
description:
  - Reads one packet counter of the device under test (the C(xdplab_stats) map of its XDP or tc
    program, a named nftables counter, or an interface statistic) every O(interval) seconds, until it
    has seen O(bursts) bursts of traffic followed by an idle period, or O(max_duration) has passed.
  - Snapshots C(ethtool -S) of O(ethtool_interfaces) and C(/proc/stat) at the start and the end.
  - Normally started by the M(xdplab.testbed.bench_run) action on the DUT host, concurrently with the
    generator; with O(interval=0) it reads the counter once and returns (snapshot mode).
  - Reads only; never changes the host.
author:
  - xdplab.testbed developers (!UNKNOWN)
options:
  counter:
    description:
      - Where the DUT counts the scenario's packets.
      - C(type=xdp) or C(type=tc) with C(interface) and C(action) (C(drop), C(pass), C(tx), C(redirect),
        C(aborted) or C(all)) reads the per-CPU C(xdplab_stats) map of the program attached there.
      - C(type=nft) with C(family), C(table), C(counter) reads a named nftables counter.
      - C(type=netdev) with C(interface) and C(stat) (default C(rx_packets)) reads sysfs statistics.
      - C(type=ovs) with C(datapath) (default C(xdplab-ovs)) reads the lookup hits of an Open vSwitch kernel
        datapath (C(ovs-dpctl show)), the packets its flows matched.
      - C(type=runs) with C(interface) and C(hook) (C(xdp), the default, or C(tc) for the clsact ingress) reads
        the run count of the program attached there, whatever its maps (a program of the user's own); it
        moves only while C(kernel.bpf_stats_enabled) is 1, and the module fails naming that when it is not.
    type: dict
    required: true
  interval:
    description: Seconds between two readings; C(0) reads once (snapshot mode).
    type: float
    default: 0.1
  bursts:
    description: Stop after this many bursts of traffic have ended (moving, then idle for O(idle)).
    type: int
    default: 1
  idle:
    description: Seconds without counter movement that end a burst.
    type: float
    default: 0.3
  stall:
    description:
      - Stop when the counter has not moved for this many seconds (before the first burst, or
        between bursts), meaning the generator died or the DUT stopped counting. C(0) disables it.
    type: float
    default: 5
  max_duration:
    description: Upper bound on sampling time, in seconds.
    type: float
    default: 120
  ethtool_interfaces:
    description: Interfaces whose C(ethtool -S) counters are captured at the start and the end.
    type: list
    elements: str
    default: []
  dut_cost:
    description:
      - Also read, at every reading, what the DUT's CPUs spend (RV(cost)) - every CPU's jiffies from
        C(/proc/stat) and, for an C(xdp), C(tc) or C(runs) counter, the attached program's run-time statistics
        (C(run_time_ns), C(run_cnt); they move only while C(kernel.bpf_stats_enabled) is 1) - and the
        program's per-CPU packet counts at the start and the end (not for C(runs), whose program has no
        counter map).
    type: bool
    default: false
extends_documentation_fragment:
  - xdplab.testbed.attributes
attributes:
  check_mode:
    support: full
    details: Only reads counters.
  diff_mode:
    support: none
"""

EXAMPLES = r"""
- name: Sample the XDP drop counter of the DUT for three repetitions
  xdplab.testbed.bench_sample:
    counter: {type: xdp, interface: veth0, action: drop}
    bursts: 3
    ethtool_interfaces: [veth0]

- name: Read the nftables drop counter once
  xdplab.testbed.bench_sample:
    counter: {type: nft, family: inet, table: xdplab, counter: drop}
    interval: 0
"""

RETURN = r"""
times:
  description: Seconds since the first reading, one per reading.
  returned: always
  type: list
  elements: float
  sample: [0.0, 0.1, 0.2]
counts:
  description: Counter value at each reading.
  returned: always
  type: list
  elements: int
  sample: [0, 612000, 1224000]
started_epoch:
  description: Wall-clock time (seconds since the epoch) of the first reading.
  returned: always
  type: float
ethtool:
  description: Per interface, the C(ethtool -S) counters that changed during sampling.
  returned: always
  type: dict
  sample: {"veth0": {"rx_xdp_drops": 1836000}}
cpu:
  description: CPU use on this host over the sampling time, in percent of one CPU.
  returned: always
  type: dict
  sample: {"app_pct": 2.0, "softirq_pct": 95.0, "idle_pct": 103.0}
counter:
  description: The counter spec read, with defaults filled in, and a readable description.
  returned: always
  type: dict
cost:
  description:
    - With O(dut_cost), the raw readings of what the DUT's CPUs spent, one per reading of RV(counts).
    - C(cpu_jiffies) per reading, per CPU (its number as a string) C([busy, total, softirq]) jiffies.
    - C(prog_runs) per reading C([run_time_ns, run_cnt]) of the counter's program (absent for other counters).
    - C(packets_by_cpu) the program's packets per CPU over the sampling (absent for other counters).
    - C(bpf_stats_enabled) the sysctl's value at the start (0 means C(run_time_ns) does not move).
    - C(napi_thread_ns) per reading the summed run time (C(/proc/<tid>/schedstat)) of the port's NAPI
      kthreads, C(napi_threads) their names, C(napi_thread_cpus) the CPUs they may run on (only when the
      port's NAPI is threaded).
  returned: when O(dut_cost) is true and O(interval) is not 0
  type: dict
  sample: {"cpu_jiffies": [{"0": [100, 400, 20], "1": [5, 400, 0]}], "prog_runs": [[0, 0]],
           "packets_by_cpu": {"0": 612000, "1": 0}, "bpf_stats_enabled": 1, "prog_id": 42}
"""

import os
import time
import traceback

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils.common._process_identity import boot_id
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._counter_bursts import MIN_RATE, read_at_midpoint
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._dut_cost import parse_cpu_jiffies
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._dut_counters import (
    CounterError,
    check_spec,
    counter_delta,
    cpu_shares,
    describe,
    make_reader,
    parse_ethtool_stats,
    read_proc_stat,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning._napi_threads import (
    NapiError,
    napi_threads,
    read_threaded,
    thread_cpus,
    thread_runtime_ns,
)


def ethtool_snapshot(module: AnsibleModule, interfaces: list[str]) -> dict[str, dict[str, int]]:
    if not interfaces:
        return {}
    ethtool = module.get_bin_path("ethtool", required=True)
    snap = {}
    for ifname in interfaces:
        rc, out, err = module.run_command([ethtool, "-S", ifname])
        # A device without driver statistics is not an error for sampling: record nothing for it.
        snap[ifname] = parse_ethtool_stats(out) if rc == 0 else {}
    return snap


class CostReader:
    """The raw counters of the DUT's cost, read right after each counter reading."""

    def __init__(self, spec: dict) -> None:
        self.stats = None
        if spec["type"] in ("xdp", "tc"):
            from ansible_collections.xdplab.testbed.plugins.module_utils.xdp import _bpf

            self.stats = _bpf.StatsReader(spec["interface"], hook=spec["type"])
        self.runs = None  # a program of any maps (the runs counter): its run-time statistics only
        if spec["type"] == "runs":
            from ansible_collections.xdplab.testbed.plugins.module_utils.xdp import _bpf

            self.runs = _bpf.ProgRuns(spec["interface"], hook=spec["hook"])
        self.prog_runs: list[list[int]] = []
        self.cpu_jiffies: list[dict[str, list[int]]] = []
        self.thread_ns: list[int] = []
        self.by_cpu = self.stats.packets_by_cpu() if self.stats else None
        # a port polled in kthreads (threaded NAPI): their run time is the DUT's receive path's
        self.threads: dict[int, str] = {}
        if spec.get("interface"):
            try:
                if read_threaded(spec["interface"]) == "1":
                    self.threads = napi_threads(spec["interface"])
            except NapiError:
                self.threads = {}

    def __call__(self) -> None:
        if self.threads:
            self.thread_ns.append(sum(thread_runtime_ns(t) or 0 for t in self.threads))
        if self.stats or self.runs:
            self.prog_runs.append(list((self.stats or self.runs).run_stats()))
        with open("/proc/stat", encoding="ascii") as fh:
            self.cpu_jiffies.append({str(c): v for c, v in parse_cpu_jiffies(fh.read()).items()})

    def result(self) -> dict:
        out: dict = {"cpu_jiffies": self.cpu_jiffies, "boot_id": boot_id()}
        try:
            with open("/proc/sys/kernel/bpf_stats_enabled", encoding="ascii") as fh:
                out["bpf_stats_enabled"] = int(fh.read().strip())
        except (OSError, ValueError):
            out["bpf_stats_enabled"] = None
        if self.threads:
            out.update(napi_thread_ns=self.thread_ns, napi_threads={str(t): n for t, n in self.threads.items()},
                       napi_thread_cpus=sorted({c for t in self.threads for c in thread_cpus(t)}))
        if self.stats:
            after = self.stats.packets_by_cpu()
            out.update(prog_runs=self.prog_runs, prog_id=self.stats.prog_id,
                       packets_by_cpu={str(c): a - b for c, (a, b) in enumerate(zip(after, self.by_cpu, strict=True))})
            self.stats.close()
        if self.runs:
            out.update(prog_runs=self.prog_runs, prog_id=self.runs.prog_id)
            self.runs.close()
        return out


def sample(read, interval: float, bursts: int, idle: float, max_duration: float, stall: float = 0.0,
           after_read=None):
    """Read until `bursts` bursts have ended, the counter stalls for `stall` s, or max_duration.

    Each sample is timestamped before and after its read; its time is the midpoint (read latency
    does not enter the rates), relative to the first read's midpoint. `after_read` (no arguments) is
    called right after every reading. Returns (times, counts).
    """
    after_read = after_read or (lambda: None)
    t0, first, _dummy = read_at_midpoint(read, time.monotonic)
    after_read()
    times, counts = [0.0], [first]
    seen, moving, last_move = 0, False, 0.0
    while True:
        time.sleep(interval)
        mid, value, _dummy = read_at_midpoint(read, time.monotonic)
        after_read()
        now = mid - t0
        rate = (value - counts[-1]) / (now - times[-1])
        times.append(now)
        counts.append(value)
        if rate > MIN_RATE:
            moving, last_move = True, now
        elif moving and now - last_move >= idle:
            moving = False
            seen += 1
            if seen >= bursts:
                break
        if now >= max_duration or (stall and not moving and now - last_move >= stall):
            break
    return times, counts


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            counter=dict(type="dict", required=True),
            interval=dict(type="float", default=0.1),
            bursts=dict(type="int", default=1),
            idle=dict(type="float", default=0.3),
            stall=dict(type="float", default=5.0),
            max_duration=dict(type="float", default=120.0),
            ethtool_interfaces=dict(type="list", elements="str", default=[]),
            dut_cost=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    p = module.params
    for name, low in (("interval", 0.0), ("idle", 0.01), ("max_duration", 0.1), ("stall", 0.0)):
        if p[name] < low:
            module.fail_json(msg=f"{name} must be >= {low}, got {p[name]!r}")
    if p["bursts"] < 1:
        module.fail_json(msg=f"bursts must be >= 1, got {p['bursts']!r}")
    module.run_command_environ_update = {"LC_ALL": "C"}
    try:
        spec = check_spec(p["counter"])
        read = make_reader(spec, run_command=module.run_command)
        eth_before = ethtool_snapshot(module, p["ethtool_interfaces"])
        cpu_before = read_proc_stat()
        cost = CostReader(spec) if p["dut_cost"] and p["interval"] else None
        started = time.time()  # wall clock of time 0: bursts are aligned to the runs' start times
        if p["interval"] == 0:
            times, counts = [0.0], [read()]
        else:
            times, counts = sample(read, p["interval"], p["bursts"], p["idle"], p["max_duration"], p["stall"],
                                   after_read=cost)
        cpu_after = read_proc_stat()
        cost_out = {"cost": cost.result()} if cost else {}
        eth_after = ethtool_snapshot(module, p["ethtool_interfaces"])
    except CounterError as exc:
        module.fail_json(msg=str(exc), counter=p["counter"])
    except (LookupError, OSError) as exc:  # the program's statistics (dut_cost)
        module.fail_json(msg=f"cannot read the DUT's cost counters: {exc}", counter=p["counter"])
    except Exception as exc:  # noqa: BLE001 - one top-level handler, reported with traceback
        module.fail_json(msg=f"sampling failed: {exc}", exception=traceback.format_exc())
    module.exit_json(
        changed=False,
        times=[round(t, 6) for t in times],
        counts=counts,
        started_epoch=started,
        ethtool={k: counter_delta(eth_before.get(k, {}), v) for k, v in eth_after.items()},
        cpu=cpu_shares(cpu_before, cpu_after, os.cpu_count() or 1),
        counter=dict(spec, description=describe(spec)),
        **cost_out,
    )


if __name__ == "__main__":
    main()
