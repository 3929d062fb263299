# SPDX-License-Identifier: GPL-3.0-or-later
"""xdpgen parser.

Source of the samples: the output CONTRACT in notes/h2-gen.md (the generator
is being written in parallel). Real captures from helper H2 land in
tests/unit/fixtures/xdpgen/*.txt and are parsed by test_xdpgen_real_captures.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._output_parsers import ParseError, parse

FIXTURES = Path(__file__).parent / "fixtures" / "xdpgen"

TWO_THREADS = """\
xdpgen: thread 0 cpu 0 packets 3000000 seconds 1.000200 pps 2999400.12
xdpgen: thread 1 cpu 1 packets 2900000 seconds 1.000100 pps 2899710.03
xdpgen: packets=5900000 bytes=377600000 seconds=1.000200 pps=5898820.24 gbps=3.0202 threads=2 pkt_size=64
"""


def test_xdpgen_summary_and_threads():
    r = parse("xdpgen", TWO_THREADS)
    assert r["pps"] == pytest.approx(5898820.24)
    assert isinstance(r["pps"], float)
    assert r["packets"] == 5900000
    assert r["bytes"] == 377600000
    assert r["seconds"] == pytest.approx(1.0002)
    assert r["gbps"] == pytest.approx(3.0202)
    assert r["threads"] == 2
    assert r["pkt_size"] == 64
    assert [t["cpu"] for t in r["per_thread"]] == [0, 1]
    assert r["per_thread"][1]["pps"] == pytest.approx(2899710.03)
    assert r["per_thread"][0]["packets"] == 3000000


def test_xdpgen_ignores_unrelated_lines():
    noisy = "libbpf: some warning\n" + TWO_THREADS + "\n"
    assert parse("xdpgen", noisy)["packets"] == 5900000


@pytest.mark.parametrize("text,needle", [
    ("", "empty"),
    ("   \n", "empty"),
    (TWO_THREADS.splitlines()[0] + "\n", "truncated"),
    ("\n".join(TWO_THREADS.splitlines()[1:]) + "\n", "threads=2 but 1 thread lines"),
    ("PING 198.18.0.1 56(84) bytes of data.\n", "not xdpgen output"),
    (TWO_THREADS.replace("pps=5898820.24", "pps=0.00").replace("packets 3000000", "packets 0")
     .replace("packets 2900000", "packets 0").replace("packets=5900000", "packets=0"),
     "not a usable rate"),
    (TWO_THREADS + TWO_THREADS.splitlines()[2] + "\n", "2 summary lines"),
    (TWO_THREADS.replace("packets=5900000", "packets=5900001"), "sum to 5900000"),
])
def test_xdpgen_bad_output(text, needle):
    with pytest.raises(ParseError, match=needle):
        parse("xdpgen", text)


def test_unknown_tool_named():
    with pytest.raises(ParseError, match="unknown tool 'nosuchgen'"):
        parse("nosuchgen", TWO_THREADS)


def test_parse_error_is_value_error():
    assert issubclass(ParseError, ValueError)


def _real_captures():
    return sorted(FIXTURES.glob("*.txt")) if FIXTURES.is_dir() else []


def test_xdpgen_captures_exist():
    assert _real_captures(), "tests/unit/fixtures/xdpgen/ holds no real xdpgen capture"


@pytest.mark.parametrize("path", _real_captures())
def test_xdpgen_real_captures(path):
    text = path.read_text()
    r = parse("xdpgen", text)
    assert r["pps"] > 0
    assert r["bytes"] == r["packets"] * r["pkt_size"]
    assert len(r["per_thread"]) == r["threads"]


def test_xdpgen_mode():
    """mode=packet: the kernel refused live frames and xdpgen sent from an AF_PACKET socket. Output
    without a mode (xdpgen before 1.1) is live frames, the only mode it had."""
    packet = parse("xdpgen", (FIXTURES / "xdpgen_packet_mode_2threads_128b_flows16.txt").read_text())
    assert packet["mode"] == "packet" and packet["packets"] == 1562752
    assert parse("xdpgen", TWO_THREADS.replace("pkt_size=64", "pkt_size=64 mode=live"))["mode"] == "live"
    assert parse("xdpgen", TWO_THREADS)["mode"] == "live"
    with pytest.raises(ParseError, match="no summary line"):
        parse("xdpgen", TWO_THREADS.replace("pkt_size=64", "pkt_size=64 mode=bogus"))


def test_xdpgen_rate_asked_and_achieved():
    """rate=<asked> or rate=max on the summary line; output before xdpgen 1.2 had none (unpaced)."""
    paced = parse("xdpgen", (FIXTURES / "xdpgen_packet_rate_100k_interval.txt").read_text())
    assert paced["rate_asked"] == 100000.0 and paced["rate_achieved"] == pytest.approx(99696.85)
    assert paced["mode"] == "packet"
    assert parse("xdpgen", TWO_THREADS.replace("pkt_size=64", "pkt_size=64 mode=live rate=max"))["rate_asked"] == "max"
    assert parse("xdpgen", TWO_THREADS)["rate_asked"] == "max"
    with pytest.raises(ParseError, match="no summary line"):
        parse("xdpgen", TWO_THREADS.replace("pkt_size=64", "pkt_size=64 mode=live rate=fast"))


def test_xdpgen_interval_spread():
    """The per-interval lines give the spread of the rate: the first interval (start-up) and the last
    (cut by the end of the run) are left out."""
    r = parse("xdpgen", (FIXTURES / "xdpgen_packet_rate_100k_interval.txt").read_text())
    assert len(r["interval_pps"]) == 10 and r["intervals"] == 8
    kept = r["interval_pps"][1:-1]
    mean = sum(kept) / len(kept)
    sd = (sum((x - mean) ** 2 for x in kept) / (len(kept) - 1)) ** 0.5
    assert r["interval_pps_mean"] == pytest.approx(mean, abs=0.01)
    assert r["interval_pps_stdev"] == pytest.approx(sd, abs=0.01)
    assert r["interval_pps_stdev_pct"] == pytest.approx(100 * sd / mean, abs=0.001)
    assert r["interval_s"] == pytest.approx(0.1, abs=0.001)
    assert "intervals" not in parse("xdpgen", TWO_THREADS)


def test_interval_spread_needs_two_interior_intervals():
    from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._output_parsers import interval_spread

    assert interval_spread([0.1, 0.2, 0.3], [1.0, 2.0, 3.0]) == {}
    out = interval_spread([0.1, 0.2, 0.3, 0.4], [50.0, 10.0, 12.0, 99.0])
    assert out["interval_pps_mean"] == 11.0 and out["interval_pps_stdev"] == pytest.approx(1.414, abs=0.01)
