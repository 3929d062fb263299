# SPDX-License-Identifier: GPL-3.0-or-later
"""Tool parsers against real captured output.

Where each sample comes from is written in the first line(s) of the fixture
(``#xdplab-fixture: ...``): captured here (sockperf, iperf3, trafgen), taken
from kernel docs / sample scripts (pktgen), from published mailing-list and
README output (xdp-bench, xdp-trafficgen, testpmd, pktgen multi-thread), or
rendered from the tool's format string (xskgen, said so in the fixture).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _fixtures import read_fixture
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._output_parsers import TOOLS, ParseError, parse

FIX = Path(__file__).parent / "fixtures"


load = read_fixture


# ------------------------------------------------------------------ pktgen
def test_pktgen_device_file_from_kernel_docs():
    r = parse("pktgen", load("pktgen/rst_device_eth4.txt"))
    assert r["pps"] == 6480562.0
    assert r["packets"] == 100000
    assert r["pkt_size"] == 60
    assert r["errors"] == 0
    assert r["seconds"] == pytest.approx(0.015430)
    (dev,) = r["devices"]
    assert dev["device"] == "eth4@0" and dev["thread"] == 0
    assert (dev["usec"], dev["usec_cpu"], dev["usec_idle"]) == (15430, 15405, 25)
    assert dev["mbps"] == 3110 and dev["bps"] == 3110669760


def test_pktgen_four_threads_packets_over_wall_span():
    r = parse("pktgen", load("pktgen/sample02_4threads.txt"))
    assert [d["device"] for d in r["devices"]] == [f"enp1s0f0@{i}" for i in range(4)]
    assert [d["thread"] for d in r["devices"]] == [0, 1, 2, 3]
    assert r["packets"] == 21720084 + 21986660 + 21518043 + 21741946
    # all packets over the wall span (the longest device), not the sum of per-device rates
    span = max(d["usec"] for d in r["devices"]) / 1e6
    assert r["seconds"] == span
    assert r["pps"] == pytest.approx(r["packets"] / span, rel=1e-12)
    assert r["pps"] < 3524977 + 3552005 + 3521897 + 3535430
    # the kernel's pps is packets / elapsed for each device
    for d in r["devices"]:
        assert d["pps"] == pytest.approx(d["packets"] / (d["usec"] / 1e6), rel=1e-6)


def test_pktgen_thread_file_is_not_a_rate():
    with pytest.raises(ParseError, match="no finished run.*add_device=eth4@0"):
        parse("pktgen", load("pktgen/rst_thread_kpktgend_0.txt"))


def test_pktgen_truncated_rate_line():
    text = load("pktgen/rst_device_eth4.txt").rsplit("\n", 2)[0] + "\n"
    assert "pps" not in text.splitlines()[-1]
    with pytest.raises(ParseError, match="truncated result for device eth4@0"):
        parse("pktgen", text)


def test_pktgen_idle_device():
    with pytest.raises(ParseError, match="Result: Idle"):
        parse("pktgen", "Params: count 0\nCurrent:\n     pkts-sofar: 0  errors: 0\nResult: Idle\n")


def test_pktgen_zero_packets_refused():
    text = ("Device: veth0@0\nResult: OK: 100(c100+d0) usec, 0 (60byte,0frags)\n"
            "  0pps 0Mb/sec (0bps) errors: 0\n")
    with pytest.raises(ParseError, match="not a usable rate"):
        parse("pktgen", text)


# ------------------------------------------------------------------ xskgen
def test_xskgen_lines_from_source_format():
    r = parse("xskgen", load("xskgen/format_from_source.txt"))
    assert r["packets"] == 11_900_000
    assert r["seconds"] == pytest.approx(2.0)
    assert r["pps"] == pytest.approx(5_950_000)
    assert r["gbps"] == pytest.approx((3072000000 + 3020800000) / 2.0 / 1e9)
    assert len(r["intervals"]) == 2


def test_xskgen_truncated():
    with pytest.raises(ParseError, match="truncated"):
        parse("xskgen", "sent 6000000 packets 3072000000 bits, took 1.0")


# ------------------------------------------------------------------ trafgen
def test_trafgen_one_cpu_real():
    r = parse("trafgen", load("trafgen_h4/trafgen_1cpu_n200000.txt"))
    assert r["packets"] == 200000
    assert r["bytes"] == 12000000
    assert r["pkt_size"] == 60
    assert r["seconds"] == pytest.approx(0.631072)
    assert r["pps"] == pytest.approx(200000 / 0.631072)


def test_trafgen_two_cpus_real_packets_over_wall_span():
    r = parse("trafgen", load("trafgen_h4/trafgen_2cpus_n200000.txt"))
    assert [c["cpu"] for c in r["per_cpu"]] == [0, 1]
    # 200000 packets in the longest CPU's 0.394708 s, not 100000/0.333245 + 100000/0.394708
    assert r["pps"] == pytest.approx(200000 / 0.394708, rel=1e-12)


def test_trafgen_sigint_real():
    r = parse("trafgen", load("trafgen_h4/trafgen_1cpu_sigint.txt"))
    assert r["packets"] == 732416
    assert r["pps"] == pytest.approx(732416 / 1.959879)


def test_trafgen_truncated_real_prefix():
    text = load("trafgen_h4/trafgen_1cpu_n200000.txt")
    cut = text[: text.index("packets outgoing") - 20]
    with pytest.raises(ParseError, match="truncated output"):
        parse("trafgen", cut)


def _h2_trafgen_captures():
    d = FIX / "trafgen"
    return sorted(p for p in d.glob("*.txt")) if d.is_dir() else []


def test_trafgen_captures_exist():
    assert _h2_trafgen_captures(), "tests/unit/fixtures/trafgen/ holds no real trafgen capture"


@pytest.mark.parametrize("path", _h2_trafgen_captures())
def test_trafgen_h2_captures(path):
    r = parse("trafgen", path.read_text())
    assert r["pps"] > 0 and r["packets"] > 0


# ------------------------------------------------------------------ sockperf
def test_sockperf_tp_udp_real():
    r = parse("sockperf", load("sockperf/sockperf_tp_udp_64.txt"))
    assert r["mode"] == "tp"
    assert r["pps"] == 91849.0
    assert r["messages"] == 183742 and r["seconds"] == pytest.approx(2.0)
    assert r["mbps"] == pytest.approx(44.848)


def test_sockperf_tp_tcp_real():
    r = parse("sockperf", load("sockperf/sockperf_tp_tcp_1024.txt"))
    assert r["pps"] == 138683.0 and r["mbytes_per_s"] == pytest.approx(135.433)


def test_sockperf_pp_udp_real():
    r = parse("sockperf", load("sockperf/sockperf_pp_udp_64.txt"))
    assert r["mode"] == "pp"
    assert r["received"] == 78237 and r["seconds"] == pytest.approx(1.552)
    assert r["pps"] == pytest.approx(78237 / 1.552)
    assert r["latency_usec"] == pytest.approx(9.904)
    assert r["stdev_latency_usec"] == pytest.approx(66.892)
    assert r["percentiles_usec"]["50.000"] == pytest.approx(5.833)
    assert r["max_latency_usec"] == pytest.approx(2689.819)
    assert r["dropped"] == 0


def test_sockperf_pp_tcp_real():
    r = parse("sockperf", load("sockperf/sockperf_pp_tcp_64.txt"))
    assert r["mode"] == "pp" and r["sent"] == r["received"] == 76429


def test_sockperf_truncated_real_prefix():
    text = load("sockperf/sockperf_tp_udp_64.txt")
    with pytest.raises(ParseError, match="truncated output"):
        parse("sockperf", text[: text.index("Summary")])


def test_sockperf_error_reported():
    with pytest.raises(ParseError, match="Failed to connect"):
        parse("sockperf", "sockperf: ERROR: Failed to connect to 198.18.0.2\n")


# ------------------------------------------------------------------ iperf3
def test_iperf3_udp_real():
    r = parse("iperf3", load("iperf3/iperf3_udp_64.json"))
    assert r["protocol"] == "UDP"
    assert r["packets_received"] == 164651 - 9916
    assert r["pps"] == pytest.approx((164651 - 9916) / 2.000164)
    assert r["sent_pps"] == pytest.approx(164651 / 2.000012)
    assert r["blksize"] == 64


def test_iperf3_tcp_real_is_labelled_estimate():
    r = parse("iperf3", load("iperf3/iperf3_tcp.json"))
    assert r["protocol"] == "TCP"
    assert r["pps"] == pytest.approx(2442985419 / 32768 / 2.012108)
    assert r["pps_basis"].startswith("estimate")
    assert r["retransmits"] == 4


def test_iperf3_truncated_json():
    text = load("iperf3/iperf3_tcp.json")
    with pytest.raises(ParseError, match="not complete JSON"):
        parse("iperf3", text[: len(text) // 2])


def test_iperf3_error_field():
    with pytest.raises(ParseError, match="unable to connect"):
        parse("iperf3", '{"start": {}, "intervals": [], "end": {}, '
                        '"error": "unable to connect to server: Connection refused"}')


# ------------------------------------------------------------------ xdp-bench
def test_xdp_bench_terse_real():
    r = parse("xdp-bench", load("xdp_bench/terse_tx_drop_redirect_fec.txt"))
    assert r["pps"] == pytest.approx((396868 + 396024) / 2)
    assert [iv["rx_pps"] for iv in r["intervals"]] == [396868, 396024]
    assert r["extended"] is False


def test_xdp_bench_old_err_column_real():
    r = parse("xdp-bench", load("xdp_bench/terse_drop_old_errs.txt"))
    assert r["pps"] == pytest.approx((684781 + 675746) / 2)


def test_xdp_bench_redirect_xmit_real():
    r = parse("xdp-bench", load("xdp_bench/terse_redirect_xmit.txt"))
    assert r["intervals"][0]["xmit_pps"] == 311208
    assert r["intervals"][0]["prefix"] == "eth0->eth0"


def test_xdp_bench_extended_real():
    r = parse("xdp-bench", load("xdp_bench/extended_redirect_cpu.txt"))
    (iv,) = r["intervals"]
    assert r["extended"] is True
    assert iv["rx_pps"] == 13803680 and r["pps"] == 13803680.0
    assert iv["receive"] == {"pps": 13803680, "drop_pps": 0, "error_pps": 0}
    assert iv["per_cpu"] == [{"cpu": 6, "pps": 13803680, "drop_pps": 0, "error_pps": 0}]


def test_xdp_bench_trailing_zero_intervals_dropped_real():
    # one interval of traffic, then nothing: the trailing zeros are after the traffic, not a rate
    r = parse("xdp-bench", load("xdp_bench/terse_tx_stalled_enetc.txt"))
    assert r["pps"] == 2046.0
    assert r["trailing_zero_intervals"] == 3 and r["leading_zero_intervals"] == 0
    assert r["interior"] is False and r["intervals_used"] == 1


def test_xdp_bench_leading_zero_intervals_skipped():
    text = ("Summary                         0 rx/s                  0 err,drop/s\n"
            "Summary                 1,000,000 rx/s                  0 err,drop/s\n"
            "Summary                 3,000,000 rx/s                  0 err,drop/s\n")
    r = parse("xdp-bench", text)
    assert r["pps"] == 2_000_000.0 and r["leading_zero_intervals"] == 1


def test_xdp_bench_all_zero_refused():
    with pytest.raises(ParseError, match="all 2 intervals report 0"):
        parse("xdp-bench", "Summary 0 rx/s 0 err,drop/s\nSummary 0 rx/s 0 err,drop/s\n")


# ------------------------------------------------------------------ xdp-trafficgen
def test_xdp_trafficgen_real_zero_output_refused():
    with pytest.raises(ParseError, match="report 0 xmit/s"):
        parse("xdp-trafficgen", load("xdp_trafficgen/zero_rate_debian.txt"))


def test_xdp_trafficgen_rate():
    # same line layout as the real capture, non-zero figures
    real = load("xdp_trafficgen/zero_rate_debian.txt")
    text = real.replace("0 err/s                 0 xmit/s", "0 err/s         5,000,000 xmit/s", 2)
    r = parse("xdp-trafficgen", text)
    assert r["interface"] == "eno2"
    assert [iv["xmit_pps"] for iv in r["intervals"]] == [5_000_000, 5_000_000, 0]
    assert r["pps"] == 5_000_000.0 and r["trailing_zero_intervals"] == 1


# ------------------------------------------------------------------ testpmd
def test_testpmd_forwarding_real():
    r = parse("testpmd", load("testpmd/af_xdp_pmd_virtio.txt"))
    assert r["pps_direction"] == "rx" and r["pps"] == 6333196.0
    (p,) = r["ports"]
    assert p["tx_errors"] == 33216 and p["rx_packets"] == 68152727 and p["tx_bps"] == 2837285936


def test_testpmd_txonly_real():
    r = parse("testpmd", load("testpmd/txonly_mlx5.txt"))
    assert r["pps_direction"] == "tx" and r["pps"] == 143279102.0


def test_testpmd_last_block_per_port_not_sum_of_blocks():
    # three 1 s blocks of 994,637 pps: the rate is 994,637, not 3 x 994,637; the block cut by SIGINT
    # after them is skipped
    r = parse("testpmd", load("testpmd/txonly_multiblock_derived.txt"))
    assert r["pps_direction"] == "tx" and r["pps"] == 994637.0
    (p,) = r["ports"]
    assert p["blocks"] == 4 and p["tx_packets"] == 1992896 + 2 * 994637
    # rate == packets / wall span of the last period (1 s, --stats-period=1)
    assert r["pps"] == (p["tx_packets"] - (1992896 + 994637)) / 1.0


def test_testpmd_real_capture_uses_its_last_block():
    r = parse("testpmd", load("testpmd/af_xdp_veth_txonly_here.txt"))
    assert r["pps"] == 994637.0 and r["ports"][0]["blocks"] == 2
    # the block's own counters, not the exit-time forward statistics printed after it (5105184)
    assert r["ports"][0]["tx_packets"] == 1992896


def test_testpmd_first_block_alone_has_no_rate():
    # SIGINT before the second --stats-period block: the first block's zeros are not a rate (CI saw
    # "tx_pps=0.0 is not a usable rate" on a loaded machine); the error says why
    text = load("testpmd/af_xdp_veth_txonly_here.txt")
    second = text.index("NIC statistics for port 0", text.index("NIC statistics for port 0") + 1)
    cut = text[:text.rindex("\n", 0, second)] + "\n"
    with pytest.raises(ParseError, match="port 0: only its first stats block, which has no rate"):
        parse("testpmd", cut)


def test_testpmd_sums_ports_of_the_last_blocks():
    r = parse("testpmd", load("testpmd/txonly_2ports_multiblock_derived.txt"))
    assert [p["port"] for p in r["ports"]] == [0, 1]
    assert [p["blocks"] for p in r["ports"]] == [4, 4]
    assert r["pps"] == 994637.0 + 500000.0
    # each port's last-period packets / 1 s, summed
    assert r["pps"] == sum(p["tx_packets"] / 3.0 for p in r["ports"])


def test_testpmd_truncated_real_prefix():
    text = load("testpmd/txonly_mlx5.txt")
    with pytest.raises(ParseError, match="truncated block"):
        parse("testpmd", text[: text.index("Throughput")])


def _xb(values, word="rx/s"):
    return "".join(f"Summary {v:>15,} {word}                  0 err,drop/s\n" for v in values)


def test_xdp_bench_edges_and_trailing_zeros_dropped():
    # 0.4 s of traffic in the first interval, 3 full seconds at 1 Mpps, 0.7 s, then idle
    vals = [0, 400_000, 1_000_000, 1_000_000, 1_000_000, 700_000, 0, 0]
    r = parse("xdp-bench", _xb(vals))
    assert (r["leading_zero_intervals"], r["trailing_zero_intervals"], r["edge_intervals_dropped"]) == (1, 2, 2)
    # rate == packets of the steady intervals / their wall span (1 s each)
    assert r["pps"] == 3_000_000 / 3.0 and r["intervals_used"] == 3 and r["interior"] is True


def test_xdp_bench_stall_inside_traffic_is_kept():
    r = parse("xdp-bench", _xb([0, 500_000, 1_000_000, 0, 1_000_000, 200_000, 0]))
    assert r["pps"] == pytest.approx(2_000_000 / 3) and r["zero_intervals"] == 1


def test_xdp_trafficgen_edges_and_trailing_zeros_dropped():
    text = "".join(f"lo->eno2 0 err/s {v:,} xmit/s\n" for v in [0, 100, 5_000_000, 5_000_000, 300, 0])
    r = parse("xdp-trafficgen", text)
    assert r["pps"] == 5_000_000.0 and r["intervals_used"] == 2


def test_xskgen_several_intervals_packets_over_span():
    text = ("sent 1000000 packets 512000000 bits, took 0.5 sec, 1.0 gbps 2.0 mpps\n"
            "sent 3000000 packets 1536000000 bits, took 1.0 sec, 1.5 gbps 3.0 mpps\n"
            "sent 2000000 packets 1024000000 bits, took 1.0 sec, 1.0 gbps 2.0 mpps\n")
    r = parse("xskgen", text)
    assert r["pps"] == 6_000_000 / 2.5


def test_pktgen_devices_of_unequal_spans():
    text = ("Device: veth0@0\nResult: OK: 2000000(c1999000+d1000) usec, 4000000 (60byte,0frags)\n"
            "  2000000pps 960Mb/sec (960000000bps) errors: 0\n"
            "Device: veth0@1\nResult: OK: 1000000(c999000+d1000) usec, 2000000 (60byte,0frags)\n"
            "  2000000pps 960Mb/sec (960000000bps) errors: 0\n")
    r = parse("pktgen", text)
    # 6 M packets in a 2 s wall span: 3 Mpps (the per-device sum, 4 Mpps, counts veth0@1 for 2 s)
    assert r["pps"] == 3_000_000.0


# ------------------------------------------------------------------ every tool
@pytest.mark.parametrize("tool", sorted(TOOLS))
@pytest.mark.parametrize("text", ["", "  \n", "Segmentation fault (core dumped)\n"])
def test_every_parser_rejects_empty_and_unknown(tool, text):
    with pytest.raises(ParseError, match=tool if tool != "xdp-bench" else "xdp-bench"):
        parse(tool, text)


def test_every_parser_returns_float_pps():
    samples = {
        "pktgen": "pktgen/sample02_4threads.txt", "xskgen": "xskgen/format_from_source.txt",
        "trafgen": "trafgen_h4/trafgen_1cpu_n200000.txt", "sockperf": "sockperf/sockperf_tp_udp_64.txt",
        "iperf3": "iperf3/iperf3_udp_64.json", "xdp-bench": "xdp_bench/extended_redirect_cpu.txt",
        "testpmd": "testpmd/af_xdp_pmd_virtio.txt",
    }
    for tool, rel in samples.items():
        r = parse(tool, load(rel))
        assert isinstance(r["pps"], float) and r["pps"] > 0, tool
        assert r["tool"] == tool


def test_huge_number_is_a_parse_error_not_an_overflow():
    """Found by the hostile-input property test: a 400-digit usec field overflowed float()."""
    texts = [read_fixture(p.relative_to(FIX)) for p in sorted((FIX / "pktgen").glob("qemu_*.txt"))]
    capture = next(t for t in texts if "Result: OK" in t)
    bad = capture.replace("Result: OK: ", "Result: OK: " + "9" * 400, 1)
    with pytest.raises(ParseError, match="out of range"):
        parse("pktgen", bad)


def test_testpmd_af_xdp_on_veth_captured_here():
    """Real dpdk-testpmd (Debian 12 dpdk-dev) output from _client_server_argv.testpmd_argv, stopped with SIGINT."""
    r = parse("testpmd", load("testpmd/af_xdp_veth_txonly_here.txt"))
    assert r["pps_direction"] == "tx"
    assert r["pps"] == 994637.0  # the last full-second Tx-pps of the periodic port statistics
