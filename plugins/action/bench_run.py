# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action for xdplab.testbed.bench_run: generator on this host, DUT sampler on another, one record.

The DUT sampler (xdplab.testbed.bench_sample) runs through the DUT host's own connection plugin and
variables, exactly as a task delegated to it would, in a thread beside the generator module. Ansible
stays the only thing that reaches hosts.
"""

from __future__ import annotations

import os
import threading
import time
import traceback
from typing import Any

from ansible import constants as C
from ansible.errors import AnsibleError
from ansible.module_utils.common.text.converters import to_text
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible_collections.xdplab.testbed.plugins.module_utils.common._atomic_files import write_json_atomic
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_files import RecordError, check_results_dir
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_schema import (
    build_record,
    check_replicate,
    iso,
    new_run_id,
    record_filename,
    utcnow,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.results._statistics import t_quantile
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._bench_run_spec import (
    ACTION_REQUIRED_IF,
    ACTION_SPEC,
    GENERATOR_SPEC,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._client_server_argv import server_argv
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._counter_bursts import (
    SamplingError,
    TrafficAtStart,
    align_bursts,
    bound_label,
    dut_drops,
    find_bursts,
    signed_loss,
    trim_leading_traffic,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._dut_cost import (
    CostError,
    cost_text,
    decide_bound,
    generator_cpus,
    rep_cost,
    summarize_cost,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._dut_counters import CounterError, check_spec
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._generator_table import (
    command,
    interrupt_after,
    offered_load,
    rate_warnings,
    record_figures,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._rate_search import (
    SEARCH_METHOD,
    SearchError,
    search_from_spec,
    trial_counts,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._xdpgen_trafgen_argv import (
    GeneratorParamError,
)

display = Display()
MODULE = "xdplab.testbed.bench_run"
SAMPLER = "xdplab.testbed.bench_sample"
SERVER = "xdplab.testbed.bench_server"
SINKS = ("xsksink", "udpsink")
# Extra seconds the sampler may run past the expected end of the generator runs.
SAMPLER_SLACK = 8.0
# Generator params that identify the test bed, not the measurement.
PLUMBING = ("dst_mac", "src_mac")
# The sampler gives up when the counter has not moved for lead + gap + this many seconds.
STALL_MARGIN = 4.0
# Tries of a point whose DUT sampler started after the generator, or whose counter was already moving
# at the sampler's first reading (each with three times the lead).
LATE_SAMPLER_ATTEMPTS = 3
# A tool stopped after its own readiness sign (testpmd) may take this long to start on a loaded
# machine: allowed per repetition in the sampler's limits, never inside the measured window.
STARTUP_ALLOWANCE = 30.0


def check_generator_params(tool: str, params: dict) -> None:
    """Raise GeneratorParamError naming the bad value, as the generator module would."""
    if tool != "command":
        command(tool, params)


def check_server(spec: dict | None, sampler: str) -> None:
    """Raise GeneratorParamError naming a bad server spec, or a sink-less sampler=server."""
    if spec is None:
        return
    server_argv({"tool": spec.get("tool"), "params": spec.get("params")})
    unknown = sorted(set(spec) - {"tool", "params", "binary"})
    if unknown:
        raise GeneratorParamError(f"unknown server key(s) {', '.join(map(repr, unknown))}; known: tool, params, binary")
    if sampler == "server" and spec.get("tool") not in SINKS:
        raise GeneratorParamError(f"sampler=server needs a sink that counts packets ({', '.join(SINKS)}), "
                                  f"got server tool {spec.get('tool')!r}")


def align_runs(runs: list[dict], bursts: list, started_epoch: float | None) -> list[int]:
    """Burst index of every run, by start times (the runs' wall clock, the sampler's time 0 + offset).

    Without start times (an older sampler or generator), the bursts are taken in order.
    """
    spans = [(r.get("started_epoch"), r.get("elapsed")) for r in runs]
    if started_epoch is None or any(s is None or e is None for s, e in spans):
        return list(range(len(runs)))
    return align_bursts(spans, [started_epoch + b.t_start for b in bursts])


def overall_bound(reps: list[dict]) -> str:
    """One label for the point: dut-bound if any repetition is, shared-core if any shares the
    generator's CPU, a label all repetitions agree on, else undetermined."""
    labels = [r.get("bound", "unknown") for r in reps]
    if not labels:
        return "unknown"
    for label in ("dut-bound", "shared-core"):
        if label in labels:
            return label
    if len(set(labels)) == 1:
        return labels[0]
    return "undetermined"


def check_calibration(args: dict) -> None:
    """Raise GeneratorParamError naming a bad generator_max or replicate (before anything starts)."""
    gmax = args.get("generator_max")
    if gmax is not None and not (isinstance(gmax, (int, float)) and gmax > 0 and gmax != float("inf")):
        raise GeneratorParamError(f"generator_max must be a rate > 0 (packets/s), got {gmax!r}")
    if args.get("replicate") is not None:
        try:
            check_replicate(args["replicate"])
        except ValueError as exc:
            raise GeneratorParamError(str(exc)) from None


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = True

    # ---- running a module on another inventory host ---------------------------------------------
    def _host_vars(self, host: str, task_vars: dict) -> dict:
        hostvars = task_vars.get("hostvars", {})
        if host not in hostvars:
            raise AnsibleError(f"dut {host!r} is not a host of the inventory")
        hv = hostvars[host]
        out = {}
        for key in hv:
            try:
                out[key] = hv[key]
            except Exception:  # noqa: BLE001,S112 - an undefined/untemplatable var is simply not passed
                continue
        out.setdefault("inventory_hostname", host)
        return out

    def _set_become(self, conn: Any, variables: dict, task_keys: dict) -> None:
        """Privilege escalation on the DUT as Ansible's task executor sets it up for a task there: the
        host's ansible_become / ansible_become_method (else the task's), with the become plugin's own
        options from the host's variables. Without it the sampler ran as the ssh user, which may not
        read the DUT's BPF programs."""
        if variables.get("ansible_become") is not None:
            become = boolean(self._templar.template(variables["ansible_become"]))
        else:
            become = self._task.become
        if not become:
            return
        method = (self._templar.template(variables["ansible_become_method"]) if variables.get("ansible_become_method")
                  else self._task.become_method)
        plugin = self._shared_loader_obj.become_loader.get(method)
        if plugin is None:
            raise AnsibleError(f"become method {method!r} not found")
        options = {k: self._templar.template(variables[k])
                   for k in C.config.get_plugin_vars("become", plugin._load_name) if k in variables}
        plugin.set_options(task_keys=task_keys, var_options=options)
        conn.set_become_plugin(plugin)

    def _run_on_host(self, host: str, module_name: str, module_args: dict, task_vars: dict) -> dict:
        variables = self._host_vars(host, task_vars)
        conn_type = self._templar.template(variables.get("ansible_connection", "ssh"))
        pc = self._play_context.copy()
        pc.remote_addr = variables.get("ansible_host", host)
        loader = self._shared_loader_obj.connection_loader
        conn = loader.get(conn_type, pc, new_stdin=None, task_uuid=self._task._uuid,
                          ansible_playbook_pid=to_text(os.getppid()))
        if conn is None:
            raise AnsibleError(f"dut {host!r}: connection plugin {conn_type!r} not found")
        task_keys = self._task.dump_attrs()
        task_keys["timeout"] = pc.timeout
        task_keys.pop("retries", None)
        conn.set_options(task_keys=task_keys, var_options=conn._resolve_option_variables(variables, self._templar))
        shell_opts = {k: self._templar.template(variables[k])
                      for k in C.config.get_plugin_vars("shell", conn._shell._load_name) if k in variables}
        conn._shell.set_options(task_keys=task_keys, var_options=shell_opts)
        self._set_become(conn, variables, task_keys)
        task = self._task.copy()
        task.delegate_to = None  # the module runs on `host` itself, through its own connection
        handler = self._shared_loader_obj.action_loader.get(
            "ansible.legacy.normal", task=task, connection=conn, play_context=pc,
            loader=self._loader, templar=self._templar, shared_loader_obj=self._shared_loader_obj)
        try:
            return handler._execute_module(module_name=module_name, module_args=module_args, task_vars=variables)
        finally:
            try:
                handler._remove_tmp_path(conn._shell.tmpdir)
            finally:
                conn.close()

    # ---- the benchmark ---------------------------------------------------------------------------
    def run(self, tmp: Any = None, task_vars: dict | None = None) -> dict:
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        _dummy, args = self.validate_argument_spec(argument_spec=ACTION_SPEC, required_if=ACTION_REQUIRED_IF)
        args = {k: v for k, v in args.items() if v is not None}
        if self._task.check_mode:
            return dict(result, skipped=True, msg="bench_run sends traffic: not run in check mode")
        try:  # bad parameters fail here, before anything starts on any host
            check_generator_params(args.get("tool", "xdpgen"), args.get("params") or {})
            check_server(args.get("server"), args.get("sampler", "continuous"))
            check_calibration(args)
            if args.get("counter"):
                check_spec(args["counter"])
            if args.get("results_dir"):  # before anything is measured into it
                check_results_dir(args["results_dir"])
            if args.get("search"):
                search_from_spec(args["search"])
                if args.get("sampler", "continuous") not in ("continuous", "snapshot") or args.get("server"):
                    raise SearchError("search needs the DUT counter (sampler continuous or snapshot, no server)")
        except (GeneratorParamError, CounterError, RecordError, SearchError) as exc:
            return dict(result, failed=True, msg=str(exc))
        mode = args.get("sampler", "continuous")
        reps = int(args.get("repetitions", 3))
        params = dict(args.get("params") or {})
        module_args = {k: v for k, v in args.items() if k in GENERATOR_SPEC and k != "repetitions"}
        started = utcnow()
        if args.get("search"):
            return self._search(result, args, module_args, params, started, task_vars)
        server = None
        if args.get("server"):
            if not args.get("dut"):
                return dict(result, failed=True, msg="server needs dut: the host the server runs on")
            server = self._start_server(args, task_vars)
            if server.get("failed"):
                return dict(result, failed=True, msg=f"server on {args['dut']}: {server.get('msg')}", server=server)
        try:
            measured = self._measure(args, module_args, reps, params, mode, task_vars)
        finally:
            stopped = self._stop_server(args, server, task_vars) if server else None
        if measured.get("failed"):
            if stopped and stopped.get("failed"):  # the server's own message explains the point's failure
                measured["msg"] = f"{measured.get('msg')}; server on {args['dut']}: {stopped.get('msg')}"
            return {**result, **measured, "server": stopped}
        runs, sample = measured["runs"], measured["sample"]
        if stopped and stopped.get("failed"):
            return dict(result, failed=True, msg=f"server on {args['dut']}: {stopped.get('msg')}", server=stopped,
                        runs=runs)
        if mode == "server":
            sample = {"sink": stopped["sink"]}
            if len(sample["sink"]["bursts"]) != reps:
                return dict(result, failed=True, runs=runs, server=stopped,
                            msg=f"{args['server']['tool']} on {args['dut']} saw {len(sample['sink']['bursts'])} "
                                f"bursts of traffic, expected {reps} (one per repetition)")
        return self._finish(result, args, params, runs, sample, mode, started, stopped, task_vars)

    def _search(self, result, args, module_args, params, started, task_vars) -> dict:
        """NDR/PDR search (traffic/_rate_search.py): one trial per rate the planner asks for, each a
        generator run with the DUT counter read before and after; the record is the final
        repetitions at the rate found, with the whole trail in record["search"]."""
        search = search_from_spec(args["search"])
        trials = []  # (runs, snapshots) of each trial, in the planner's order
        while (rate := search.next_rate()) is not None:
            margs = dict(module_args, params=dict(params, rate=rate))
            runs, sample = self._snapshot(args, margs, 1, task_vars)
            if runs is None:
                return dict(result, **sample, search=search.result())
            parsed = runs[0]["parsed"]
            before, after = sample["snapshots"][0]
            got = int(after["counts"][0] - before["counts"][0])
            offered, received = trial_counts(rate, int(parsed.get("packets") or 0),
                                             parsed.get("seconds") or runs[0]["elapsed"], got)
            phase = search.next_phase
            trial = search.record(rate, offered, received)
            trials.append((runs, sample["snapshots"], phase, parsed, got))
            self._display.display(f"search {args.get('scenario', 'adhoc')}: {phase} trial at {rate:.0f} pps: "
                                  f"sent {parsed.get('packets')}, DUT counted {got}, loss ratio "
                                  f"{trial.loss_ratio:.5f} against the offered load: "
                                  f"{'pass' if trial.passed else 'fail'}")
        found = search.result()
        found["method"] = SEARCH_METHOD
        for entry, (_runs, _snaps, _phase, parsed, got) in zip(found["trail"], trials, strict=True):
            entry.update(gen_packets=parsed.get("packets"), gen_pps=parsed["pps"], dut_packets=got)
        final = [t for t, e in zip(trials, found["trail"], strict=True) if e["rate"] == found["rate"] and e["passed"]]
        if found["rate"] is None or not final:
            return dict(result, failed=True, search=found,
                        msg=f"{found['kind']} search found no rate with loss ratio <= {found['loss_ratio']} "
                            f"down to {search.min_rate:.0f} pps ({found['trials']} trials; the trail is in search)")
        runs = [r for t in final for r in t[0]]
        snaps = [s for t in final for s in t[1]]
        args = dict(args, record_params=dict(args.get("record_params") or {},
                                             search=found["kind"], search_loss_ratio=found["loss_ratio"]))
        return self._finish(result, args, dict(params, rate=found["rate"]), runs, {"snapshots": snaps},
                            "snapshot", started, None, task_vars, more={"search": found})

    def _start_server(self, args: dict, task_vars: dict) -> dict:
        spec = args["server"]
        margs = {"state": "started", "tool": spec["tool"], "params": spec.get("params") or {}}
        if spec.get("binary"):
            margs["binary"] = spec["binary"]
        try:
            return self._run_on_host(args["dut"], SERVER, margs, task_vars)
        except Exception as exc:  # noqa: BLE001 - reported as this point's failure
            return {"failed": True, "msg": str(exc)}

    def _stop_server(self, args: dict, server: dict, task_vars: dict) -> dict:
        try:
            stop = {"state": "stopped", "pid": server["pid"], "log": server["log"]}
            return self._run_on_host(args["dut"], SERVER, stop, task_vars)
        except Exception as exc:  # noqa: BLE001 - reported as this point's failure
            return {"failed": True, "msg": str(exc)}

    def _measure(self, args, module_args, reps, params, mode, task_vars) -> dict:
        """Run the generator with the chosen DUT sampler: {"runs", "sample"} or a failure dict."""
        if mode == "continuous":
            runs, sample = self._continuous(args, module_args, reps, params, task_vars)
        elif mode == "snapshot":
            runs, sample = self._snapshot(args, module_args, reps, task_vars)
        else:
            gen = self._execute_module(MODULE, module_args=dict(module_args, repetitions=reps), task_vars=task_vars)
            if gen.get("failed"):
                return gen
            runs, sample = gen["runs"], None
        if runs is None:
            return sample
        return {"runs": runs, "sample": sample}

    def _finish(self, result, args, params, runs, sample, mode, started, stopped, task_vars, more=None) -> dict:
        tool = args.get("tool", "xdpgen")
        reps_out, counters = self._cross_check(runs, sample, mode, args.get("generator_max"),
                                               tool=args.get("parse_as") if tool == "command" else tool,
                                               gen_cpus=generator_cpus(tool, params), params=params)
        if stopped:
            counters["server"] = {"tool": args["server"]["tool"], "info": (stopped.get("sink") or {}).get("info", {})}
            counters["server_cpu"] = stopped.get("cpu", {})
        if mode == "none":
            samples = [r["gen_pps"] for r in reps_out]
            how = "generator_pps"
        elif mode == "server":
            samples = [r["dut_pps"] for r in reps_out]
            how = "sink_burst_rate"
        else:
            # a short burst's rate includes idle time: kept out of the samples, named in the warnings
            samples = [r["dut_pps"] for r in reps_out if not r.get("dut_short")]
            how = "dut_steady_rate" if mode == "continuous" else "dut_delta_over_generator_time"
        warnings = [r["warning"] for r in reps_out if r.get("warning")]
        short = [i + 1 for i, r in enumerate(reps_out) if r.get("dut_short")]
        if short:
            warnings.append(f"repetition(s) {', '.join(map(str, short))} of {len(reps_out)}: burst shorter than "
                            "3 interior sampling intervals, kept out of the samples (its rate would include "
                            "idle time); lengthen the duration")
        # xdpgen's socket path (a kernel that refuses live frames) is another measurement than live frames:
        # named in the params, so its records pair only with records of the same mode, and in a warning.
        xdpgen_modes = sorted({(r.get("gen_figures") or {}).get("mode") for r in reps_out} - {None, "live"})
        if tool == "xdpgen" and xdpgen_modes:
            warnings.append("xdpgen sent from an AF_PACKET socket: the generator's kernel refuses BPF_PROG_RUN "
                            "live frames; the rate is not that of live frames, and the record pairs only with "
                            "records of the same xdpgen mode")
        warnings += rate_warnings(reps_out, tool)
        earlier = (sample or {}).get("earlier_traffic")
        if earlier:
            warnings.append(f"{earlier['packets']} packets of earlier traffic reached the DUT in the first "
                            f"{earlier['until_s']} s of sampling, before the generator started: left out")
        if not samples:
            return dict(result, failed=True, reps=reps_out,
                        msg=f"every repetition's burst was short ({len(reps_out)} of {len(reps_out)}): no steady "
                            "rate to record; lengthen the duration or shorten sample_interval")
        bound = overall_bound(reps_out)
        environment = dict(args.get("environment") or {})
        if args.get("generator_environment"):
            environment["generator"] = args["generator_environment"]
        # MAC addresses are plumbing, new with every test bed: kept out of params, which match records.
        record_params = {k: v for k, v in params.items() if k not in PLUMBING and v is not None}
        record_params.update(args.get("record_params") or {}, sample=how)
        if tool == "xdpgen" and xdpgen_modes:
            record_params["xdpgen_mode"] = "+".join(xdpgen_modes)
        if args.get("server"):  # records of different receivers must not match each other
            record_params.setdefault("server", args["server"]["tool"])
        cost = (sample or {}).get("cost")
        dut_cost = summarize_cost([r.get("dut_cost") for r in reps_out if not r.get("dut_short")], t_quantile)
        if cost is not None:
            # the statistics' own time (two clock reads per run) is in the rate: records pair by it
            record_params["bpf_stats"] = "on" if cost.get("bpf_stats_enabled") else "off"
            if not cost.get("bpf_stats_enabled") and "prog_runs" in cost:
                warnings.append("kernel.bpf_stats_enabled was 0 on the DUT: no program stage in dut_cost")
        try:
            record = build_record(
                run_id=args.get("run_id") or new_run_id(started),
                scenario=args.get("scenario", "adhoc"),
                variant=args.get("variant", "baseline"),
                tool=args.get("tool", "xdpgen"),
                params=record_params,
                samples=samples,
                counters=counters,
                environment=environment,
                started=iso(started),
                duration_s=(utcnow() - started).total_seconds(),
                extra={"reps": reps_out, "bound": bound, "warnings": warnings,
                       **({"replicate": args["replicate"]} if args.get("replicate") else {}),
                       "addresses": {k: params[k] for k in PLUMBING if k in params},
                       "dut": args.get("dut"), "generator": task_vars.get("inventory_hostname"), **(more or {})},
            )
        except ValueError as exc:
            return dict(result, failed=True, msg=str(exc), reps=reps_out)
        if dut_cost is not None:
            record["summary"]["dut_cost"] = dut_cost
        result.update(changed=False, record=record, reps=reps_out, bound=bound, runs=runs,
                      dut_cost_text=cost_text(dut_cost), **(more or {}))
        for w in warnings:
            self._display.warning(f"{record['scenario']}: {w}")
        if args.get("results_dir"):
            name = record_filename(record["scenario"], record["variant"], record_params, record.get("replicate"))
            path = os.path.join(args["results_dir"], name)
            write_json_atomic(path, record)
            result.update(changed=True, record_path=path)
        return result

    def _sampler_args(self, args: dict, **extra) -> dict:
        return dict(counter=args["counter"], ethtool_interfaces=args.get("ethtool_interfaces", []), **extra)

    def _continuous(self, args, module_args, reps, params, task_vars):
        """Run the generator while the DUT counter is sampled. A sampler that started only after the
        generator (its module start-up outran the lead on a loaded host: its first reading is later
        than the first run's start) measured nothing: the point is run again with a longer lead. So is
        a point whose counter was already moving at the sampler's first reading although the sampler
        read first: the two hosts' clocks may differ by more than the margin, or traffic that was not
        the generator's reached the DUT then (a real NIC's link coming back after the reset that an
        XDP detach makes, say); with the longer lead such a transient ends before the first run and is
        left out (_without_earlier_traffic). Traffic that keeps flowing fails the point after the last
        try, its message saying how many tries with which leads."""
        lead = float(args.get("lead", 1.0))
        leads = []
        for attempt in range(LATE_SAMPLER_ATTEMPTS):
            leads.append(lead)
            runs, samp = self._continuous_once(args, module_args, reps, params, task_vars, lead)
            late = (runs is None and isinstance(samp.get("sampler"), dict) and samp.get("runs")
                    and self._sampler_was_late(samp["sampler"], samp["runs"]))
            moving = runs is None and bool(samp.get("traffic_at_start"))
            if not (late or moving):
                return runs, samp
            if attempt == LATE_SAMPLER_ATTEMPTS - 1:
                if moving:
                    samp["msg"] = (f"{samp.get('msg')} (in {len(leads)} tries with leads of "
                                   f"{', '.join(f'{x:g}' for x in leads)} s)")
                return runs, samp
            lead *= 3
            why = ("started after the generator" if late else
                   "saw the counter moving at its first reading (traffic before the generator's)")
            display.warning(f"bench_run: the DUT sampler on {args['dut']} {why}; "
                            f"running the point again with a {lead:.1f} s lead")
        return runs, samp

    @staticmethod
    def _without_earlier_traffic(samp: dict, runs: list[dict]) -> tuple[list, list]:
        """The DUT series without traffic that was already arriving at the sampler's first reading and
        had stopped before the generator's first run began: the tail of an earlier step (its frames
        still draining towards the DUT), not this point's. It is noted in samp["earlier_traffic"],
        which _finish turns into one of the record's warnings. Traffic still arriving when the first
        run began stays, and find_bursts then fails the point: the sampler started late, or other
        traffic reaches the DUT."""
        times, counts, packets, ended = trim_leading_traffic(samp["times"], samp["counts"])
        started = samp.get("started_epoch")
        first = runs[0].get("started_epoch") if runs else None
        if (not packets or not isinstance(started, (int, float)) or not isinstance(first, (int, float))
                or started + ended > first):
            return samp["times"], samp["counts"]
        samp["earlier_traffic"] = {"packets": packets, "until_s": round(ended, 3)}
        return times, counts

    @staticmethod
    def _sampler_was_late(sampler: dict, runs: list[dict]) -> bool:
        first_read, first_run = sampler.get("started_epoch"), runs[0].get("started_epoch")
        return isinstance(first_read, (int, float)) and isinstance(first_run, (int, float)) and first_read > first_run

    def _continuous_once(self, args, module_args, reps, params, task_vars, lead):
        window = float(params.get("duration") or 0) or float(args.get("timeout", 120)) / 2
        startup = STARTUP_ALLOWANCE if interrupt_after(args.get("tool", "xdpgen"), params) else 0.0
        max_duration = lead + reps * (window + float(args.get("gap", 0.6)) + startup) + SAMPLER_SLACK
        holder: dict = {}

        def sampler():
            try:
                holder["res"] = self._run_on_host(args["dut"], SAMPLER, self._sampler_args(
                    args, interval=float(args.get("sample_interval", 0.1)), bursts=reps,
                    **({"dut_cost": True} if args.get("dut_cost", True) else {}),
                    idle=min(0.3, max(0.15, float(args.get("gap", 0.6)) / 2)), max_duration=max_duration,
                    stall=lead + float(args.get("gap", 0.6)) + STALL_MARGIN + startup), task_vars)
            except Exception as exc:  # noqa: BLE001 - reported as this point's failure below
                holder["res"] = {"failed": True, "msg": f"DUT sampler on {args['dut']!r}: {exc}",
                                 "exception": traceback.format_exc()}

        thread = threading.Thread(target=sampler, name="xdplab-sampler", daemon=True)
        thread.start()
        time.sleep(lead)
        if not thread.is_alive() and holder.get("res", {}).get("failed"):
            return None, dict(failed=True, msg=holder["res"].get("msg"), sampler=holder["res"])
        gen = self._execute_module(MODULE, module_args=dict(module_args, repetitions=reps), task_vars=task_vars)
        thread.join(max_duration + 30)
        samp = holder.get("res") or {"failed": True, "msg": f"DUT sampler on {args['dut']!r} did not finish"}
        if gen.get("failed"):
            return None, dict(gen, sampler=samp)
        if samp.get("failed"):
            return None, dict(failed=True, msg=samp.get("msg"), sampler=samp, runs=gen.get("runs"))
        try:
            times, counts = self._without_earlier_traffic(samp, gen["runs"])
            bursts = find_bursts(times, counts, min_gap=float(args.get("gap", 0.6)) / 2, expected=reps)
        except SamplingError as exc:
            return None, dict(failed=True, msg=f"DUT counter {samp['counter']['description']}: {exc}",
                              runs=gen["runs"], sampler=samp, traffic_at_start=isinstance(exc, TrafficAtStart))
        if len(bursts) != reps:
            what = "did not move: the DUT received nothing" if not bursts else f"showed {len(bursts)} bursts"
            return None, dict(failed=True, runs=gen["runs"], sampler=samp,
                              msg=f"DUT counter {samp['counter']['description']} on {args['dut']} {what} "
                                  f"(expected {reps}, one per repetition)")
        try:  # each run gets the burst that started with it, by start times (clock offset allowed)
            order = align_runs(gen["runs"], bursts, samp.get("started_epoch"))
        except SamplingError as exc:
            return None, dict(failed=True, msg=f"DUT counter {samp['counter']['description']}: {exc}",
                              runs=gen["runs"], sampler=samp)
        samp["bursts"] = [bursts[j].as_dict() for j in order]
        skipped = len(samp["times"]) - len(times)  # readings of earlier traffic cut off the front
        for burst in samp["bursts"]:  # the steady interval in the sampler's own readings (cost's)
            burst["first"] += skipped
            burst["last"] += skipped
        if samp.get("cost") is not None:  # one kernel for both: the generator's CPUs are in its /proc/stat
            gen_boot = gen.get("boot_id")
            samp["cost"]["same_kernel"] = gen_boot is not None and gen_boot == samp["cost"].get("boot_id")
        return gen["runs"], samp

    def _snapshot(self, args, module_args, reps, task_vars):
        reads, runs = [], []
        for i in range(reps):
            if i:
                time.sleep(float(args.get("gap", 0.6)))
            before = self._run_on_host(args["dut"], SAMPLER, self._sampler_args(args, interval=0), task_vars)
            if before.get("failed"):
                return None, dict(failed=True, msg=before.get("msg"), sampler=before)
            gen = self._execute_module(MODULE, module_args=dict(module_args, repetitions=1), task_vars=task_vars)
            if gen.get("failed"):
                return None, dict(gen, runs=runs)
            after = self._run_on_host(args["dut"], SAMPLER, self._sampler_args(args, interval=0), task_vars)
            if after.get("failed"):
                return None, dict(failed=True, msg=after.get("msg"), sampler=after)
            runs.extend(gen["runs"])
            reads.append((before, after))
        return runs, {"snapshots": reads}

    @staticmethod
    def _cross_check(runs: list[dict], sample: dict | None, mode: str, generator_max: float | None = None,
                     tool: str | None = None, gen_cpus: list[int] | None = None,
                     params: dict | None = None) -> tuple[list[dict], dict]:
        reps, counters = [], {"gen_packets": 0}
        drops = dut_drops((sample or {}).get("ethtool")) if mode == "continuous" else None
        for i, run in enumerate(runs):
            parsed = run["parsed"]
            rep = {"gen_packets": parsed.get("packets"), "gen_seconds": parsed.get("seconds"),
                   "gen_pps": parsed["pps"], "gen_cpu": run.get("cpu")}
            # the generator table's record keys (latency, bit rates, loss, an estimate's basis), and for
            # every generator its mode and the rate asked and achieved
            figures = {**offered_load(tool, params, parsed), **record_figures(tool, parsed)} if tool else {}
            if figures:
                rep["gen_figures"] = figures
            counters["gen_packets"] += int(parsed.get("packets") or 0)
            if mode == "continuous":
                burst = sample["bursts"][i]
                rep.update(dut_packets=burst["packets"], dut_pps=burst["rate"], dut_interior=burst["interior"],
                           dut_short=burst.get("short", not burst["interior"]),
                           dut_ramp_trimmed=burst.get("ramp_trimmed", 0))
            elif mode == "server":
                burst = sample["sink"]["bursts"][i]
                rep.update(dut_packets=burst["packets"], dut_pps=burst["pps"], dut_seconds=burst["seconds"])
            elif mode == "snapshot":
                before, after = sample["snapshots"][i]
                got = after["counts"][0] - before["counts"][0]
                secs = parsed.get("seconds") or run["elapsed"]
                rep.update(dut_packets=got, dut_pps=got / secs)
            if mode != "none":
                label, loss = bound_label(parsed.get("packets"), rep["dut_packets"], rate=rep["dut_pps"],
                                          generator_max=generator_max, dut_drops=drops)
                rep.update(bound=label, loss=loss)
                cost = (sample or {}).get("cost") if mode == "continuous" else None
                if cost is not None:
                    shared = bool(cost.get("same_kernel"))
                    try:
                        rep["dut_cost"] = rep_cost(cost, burst["first"], burst["last"], counts=sample.get("counts"),
                                                   generator_cpus=gen_cpus or [], same_kernel=shared)
                    except CostError as exc:
                        rep["warning"] = f"repetition {i + 1}: no dut_cost: {exc}"
                    else:
                        busy = rep["dut_cost"]["busy"]
                        rep["bound"] = decide_bound(loss_label=label, dut=rep["dut_cost"]["cpus"],
                                                    generator=gen_cpus or [],
                                                    same_kernel=shared,
                                                    busy_dut=busy["dut"], busy_generator=busy["generator"])
                surplus = signed_loss(parsed.get("packets"), rep["dut_packets"])[1]
                if surplus:
                    rep["warning"] = f"repetition {i + 1}: {surplus}"
                counters["dut_packets"] = counters.get("dut_packets", 0) + rep["dut_packets"]
            reps.append(rep)
        if drops is not None:
            counters["dut_drops"] = drops
        if mode == "continuous":
            counters["dut_counter"] = sample["counter"]["description"]
            counters["dut_ethtool"] = sample.get("ethtool", {})
            counters["dut_cpu"] = sample.get("cpu", {})
        return reps, counters
