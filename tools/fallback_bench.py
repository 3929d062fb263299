# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""xdpgen's AF_PACKET path against trafgen, side by side, and xdpgen's paced rate.

Run as root from the collection root (`make bench-perf` runs it):
    .venv/bin/python tools/fallback_bench.py [--rounds 5] [--seconds 2] [--sizes 64 1500]
                                             [--peer-napi-cpu 1] [--rates 0.1 0.3 0.5 0.7 0.9]
                                             [--paced-only]

One veth pair in two private namespaces, files/xdp/xdp_drop native on the receiving end; every rate
is the receiver's XDP_DROP count over the sender's own seconds. In interleaved rounds (order rotated
each round), one thread on CPU --cpu, for every frame size:
    xdpgen --mode packet (PACKET_TX_RING), xdpgen --mode packet --packet-tx mmsg, trafgen --cpus 1
then xdpgen and trafgen at 1 and 2 threads (64 B), then xdpgen --rate on each packet-mode path (TX
ring, sendmmsg) at the given fractions of that path's own median maximum for 5 s each, with
--interval 0.1: the achieved rate (the sender's count and the receiver's) against the asked one,
whether both are within 1% of it, and the standard deviation of the per-100 ms rate. --paced-only
leaves trafgen and the threads out: the maximum of each path, then the paced runs.

--peer-napi-cpu N switches the receiving veth's NAPI to a kernel thread (threaded NAPI) pinned to
CPU N: without it the receiver's XDP_DROP runs in softirq on the sender's CPU, inside the sender's
own time slice or in ksoftirqd beside it. Prints medians, ranges and the xdpgen / trafgen ratios.
Removes everything it created, also on failure or Ctrl-C. Not a pass/fail test.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / ".collections")]

from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._output_parsers import parse  # noqa: E402
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._xdpgen_trafgen_argv import (  # noqa: E402
    trafgen_argv,
    trafgen_config,
    xdpgen_argv,
)
from generator_bench import (  # noqa: E402
    ROOT,
    Pair,
    ksoftirqd_pid,
    measure,
    parse_kv,
    parse_trafgen,
    run,
)


def build(tmp: Path) -> tuple[Path, Path]:
    run(["make", "-s", "-C", str(ROOT / "files/xdpgen")])
    run(["make", "-s", "-C", str(ROOT / "files/xdp"), f"OUT={tmp}"])
    return ROOT / "files/xdpgen/xdpgen", tmp / "xdp_drop.o"


def thread_napi(pair: Pair, cpu: int) -> str:
    """Threaded NAPI on the receiving veth, its thread pinned to `cpu`; returns the thread's name."""
    run(["ip", "netns", "exec", pair.dut_ns, "sh", "-c", f"echo 1 > /sys/class/net/{pair.dut_if}/threaded"])
    time.sleep(0.2)
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                comm = (d / "comm").read_text().strip()
            except OSError:
                continue
            if comm.startswith(f"napi/{pair.dut_if}"):
                run(["taskset", "-p", "-c", str(cpu), d.name])
                found.append(comm)
    if not found:
        raise RuntimeError(f"no napi/{pair.dut_if}-* thread after switching threaded NAPI on")
    return ", ".join(found)


class Runner:
    def __init__(self, pair: Pair, xdpgen: Path, tmp: Path, cpu: int, seconds: float) -> None:
        self.pair, self.binary, self.tmp, self.cpu, self.seconds = pair, xdpgen, tmp, cpu, seconds
        self.softirqd = ksoftirqd_pid(cpu)
        self.tg_count: dict[tuple[int, int], int] = {}

    def params(self, size: int, threads: int = 1) -> dict:
        return {"interface": self.pair.gen_if, "pkt_size": size, "threads": threads, "cpu": self.cpu,
                "dst_mac": self.pair.dut_mac}

    def xdpgen_argv(self, size: int, threads: int = 1, extra: tuple[str, ...] = (), **more) -> list[str]:
        p = dict(self.params(size, threads), duration=self.seconds, **more)
        return [*xdpgen_argv(p, binary=str(self.binary)), "--mode", "packet", "-q", *extra]

    def xdpgen(self, size: int, threads: int = 1, extra: tuple[str, ...] = ()) -> dict:
        return measure(self.pair, self.xdpgen_argv(size, threads, extra), parse_kv("xdpgen:"), self.softirqd)

    def trafgen(self, size: int, threads: int = 1) -> dict | None:
        """trafgen has no time limit: its count aims at --seconds from its previous rate. None when
        trafgen fails: it gives up when its TX ring flush meets a full device queue (EAGAIN), which
        the veth gives when the receiver's NAPI runs on another CPU and falls behind."""
        key = (size, threads)
        count = self.tg_count.get(key, int(300_000 * self.seconds))
        p = {k: v for k, v in self.params(size, threads).items() if k != "cpu"}
        conf = self.tmp / f"trafgen_{size}.cfg"
        conf.write_text(trafgen_config(dict(p, count=count)))
        try:
            m = measure(self.pair, trafgen_argv(dict(p, count=count), str(conf)), parse_trafgen, self.softirqd)
        except subprocess.CalledProcessError as exc:
            why = [ln for ln in (exc.stderr + exc.stdout).splitlines() if "failed" in ln.lower()][:1]
            print(f"  trafgen failed (status {exc.returncode}): {why[0] if why else exc.stderr.strip()[-200:]}")
            return None
        self.tg_count[key] = max(10_000, int(m["sent"] / max(m["seconds"], 1e-3) * self.seconds))
        return m


def rounds(kinds: dict, n: int, label: str) -> dict[str, list[dict]]:
    names = list(kinds)
    out: dict[str, list[dict]] = {name: [] for name in names}
    for r in range(n):
        for name in names[r % len(names):] + names[:r % len(names)]:
            m = kinds[name]()
            if m is None:
                continue
            out[name].append(m)
            print(f"  {label} round {r + 1} {name:24s} {m['pps'] / 1e6:6.3f} Mpps received "
                  f"(sent {m['sent']}, received {m['received']}), {m['pps_cpu'] / 1e6:6.3f} Mpps per busy core",
                  flush=True)
    return out


def table(title: str, res: dict[str, list[dict]], ref: str | None) -> None:
    print(f"\n{title}")
    print(f"  {'sender':26s} {'median Mpps':>11s} {'range':>15s} {'per core':>9s} {'rx/tx':>7s}"
          + (f" {'/ ' + ref:>12s}" if ref else ""))
    for name in [k for k, v in res.items() if not v]:
        print(f"  {name:26s} every run failed")
    res = {k: v for k, v in res.items() if v}
    med = {k: statistics.median(m["pps"] for m in v) for k, v in res.items()}
    for name, ms in res.items():
        pps = [m["pps"] for m in ms]
        loss = sum(m["received"] for m in ms) / max(1, sum(m["sent"] for m in ms))
        ratio = f" {med[name] / med[ref]:11.2f}x" if ref and med.get(ref) else ""
        print(f"  {name:26s} {med[name] / 1e6:11.3f} {min(pps) / 1e6:7.3f}-{max(pps) / 1e6:.3f} "
              f"{statistics.median(m['pps_cpu'] for m in ms) / 1e6:9.3f} {loss:7.4f}{ratio}")


PACKET_TX = {"tx ring": (), "sendmmsg": ("--packet-tx", "mmsg")}
HOLD = 0.01  # --rate must hold the offered load within this fraction of the asked rate


def paced(runner: Runner, size: int, maximum: dict[str, float], fractions: list[float], seconds: float) -> int:
    """xdpgen --rate at each fraction of each packet-mode path's own maximum; returns the points
    whose achieved rate (sender's count, and the receiver's) is off the asked one by more than HOLD."""
    print(f"\npaced xdpgen (packet mode, {size} B, 1 thread, {seconds:g} s each, --interval 0.1; max = the "
          "path's median unpaced rate above; hold: achieved and received within "
          f"{HOLD:.0%} of asked)")
    print(f"  {'path':9s} {'of max':>6s} {'asked pps':>10s} {'achieved':>10s} {'error':>7s} {'received':>10s} "
          f"{'rx error':>8s} {'per-100ms stdev':>15s} {'min..max per 100 ms':>22s}  hold")
    off = 0
    for path, extra in PACKET_TX.items():
        for f in fractions:
            asked = round(maximum[path] * f)
            argv = runner.xdpgen_argv(size, 1, extra, rate=asked, interval=0.1)
            argv = [*argv[:argv.index("--duration") + 1], f"{seconds:g}", *argv[argv.index("--duration") + 2:]]
            before = runner.pair.dropped()
            proc = run(["ip", "netns", "exec", runner.pair.gen_ns, *argv])
            received = (runner.pair.dropped() - before) / seconds
            r = parse("xdpgen", proc.stdout)
            kept = r["interval_pps"][1:-1]
            err, rx_err = r["rate_achieved"] / asked - 1, received / asked - 1
            held = abs(err) <= HOLD and abs(rx_err) <= HOLD
            off += not held
            print(f"  {path:9s} {f:6.0%} {asked:10d} {r['rate_achieved']:10.0f} {100 * err:+6.2f}% "
                  f"{received:10.0f} {100 * rx_err:+7.2f}% {r['interval_pps_stdev_pct']:14.2f}% "
                  f"{min(kept):10.0f}..{max(kept):.0f}  {'yes' if held else 'NO'}", flush=True)
    return off


def main() -> int:
    try:
        return bench()
    except subprocess.CalledProcessError as exc:
        print(f"fallback_bench: {' '.join(exc.cmd)} failed with status {exc.returncode}:\n{exc.stderr}{exc.stdout}",
              file=sys.stderr)
        return 1


def bench() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--sizes", type=int, nargs="+", default=[64, 1500])
    ap.add_argument("--cpu", type=int, default=0)
    ap.add_argument("--peer-napi-cpu", type=int, help="threaded NAPI on the receiver, pinned to this CPU")
    ap.add_argument("--rates", type=float, nargs="*", default=[0.1, 0.3, 0.5, 0.7, 0.9],
                    help="fractions of xdpgen's maximum for the paced runs (none: skip them)")
    ap.add_argument("--rate-seconds", type=float, default=5.0)
    ap.add_argument("--no-threads", action="store_true", help="skip the 1 vs 2 threads comparison")
    ap.add_argument("--paced-only", action="store_true",
                    help="no trafgen: only each packet-mode path's maximum (--rounds rounds) and the paced runs")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("fallback_bench: run as root", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="fbbench-"))
    pair = None
    try:
        xdpgen, drop = build(tmp)
        pair = Pair(str(os.getpid()), drop)
        pair.up()
        placement = f"receiver's NAPI in softirq on the sender's CPU {args.cpu}"
        if args.peer_napi_cpu is not None:
            napi = thread_napi(pair, args.peer_napi_cpu)
            placement = f"receiver's NAPI threaded ({napi}) on CPU {args.peer_napi_cpu}"
        runner = Runner(pair, xdpgen, tmp, args.cpu, args.seconds)
        load0 = os.getloadavg()
        print(f"veth -> XDP_DROP; sender on CPU {args.cpu}; {placement}; {args.rounds} interleaved rounds of "
              f"~{args.seconds:g} s; loadavg {load0[0]:.2f}", flush=True)
        maximum: dict[int, dict[str, float]] = {}
        tg = {} if args.paced_only else {"trafgen": runner.trafgen}
        for size in args.sizes[:1] if args.paced_only else args.sizes:
            res = rounds({
                **{f"xdpgen packet ({path})": lambda s=size, e=extra: runner.xdpgen(s, extra=e)
                   for path, extra in PACKET_TX.items()},
                **{name: lambda s=size, g=gen: g(s) for name, gen in tg.items()},
            }, args.rounds, f"{size} B")
            table(f"{size}-byte frames, 1 thread", res, None if args.paced_only else "trafgen")
            maximum[size] = {path: statistics.median(m["pps"] for m in res[f"xdpgen packet ({path})"])
                             for path in PACKET_TX}
        if not (args.no_threads or args.paced_only):
            size = args.sizes[0]
            res = rounds({
                "xdpgen 1 thread": lambda: runner.xdpgen(size, 1),
                "xdpgen 2 threads": lambda: runner.xdpgen(size, 2),
                "trafgen 1 thread": lambda: runner.trafgen(size, 1),
                "trafgen 2 threads": lambda: runner.trafgen(size, 2),
            }, args.rounds, f"{size} B threads")
            table(f"{size}-byte frames, 1 and 2 threads (CPUs {args.cpu}..{args.cpu + 1})", res, "xdpgen 1 thread")
        off = 0
        if args.rates:
            size = args.sizes[0]
            off = paced(runner, size, maximum[size], args.rates, args.rate_seconds)
            print(f"  {off} of {len(args.rates) * len(PACKET_TX)} paced points off by more than {HOLD:.0%}")
        load1 = os.getloadavg()
        print(f"\nloadavg {load0[0]:.2f} -> {load1[0]:.2f}")
        print("commands (interface names carry the pid):")
        print(f"  {' '.join(runner.xdpgen_argv(args.sizes[0]))}")
        print(f"  trafgen --dev {pair.gen_if} --conf <trafgen_config()> --cpus 1 --num <count aimed at "
              f"{args.seconds:g} s>")
        return 0
    finally:
        if pair:
            pair.down()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
