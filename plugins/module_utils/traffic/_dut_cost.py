# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the DUT's CPUs spend per packet, from raw counters. Private to the xdplab.testbed collection.

The DUT sampler (bench_sample) reads, beside its packet counter and at the same readings:

- the attached program's run-time statistics, ``run_time_ns`` and ``run_cnt`` (bpf(2)
  BPF_OBJ_GET_INFO_BY_FD; they move only while ``kernel.bpf_stats_enabled`` is 1);
- every CPU's jiffies from ``/proc/stat`` (busy = everything but idle and iowait);
- once at the start and once at the end, the per-CPU packet counts of the program's ``xdplab_stats``
  map: the CPUs that ran the DUT's receive path.

This module turns two readings (the first and last of a burst's steady interval, the interval the
rate was fitted over) into the record's ``dut_cost`` (../shared/DESIGN.md, "DUT cost per packet"):

- ``stages.program``: Δrun_time_ns / Δrun_cnt, the program's own cost per run;
- ``busy``: the share of the interval the DUT's CPUs and the generator's CPUs were not idle;
- ``ns_per_packet`` (the total) only from a method that recovered a known cost on this host; otherwise
  ``not_separable`` says why, and no total is given (never guessed); the per-repetition figure of a
  method that did not recover it (the NAPI kthread's schedstat time per packet) is kept under
  ``unvalidated``, for the known-cost check, and no report shows it as a total;
- ``bound``: who set the rate, from the same accounting (decide_bound).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

# A CPU that ran at least this share of the DUT's packets is one of the DUT's CPUs.
CPU_SHARE = 0.01
# A CPU busy for at least this share of the interval is saturated.
SATURATED = 0.95
# Method names written into the records.
PROGRAM_METHOD = "bpf_stats"  # kernel.bpf_stats_enabled: run_time_ns / run_cnt of the attached program
BUSY_METHOD = "proc_stat"  # per-CPU jiffies, busy = not idle and not iowait
# Why the total is not given when the DUT's receive path runs on the generator's CPU (veth without
# threaded NAPI: the receiving NAPI runs in softirq on the sender's CPU).
SHARED_REASON = ("the DUT's receive path ran on the generator's CPU(s) {cpus} (on veth the receiving NAPI "
                 "runs in softirq on the sender's CPU): their time is the generator's and the DUT's together")
UNVALIDATED_REASON = ("no method for the total has recovered a known cost on this host (CPU time per packet "
                      "of the DUT's CPUs includes wakeups, polling and idle exits that move with the offered "
                      "load)")
THREAD_REASON = ("the DUT port's NAPI kthread ran {ns:.0f} ns per packet, but that time holds per-wakeup and "
                 "per-poll time that moves with the offered load: it has not recovered a known cost on this host")


class CostError(ValueError):
    """Readings that cannot give a cost (wrong shape, counters going backwards)."""


def parse_cpu_jiffies(text: str) -> dict[int, list[int]]:
    """``/proc/stat`` text -> {cpu: [busy, total, softirq]} jiffies for every ``cpuN`` line."""
    out: dict[int, list[int]] = {}
    for line in text.splitlines():
        name, _sep, rest = line.partition(" ")
        if not name.startswith("cpu") or name == "cpu":
            continue
        try:
            cpu = int(name[3:])
            values = [int(v) for v in rest.split()]
        except ValueError:
            raise CostError(f"/proc/stat line {line!r} is not 'cpuN' followed by numbers") from None
        if len(values) < 7:
            raise CostError(f"/proc/stat line {line!r} has {len(values)} fields, expected at least 7")
        total = sum(values[:8])  # user nice system idle iowait irq softirq steal (guest is in user)
        out[cpu] = [total - values[3] - values[4], total, values[6]]
    if not out:
        raise CostError("/proc/stat has no cpuN lines")
    return out


def busy_share(jiffies: Sequence[Mapping], first: int, last: int, cpus: Sequence[int]) -> float | None:
    """Mean share of [first, last] the ``cpus`` were busy; None without readings for them or time."""
    shares = []
    for cpu in cpus:
        a, b = jiffies[first].get(str(cpu)), jiffies[last].get(str(cpu))
        if a is None or b is None:
            continue
        total = b[1] - a[1]
        if total < 0 or b[0] < a[0]:
            raise CostError(f"CPU {cpu}'s jiffies went backwards between readings {first} and {last}")
        if total:
            shares.append(min(1.0, (b[0] - a[0]) / total))
    return round(math.fsum(shares) / len(shares), 4) if shares else None


def program_ns(runs: Sequence[Sequence[int] | None], first: int, last: int) -> float | None:
    """Δrun_time_ns / Δrun_cnt between two readings; None when the program did not run or its
    statistics did not move (kernel.bpf_stats_enabled was 0)."""
    a, b = runs[first], runs[last]
    if a is None or b is None:
        return None
    d_time, d_runs = b[0] - a[0], b[1] - a[1]
    if d_time < 0 or d_runs < 0:
        raise CostError(f"the program's run-time statistics went backwards: {list(a)} -> {list(b)} "
                        "(another program was attached between the readings)")
    if d_runs == 0 or d_time == 0:
        return None
    return d_time / d_runs


def dut_cpus(packets_by_cpu: Mapping[str, int] | None, share: float = CPU_SHARE) -> list[int]:
    """CPUs that ran at least ``share`` of the DUT's packets (per-CPU counter deltas)."""
    if not packets_by_cpu:
        return []
    total = sum(packets_by_cpu.values())
    if total <= 0:
        return []
    return sorted(int(c) for c, n in packets_by_cpu.items() if n >= share * total)


def softirq_cpus(jiffies: Sequence[Mapping], first: int, last: int, share: float = 0.2) -> list[int]:
    """CPUs that carried at least ``share`` of the softirq time of [first, last] (where the receive
    path ran, for a counter without per-CPU values)."""
    moved = {int(c): jiffies[last][c][2] - jiffies[first][c][2] for c in jiffies[last] if c in jiffies[first]}
    total = sum(v for v in moved.values() if v > 0)
    return sorted(c for c, v in moved.items() if total and v >= share * total)


def decide_bound(*, loss_label: str, dut: Sequence[int], generator: Sequence[int], same_kernel: bool,
                 busy_dut: float | None, busy_generator: float | None, saturated: float = SATURATED) -> str:
    """Who set the rate of a repetition, from its loss and its CPU accounting.

    - ``dut-bound``: the DUT dropped or lost packets (``loss_label``, from bound_label), or its CPUs
      were saturated while they were not the generator's;
    - ``shared-core``: the DUT's receive path ran on a CPU the generator used (one kernel): neither can
      be said to set the rate;
    - ``generator-bound``: the DUT's CPUs had time to spare: the rate is what the generator offered
      (saturated or rate-limited);
    - ``undetermined``: no CPU accounting to decide with (no DUT CPUs known, no busy shares).
    """
    if loss_label == "dut-bound":
        return "dut-bound"
    if loss_label == "unknown":
        return "unknown"
    if same_kernel and set(dut) & set(generator):
        return "shared-core"
    if busy_dut is None or not dut:
        return "undetermined"
    if busy_dut >= saturated:
        return "dut-bound"
    del busy_generator  # recorded beside the label; a rate-limited generator need not be saturated
    return "generator-bound"


def rep_cost(cost: Mapping, first: int, last: int, *, generator_cpus: Sequence[int],
             same_kernel: bool, counts: Sequence[int] | None = None) -> dict:
    """One repetition's ``dut_cost`` over readings [first, last] of the sampler's ``cost`` series."""
    runs, jiffies = cost.get("prog_runs") or [], cost.get("cpu_jiffies") or []
    if not 0 <= first < last < len(jiffies):
        raise CostError(f"steady interval [{first}, {last}] outside the {len(jiffies)} cost readings")
    cpus = dut_cpus(cost.get("packets_by_cpu"))
    cpus_from = "per-CPU packet counters"
    if not cpus and cost.get("napi_thread_cpus"):
        cpus, cpus_from = sorted(cost["napi_thread_cpus"]), "NAPI kthread affinity"
    if not cpus:
        cpus, cpus_from = softirq_cpus(jiffies, first, last), "softirq time"
    out: dict = {"method": BUSY_METHOD, "cpus": cpus, "cpus_from": cpus_from,
                 "busy": {"dut": busy_share(jiffies, first, last, cpus) if cpus else None,
                          "generator": (busy_share(jiffies, first, last, generator_cpus)
                                        if same_kernel and generator_cpus else None)},
                 "stages": {}}
    if len(runs) == len(jiffies):
        ns = program_ns(runs, first, last)
        if ns is not None:
            out["stages"]["program"] = round(ns, 3)
            out["method"] = f"{PROGRAM_METHOD}+{BUSY_METHOD}"
    shared = sorted(set(cpus) & set(generator_cpus)) if same_kernel else []
    thread = cost.get("napi_thread_ns") or []
    packets = _packets(cost, counts, first, last)
    if shared:
        out["not_separable"] = SHARED_REASON.format(cpus=", ".join(map(str, shared)))
    elif len(thread) == len(jiffies) and packets:
        out["method"] += "+schedstat"
        ns = (thread[last] - thread[first]) / packets
        out["not_separable"] = THREAD_REASON.format(ns=ns)
        # the figure behind the reason, for the known-cost check of the total (never shown as a total)
        out["unvalidated"] = {"napi_thread": round(ns, 3)}
    else:
        out["not_separable"] = UNVALIDATED_REASON
    return out


def _packets(cost: Mapping, counts: Sequence[int] | None, first: int, last: int) -> int:
    """Packets of [first, last]: the program's runs, else the DUT counter's delta."""
    runs = cost.get("prog_runs") or []
    if len(runs) > last and runs[first] and runs[last] and runs[last][1] > runs[first][1]:
        return runs[last][1] - runs[first][1]
    if counts and len(counts) > last:
        return max(0, counts[last] - counts[first])
    return 0


def _mean_ci(values: Sequence[float], t_quantile: Callable[[float, int], float]) -> tuple[float, list[float] | None]:
    n = len(values)
    mean = math.fsum(values) / n
    if n < 2:
        return mean, None
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile(0.975, n - 1) * sd / math.sqrt(n)
    return mean, [mean - half, mean + half]


def summarize_cost(costs: Sequence[Mapping], t_quantile: Callable[[float, int], float]) -> dict | None:
    """The summary's ``dut_cost``: means over the repetitions, with Student-t 95% intervals
    (``ci95`` of the total, ``stages_ci95`` of each stage; None with n=1), ``n`` per figure.
    ``t_quantile(p, df)`` is the records' own (results._statistics), passed in: the summary's
    intervals are formed as the rate's are."""
    costs = [c for c in costs if c]
    if not costs:
        return None
    out: dict = {"method": costs[0]["method"], "cpus": sorted({c for x in costs for c in x.get("cpus", [])}),
                 "stages": {}, "stages_ci95": {}, "n": len(costs)}
    totals = [x["ns_per_packet"] for x in costs if x.get("ns_per_packet") is not None]
    if totals and len(totals) == len(costs):
        out["ns_per_packet"], out["ci95"] = _mean_ci(totals, t_quantile)
    else:
        reasons = sorted({x["not_separable"] for x in costs if x.get("not_separable")})
        out["not_separable"] = "; ".join(reasons)
    for stage in sorted({s for x in costs for s in x.get("stages", {})}):
        values = [x["stages"][stage] for x in costs if x.get("stages", {}).get(stage) is not None]
        if len(values) == len(costs):  # a stage some repetitions lack is not summarized
            out["stages"][stage], out["stages_ci95"][stage] = _mean_ci(values, t_quantile)
    busy = {}
    for side in ("dut", "generator"):
        values = [x["busy"][side] for x in costs if (x.get("busy") or {}).get(side) is not None]
        busy[side] = round(math.fsum(values) / len(values), 4) if values else None
    out["busy"] = busy
    return out


# Generators that pin thread i to CPU cpu+i (their params "cpu" and "threads").
PINNED_GENERATORS = ("xdpgen", "trafgen")


def generator_cpus(tool: str | None, params: Mapping) -> list[int]:
    """The CPUs a pinned generator runs on; [] for a tool that does not pin its threads."""
    if tool not in PINNED_GENERATORS:
        return []
    cpu, threads = int(params.get("cpu") or 0), int(params.get("threads") or 1)
    return list(range(cpu, cpu + threads))


def cost_text(summary_cost: Mapping | None) -> str:
    """The DUT's cost for a progress line: total (or why there is none), program stage, busy shares."""
    if not summary_cost:
        return "no DUT cost"
    parts = []
    if summary_cost.get("ns_per_packet") is not None:
        parts.append(f"DUT {summary_cost['ns_per_packet']:.2f} ns/packet")
    else:
        parts.append("DUT total not separable")
    program = (summary_cost.get("stages") or {}).get("program")
    if program is not None:
        parts.append(f"program {program:.2f} ns/packet")
    busy = summary_cost.get("busy") or {}
    shown = [f"{side} {100 * busy[side]:.0f}%" for side in ("dut", "generator") if busy.get(side) is not None]
    if shown:
        parts.append(f"busy {' / '.join(shown)}")
    return ", ".join(parts)
