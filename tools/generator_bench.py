# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Generator benchmark: xdpgen vs a minimal live-frame generator vs trafgen on one veth pair.

Run as root from the collection root:
    .venv/bin/python tools/generator_bench.py [--rounds 5] [--seconds 2] [--size 64]

Creates two private namespaces (h2g<pid>, h2d<pid>) joined by a veth pair, attaches
files/xdp/xdp_drop natively on the receiving end and runs the generators in turn
(order rotated each round) on the sending end, one thread on CPU --cpu. Every figure
is checked against the receiver's XDP_DROP counter (xdplab_stats[1]), not only the
sender's claim. Prints the median and best rate of each generator and the ratios.
Removes everything it created, also on failure or Ctrl-C. Not a pass/fail test.

--fixtures DIR saves one real stdout capture of xdpgen and of trafgen under DIR/xdpgen
and DIR/trafgen (tests/unit/fixtures layout).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / ".collections"))

from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._xdpgen_trafgen_argv import (  # noqa: E402
    trafgen_argv,
    trafgen_config,
    xdpgen_argv,
)

ENV = dict(os.environ, LC_ALL="C")


def run(argv: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, check=True, capture_output=True, text=True, env=ENV, **kw)  # noqa: S603


def build(tmp: Path) -> tuple[Path, Path, Path]:
    run(["make", "-s", "-C", str(ROOT / "files/xdpgen")])
    minigen = tmp / "minigen"
    run(["gcc", "-O2", "-Wall", "-o", str(minigen), str(ROOT / "tools/minigen.c"), "-lbpf"])
    run(["make", "-s", "-C", str(ROOT / "files/xdp"), f"OUT={tmp}"])
    return ROOT / "files/xdpgen/xdpgen", minigen, tmp / "xdp_drop.o"


class Pair:
    """Two namespaces and a veth pair; XDP_DROP (xdplab_stats) on the receiving end."""

    def __init__(self, tag: str, drop_obj: Path) -> None:
        self.gen_ns, self.dut_ns = f"h2g{tag}", f"h2d{tag}"
        self.gen_if, self.dut_if = f"h2g{tag}", f"h2d{tag}"
        self.drop_obj = drop_obj
        self.map_id: int | None = None

    def up(self) -> None:
        run(["ip", "netns", "add", self.gen_ns])
        run(["ip", "netns", "add", self.dut_ns])
        run(["ip", "link", "add", self.gen_if, "netns", self.gen_ns, "type", "veth",
             "peer", "name", self.dut_if, "netns", self.dut_ns])
        for ns, dev in ((self.gen_ns, self.gen_if), (self.dut_ns, self.dut_if)):
            run(["ip", "-n", ns, "link", "set", "dev", dev, "up"])
        run(["ip", "-n", self.dut_ns, "link", "set", "dev", self.dut_if, "xdpdrv",
             "obj", str(self.drop_obj), "sec", "xdp"])
        link = json.loads(run(["ip", "-n", self.dut_ns, "-j", "-d", "link", "show", "dev", self.dut_if]).stdout)[0]
        self.dut_mac = link["address"]
        prog = json.loads(run(["bpftool", "-j", "prog", "show", "id", str(link["xdp"]["prog"]["id"])]).stdout)
        for mid in prog["map_ids"]:
            if json.loads(run(["bpftool", "-j", "map", "show", "id", str(mid)]).stdout)["name"] == "xdplab_stats":
                self.map_id = mid
        if self.map_id is None:
            raise RuntimeError(f"{self.drop_obj} has no xdplab_stats map")
        time.sleep(0.5)  # let the link settle (carrier)

    def dropped(self) -> int:
        out = json.loads(run(["bpftool", "-j", "map", "lookup", "id", str(self.map_id),
                              "key", "1", "0", "0", "0"]).stdout)
        return sum(v["value"]["packets"] for v in out["formatted"]["values"])

    def down(self) -> None:
        for ns in (self.gen_ns, self.dut_ns):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)  # noqa: S603,S607


NICE: list[str] = []
TICK = os.sysconf("SC_CLK_TCK")


def ksoftirqd_pid(cpu: int) -> int | None:
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if (d / "comm").read_text().strip() == f"ksoftirqd/{cpu}":
                    return int(d.name)
            except OSError:
                continue
    return None


def task_cpu_seconds(pid: int | None) -> float:
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


def cpu_share(cpu: int, seconds: float = 1.0) -> float:
    """Fraction of CPU `cpu` a busy loop gets right now (1.0 on an idle machine): what any
    single-threaded generator can get at most, whatever its own speed."""
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    subprocess.run(["taskset", "-c", str(cpu), "timeout", str(seconds), "sh", "-c", "while :; do :; done"],  # noqa: S603,S607
                   check=False)
    wall = time.monotonic() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ((ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)) / wall


def in_ns(pair: Pair, argv: list[str]) -> list[str]:
    return [*NICE, "ip", "netns", "exec", pair.gen_ns, *argv]


def measure(pair: Pair, argv: list[str], parse, softirqd: int | None) -> dict:
    before = pair.dropped()
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    k0 = task_cpu_seconds(softirqd)
    proc = run(in_ns(pair, argv))
    k1 = task_cpu_seconds(softirqd)
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    received = pair.dropped() - before
    sent, seconds = parse(proc.stdout)
    # CPU time spent on the run: the generator process (user + system, including the
    # receiver's softirq work done in its context) plus ksoftirqd of the sending CPU
    # (softirq work the kernel deferred there). packets / that = the rate of one busy
    # core, whatever share of the core the machine's other load took.
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime) + (k1 - k0)
    return {"sent": sent, "received": received, "seconds": seconds, "cpu": cpu,
            "pps": received / seconds, "pps_cpu": received / cpu if cpu > 0 else 0.0,
            "stdout": proc.stdout, "argv": argv}


def parse_kv(prefix: str):
    def parse(stdout: str) -> tuple[int, float]:
        line = [ln for ln in stdout.splitlines() if ln.startswith(prefix) and "packets=" in ln][-1]
        kv = dict(f.split("=", 1) for f in line.split()[1:])
        return int(kv["packets"]), float(kv["seconds"])
    return parse


def parse_trafgen(stdout: str) -> tuple[int, float]:
    lines = [ln for ln in stdout.replace("\r", "\n").splitlines() if " usec on CPU" in ln]
    packets = secs = 0.0
    for ln in lines:
        f = ln.split()
        secs = max(secs, int(f[0]) + int(f[2]) / 1e6)
        packets += int(f[6].lstrip("("))
    return int(packets), secs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--cpu", type=int, default=0)
    ap.add_argument("--batch", type=int, nargs="*", default=[],
                    help="also run xdpgen with these --batch values")
    ap.add_argument("--no-trafgen", action="store_true")
    ap.add_argument("--nice", type=int, default=0,
                    help="run the generators under nice -n N (negative: ahead of other load)")
    ap.add_argument("--no-pin", action="store_true", help="also run xdpgen --no-pin")
    ap.add_argument("--fixtures", type=Path, help="save real captures under this directory")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("generator_bench: run as root", file=sys.stderr)
        return 2
    if args.nice:
        NICE[:] = ["nice", "-n", str(args.nice)]
    tmp = Path(tempfile.mkdtemp(prefix="h2bench-"))
    pair = None
    try:
        xdpgen, minigen, drop = build(tmp)
        pair = Pair(str(os.getpid()), drop)
        pair.up()
        params = {"interface": pair.gen_if, "pkt_size": args.size, "duration": args.seconds,
                  "cpu": args.cpu, "dst_mac": pair.dut_mac}
        gens: dict[str, tuple[list[str], object]] = {
            "xdpgen": (xdpgen_argv(params, binary=str(xdpgen)), parse_kv("xdpgen:")),
        }
        if args.no_pin:
            gens["xdpgen --no-pin"] = (xdpgen_argv(params, binary=str(xdpgen)) + ["--no-pin"], parse_kv("xdpgen:"))
        for b in args.batch:
            gens[f"xdpgen -b {b}"] = (xdpgen_argv(dict(params, batch=b), binary=str(xdpgen)), parse_kv("xdpgen:"))
        if args.size == 64:
            gens["minigen (1M/call)"] = (["taskset", "-c", str(args.cpu), str(minigen), pair.gen_if,
                                          str(args.seconds), str(1 << 20)], parse_kv("minigen:"))
        tg_count = int(400_000 * args.seconds)
        conf = tmp / "trafgen.cfg"
        tg_params = {k: v for k, v in params.items() if k not in ("duration", "cpu")}
        conf.write_text(trafgen_config(dict(tg_params, count=tg_count)))
        results: dict[str, list[dict]] = {name: [] for name in gens}
        if not args.no_trafgen:
            results["trafgen"] = []
        softirqd = ksoftirqd_pid(args.cpu)
        share0 = cpu_share(args.cpu)
        load0 = os.getloadavg()
        names = list(results)
        for r in range(args.rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                if name == "trafgen":
                    argv = trafgen_argv(dict(tg_params, count=tg_count), str(conf))
                    m = measure(pair, argv, parse_trafgen, softirqd)
                    # aim the next trafgen run at the requested duration
                    tg_count = max(10_000, int(m["sent"] / max(m["seconds"], 1e-3) * args.seconds))
                else:
                    argv, parse = gens[name]
                    m = measure(pair, argv, parse, softirqd)
                results[name].append(m)
                print(f"round {r + 1} {name:22s} sent {m['sent']:>10d} received {m['received']:>10d} "
                      f"in {m['seconds']:.3f} s = {m['pps'] / 1e6:6.3f} Mpps received, "
                      f"cpu {m['cpu']:.3f} s = {m['pps_cpu'] / 1e6:6.3f} Mpps per busy core", flush=True)
        load1 = os.getloadavg()
        share1 = cpu_share(args.cpu)
        print(f"\n{args.size}-byte frames, 1 thread on CPU {args.cpu}, {args.rounds} rounds of "
              f"~{args.seconds:g} s, veth -> XDP_DROP (native), nice {args.nice}; "
              f"loadavg {load0[0]:.2f} -> {load1[0]:.2f}; a busy loop on CPU {args.cpu} got "
              f"{share0:.0%} -> {share1:.0%} of it")
        print("Mpps counted at the receiver; wall = per second of run time, cpu = per second of the\n"
              "CPU time of the generator + ksoftirqd/<cpu> (the rate of one busy core, whatever the other load)")
        print(f"{'generator':24s} {'wall median':>12s} {'wall best':>10s} {'cpu median':>11s} {'cpu best':>9s} "
              f"{'rx/tx':>7s}")
        med, medc = {}, {}
        for name, ms in results.items():
            med[name] = statistics.median(m["pps"] for m in ms)
            medc[name] = statistics.median(m["pps_cpu"] for m in ms)
            loss = sum(m["received"] for m in ms) / max(1, sum(m["sent"] for m in ms))
            print(f"{name:24s} {med[name] / 1e6:12.3f} {max(m['pps'] for m in ms) / 1e6:10.3f} "
                  f"{medc[name] / 1e6:11.3f} {max(m['pps_cpu'] for m in ms) / 1e6:9.3f} {loss:7.4f}")
        for other in ("minigen (1M/call)", "trafgen", "xdpgen --no-pin"):
            if other in med:
                print(f"xdpgen / {other}: wall {med['xdpgen'] / med[other]:.2f}x, "
                      f"cpu {medc['xdpgen'] / medc[other]:.2f}x")
        print("commands:")
        for name, ms in results.items():
            print(f"  {name}: {' '.join(ms[0]['argv'])}")
        if args.fixtures:
            for name, sub in (("xdpgen", "xdpgen"), ("trafgen", "trafgen")):
                if name not in results:
                    continue
                m = results[name][0]
                d = args.fixtures / sub
                d.mkdir(parents=True, exist_ok=True)
                head = (f"#xdplab-fixture: real capture by helper h2 (tools/generator_bench.py, veth pair in own "
                        f"netns, XDP_DROP on the peer received {m['received']} of {m['sent']}): "
                        f"{' '.join(Path(a).name if '/' in a else a for a in m['argv'])} (stdout)\n")
                (d / f"{name}_1thread_{args.size}b_h2.txt").write_text(head + m["stdout"])
        return 0
    finally:
        if pair:
            pair.down()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
