# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.
#
# Parsers for traffic generators and benchmark tools. Every parser turns a tool's
# text output into a dict with at least ``pps`` (float, packets/s) plus the tool's
# own figures. Empty, truncated or unknown output raises ParseError: a parser
# never returns a rate of 0 for output it did not understand.
"""Tool output parsers for xdplab.testbed."""

from __future__ import annotations

import math
import re
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
#   xdpgen: packets=<N> bytes=<B> seconds=<S> pps=<P> gbps=<G> threads=<T> pkt_size=<Z>
_XDPGEN_THREAD = re.compile(
    rf"^xdpgen: thread (?P<thread>\d+) cpu (?P<cpu>-?\d+) packets (?P<packets>\d+) "
    rf"seconds (?P<seconds>{_NUM}) pps (?P<pps>{_NUM})\s*$", re.M)
_XDPGEN_SUMMARY = re.compile(
    rf"^xdpgen: packets=(?P<packets>\d+) bytes=(?P<bytes>\d+) seconds=(?P<seconds>{_NUM}) "
    rf"pps=(?P<pps>{_NUM}) gbps=(?P<gbps>{_NUM}) threads=(?P<threads>\d+) "
    rf"pkt_size=(?P<pkt_size>\d+)\s*$", re.M)


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
        "per_thread": per_thread,
    }
    if len(per_thread) != result["threads"]:
        raise ParseError(f"{tool}: summary says threads={result['threads']} but "
                         f"{len(per_thread)} thread lines were printed (truncated output?)")
    if per_thread and sum(t["packets"] for t in per_thread) != result["packets"]:
        raise ParseError(f"{tool}: thread packets sum to {sum(t['packets'] for t in per_thread)} "
                         f"but the summary says packets={result['packets']}")
    _rate(tool, "pps", result["pps"])
    return result


# ------------------------------------------------------------------- registry
TOOLS: dict[str, Callable[[str], dict]] = {
    "xdpgen": parse_xdpgen,
}


def parse(tool: str, output: str) -> dict:
    """Parse ``output`` of ``tool``; the result always has ``pps`` (float, packets/s)."""
    try:
        parser = TOOLS[tool]
    except (KeyError, TypeError):
        raise ParseError(f"unknown tool {tool!r}; known: {', '.join(sorted(TOOLS))}") from None
    result = parser(output)
    pps = result.get("pps")
    if not isinstance(pps, float) or not math.isfinite(pps) or pps <= 0:  # pragma: no cover
        raise ParseError(f"{tool}: parser produced no usable pps: {pps!r}")
    result.setdefault("tool", tool)
    return result
