# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run a planned pktgen sweep inside a (QEMU-booted) kernel and write one record v1 per point.

Started by playbooks/pktgen_burst.yml through xdplab.testbed.qemu_exec, with the controller's root
shared read-only and the run's results directory shared writable:

    python pktgen_guest.py --plan /run/pgout/PLAN --out /run/pgout

PLAN (JSON): {"run_id", "scenario", "build", "steps" (from the sweep_plan filter), "base" (pktgen
parameters common to all steps), "variants" ({name: pktgen parameters}), "duration", "device"}.
The A/B loop's plan (results._ab_guest_plan) adds: a "scenario" per step, "build" null (no build
in the params: the kernel is the variant), "replicate" (the boot), "environment" (merged into each
record's) and "expect_kernel" (the release this boot must be running; another one exits 2).
Every step is one repetition of one (point, variant), run with the same module_utils code as the
xdplab.testbed.pktgen module; after every step the point's record is merged and rewritten, so a
failing step keeps the finished points. Failed steps go to FAILURES (a JSON list) with
pktgen's own reason.
Exit status: 0 all steps done, 1 some failed, 2 unusable plan or no pktgen.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time


def _collections_root(here: str) -> str:
    """<root>/ansible_collections/xdplab/testbed/...: <root>; a checkout: its .collections link tree."""
    path = here
    while path != os.path.dirname(path):
        if os.path.basename(path) == "ansible_collections":
            return os.path.dirname(path)
        path = os.path.dirname(path)
    return os.path.join(here, "..", "..", "..", ".collections")


sys.path.insert(0, _collections_root(os.path.dirname(os.path.abspath(__file__))))

from ansible_collections.xdplab.testbed.plugins.module_utils.common._atomic_files import write_json_atomic  # noqa: E402
from ansible_collections.xdplab.testbed.plugins.module_utils.results import _record_schema as _record  # noqa: E402
from ansible_collections.xdplab.testbed.plugins.module_utils.results import _sweep  # noqa: E402
from ansible_collections.xdplab.testbed.plugins.module_utils.results._pktgen_record import (  # noqa: E402
    pktgen_step_record,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._pktgen_proc import (  # noqa: E402
    Pktgen,
    PktgenError,
    check_spec,
    cpu_share,
    cpu_times,
    device_names,
)


def stat() -> dict[str, int]:
    with open("/proc/stat") as fh:
        return cpu_times(fh.read())


def _is_qemu_guest() -> bool:
    """The machine is one QEMU emulates (the loop's booted kernel, a lab guest), not a host of its own."""
    try:
        with open("/sys/class/dmi/id/sys_vendor") as fh:
            return fh.read().strip() == "QEMU"
    except OSError:
        return True  # no DMI: QEMU's -kernel boots without firmware tables on some machines


def environment() -> dict:
    env = {"kernel": os.uname().release, "cpus_online": os.cpu_count(), "qemu_guest": _is_qemu_guest()}
    try:
        with open("/proc/cpuinfo") as fh:
            model = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), None)
        if model:
            env["cpu_model"] = model
    except OSError:
        pass
    for path in ("/proc/config.gz",):
        if os.path.exists(path):
            with open(path, "rb") as fh:
                env["kernel_config_sha256"] = hashlib.sha256(fh.read()).hexdigest()
    return env


def ensure_device(name: str, kind: str) -> None:
    if os.path.exists(f"/sys/class/net/{name}"):
        return
    argv = ["ip", "link", "add", name, "type", kind]
    if kind == "veth":
        argv += ["peer", "name", name + "p"]
    subprocess.run(argv, check=True)  # noqa: S603 - argv list
    if kind == "veth":
        subprocess.run(["ip", "link", "set", name + "p", "up"], check=True)  # noqa: S603,S607
    subprocess.run(["ip", "link", "set", name, "up"], check=True)  # noqa: S603,S607


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--plan", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    with open(args.plan) as fh:
        plan = json.load(fh)
    pg = Pktgen()
    try:
        pg.available()
    except PktgenError as exc:
        print(f"pktgen_guest: {exc}", file=sys.stderr)
        return 2
    device = plan.get("device") or {"name": "pg0", "kind": "dummy"}
    ensure_device(device["name"], device["kind"])
    env = dict(environment(), **(plan.get("environment") or {}))
    expected = plan.get("expect_kernel")
    if expected and env["kernel"] != expected:
        print(f"pktgen_guest: booted kernel {env['kernel']!r}, expected {expected!r}", file=sys.stderr)
        return 2
    extra_unit = {"replicate": plan["replicate"]} if plan.get("replicate") else {}
    records: dict[str, dict] = {}
    failures: list[dict] = []
    for step in plan["steps"]:
        spec = dict(plan.get("base") or {}, interface=device["name"], duration=plan["duration"])
        spec.update(plan["variants"].get(step["variant"], {}))
        spec.update(step["params"])
        started = _record.iso(_record.utcnow())
        t0 = time.monotonic()
        pg.log = []
        try:
            spec = check_spec(spec)
            pg.configure(spec)
            before = stat()
            seconds = pg.start_blocking(spec["duration"], timeout=float(plan["duration"]) + 60)
            cpu = cpu_share(before, stat())
            res = pg.results([dev for _dummy, dev in device_names(spec)])
        except PktgenError as exc:
            failures.append({"step": step["index"], "variant": step["variant"], "params": step["sweep"],
                             "msg": str(exc)})
            print(f"[{step['index'] + 1}/{len(plan['steps'])}] {step['variant']} {json.dumps(step['sweep'])}: "
                  f"FAILED: {exc}", flush=True)
            try:
                pg.reset()
            except PktgenError:
                pass
            continue
        pg.reset()
        scenario = step.get("scenario", plan["scenario"])
        rec = pktgen_step_record(
            run_id=plan["run_id"], scenario=scenario, variant=step["variant"], sweep=step["sweep"], spec=spec,
            result=dict(res, seconds=seconds, cpu=cpu), device_kind=device["kind"], environment=env,
            started=started, duration_s=time.monotonic() - t0, build=plan.get("build", "baseline"),
            extra=extra_unit)
        records[step["key"]] = _sweep.merge_record(records.get(step["key"]), rec)
        write_json_atomic(os.path.join(args.out, f"{scenario}__{step['key']}"), records[step["key"]])
        print(f"[{step['index'] + 1}/{len(plan['steps'])}] {step['variant']} {json.dumps(step['sweep'])}: "
              f"{res['pps']:.0f} pps, {res['packets']} packets, CPU system/softirq "
              f"{cpu['system_pct']}/{cpu['softirq_pct']}%", flush=True)
    write_json_atomic(os.path.join(args.out, "FAILURES"), failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
