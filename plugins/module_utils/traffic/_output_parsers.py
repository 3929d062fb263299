# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.
#
# Parsers for traffic generators and benchmark tools. Every parser turns a tool's
# text output into a dict with at least ``pps`` (float, packets/s) plus the tool's
# own figures. Empty, truncated or unknown output raises ParseError: a parser
# never returns a rate of 0 for output it did not understand.
"""Tool output parsers for xdplab.testbed."""

from __future__ import annotations

import itertools
import json
import math
import re
import statistics
from collections.abc import Callable

__all__ = ["ParseError", "parse", "TOOLS"]


class ParseError(ValueError):
    """Output that is empty, truncated, or not what the named tool prints."""


_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"


def _excerpt(text: str, limit: int = 200) -> str:
    text = text.strip()
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _nonempty(tool: str, output: str) -> str:
    if not isinstance(output, str):
        raise ParseError(f"{tool}: output must be a string, got {type(output).__name__}")
    if not output.strip():
        raise ParseError(f"{tool}: empty output")
    return output


def _rate(tool: str, name: str, value: float) -> float:
    """A packet rate must be finite and > 0 (0 packets is a failed run, not a rate)."""
    if not math.isfinite(value) or value <= 0:
        raise ParseError(f"{tool}: {name}={value!r} is not a usable rate (must be > 0)")
    return value


# --------------------------------------------------------------------- xdpgen
# Contract (files/xdpgen, docs/generators.md):
#   xdpgen: thread <i> cpu <c> packets <N> seconds <S> pps <P>        (one per thread)
#   xdpgen: packets=<N> bytes=<B> seconds=<S> pps=<P> gbps=<G> threads=<T> pkt_size=<Z> mode=<M> rate=<R>
#   xdpgen: interval <t> packets <N> pps <P>          (with --interval, before the thread lines)
# mode: live (BPF_PROG_RUN live frames) or packet (an AF_PACKET socket, where the kernel refuses live
# frames); absent from the output of xdpgen before 1.1, which had live frames only.
# rate: the asked --rate in packets/s, or max (unpaced); absent before 1.2 (unpaced).
_XDPGEN_THREAD = re.compile(
    rf"^xdpgen: thread (?P<thread>\d+) cpu (?P<cpu>-?\d+) packets (?P<packets>\d+) "
    rf"seconds (?P<seconds>{_NUM}) pps (?P<pps>{_NUM})\s*$", re.M)
_XDPGEN_SUMMARY = re.compile(
    rf"^xdpgen: packets=(?P<packets>\d+) bytes=(?P<bytes>\d+) seconds=(?P<seconds>{_NUM}) "
    rf"pps=(?P<pps>{_NUM}) gbps=(?P<gbps>{_NUM}) threads=(?P<threads>\d+) "
    rf"pkt_size=(?P<pkt_size>\d+)(?: mode=(?P<mode>live|packet))?(?: rate=(?P<rate>max|\d+))?\s*$", re.M)
_XDPGEN_INTERVAL = re.compile(
    rf"^xdpgen: interval (?P<t>{_NUM}) packets (?P<packets>\d+) pps (?P<pps>{_NUM})\s*$", re.M)


def interval_spread(times: list[float], rates: list[float]) -> dict:
    """How steady a per-interval rate series is: mean, standard deviation (sample) and relative
    standard deviation in % of the intervals but the first (it holds the start-up) and the last (it
    may end before the interval does).

    `times` are the intervals' ends in seconds from the start, `rates` their packets/s. Fewer than
    two such intervals give {} (nothing to say)."""
    kept = rates[1:-1]
    if len(kept) < 2:
        return {}
    mean, sd = statistics.fmean(kept), statistics.stdev(kept)
    steps = [b - a for a, b in itertools.pairwise(times)]
    return {"interval_s": round(statistics.median(steps), 6), "intervals": len(kept),
            "interval_pps_mean": round(mean, 2), "interval_pps_stdev": round(sd, 2),
            "interval_pps_stdev_pct": round(100 * sd / mean, 3) if mean > 0 else None}


def parse_xdpgen(output: str) -> dict:
    tool = "xdpgen"
    _nonempty(tool, output)
    summaries = list(_XDPGEN_SUMMARY.finditer(output))
    if not summaries:
        if "xdpgen: thread" in output or "xdpgen:" in output:
            raise ParseError(f"{tool}: truncated output, no summary line "
                             f"'xdpgen: packets=...': {_excerpt(output)}")
        raise ParseError(f"{tool}: not xdpgen output: {_excerpt(output)}")
    if len(summaries) > 1:
        raise ParseError(f"{tool}: {len(summaries)} summary lines, expected exactly one")
    s = summaries[0].groupdict()
    per_thread = [
        {"thread": int(m["thread"]), "cpu": int(m["cpu"]), "packets": int(m["packets"]),
         "seconds": float(m["seconds"]), "pps": float(m["pps"])}
        for m in _XDPGEN_THREAD.finditer(output)
    ]
    result = {
        "pps": float(s["pps"]),
        "packets": int(s["packets"]),
        "bytes": int(s["bytes"]),
        "seconds": float(s["seconds"]),
        "gbps": float(s["gbps"]),
        "threads": int(s["threads"]),
        "pkt_size": int(s["pkt_size"]),
        "mode": s["mode"] or "live",
        # asked: packets/s, or "max" (unpaced); achieved: the run's own rate, the figure to hold it to
        "rate_asked": float(s["rate"]) if s["rate"] not in (None, "max") else "max",
        "rate_achieved": float(s["pps"]),
        "per_thread": per_thread,
    }
    intervals = [(float(m["t"]), float(m["pps"])) for m in _XDPGEN_INTERVAL.finditer(output)]
    bad = next((m.group(0) for m in _XDPGEN_INTERVAL.finditer(output)
                if not (math.isfinite(float(m["t"])) and math.isfinite(float(m["pps"])))), None)
    if bad:
        raise ParseError(f"{tool}: an interval line with a number out of range: {bad!r}")
    if intervals:
        result["interval_pps"] = [r for _t, r in intervals]
        result.update(interval_spread([t for t, _r in intervals], result["interval_pps"]))
    if len(per_thread) != result["threads"]:
        raise ParseError(f"{tool}: summary says threads={result['threads']} but "
                         f"{len(per_thread)} thread lines were printed (truncated output?)")
    if per_thread and sum(t["packets"] for t in per_thread) != result["packets"]:
        raise ParseError(f"{tool}: thread packets sum to {sum(t['packets'] for t in per_thread)} "
                         f"but the summary says packets={result['packets']}")
    _rate(tool, "pps", result["pps"])
    return result


def _int(text: str) -> int:
    """Integer that may carry thousands separators (xdp-tools prints 13,803,680)."""
    return int(text.replace(",", ""))


def _steady_window(tool: str, name: str, values: list[float]) -> dict:
    """The steady part of a series of per-interval rates (one interval = one second of the tool).

    Leading zero intervals (before the traffic) and trailing zero intervals (after it: the tool
    was stopped after the generator) are dropped. Of what is left, the first and the last interval
    only partly overlap the traffic, so with three or more intervals they are dropped too and the
    rate is the mean of the interior ones (= packets / seconds of the interior, every interval being
    one second). Zero intervals inside the traffic are kept: a stall is a result. With one or two
    intervals there is no interior: their mean is returned and ``interior`` is False.
    All-zero raises ParseError.
    """
    lead = 0
    while lead < len(values) and values[lead] == 0:
        lead += 1
    if lead == len(values):
        raise ParseError(f"{tool}: all {len(values)} intervals report 0 {name}: "
                         "no traffic measured (refusing a rate of 0)")
    trail = 0
    while values[len(values) - 1 - trail] == 0:
        trail += 1
    active = values[lead:len(values) - trail]
    interior = len(active) >= 3
    kept = active[1:-1] if interior else active
    return {"mean": math.fsum(kept) / len(kept), "leading": lead, "trailing": trail,
            "edges": 2 if interior else 0, "used": len(kept), "interior": interior,
            "first": lead + (1 if interior else 0)}


# --------------------------------------------------------------------- pktgen
# net/core/pktgen.c show_results():
#   "OK: %llu(c%llu+d%llu) usec, %llu (%dbyte,%dfrags)\n"
#   "  %llupps %lluMb/sec (%llubps) errors: %llu"
_PKTGEN_OK = re.compile(
    r"Result: OK: (?P<usec>\d+)\(c(?P<usec_cpu>\d+)\+d(?P<usec_idle>\d+)\) usec, "
    r"(?P<packets>\d+) \((?P<pkt_size>\d+)byte,(?P<frags>-?\d+)frags\)"
    r"(?:\s*\n?\s*(?P<pps>\d+)pps (?P<mbps>\d+)Mb/sec \((?P<bps>\d+)bps\) "
    r"errors: (?P<errors>\d+))?")
_PKTGEN_RESULT = re.compile(r"^\s*Result: (?P<text>.*)$", re.M)
_PKTGEN_DEVICE = re.compile(
    r"(?:Device: (?P<a>\S+))|(?:ifname: (?P<b>\S+))|(?:==> /proc/net/pktgen/(?P<c>\S+) <==)"
    r"|(?:^\s*/proc/net/pktgen/(?P<d>[^\s:]+)\s*$)", re.M)


def parse_pktgen(output: str) -> dict:
    """Kernel pktgen result blocks, one per device (DEV or DEV@THREAD).

    Accepts a /proc/net/pktgen/<dev> file, several of them (``head``/``tail``
    headers or the sample scripts' ``Device: X`` lines). Devices run in
    parallel: ``pps`` is all packets over the wall span, the longest device's
    elapsed time (a sum of per-device rates counts a device that finished
    early as if it had sent for the whole span).
    """
    tool = "pktgen"
    _nonempty(tool, output)
    markers = [(m.start(), next(g for g in m.groups() if g)) for m in _PKTGEN_DEVICE.finditer(output)]
    devices = []
    for m in _PKTGEN_OK.finditer(output):
        name = None
        for pos, dev in markers:
            if pos < m.start():
                name = dev
        if m["pps"] is None:
            raise ParseError(f"{tool}: truncated result for device {name or '?'}: "
                             f"rate line '<pps>pps <Mb>Mb/sec ...' missing after {m.group(0)!r}")
        dev = {
            "device": name,
            "thread": int(name.rsplit("@", 1)[1]) if name and "@" in name and
            name.rsplit("@", 1)[1].isdigit() else None,
            "usec": int(m["usec"]), "usec_cpu": int(m["usec_cpu"]), "usec_idle": int(m["usec_idle"]),
            "packets": int(m["packets"]), "pkt_size": int(m["pkt_size"]), "frags": int(m["frags"]),
            "pps": float(m["pps"]), "mbps": int(m["mbps"]), "bps": int(m["bps"]),
            "errors": int(m["errors"]),
        }
        _rate(tool, f"pps of device {name or '?'}", dev["pps"])
        devices.append(dev)
    if not devices:
        others = [r["text"].strip() for r in _PKTGEN_RESULT.finditer(output)]
        if others:
            raise ParseError(f"{tool}: no finished run in output (Result: {'; '.join(others)}); "
                             "a thread file (kpktgend_N) or an idle device has no rates")
        raise ParseError(f"{tool}: not pktgen output (no 'Result: OK:' block): {_excerpt(output)}")
    sizes = {d["pkt_size"] for d in devices}
    packets = sum(d["packets"] for d in devices)
    span = max(d["usec"] for d in devices) / 1e6
    if span <= 0:
        raise ParseError(f"{tool}: elapsed time {span!r} s is not > 0")
    if len(devices) == 1:  # the kernel's own packets / elapsed, timed finer than the usec it prints
        pps, basis = devices[0]["pps"], "kernel pps of the one device"
    else:
        pps, basis = packets / span, "packets of all devices / longest device elapsed time"
    return {
        "pps": _rate(tool, "pps", pps),
        "pps_basis": basis,
        "packets": packets,
        "errors": sum(d["errors"] for d in devices),
        "bps": sum(d["bps"] for d in devices),
        "seconds": span,
        "pkt_size": sizes.pop() if len(sizes) == 1 else None,
        "devices": devices,
    }


# --------------------------------------------------------------------- xskgen
# xskgen.c: printf("sent %llu packets %llu bits, took %f sec, %f gbps %f mpps\n")
_XSKGEN = re.compile(
    rf"^sent (?P<packets>\d+) packets (?P<bits>\d+) bits, took (?P<seconds>{_NUM}) sec, "
    rf"(?P<gbps>{_NUM}) gbps (?P<mpps>{_NUM}) mpps\s*$", re.M)


# xskgen.c: printf("xskgen: dev=%s queue=%u mode=%s ...") with mode zero-copy or copy, and in copy
# mode printf("xskgen: mode_note=\"%s\"") saying why (asked for, or zero-copy refused by the driver).
_XSK_BIND = re.compile(r"^xskgen: dev=\S+ queue=\d+ mode=(?P<mode>zero-copy|copy)\b", re.M)
_XSK_NOTE = re.compile(r'^xskgen: mode_note="(?P<note>[^"]*)"', re.M)


def parse_xskgen(output: str) -> dict:
    """xskgen-style interval lines; pps = all packets / all seconds. xskgen's own output also says
    how its socket was bound (bind_mode zero-copy or copy, and in copy mode why: mode_note);
    udpgen, which prints the same summary line, has neither."""
    tool = "xskgen"
    _nonempty(tool, output)
    intervals = [{"packets": int(m["packets"]), "bits": int(m["bits"]),
                  "seconds": float(m["seconds"]), "gbps": float(m["gbps"]),
                  "mpps": float(m["mpps"])} for m in _XSKGEN.finditer(output)]
    if not intervals:
        if re.search(r"^sent \d+ packets", output, re.M):
            raise ParseError(f"{tool}: truncated line: {_excerpt(output)}")
        raise ParseError(f"{tool}: not xskgen output (no 'sent N packets B bits, took S sec' line): "
                         f"{_excerpt(output)}")
    packets = sum(i["packets"] for i in intervals)
    seconds = math.fsum(i["seconds"] for i in intervals)
    bits = sum(i["bits"] for i in intervals)
    if seconds <= 0:
        raise ParseError(f"{tool}: total time {seconds!r} s is not > 0")
    bind, note = _XSK_BIND.search(output), _XSK_NOTE.search(output)
    return {
        "pps": _rate(tool, "pps", packets / seconds),
        "packets": packets, "bits": bits, "seconds": seconds,
        "gbps": bits / seconds / 1e9, "intervals": intervals,
        "bind_mode": bind["mode"] if bind else None, "mode_note": note["note"] if note else None,
    }


# -------------------------------------------------------------------- trafgen
# netsniff-ng trafgen.c: "%12lu packets outgoing", "%12lu bytes outgoing",
# "%12lu sec, %6lu usec on CPU%d (%lu packets)" (lines start with \r).
_TG_PKTS = re.compile(r"^\s*(\d+) packets outgoing\s*$", re.M)
_TG_BYTES = re.compile(r"^\s*(\d+) bytes outgoing\s*$", re.M)
_TG_CPU = re.compile(r"^\s*(\d+) sec, (\d+) usec on CPU(\d+) \((\d+) packets\)\s*$", re.M)


def parse_trafgen(output: str) -> dict:
    """trafgen (netsniff-ng) exit statistics. CPUs send in parallel: pps = all packets over the
    wall span, the longest CPU's time (not the sum of per-CPU rates)."""
    tool = "trafgen"
    text = _nonempty(tool, output).replace("\r", "\n")
    pk, by = _TG_PKTS.findall(text), _TG_BYTES.findall(text)
    cpus = [{"cpu": int(c), "seconds": int(s) + int(u) / 1e6, "packets": int(n)}
            for s, u, c, n in _TG_CPU.findall(text)]
    if not pk or not by or not cpus:
        if "Running!" in text or "packets to schedule" in text:
            raise ParseError(f"{tool}: truncated output: no exit statistics "
                             "('N packets outgoing' / 'S sec, U usec on CPUn')")
        raise ParseError(f"{tool}: not trafgen output: {_excerpt(text)}")
    packets, nbytes = int(pk[-1]), int(by[-1])
    for c in cpus:
        if c["seconds"] <= 0:
            raise ParseError(f"{tool}: CPU{c['cpu']} ran for {c['seconds']} s")
        c["pps"] = c["packets"] / c["seconds"]
    if sum(c["packets"] for c in cpus) != packets:
        raise ParseError(f"{tool}: per-CPU packets sum to {sum(c['packets'] for c in cpus)}, "
                         f"total says {packets}")
    span = max(c["seconds"] for c in cpus)
    return {
        "pps": _rate(tool, "pps", packets / span),
        "pps_basis": "packets of all CPUs / longest CPU time",
        "packets": packets, "bytes": nbytes,
        "seconds": span,
        "pkt_size": nbytes // packets if packets and nbytes % packets == 0 else None,
        "per_cpu": cpus,
    }


# ------------------------------------------------------------------- sockperf
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_SP_RATE = re.compile(r"Summary: Message Rate is (\d+) \[msg/sec\]")
_SP_TOTAL = re.compile(rf"Total of (\d+) messages sent in ({_NUM}) sec")
_SP_BW = re.compile(rf"Summary: BandWidth is ({_NUM}) MBps \(({_NUM}) Mbps\)")
_SP_VALID = re.compile(rf"\[Valid Duration\] RunTime=({_NUM}) sec; SentMessages=(\d+); "
                       r"ReceivedMessages=(\d+)")
_SP_LAT = re.compile(rf"Summary: Latency is ({_NUM}) usec")
_SP_AVG = re.compile(rf"avg-latency=({_NUM}) \(std-dev=({_NUM})")
_SP_PCT = re.compile(rf"percentile ({_NUM}) =\s*({_NUM})")
_SP_MINMAX = re.compile(rf"<(MAX|MIN)> observation =\s*({_NUM})")
_SP_DROPS = re.compile(r"# dropped messages = (\d+); # duplicated messages = (\d+); "
                       r"# out-of-order messages = (\d+)")


def parse_sockperf(output: str) -> dict:
    """sockperf client summaries: throughput (tp) and ping-pong/under-load (pp, ul).

    tp: pps = "Message Rate" (messages sent per second).
    pp/ul: pps = ReceivedMessages / RunTime of the valid (post-warm-up) window,
    i.e. replies per second; latency figures in usec.
    """
    tool = "sockperf"
    text = _ANSI.sub("", _nonempty(tool, output))
    err = re.search(r"sockperf: ERROR: (.*)", text)
    if err:
        raise ParseError(f"{tool}: tool reported an error: {err.group(1).strip()}")
    rate = _SP_RATE.search(text)
    if rate:
        out: dict = {"mode": "tp", "pps": _rate(tool, "Message Rate", float(rate.group(1))),
                     "msg_per_s": int(rate.group(1))}
        tot = _SP_TOTAL.search(text)
        if tot:
            out.update(messages=int(tot.group(1)), seconds=float(tot.group(2)))
        bw = _SP_BW.search(text)
        if bw:
            out.update(mbytes_per_s=float(bw.group(1)), mbps=float(bw.group(2)))
        return out
    valid = _SP_VALID.search(text)
    lat = _SP_LAT.search(text)
    if valid and lat:
        runtime, sent, recv = float(valid.group(1)), int(valid.group(2)), int(valid.group(3))
        if runtime <= 0:
            raise ParseError(f"{tool}: valid RunTime={runtime} s is not > 0")
        out = {"mode": "pp", "pps": _rate(tool, "replies per second", recv / runtime),
               "seconds": runtime, "sent": sent, "received": recv,
               "latency_usec": float(lat.group(1))}
        avg = _SP_AVG.search(text)
        if avg:
            out.update(avg_latency_usec=float(avg.group(1)), stdev_latency_usec=float(avg.group(2)))
        out["percentiles_usec"] = {m.group(1): float(m.group(2)) for m in _SP_PCT.finditer(text)}
        for kind, value in _SP_MINMAX.findall(text):
            out[f"{kind.lower()}_latency_usec"] = float(value)
        drops = _SP_DROPS.search(text)
        if drops:
            out.update(dropped=int(drops.group(1)), duplicated=int(drops.group(2)),
                       out_of_order=int(drops.group(3)))
        return out
    if "sockperf" in text and ("Starting test" in text or "Test end" in text):
        raise ParseError(f"{tool}: truncated output: no client summary "
                         "('Summary: Message Rate' or 'Summary: Latency')")
    raise ParseError(f"{tool}: not sockperf client output: {_excerpt(text)}")


# --------------------------------------------------------------------- iperf3
def parse_iperf3(output: str) -> dict:
    """iperf3 --json. UDP: pps = packets received (sent - lost) per second at the
    receiver. TCP has no packet count: pps is an ESTIMATE, received bytes /
    tcp_mss_default / seconds (``pps_basis`` says so)."""
    tool = "iperf3"
    _nonempty(tool, output)
    try:
        data = json.loads(output)
    except json.JSONDecodeError as exc:
        raise ParseError(f"{tool}: output is not complete JSON (truncated or not --json?): {exc}") from None
    if not isinstance(data, dict):
        raise ParseError(f"{tool}: JSON top level is {type(data).__name__}, expected an object")
    if data.get("error"):
        raise ParseError(f"{tool}: tool reported an error: {data['error']}")
    end, start = data.get("end"), data.get("start")
    if not isinstance(end, dict) or not isinstance(start, dict) or not end:
        raise ParseError(f"{tool}: JSON has no 'start'/'end' sections (run interrupted?)")
    proto = (start.get("test_start") or {}).get("protocol", "").upper()
    out: dict = {"protocol": proto, "version": start.get("version")}
    if proto == "UDP":
        recv = end.get("sum_received") or end.get("sum")
        sent = end.get("sum_sent") or end.get("sum")
        if not recv or "packets" not in recv:
            raise ParseError(f"{tool}: UDP result without packet counts in end.sum_received")
        got = recv["packets"] - recv.get("lost_packets", 0)
        if recv["seconds"] <= 0:
            raise ParseError(f"{tool}: receiver seconds={recv['seconds']!r} is not > 0")
        out.update(pps=_rate(tool, "received pps", got / recv["seconds"]),
                   pps_basis="udp packets received / receiver seconds",
                   packets_received=got, lost_packets=recv.get("lost_packets", 0),
                   lost_percent=recv.get("lost_percent"), jitter_ms=recv.get("jitter_ms"),
                   seconds=recv["seconds"], bits_per_second=recv["bits_per_second"],
                   sent_pps=sent["packets"] / sent["seconds"] if sent.get("seconds") else None,
                   blksize=start["test_start"].get("blksize"))
    elif proto == "TCP":
        recv = end.get("sum_received")
        mss = start.get("tcp_mss_default") or start.get("tcp_mss")
        if not recv:
            raise ParseError(f"{tool}: TCP result without end.sum_received")
        if not mss:
            raise ParseError(f"{tool}: TCP result without tcp_mss_default: cannot estimate pps")
        if recv["seconds"] <= 0:
            raise ParseError(f"{tool}: receiver seconds={recv['seconds']!r} is not > 0")
        out.update(pps=_rate(tool, "estimated pps", recv["bytes"] / mss / recv["seconds"]),
                   pps_basis=f"estimate: received bytes / tcp_mss_default ({mss}) / seconds",
                   bytes=recv["bytes"], seconds=recv["seconds"],
                   bits_per_second=recv["bits_per_second"],
                   retransmits=(end.get("sum_sent") or {}).get("retransmits"), tcp_mss=mss)
    else:
        raise ParseError(f"{tool}: unknown protocol {proto!r} in start.test_start")
    cpu = end.get("cpu_utilization_percent")
    if cpu:
        out["cpu_utilization_percent"] = cpu
    return out


# ------------------------------------------------------------ xdp-bench (+gen)
# xdp-tools lib/util/xdp_sample.c stats_print(): "%-23s" then "%'10llu %-13s"
# columns rx/s [redir/s] err,drop/s (older: err/s) [xmit/s].
_XB_LINE = re.compile(
    r"^(?P<prefix>\S+)\s+(?P<rx>[\d,]+) rx/s\s+(?:(?P<redir>[\d,]+) redir/s\s+)?"
    r"(?P<err>[\d,]+) err(?:,drop)?/s(?:\s+(?P<xmit>[\d,]+) xmit/s)?\s*$", re.M)
_XB_RECV = re.compile(r"^\s+receive(?: total)?\s+(?P<pps>[\d,]+) pkt/s\s+(?P<drop>[\d,]+) drop/s"
                      r"\s+(?P<err>[\d,]+) error/s\s*$", re.M)
_XB_CPU = re.compile(r"^\s+cpu:(?P<cpu>\d+)\s+(?P<pps>[\d,]+) pkt/s\s+(?P<drop>[\d,]+) drop/s"
                     r"\s+(?P<err>[\d,]+) error/s\s*$", re.M)
_XB_AVG = re.compile(r"^\s*Average packets/s\s*:\s*([\d,]+)", re.M)


def parse_xdp_bench(output: str) -> dict:
    """xdp-bench interval lines, default (terse) and extended (-e).

    pps = mean rx/s over the steady intervals (see _steady_window: leading and
    trailing zero intervals and the two partial edge intervals dropped);
    ``intervals`` keeps every line, so a sample per interval is available.
    Extended blocks add ``receive`` totals and per-CPU rows.
    """
    tool = "xdp-bench"
    _nonempty(tool, output)
    lines = list(_XB_LINE.finditer(output))
    if not lines:
        if "rx/s" in output:
            raise ParseError(f"{tool}: truncated interval line: {_excerpt(output)}")
        raise ParseError(f"{tool}: not xdp-bench output (no '<n> rx/s' interval line): {_excerpt(output)}")
    intervals = []
    bounds = [m.start() for m in lines] + [len(output)]
    for i, m in enumerate(lines):
        block = output[m.end():bounds[i + 1]]
        iv = {"prefix": m["prefix"], "rx_pps": _int(m["rx"]), "err_drop_pps": _int(m["err"])}
        if m["redir"]:
            iv["redir_pps"] = _int(m["redir"])
        if m["xmit"]:
            iv["xmit_pps"] = _int(m["xmit"])
        rec = _XB_RECV.search(block)
        if rec:
            iv["receive"] = {"pps": _int(rec["pps"]), "drop_pps": _int(rec["drop"]),
                             "error_pps": _int(rec["err"])}
            iv["per_cpu"] = [{"cpu": int(c["cpu"]), "pps": _int(c["pps"]), "drop_pps": _int(c["drop"]),
                              "error_pps": _int(c["err"])} for c in _XB_CPU.finditer(block)]
        intervals.append(iv)
    win = _steady_window(tool, "rx/s", [float(iv["rx_pps"]) for iv in intervals])
    used = intervals[win["first"]:win["first"] + win["used"]]
    out = {
        "pps": win["mean"],
        "intervals": intervals,
        "leading_zero_intervals": win["leading"],
        "trailing_zero_intervals": win["trailing"],
        "edge_intervals_dropped": win["edges"],
        "intervals_used": win["used"],
        "interior": win["interior"],
        "zero_intervals": sum(1 for iv in used if iv["rx_pps"] == 0),
        "extended": any("receive" in iv for iv in intervals),
    }
    avg = _XB_AVG.search(output)
    if avg:
        out["average_pps_reported"] = _int(avg.group(1))
    return out


# xdp-trafficgen prints the devmap_xmit_multi summary: "<from>->ifname  N err/s  N xmit/s"
_XTG_LINE = re.compile(r"^(?P<prefix>\S+)\s+(?P<err>[\d,]+) err(?:,drop)?/s\s+"
                       r"(?P<xmit>[\d,]+) xmit/s\s*$", re.M)


def parse_xdp_trafficgen(output: str) -> dict:
    """xdp-trafficgen interval lines; pps = mean xmit/s over the steady intervals (as xdp-bench)."""
    tool = "xdp-trafficgen"
    _nonempty(tool, output)
    lines = list(_XTG_LINE.finditer(output))
    if not lines:
        if "xmit/s" in output:
            raise ParseError(f"{tool}: truncated interval line: {_excerpt(output)}")
        raise ParseError(f"{tool}: not xdp-trafficgen output (no '<n> xmit/s' line): {_excerpt(output)}")
    intervals = [{"prefix": m["prefix"], "err_pps": _int(m["err"]), "xmit_pps": _int(m["xmit"])}
                 for m in lines]
    win = _steady_window(tool, "xmit/s", [float(iv["xmit_pps"]) for iv in intervals])
    iface = re.search(r"Transmitting on (\S+) \(ifindex (\d+)\)", output)
    return {
        "pps": win["mean"],
        "intervals": intervals,
        "leading_zero_intervals": win["leading"],
        "trailing_zero_intervals": win["trailing"],
        "edge_intervals_dropped": win["edges"],
        "intervals_used": win["used"],
        "interior": win["interior"],
        "interface": iface.group(1) if iface else None,
    }


# -------------------------------------------------------------------- testpmd
_TP_PORT = re.compile(r"#+ NIC statistics for port (\d+)\s+#+")
_TP_FIELD = re.compile(r"(RX-packets|RX-missed|RX-bytes|RX-errors|RX-nombuf|TX-packets|TX-errors|"
                       r"TX-bytes|Rx-pps|Rx-bps|Tx-pps|Tx-bps):\s*(\d+)")
_TP_END = re.compile(r"^\s*#{20,}\s*$", re.M)  # the line of hashes closing a block
_TP_KEYS = {"RX-packets": "rx_packets", "RX-missed": "rx_missed", "RX-bytes": "rx_bytes",
            "RX-errors": "rx_errors", "RX-nombuf": "rx_nombuf", "TX-packets": "tx_packets",
            "TX-errors": "tx_errors", "TX-bytes": "tx_bytes", "Rx-pps": "rx_pps",
            "Rx-bps": "rx_bps", "Tx-pps": "tx_pps", "Tx-bps": "tx_bps"}


def parse_testpmd(output: str) -> dict:
    """testpmd ``show port stats`` blocks.

    With ``--stats-period`` testpmd prints one block per port every period; each block's
    ``Throughput (since last show)`` is the rate over the last period and its counters are
    cumulative. Per port the LAST COMPLETE block is kept (a block cut by SIGINT is skipped when
    an earlier complete one exists); ports are summed. A port's first block, when all its rates are
    0, has no rate at all (testpmd measures from the previous show and there was none): it never
    stands for the port, and a port that printed nothing else is an error naming it.
    pps = total Rx-pps over ports when any port receives (forwarding, rxonly), else total Tx-pps
    (txonly generator);
    ``pps_direction`` says which, ``blocks`` how many complete blocks each port printed.
    """
    tool = "testpmd"
    _nonempty(tool, output)
    heads = list(_TP_PORT.finditer(output))
    if not heads:
        raise ParseError(f"{tool}: not testpmd port stats (no 'NIC statistics for port N'): "
                         f"{_excerpt(output)}")
    last: dict[int, dict] = {}
    blocks: dict[int, int] = {}
    truncated: list[int] = []
    no_rate_yet: list[int] = []
    bounds = [h.start() for h in heads] + [len(output)]
    for i, h in enumerate(heads):
        block = output[h.end():bounds[i + 1]]
        end = _TP_END.search(block)  # not past it: the forward statistics at exit have TX-packets too
        block = block[:end.start()] if end else block
        port = {"port": int(h.group(1))}
        for key, value in _TP_FIELD.findall(block):
            port[_TP_KEYS[key]] = int(value)
        if "rx_pps" not in port or "tx_pps" not in port:
            truncated.append(port["port"])
            continue
        blocks[port["port"]] = blocks.get(port["port"], 0) + 1
        if blocks[port["port"]] == 1 and port["rx_pps"] == 0 and port["tx_pps"] == 0:
            no_rate_yet.append(port["port"])
            continue
        last[port["port"]] = port
    missing = sorted(set(truncated) - set(last))
    if missing:
        raise ParseError(f"{tool}: port {missing[0]}: truncated block, no "
                         "'Throughput (since last show)' Rx-pps/Tx-pps")
    missing = sorted(set(no_rate_yet) - set(last))
    if missing:
        raise ParseError(f"{tool}: port {missing[0]}: only its first stats block, which has no rate (testpmd "
                         "measures from the previous show and there was none): the run ended before a second "
                         "stats period")
    ports = [dict(last[p], blocks=blocks[p]) for p in sorted(last)]
    rx = math.fsum(p["rx_pps"] for p in ports)
    tx = math.fsum(p["tx_pps"] for p in ports)
    if rx > 0:
        pps, direction = rx, "rx"
    else:
        pps, direction = tx, "tx"
    return {"pps": _rate(tool, f"{direction}_pps", pps), "pps_direction": direction,
            "pps_basis": "last complete stats block per port (rate over its period), summed over ports",
            "rx_pps": rx, "tx_pps": tx, "ports": ports}


# ------------------------------------------------------------------- registry
TOOLS: dict[str, Callable[[str], dict]] = {
    "xdpgen": parse_xdpgen,
    "pktgen": parse_pktgen,
    "xskgen": parse_xskgen,
    "trafgen": parse_trafgen,
    "sockperf": parse_sockperf,
    "iperf3": parse_iperf3,
    "xdp-bench": parse_xdp_bench,
    "xdp-trafficgen": parse_xdp_trafficgen,
    "testpmd": parse_testpmd,
}


def parse(tool: str, output: str) -> dict:
    """Parse ``output`` of ``tool``; the result always has ``pps`` (float, packets/s)."""
    try:
        parser = TOOLS[tool]
    except (KeyError, TypeError):
        raise ParseError(f"unknown tool {tool!r}; known: {', '.join(sorted(TOOLS))}") from None
    try:
        result = parser(output)
    except OverflowError as exc:  # a number too large for a float: not output of a real run
        raise ParseError(f"{tool}: a number in the output is out of range ({exc}): {_excerpt(output)}") from None
    pps = result.get("pps")
    if not isinstance(pps, float) or not math.isfinite(pps) or pps <= 0:  # pragma: no cover
        raise ParseError(f"{tool}: parser produced no usable pps: {pps!r}")
    result.setdefault("tool", tool)
    return result
