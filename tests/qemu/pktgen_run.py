# SPDX-License-Identifier: GPL-3.0-or-later
"""Run kernel pktgen inside a QEMU guest and write a result record v1.

Runs INSIDE a guest booted by xdplab.testbed.qemu_exec (host root shared read-only), e.g.:

    qemu_exec chdir: <the checkout>, command: .venv/bin/python tests/qemu/pktgen_run.py \
        --variant patched --out /run/xdplab-out/record.json --raw /run/xdplab-out/pktgen-raw

Drives /proc/net/pktgen through pgctrl (one thread, one device: a dummy or a veth whose peer exists),
repeats the run, parses each device result with the collection's _parsers.parse('pktgen', ...) and
writes the record with _record.build_record / write_json_atomic. The device and thread files of every
repetition are kept under --raw when given.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", ".collections"))

from ansible_collections.xdplab.testbed.plugins.module_utils.common._atomic_files import write_json_atomic  # noqa: E402
from ansible_collections.xdplab.testbed.plugins.module_utils.results import _record_schema as _record  # noqa: E402
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic import _output_parsers as _parsers  # noqa: E402

PG = "/proc/net/pktgen"


def pgset(path: str, cmd: str) -> None:
    with open(path, "w") as fh:
        fh.write(cmd + "\n")
    with open(path) as fh:
        text = fh.read()
    if path.endswith("pgctrl"):
        return
    result = next((ln for ln in text.splitlines() if ln.startswith("Result:")), "")
    if "OK" not in result:
        raise SystemExit(f"pktgen rejected {cmd!r} on {path}: {result}")


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--variant", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--raw")
    ap.add_argument("--dev", default="pgdummy0")
    ap.add_argument("--kind", choices=["dummy", "veth"], default="dummy")
    ap.add_argument("--count", type=int, default=200000)
    ap.add_argument("--pkt-size", type=int, default=64)
    ap.add_argument("--burst", type=int, default=1)
    ap.add_argument("--clone-skb", type=int, default=0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--series", help="series.json of the booted variant (kernel role): environment.kernel_patches")
    ap.add_argument("--config", help="final .config of the booted variant: environment.kernel_config_sha256")
    args = ap.parse_args()

    if not os.path.isdir(PG):
        raise SystemExit("no /proc/net/pktgen: kernel without CONFIG_NET_PKTGEN")
    if os.path.exists(f"/sys/class/net/{args.dev}"):
        pass  # e.g. dummy0, which CONFIG_DUMMY=y creates at boot
    elif args.kind == "veth":
        ip("link", "add", args.dev, "type", "veth", "peer", "name", args.dev + "p")
        ip("link", "set", args.dev + "p", "up")
    else:
        ip("link", "add", args.dev, "type", "dummy")
    ip("link", "set", args.dev, "up")
    thread = f"{PG}/kpktgend_0"
    dev = f"{PG}/{args.dev}"
    started = _record.iso(_record.utcnow())
    t0 = time.monotonic()
    samples: list[float] = []
    raw_parsed = []
    for rep in range(args.reps):
        pgset(f"{PG}/pgctrl", "reset")
        pgset(thread, "rem_device_all")
        pgset(thread, f"add_device {args.dev}")
        for cmd in (f"count {args.count}", f"pkt_size {args.pkt_size}", f"burst {args.burst}",
                    f"clone_skb {args.clone_skb}", "delay 0", "dst 198.18.0.2", "src_min 198.18.0.1",
                    "src_max 198.18.0.1", "dst_mac 02:00:00:00:00:02"):
            pgset(dev, cmd)
        pgset(f"{PG}/pgctrl", "start")  # blocks until count packets are sent
        with open(dev) as fh:
            dev_text = fh.read()
        with open(thread) as fh:
            thread_text = fh.read()
        if args.raw:
            os.makedirs(args.raw, exist_ok=True)
            for name, text in ((f"device_{args.dev}_rep{rep}.txt", dev_text),
                               (f"thread_kpktgend_0_rep{rep}.txt", thread_text)):
                with open(os.path.join(args.raw, name), "w") as fh:
                    fh.write(text)
        parsed = _parsers.parse("pktgen", dev_text)
        samples.append(float(parsed["pps"]))
        raw_parsed.append(parsed)
    with open(f"{PG}/pgctrl") as fh:
        pgctrl = fh.read()
    environment = {"kernel": os.uname().release, "cpus_online": os.cpu_count(), "qemu_guest": True}
    if args.series:
        with open(args.series) as fh:
            series = json.load(fh)
        environment["kernel_patches"] = [{"subject": p["subject"], "patch_id": p["patch_id"]}
                                         for p in series.get("patches", [])]
    if args.config:
        with open(args.config, "rb") as fh:
            environment["kernel_config_sha256"] = hashlib.sha256(fh.read()).hexdigest()
    record = _record.build_record(
        run_id=_record.new_run_id(),
        scenario=f"pktgen_{args.kind}",
        variant=args.variant,
        tool="pktgen",
        params={"pkt_size": args.pkt_size, "count": args.count, "burst": args.burst, "clone_skb": args.clone_skb,
                "threads": 1, "device": args.kind, "sample": "repetition"},
        samples=samples,
        environment=environment,
        started=started,
        duration_s=time.monotonic() - t0,
        extra={"pgctrl": pgctrl.splitlines()},
    )
    write_json_atomic(args.out, record)
    print(f"{args.variant}: {len(samples)} reps, pps {[round(s) for s in samples]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
