# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.
#
# Pure argv/config builders for the traffic generators (no execution here):
#   xdpgen_argv(params)               -> argv for files/xdpgen (live-frame XDP generator)
#   trafgen_config(params)            -> netsniff-ng trafgen packet configuration text
#   trafgen_argv(params, conf_path)   -> argv for trafgen reading that configuration
# ``params`` keys: interface, pkt_size, count, duration, threads, cpu, batch, dst_mac,
# src_mac, src_ip, dst_ip, sport, dport, flows, rate (packets/s over all threads, paced; None: as
# fast as possible), interval (xdpgen: seconds between its per-interval lines). Values may be ints or numeric strings
# (Ansible passes strings); anything else raises GeneratorParamError naming the value.
"""Traffic generator command lines for xdplab.testbed (xdpgen, trafgen)."""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from ansible_collections.xdplab.testbed.plugins.module_utils.common import _validate
from ansible_collections.xdplab.testbed.plugins.module_utils.common._testbed_facts import (
    DEFAULT_PKT_SIZE,
    DUT_ADDRESS,
    ETH_IP_UDP_LEN,
    GEN_ADDRESS,
    JUMBO_MAX_PKT_SIZE,
    MIN_PKT_SIZE,
    XDPGEN_MAX_PKT_SIZE,
)

__all__ = [
    "GeneratorParamError",
    "PARAM_KEYS",
    "normalize_params",
    "trafgen_argv",
    "trafgen_config",
    "xdpgen_argv",
]

PARAM_KEYS = (
    "interface", "pkt_size", "count", "duration", "threads", "cpu", "batch",
    "dst_mac", "src_mac", "src_ip", "dst_ip", "sport", "dport", "flows", "rate", "interval",
)

# Frame sizes count the Ethernet header and payload, not the 4-byte FCS.
# The sizes, bounds and test addresses are the table's (common/_testbed_facts.py).
TRAFGEN_MAX_PKT_SIZE = JUMBO_MAX_PKT_SIZE
TRAFGEN_JUMBO_ABOVE = 2048   # trafgen needs --jumbo-support for larger frames
XDPGEN_MAX_BATCH = 1 << 24
MAX_THREADS = 256
MAX_DURATION = 31536000.0
MAX_RATE = 1e9  # packets/s: xdpgen's own limit of --rate

DEFAULT_DURATION = 5.0
DEFAULTS: dict[str, Any] = {
    "pkt_size": DEFAULT_PKT_SIZE, "threads": 1, "cpu": 0, "batch": None, "count": None, "duration": None,
    "dst_mac": "ff:ff:ff:ff:ff:ff", "src_mac": None,
    "src_ip": GEN_ADDRESS, "dst_ip": DUT_ADDRESS, "sport": 9, "dport": 9, "flows": 1,
    "rate": None, "interval": None,
}

_MAC = re.compile(r"^[0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5}\Z")


class GeneratorParamError(ValueError):
    """A generator parameter that is missing, of the wrong type or out of range."""


def _int(name: str, value: Any, lo: int, hi: int) -> int:
    if isinstance(value, bool):
        raise GeneratorParamError(f"{name} must be an integer, got {value!r}")
    if isinstance(value, int):
        n = value
    elif isinstance(value, float) and value.is_integer():
        n = int(value)
    elif isinstance(value, str) and re.fullmatch(r"\s*\d+\s*", value):
        n = int(value)
    else:
        raise GeneratorParamError(f"{name} must be an integer, got {value!r}")
    if not lo <= n <= hi:
        raise GeneratorParamError(f"{name} must be in {lo}..{hi}, got {value!r}")
    return n


def _float(name: str, value: Any, what: str) -> float:
    """A number, or GeneratorParamError saying it must be `what`."""
    if isinstance(value, bool):
        raise GeneratorParamError(f"{name} must be {what}, got {value!r}")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise GeneratorParamError(f"{name} must be {what}, got {value!r}") from None
    return x  # NaN and infinities fail the caller's range check


def _seconds(name: str, value: Any) -> float:
    x = _float(name, value, "a number of seconds")
    if not 0 < x <= MAX_DURATION:
        raise GeneratorParamError(f"{name} must be > 0 and <= {MAX_DURATION:.0f} seconds, got {value!r}")
    return x


def _rate(name: str, value: Any) -> float:
    x = _float(name, value, "a rate in packets/s")
    if not 1 <= x <= MAX_RATE:
        raise GeneratorParamError(f"{name} must be in 1..{MAX_RATE:.0f} packets/s, got {value!r}")
    return x


def _mac(name: str, value: Any) -> str:
    if not isinstance(value, str) or not _MAC.match(value):
        raise GeneratorParamError(f"{name} must be a MAC address like 02:00:00:00:00:01, got {value!r}")
    return value.lower()


def _ipv4(name: str, value: Any) -> str:
    try:
        return str(ipaddress.IPv4Address(value if isinstance(value, str) else str(value)))
    except (ipaddress.AddressValueError, ValueError):
        raise GeneratorParamError(f"{name} must be an IPv4 address, got {value!r}") from None


def normalize_params(params: dict[str, Any] | None, *, max_pkt_size: int = XDPGEN_MAX_PKT_SIZE) -> dict[str, Any]:
    """Validate ``params`` and return a full dict with defaults filled in and values typed.

    Exactly one of count/duration ends a run; with neither, duration is DEFAULT_DURATION.
    """
    if not isinstance(params, dict):
        raise GeneratorParamError(f"params must be a dict, got {params!r}")
    unknown = sorted(set(params) - set(PARAM_KEYS))
    if unknown:
        raise GeneratorParamError(f"unknown generator parameter(s) {', '.join(map(repr, unknown))}; "
                                  f"known: {', '.join(PARAM_KEYS)}")
    given = {k: v for k, v in params.items() if v is not None}
    p: dict[str, Any] = dict(DEFAULTS)
    iface = given.get("interface")
    if iface is None:
        raise GeneratorParamError("interface is required")
    try:
        _validate.ifname(iface, "generator interface")
    except _validate.ValidationError as exc:
        raise GeneratorParamError(str(exc)) from None
    p["interface"] = iface
    if "pkt_size" in given:
        p["pkt_size"] = _int("pkt_size", given["pkt_size"], MIN_PKT_SIZE, max_pkt_size)
    if "count" in given and "duration" in given:
        raise GeneratorParamError(f"count ({given['count']!r}) and duration ({given['duration']!r}) "
                                  "are mutually exclusive")
    if "count" in given:
        p["count"] = _int("count", given["count"], 1, 2**64 - 1)
    elif "duration" in given:
        p["duration"] = _seconds("duration", given["duration"])
    else:
        p["duration"] = DEFAULT_DURATION
    if "threads" in given:
        p["threads"] = _int("threads", given["threads"], 1, MAX_THREADS)
    if "cpu" in given:
        p["cpu"] = _int("cpu", given["cpu"], 0, 4095)
    if "batch" in given:
        p["batch"] = _int("batch", given["batch"], 1, XDPGEN_MAX_BATCH)
    for key in ("dst_mac", "src_mac"):
        if key in given:
            p[key] = _mac(key, given[key])
    for key in ("src_ip", "dst_ip"):
        if key in given:
            p[key] = _ipv4(key, given[key])
    for key in ("sport", "dport"):
        if key in given:
            p[key] = _int(key, given[key], 1, 65535)
    if "flows" in given:
        p["flows"] = _int("flows", given["flows"], 1, 65535)
    if p["sport"] + p["flows"] - 1 > 65535:
        raise GeneratorParamError(f"flows {p['flows']!r} with sport {p['sport']!r} runs past port 65535")
    if "rate" in given:
        p["rate"] = _rate("rate", given["rate"])
        if p["rate"] < p["threads"]:
            raise GeneratorParamError(f"rate {given['rate']!r} is below 1 packet/s for each of {p['threads']} threads")
    if "interval" in given:
        p["interval"] = _seconds("interval", given["interval"])
    if p["count"] is not None and p["count"] < p["threads"]:
        raise GeneratorParamError(f"count {p['count']!r} is smaller than threads {p['threads']!r}")
    return p


def _fmt_seconds(x: float) -> str:
    """A number as argv text: 5 for 5.0, 1.5 as is (seconds, and rates in packets/s)."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def xdpgen_argv(params: dict[str, Any], *, binary: str = "xdpgen") -> list[str]:
    """argv for xdpgen (files/xdpgen/xdpgen.c); binary is argv[0]."""
    p = normalize_params(params, max_pkt_size=XDPGEN_MAX_PKT_SIZE)
    argv = [binary, "--dev", p["interface"], "--size", str(p["pkt_size"])]
    if p["count"] is not None:
        argv += ["--count", str(p["count"])]
    else:
        argv += ["--duration", _fmt_seconds(p["duration"])]
    argv += ["--threads", str(p["threads"]), "--cpu", str(p["cpu"])]
    if p["batch"] is not None:
        argv += ["--batch", str(p["batch"])]
    argv += ["--dst-mac", p["dst_mac"]]
    if p["src_mac"] is not None:
        argv += ["--src-mac", p["src_mac"]]
    argv += ["--src-ip", p["src_ip"], "--dst-ip", p["dst_ip"],
             "--sport", str(p["sport"]), "--dport", str(p["dport"])]
    if p["flows"] > 1:
        argv += ["--flows", str(p["flows"])]
    if p["rate"] is not None:
        argv += ["--rate", _fmt_seconds(p["rate"])]
    if p["interval"] is not None:
        argv += ["--interval", _fmt_seconds(p["interval"])]
    return argv


def _trafgen_params(params: dict[str, Any]) -> dict[str, Any]:
    p = normalize_params(params, max_pkt_size=TRAFGEN_MAX_PKT_SIZE)
    if p["count"] is None:
        raise GeneratorParamError(
            f"trafgen has no time limit: give count instead of duration {p['duration']!r} "
            "(trafgen stops after --num packets, or on SIGINT)")
    if p["cpu"] != 0:
        raise GeneratorParamError(f"cpu {p['cpu']!r}: trafgen always runs on CPUs 0..threads-1, "
                                  "only cpu 0 is supported")
    if p["batch"] is not None:
        raise GeneratorParamError(f"batch {p['batch']!r} is an xdpgen parameter, trafgen has none")
    if p["interval"] is not None:
        raise GeneratorParamError(f"interval {p['interval']!r} is an xdpgen parameter, trafgen has none")
    if p["rate"] is not None and not float(p["rate"]).is_integer():
        raise GeneratorParamError(f"rate {p['rate']!r}: trafgen takes whole packets/s")
    return p


def trafgen_config(params: dict[str, Any]) -> str:
    """trafgen packet configuration for the same frame xdpgen sends.

    Ethernet/IPv4/UDP of pkt_size bytes (no FCS), IPv4 header checksum computed by trafgen,
    UDP checksum 0 (as xdpgen), source port incremented over `flows` values.
    """
    p = _trafgen_params(params)
    eth = f"da={p['dst_mac']}" + (f", sa={p['src_mac']}" if p["src_mac"] else "")
    sport = str(p["sport"]) if p["flows"] == 1 else f"dinc({p['sport']}, {p['sport'] + p['flows'] - 1})"
    payload = p["pkt_size"] - ETH_IP_UDP_LEN
    return (
        "/* xdplab.testbed trafgen configuration (rendered by module_utils/traffic/_xdpgen_trafgen_argv.py) */\n"
        f"/* {p['pkt_size']}-byte Ethernet/IPv4/UDP frames, FCS not included */\n"
        "{\n"
        f"  eth({eth}),\n"
        f"  ipv4(sa={p['src_ip']}, da={p['dst_ip']}, ttl=64, df),\n"
        f"  udp(sp={sport}, dp={p['dport']}, csum=0),\n"
        f"  fill(0x00, {payload})\n"
        "}\n"
    )


def trafgen_argv(params: dict[str, Any], conf_path: str, *, binary: str = "trafgen") -> list[str]:
    """argv for trafgen sending `count` packets on `threads` CPUs from `conf_path`."""
    p = _trafgen_params(params)
    if not isinstance(conf_path, str) or not conf_path:
        raise GeneratorParamError(f"conf_path must be a file path, got {conf_path!r}")
    argv = [binary, "--dev", p["interface"], "--conf", conf_path,
            "--cpus", str(p["threads"]), "--num", str(p["count"])]
    if p["pkt_size"] > TRAFGEN_JUMBO_ABOVE:
        argv.append("--jumbo-support")
    if p["rate"] is not None:
        argv += ["--rate", f"{int(p['rate'])}pps"]
    return argv
