# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.
#
# Pure argv builders for the generators beside xdpgen/trafgen (see _generators.py) and for the
# servers/sinks that bench_run starts on the DUT for a point, plus the sinks' output parser:
#   client_argv(tool, params)  -> argv: xskgen, udpgen (files/xsk), sockperf tp|pp, iperf3 (UDP),
#                                 testpmd (DPDK, net_af_xdp vdev, txonly)
#   server_argv(spec)          -> argv: xsksink, udpsink (files/xsk), sockperf sr, iperf3 -s
#   parse_sink(output)         -> per-burst figures of xsksink/udpsink ("recv N packets ...")
#   parse_info(tool, output)   -> the "<tool>: key=value" information lines
# Bad values raise GeneratorParamError naming the value; nothing is executed here.
"""Client and server command lines for xdplab.testbed's socket and AF_XDP tools."""

from __future__ import annotations

import math
import re
import shlex
from typing import Any

from ansible_collections.xdplab.testbed.plugins.module_utils.common._testbed_facts import (
    DEFAULT_PKT_SIZE,
    DUT_ADDRESS,
    ETH_IP_UDP_LEN,
    GEN_ADDRESS,
    JUMBO_MAX_PKT_SIZE,
    MIN_PKT_SIZE,
    SOCKET_MAX_PKT_SIZE,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._xdpgen_trafgen_argv import (
    GeneratorParamError,
    _int,
    _ipv4,
    _mac,
    _seconds,
    normalize_params,
)

__all__ = ["SERVER_TOOLS", "server_argv", "parse_sink", "parse_info", "xskgen_argv", "udpgen_argv",
           "sockperf_argv", "iperf3_argv", "testpmd_argv"]

SERVER_TOOLS = ("xsksink", "udpsink", "sockperf", "iperf3")

XSK_FRAME = 4096
XSK_MD_LEN = 24                 # struct xsk_tx_metadata
XSK_MAX_BATCH = 2048
UDP_MAX_PKT_SIZE = JUMBO_MAX_PKT_SIZE   # udpgen payload buffer 9000 bytes
XSK_MODES = ("auto", "copy", "zerocopy")
TX_METADATA = ("off", "fill", "request")
SOCKPERF_MODES = ("tp", "pp")

_COMMON = ("pkt_size", "count", "duration", "src_ip", "dst_ip", "sport", "dport", "flows", "batch")
_KEYS = {
    "xskgen": ("interface", "dst_mac", "src_mac", "queue", "xsk_mode", "busy_poll", "tx_metadata",
               "threads", "cpu", *_COMMON),
    "udpgen": _COMMON,
    "sockperf": ("mode", "pkt_size", "duration", "dst_ip", "dport", "mps"),
    "iperf3": ("pkt_size", "duration", "dst_ip", "dport", "bitrate", "src_ip"),
    "testpmd": ("interface", "queue", "pkt_size", "duration", "cores", "burst", "hugepages", "dst_mac", "src_ip",
                "dst_ip", "eal_args"),
}
_SERVER_KEYS = {
    "xsksink": ("interface", "queue", "xsk_mode", "busy_poll", "gap", "xdp_mode", "batch", "dport"),
    "udpsink": ("dport", "address", "busy_poll", "gap", "batch", "rcvbuf"),
    "sockperf": ("address", "dport"),
    "iperf3": ("address", "dport"),
}


def _check_keys(what: str, params: Any, known: tuple[str, ...]) -> dict:
    if not isinstance(params, dict):
        raise GeneratorParamError(f"{what} params must be a dict, got {params!r}")
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise GeneratorParamError(f"unknown {what} parameter(s) {', '.join(map(repr, unknown))}; "
                                  f"known: {', '.join(known)}")
    return {k: v for k, v in params.items() if v is not None}


def _bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false", "yes", "no", "1", "0", "on", "off"):
        return value.lower() in ("true", "yes", "1", "on")
    raise GeneratorParamError(f"{name} must be a boolean, got {value!r}")


def _choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise GeneratorParamError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def _duration_or_count(p: dict, tool: str, *, count_ok: bool = True) -> list[str]:
    if "count" in p and "duration" in p:
        raise GeneratorParamError(f"count ({p['count']!r}) and duration ({p['duration']!r}) are mutually exclusive")
    if "count" in p:
        if not count_ok:
            raise GeneratorParamError(f"{tool} has no packet count: give duration instead of count {p['count']!r}")
        return ["--count", str(_int("count", p["count"], 1, 2**64 - 1))]
    return ["--duration", _fmt(_seconds("duration", p.get("duration", 5)))]


# ---------------------------------------------------------------------------- clients
def xskgen_argv(params: dict) -> list[str]:
    p = _check_keys("xskgen", params, _KEYS["xskgen"])
    _int("threads", p.pop("threads", 1), 1, 1)  # one AF_XDP socket, one thread
    _int("cpu", p.pop("cpu", 0), 0, 0)          # no pinning of its own (use taskset in the command)
    extra = {k: p.pop(k) for k in ("queue", "xsk_mode", "busy_poll", "tx_metadata") if k in p}
    batch = p.pop("batch", None)
    base = normalize_params(p, max_pkt_size=XSK_FRAME)
    md = _choice("tx_metadata", extra.get("tx_metadata", "off"), TX_METADATA)
    limit = XSK_FRAME - (XSK_MD_LEN if md != "off" else 0)
    if base["pkt_size"] > limit:
        raise GeneratorParamError(f"pkt_size {base['pkt_size']!r} does not fit a {XSK_FRAME}-byte UMEM frame"
                                  + (" with the TX metadata area" if md != "off" else ""))
    argv = ["xskgen", "--dev", base["interface"], "--size", str(base["pkt_size"])]
    argv += (["--count", str(base["count"])] if base["count"] is not None
             else ["--duration", _fmt(base["duration"])])
    if "queue" in extra:
        argv += ["--queue", str(_int("queue", extra["queue"], 0, 65535))]
    if batch is not None:
        argv += ["--batch", str(_int("batch", batch, 1, XSK_MAX_BATCH))]
    mode = _choice("xsk_mode", extra.get("xsk_mode", "auto"), XSK_MODES)
    argv += {"auto": [], "copy": ["--copy"], "zerocopy": ["--zero-copy"]}[mode]
    if _bool("busy_poll", extra.get("busy_poll", False)):
        argv.append("--busy-poll")
    argv += {"off": [], "fill": ["--tx-metadata-fill"], "request": ["--tx-metadata"]}[md]
    argv += ["--dst-mac", base["dst_mac"]]
    if base["src_mac"]:
        argv += ["--src-mac", base["src_mac"]]
    argv += ["--src-ip", base["src_ip"], "--dst-ip", base["dst_ip"],
             "--sport", str(base["sport"]), "--dport", str(base["dport"])]
    if base["flows"] > 1:
        argv += ["--flows", str(base["flows"])]
    return argv


def udpgen_argv(params: dict) -> list[str]:
    p = _check_keys("udpgen", params, _KEYS["udpgen"])
    size = _int("pkt_size", p.get("pkt_size", DEFAULT_PKT_SIZE), MIN_PKT_SIZE, UDP_MAX_PKT_SIZE)
    argv = ["udpgen", "--size", str(size)]
    argv += _duration_or_count(p, "udpgen")
    if "batch" in p:
        argv += ["--batch", str(_int("batch", p["batch"], 1, 1024))]
    argv += ["--src-ip", _ipv4("src_ip", p.get("src_ip", GEN_ADDRESS)),
             "--dst-ip", _ipv4("dst_ip", p.get("dst_ip", DUT_ADDRESS))]
    sport = _int("sport", p.get("sport", 9), 1, 65535)
    flows = _int("flows", p.get("flows", 1), 1, 1024)
    if sport + flows - 1 > 65535:
        raise GeneratorParamError(f"flows {flows!r} with sport {sport!r} runs past port 65535")
    argv += ["--sport", str(sport), "--dport", str(_int("dport", p.get("dport", 9), 1, 65535))]
    if flows > 1:
        argv += ["--flows", str(flows)]
    return argv


def sockperf_argv(params: dict) -> list[str]:
    """sockperf client: tp (throughput, pps = messages sent/s) or pp (ping-pong, replies/s + latency)."""
    p = _check_keys("sockperf", params, _KEYS["sockperf"])
    mode = _choice("mode", p.get("mode", "tp"), SOCKPERF_MODES)
    size = _int("pkt_size", p.get("pkt_size", DEFAULT_PKT_SIZE), MIN_PKT_SIZE, SOCKET_MAX_PKT_SIZE)
    secs = _seconds("duration", p.get("duration", 5))
    if secs < 1 or not float(secs).is_integer():
        raise GeneratorParamError(f"duration must be whole seconds >= 1 for sockperf, got {p.get('duration')!r}")
    argv = ["sockperf", mode, "-i", _ipv4("dst_ip", p.get("dst_ip", DUT_ADDRESS)),
            "-p", str(_int("dport", p.get("dport", 11111), 1, 65535)),
            "-m", str(size - ETH_IP_UDP_LEN), "-t", str(int(secs))]
    if "mps" in p:
        mps = p["mps"]
        argv.append("--mps=max" if mps == "max" else f"--mps={_int('mps', mps, 1, 100_000_000)}")
    elif mode == "tp":
        argv.append("--mps=max")
    return argv


def iperf3_argv(params: dict) -> list[str]:
    """iperf3 UDP client, JSON output; pkt_size is the frame the datagram becomes."""
    p = _check_keys("iperf3", params, _KEYS["iperf3"])
    size = _int("pkt_size", p.get("pkt_size", DEFAULT_PKT_SIZE), MIN_PKT_SIZE, SOCKET_MAX_PKT_SIZE)
    secs = _seconds("duration", p.get("duration", 5))
    bitrate = str(p.get("bitrate", "0"))
    if not re.fullmatch(r"\d+(?:\.\d+)?[KMG]?", bitrate):
        raise GeneratorParamError(f"bitrate must be like 0 (unlimited), 500M or 1G, got {p.get('bitrate')!r}")
    argv = ["iperf3", "--client", _ipv4("dst_ip", p.get("dst_ip", DUT_ADDRESS)),
            "--port", str(_int("dport", p.get("dport", 5201), 1, 65535)), "--udp",
            "--bitrate", bitrate, "--length", str(size - ETH_IP_UDP_LEN), "--time", _fmt(secs), "--json"]
    if "src_ip" in p:
        argv += ["--bind", _ipv4("src_ip", p["src_ip"])]
    return argv


def testpmd_argv(params: dict) -> list[str]:
    """DPDK testpmd (Debian: dpdk-dev), txonly over a net_af_xdp vdev on `interface`.

    testpmd has no time limit of its own: bench_run stops it with SIGINT `duration` seconds after
    it reports forwarding, plus one stats period (_generator_table.interrupt_after); it then prints its
    final statistics. Port statistics every second, the parser reads the last full-second Tx-pps
    (the first block has none). Without
    `hugepages: true` it runs on ordinary memory (`--no-huge`, 1 GiB, a small mbuf pool), which is
    what a VM without hugepages has.
    """
    p = _check_keys("testpmd", params, _KEYS["testpmd"])
    iface = normalize_params({"interface": p.get("interface")})["interface"]
    size = _int("pkt_size", p.get("pkt_size", DEFAULT_PKT_SIZE), MIN_PKT_SIZE, JUMBO_MAX_PKT_SIZE)
    _seconds("duration", p.get("duration", 5))
    cores = _int("cores", p.get("cores", 2), 2, 128)
    extra = p.get("eal_args", [])
    if isinstance(extra, str):
        extra = shlex.split(extra)
    memory = ["--in-memory"] if p.get("hugepages") else ["--no-huge", "-m", "1024", f"--file-prefix=xdplab-{iface}"]
    argv = ["dpdk-testpmd", "-l", f"0-{cores - 1}", "--no-pci", *memory,
            f"--vdev=net_af_xdp0,iface={iface},start_queue={_int('queue', p.get('queue', 0), 0, 65535)}",
            *map(str, extra), "--", "--forward-mode=txonly", f"--txpkts={size}",
            f"--burst={_int('burst', p.get('burst', 32), 1, 512)}",
            *([] if p.get("hugepages") else ["--total-num-mbufs=16384"]),
            "--stats-period=1", "--auto-start"]
    if "dst_mac" in p:
        argv.append(f"--eth-peer=0,{_mac('dst_mac', p['dst_mac'])}")
    if "src_ip" in p or "dst_ip" in p:
        argv.append(f"--tx-ip={_ipv4('src_ip', p.get('src_ip', GEN_ADDRESS))},"
                    f"{_ipv4('dst_ip', p.get('dst_ip', DUT_ADDRESS))}")
    return argv


# ---------------------------------------------------------------------------- servers
def server_argv(spec: dict) -> list[str]:
    """argv of the DUT-side server of a point: {"tool": name, "params": {...}}."""
    if not isinstance(spec, dict):
        raise GeneratorParamError(f"server must be a dict like {{tool: xsksink, params: {{...}}}}, got {spec!r}")
    tool = spec.get("tool")
    if tool not in SERVER_TOOLS:
        raise GeneratorParamError(f"server tool must be one of {', '.join(SERVER_TOOLS)}, got {tool!r}")
    p = _check_keys(f"{tool} server", spec.get("params") or {}, _SERVER_KEYS[tool])
    if tool == "xsksink":
        iface = normalize_params({"interface": p.get("interface")})["interface"]
        argv = ["xsksink", "--dev", iface, "--queue", str(_int("queue", p.get("queue", 0), 0, 63))]
        mode = _choice("xsk_mode", p.get("xsk_mode", "auto"), XSK_MODES)
        argv += {"auto": [], "copy": ["--copy"], "zerocopy": ["--zero-copy"]}[mode]
        argv += ["--xdp-mode", _choice("xdp_mode", p.get("xdp_mode", "auto"), ("auto", "native", "generic"))]
        if "dport" in p:
            argv += ["--dport", str(_int("dport", p["dport"], 1, 65535))]
    elif tool == "udpsink":
        argv = ["udpsink", "--port", str(_int("dport", p.get("dport", 9), 1, 65535))]
        if "address" in p:
            argv += ["--address", _ipv4("address", p["address"])]
        if "rcvbuf" in p:
            argv += ["--rcvbuf", str(_int("rcvbuf", p["rcvbuf"], 4096, 1 << 30))]
    elif tool == "sockperf":
        argv = ["sockperf", "sr", "-p", str(_int("dport", p.get("dport", 11111), 1, 65535))]
        return argv + (["-i", _ipv4("address", p["address"])] if "address" in p else [])
    else:
        argv = ["iperf3", "--server", "--port", str(_int("dport", p.get("dport", 5201), 1, 65535))]
        if "address" in p:
            argv += ["--bind", _ipv4("address", p["address"])]
        return argv
    if "gap" in p:
        argv += ["--gap", _fmt(_seconds("gap", p["gap"]))]
    if "batch" in p:
        argv += ["--batch", str(_int("batch", p["batch"], 1, 1024))]
    if _bool("busy_poll", p.get("busy_poll", False)):
        argv.append("--busy-poll")
    return argv


_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_RECV = re.compile(rf"^recv (?P<packets>\d+) packets (?P<bits>\d+) bits, took (?P<seconds>{_NUM}) sec, "
                   rf"(?P<gbps>{_NUM}) gbps (?P<mpps>{_NUM}) mpps\s*$", re.M)
_TOTAL = re.compile(r"^(?P<tool>xsksink|udpsink): total packets=(?P<packets>\d+) bytes=(?P<bytes>\d+) "
                    r"bursts=(?P<bursts>\d+)\s*$", re.M)
_INFO = re.compile(r"^(?P<tool>[a-z0-9_-]+): (?P<rest>.*=.*)$", re.M)
_KV = re.compile(r'(\w+)=("[^"]*"|\S+)')


def _value(text: str) -> Any:
    if text.startswith('"'):
        return text.strip('"')
    for cast in (int, float):
        try:
            v = cast(text)
        except ValueError:
            continue
        return v if not isinstance(v, float) or math.isfinite(v) else text
    return text


def parse_info(tool: str, output: str) -> dict:
    """'<tool>: k=v k=v' lines -> {k: v}; a later line's key wins; the rest of the output is ignored."""
    info: dict = {}
    for m in _INFO.finditer(output or ""):
        if m["tool"] == tool:
            info.update({k: _value(v) for k, v in _KV.findall(m["rest"])})
    return info


def parse_sink(output: str) -> dict:
    """xsksink/udpsink output -> {"bursts": [{packets, bits, seconds, pps}], "packets", "info"}.

    Raises ValueError when the total line is missing (the sink was killed, not stopped) or the
    bursts do not add up to it.
    """
    text = output or ""
    total = _TOTAL.search(text)
    if not total:
        raise ValueError(f"sink output has no 'total packets=' line (killed before it finished?): "
                         f"{text.strip()[-300:]!r}")
    bursts = []
    for m in _RECV.finditer(text):
        secs = float(m["seconds"])
        bursts.append({"packets": int(m["packets"]), "bits": int(m["bits"]), "seconds": secs,
                       "pps": int(m["packets"]) / secs if secs > 0 else 0.0})
    if sum(b["packets"] for b in bursts) != int(total["packets"]) or len(bursts) != int(total["bursts"]):
        raise ValueError(f"sink bursts ({len(bursts)}, {sum(b['packets'] for b in bursts)} packets) do not "
                         f"match its total line {total.group(0)!r}")
    return {"tool": total["tool"], "packets": int(total["packets"]), "bytes": int(total["bytes"]),
            "bursts": bursts, "info": parse_info(total["tool"], text)}
