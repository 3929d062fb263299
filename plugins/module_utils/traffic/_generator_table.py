# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The generators bench_run drives: one row each, looked up by name.

PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.

A row gives the argv builder (params -> argv, validating every value and naming the bad one), the
output parser (a key of _output_parsers.TOOLS), the record keys (the parsed figures, beyond pps,
packets and seconds, that each repetition keeps in its result record: latency percentiles,
bit rates, loss, the basis of an estimate), an optional configuration file the tool reads
(trafgen), and, for a tool without a time limit of its own (testpmd), its sign that packets are
flowing. A new generator is one row here, its argv builder, its parser and their tests; the
bench_run module, its action and its argument spec read everything from this table, in the spirit
of community.general's cmd_runner format tables.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._client_server_argv import (
    iperf3_argv,
    sockperf_argv,
    testpmd_argv,
    udpgen_argv,
    xskgen_argv,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._xdpgen_trafgen_argv import (
    GeneratorParamError,
    _seconds,
    trafgen_argv,
    trafgen_config,
    xdpgen_argv,
)

# Where an argv names its configuration file; replaced by the real path when the file is written.
CONFIG = "xdplab-generator.cfg"


@dataclass(frozen=True)
class Interrupt:
    """How to end a tool that has no time limit of its own (testpmd).

    The tool runs until its own output matches `ready` (its sign that packets are flowing), then
    for `window` seconds, then gets SIGINT and prints its final statistics. Waiting for the sign,
    rather than allowing a fixed start-up time, keeps the window whole on a loaded machine, where
    EAL and port start-up can take longer than the window itself.
    """

    ready: re.Pattern
    window: float
    # Seconds the tool runs past `window` before SIGINT: testpmd's rate is the last full stats period,
    # and the first period has none (testpmd measures from a previous show), so the run ends one period
    # after the window, never just before the block that ends it.
    tail: float = 0.0

    @property
    def seconds(self) -> float:
        return self.window + self.tail


@dataclass(frozen=True)
class Generator:
    name: str
    argv: Callable[[dict], list[str]]
    parser: str
    record_keys: tuple[str, ...] = ()
    config: Callable[[dict], str] | None = None
    ready: re.Pattern | None = None
    ready_tail: float = 0.0
    # How it sends, for the record's gen_figures.mode: the parsed figure of that name when the output
    # says (xdpgen's live/packet, xskgen's bind_mode), else the text after it.
    mode: tuple[str | None, str] = (None, "")
    # The param that asks for a rate in packets/s (None: the tool takes none; the record says "max").
    rate_key: str | None = "rate"


_XSK_KEYS = ("bits", "gbps")
# xskgen also says how its socket was bound: zero-copy or copy, and why copy.
_XSKGEN_KEYS = (*_XSK_KEYS, "bind_mode", "mode_note")


GENERATORS: dict[str, Generator] = {g.name: g for g in (
    # mode: live frames, or packet (an AF_PACKET socket where the kernel refuses them); the rate asked
    # (packets/s, or "max") and achieved; with --interval, how steady the per-interval rate was.
    Generator("xdpgen", xdpgen_argv, "xdpgen",
              ("bytes", "gbps", "threads", "pkt_size", "mode", "rate_asked", "rate_achieved", "interval_s",
               "intervals", "interval_pps_mean", "interval_pps_stdev", "interval_pps_stdev_pct"),
              mode=("mode", "live")),
    Generator("trafgen", lambda p: trafgen_argv(p, CONFIG), "trafgen", ("bytes", "pkt_size", "pps_basis"),
              config=trafgen_config, mode=(None, "packet")),
    Generator("xskgen", xskgen_argv, "xskgen", _XSKGEN_KEYS, mode=("bind_mode", "af_xdp"), rate_key=None),
    # udpgen prints xskgen's summary line.
    Generator("udpgen", udpgen_argv, "xskgen", _XSK_KEYS, mode=(None, "udp"), rate_key=None),
    # tp mode: messages sent per second; pp/ul mode: replies per second and the latency figures.
    Generator("sockperf", sockperf_argv, "sockperf",
              ("mode", "msg_per_s", "messages", "mbps", "sent", "received", "latency_usec", "avg_latency_usec",
               "stdev_latency_usec", "min_latency_usec", "max_latency_usec", "percentiles_usec", "dropped",
               "duplicated", "out_of_order"),
              mode=("mode", "tp"), rate_key="mps"),
    Generator("iperf3", iperf3_argv, "iperf3",
              ("protocol", "pps_basis", "bits_per_second", "packets_received", "lost_packets", "lost_percent",
               "jitter_ms", "retransmits", "tcp_mss", "cpu_utilization_percent"),
              mode=("protocol", "udp"), rate_key=None),
    # testpmd prints "<mode> packet forwarding - ports=N - cores=N ..." once its forwarding lcores
    # run (after "start packet forwarding", with --auto-start).
    Generator("testpmd", testpmd_argv, "testpmd", ("pps_direction", "pps_basis", "rx_pps", "tx_pps"),
              ready=re.compile(r"^\w+ packet forwarding - ports=\d+", re.MULTILINE), ready_tail=1.0,
              mode=(None, "dpdk"), rate_key=None),
)}


def generator(name: str) -> Generator:
    try:
        return GENERATORS[name]
    except KeyError:
        raise GeneratorParamError(f"unknown generator {name!r}; known: {', '.join(GENERATORS)}") from None


def command(name: str, params: dict | None) -> tuple[list[str], str | None]:
    """(argv, configuration text or None) of generator `name`; argv names the file as CONFIG."""
    row = generator(name)
    params = params or {}
    argv = row.argv(params)
    return argv, (row.config(params) if row.config else None)


def record_figures(tool: str, parsed: dict) -> dict:
    """The parsed figures a repetition of `tool` keeps in its record (its row's record keys that the
    output had). `tool` is a generator name or, for a command parsed as a known tool, that parser's
    name; any other tool keeps none."""
    row = GENERATORS.get(tool) or next((g for g in GENERATORS.values() if g.parser == tool), None)
    if row is None:
        return {}
    return {key: parsed[key] for key in row.record_keys if parsed.get(key) is not None}


def offered_load(tool: str, params: dict | None, parsed: dict) -> dict:
    """What every repetition's record says of its offered load, whatever the generator: ``mode`` (how it
    sent), ``rate_asked`` (packets/s, or "max" when it was not paced) and ``rate_achieved`` (the
    generator's own packets/s). `tool` is a generator name or, for a command, its parser's name (that
    name is then the mode)."""
    row = GENERATORS.get(tool) or next((g for g in GENERATORS.values() if g.parser == tool), None)
    key, default = row.mode if row else (None, tool)
    asked = (params or {}).get(row.rate_key) if row and row.rate_key else None
    try:
        asked = float(asked) if asked not in (None, "", "max") else "max"
    except (TypeError, ValueError):
        asked = "max"
    return {"mode": (parsed.get(key) if key else None) or default, "rate_asked": asked,
            "rate_achieved": float(parsed["pps"])}


# A generator that sent less than this share of the rate it was asked for ran below it.
RATE_SHORTFALL = 0.99


def rate_warnings(reps: list[dict], tool: str = "generator") -> list[str]:
    """One warning per repetition whose generator sent below its asked rate, naming both rates.

    `reps` are bench_run's repetitions (gen_figures with rate_asked and rate_achieved); a repetition
    without an asked rate (unpaced, or a tool without one) gives none."""
    out = []
    for i, rep in enumerate(reps):
        fig = rep.get("gen_figures") or {}
        asked, got = fig.get("rate_asked"), fig.get("rate_achieved")
        if isinstance(asked, (int, float)) and isinstance(got, (int, float)) and got < RATE_SHORTFALL * asked:
            out.append(f"repetition {i + 1}: {tool} sent {got:.0f} packets/s, below the asked rate of "
                       f"{asked:.0f} packets/s ({100 * got / asked:.1f}%): the offered load is not the one asked "
                       "for (the generator's limit, or a CPU it shares)")
    return out


def interrupt_after(name: str, params: dict) -> Interrupt | None:
    """The readiness sign and window of a generator that must be stopped with SIGINT, else None."""
    row = GENERATORS.get(name)
    if row is None or row.ready is None:
        return None
    return Interrupt(row.ready, _seconds("duration", (params or {}).get("duration", 5)), row.ready_tail)
