# SPDX-License-Identifier: GPL-3.0-or-later
"""argv builders of xskgen/udpgen/sockperf/iperf3/testpmd and the DUT servers; sink/info parsers on real output."""

from __future__ import annotations

import pytest
from _fixtures import read_fixture
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._client_server_argv import (
    parse_info,
    parse_sink,
    server_argv,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._generator_table import GENERATORS, command
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._output_parsers import TOOLS as PARSERS
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._output_parsers import parse
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._xdpgen_trafgen_argv import GeneratorParamError


def client_argv(tool, params):
    argv, config = command(tool, params)
    assert config is None
    return argv


def parser_for(tool):
    return GENERATORS[tool].parser


MAC = "02:00:00:00:00:02"

ARGV_CASES = [
    ("xskgen", {"interface": "veth0", "duration": 2, "dst_mac": MAC},
     ["xskgen", "--dev", "veth0", "--size", "64", "--duration", "2", "--dst-mac", MAC, "--src-ip", "198.18.0.1",
      "--dst-ip", "198.18.0.2", "--sport", "9", "--dport", "9"]),
    ("xskgen", {"interface": "veth0", "count": 1000, "pkt_size": 1400, "batch": 32, "queue": 1,
                "xsk_mode": "copy", "busy_poll": True, "tx_metadata": "request", "flows": 4, "dst_mac": MAC},
     ["xskgen", "--dev", "veth0", "--size", "1400", "--count", "1000", "--queue", "1", "--batch", "32", "--copy",
      "--busy-poll", "--tx-metadata", "--dst-mac", MAC, "--src-ip", "198.18.0.1", "--dst-ip", "198.18.0.2",
      "--sport", "9", "--dport", "9", "--flows", "4"]),
    ("xskgen", {"interface": "veth0", "tx_metadata": "fill", "xsk_mode": "zerocopy", "busy_poll": "false"},
     ["xskgen", "--dev", "veth0", "--size", "64", "--duration", "5", "--zero-copy", "--tx-metadata-fill",
      "--dst-mac", "ff:ff:ff:ff:ff:ff", "--src-ip", "198.18.0.1", "--dst-ip", "198.18.0.2", "--sport", "9",
      "--dport", "9"]),
    ("udpgen", {"pkt_size": 200, "duration": 1.5, "dst_ip": "198.18.0.2", "flows": 2, "batch": 32},
     ["udpgen", "--size", "200", "--duration", "1.5", "--batch", "32", "--src-ip", "198.18.0.1", "--dst-ip",
      "198.18.0.2", "--sport", "9", "--dport", "9", "--flows", "2"]),
    ("sockperf", {"mode": "tp", "pkt_size": 242, "duration": 3, "dst_ip": "198.18.0.2"},
     ["sockperf", "tp", "-i", "198.18.0.2", "-p", "11111", "-m", "200", "-t", "3", "--mps=max"]),
    ("sockperf", {"mode": "pp", "duration": 2, "mps": 1000},
     ["sockperf", "pp", "-i", "198.18.0.2", "-p", "11111", "-m", "22", "-t", "2", "--mps=1000"]),
    ("iperf3", {"pkt_size": 1442, "duration": 2, "bitrate": "500M", "src_ip": "198.18.0.1"},
     ["iperf3", "--client", "198.18.0.2", "--port", "5201", "--udp", "--bitrate", "500M", "--length", "1400",
      "--time", "2", "--json", "--bind", "198.18.0.1"]),
    ("testpmd", {"interface": "veth0", "duration": 3, "dst_mac": MAC},
     ["dpdk-testpmd", "-l", "0-1", "--no-pci", "--no-huge", "-m", "1024", "--file-prefix=xdplab-veth0",
      "--vdev=net_af_xdp0,iface=veth0,start_queue=0", "--", "--forward-mode=txonly", "--txpkts=64",
      "--burst=32", "--total-num-mbufs=16384", "--stats-period=1", "--auto-start", f"--eth-peer=0,{MAC}"]),
]


@pytest.mark.parametrize(("tool", "params", "argv"), ARGV_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(ARGV_CASES)])
def test_client_argv(tool, params, argv):
    assert client_argv(tool, params) == argv


BAD = [
    ("xskgen", {"interface": "veth0", "tx_metadata": "maybe"},
     "tx_metadata must be one of off, fill, request, got 'maybe'"),
    ("xskgen", {"interface": "veth0", "xsk_mode": "zc"}, "xsk_mode must be one of auto, copy, zerocopy, got 'zc'"),
    ("xskgen", {"interface": "veth0", "pkt_size": 4090, "tx_metadata": "fill"}, "pkt_size 4090 does not fit"),
    ("xskgen", {"interface": "veth0", "threads": 2}, "threads must be in 1..1, got 2"),
    ("xskgen", {"interface": "veth0", "batch": 4096}, "batch must be in 1..2048, got 4096"),
    ("xskgen", {"interface": "veth0", "busy_poll": "sometimes"}, "busy_poll must be a boolean, got 'sometimes'"),
    ("xskgen", {"interface": "veth0", "burst": 3}, "unknown xskgen parameter(s) 'burst'"),
    ("xskgen", {"duration": 1}, "interface is required"),
    ("udpgen", {"count": 5, "duration": 1}, "count (5) and duration (1) are mutually exclusive"),
    ("udpgen", {"dst_ip": "198.18.0.300"}, "dst_ip must be an IPv4 address, got '198.18.0.300'"),
    ("sockperf", {"mode": "ul"}, "mode must be one of tp, pp, got 'ul'"),
    ("sockperf", {"duration": 1.5}, "duration must be whole seconds >= 1 for sockperf, got 1.5"),
    ("iperf3", {"bitrate": "fast"}, "bitrate must be like 0 (unlimited), 500M or 1G, got 'fast'"),
    ("pktgen", {}, "unknown generator 'pktgen'"),
]


@pytest.mark.parametrize(("tool", "params", "msg"), BAD, ids=[m[:30] for _dummy, _dummy, m in BAD])
def test_bad_client_params_name_the_value(tool, params, msg):
    with pytest.raises(GeneratorParamError) as exc:
        client_argv(tool, params)
    assert msg in str(exc.value)


def test_server_argv():
    assert server_argv({"tool": "xsksink", "params": {"interface": "veth1", "xsk_mode": "copy", "gap": 0.2}}) == [
        "xsksink", "--dev", "veth1", "--queue", "0", "--copy", "--xdp-mode", "auto", "--gap", "0.2"]
    assert server_argv({"tool": "udpsink", "params": {"dport": 7, "busy_poll": True, "rcvbuf": 8388608}}) == [
        "udpsink", "--port", "7", "--rcvbuf", "8388608", "--busy-poll"]
    assert server_argv({"tool": "sockperf", "params": {"address": "198.18.0.2"}}) == [
        "sockperf", "sr", "-p", "11111", "-i", "198.18.0.2"]
    assert server_argv({"tool": "iperf3"}) == ["iperf3", "--server", "--port", "5201"]


@pytest.mark.parametrize(("spec", "msg"), [
    ({"tool": "netcat"}, "server tool must be one of xsksink, udpsink, sockperf, iperf3, got 'netcat'"),
    ({"tool": "xsksink", "params": {}}, "interface is required"),
    ({"tool": "xsksink", "params": {"interface": "veth0", "xdp_mode": "offload"}},
     "xdp_mode must be one of auto, native, generic, got 'offload'"),
    ({"tool": "udpsink", "params": {"interface": "veth0"}}, "unknown udpsink server parameter(s) 'interface'"),
    ("xsksink", "server must be a dict"),
])
def test_bad_server(spec, msg):
    with pytest.raises(GeneratorParamError) as exc:
        server_argv(spec)
    assert msg in str(exc.value)


def test_parse_xsksink_real_output():
    out = parse_sink(read_fixture("xsk/xsksink_2bursts.txt"))
    assert out["tool"] == "xsksink" and out["packets"] == 278896
    assert [b["packets"] for b in out["bursts"]] == [234048, 44848]
    assert out["bursts"][0]["pps"] == pytest.approx(234048 / 1.009258)
    assert out["info"]["mode"] == "copy" and out["info"]["xdp_mode"] == "native"
    assert out["info"]["rx_fill_ring_empty_descs"] == 6368


def test_parse_udpsink_real_output():
    out = parse_sink(read_fixture("xsk/udpsink_1burst.txt"))
    assert out["tool"] == "udpsink" and [b["packets"] for b in out["bursts"]] == [94208]
    assert out["info"]["rcvbuf_errors"] == 0


def test_parse_sink_killed_or_inconsistent():
    text = read_fixture("xsk/xsksink_2bursts.txt")
    killed = "\n".join(line for line in text.splitlines() if "total" not in line)
    with pytest.raises(ValueError, match="no 'total packets=' line"):
        parse_sink(killed)
    missing_burst = "\n".join(line for line in text.splitlines() if not line.startswith("recv 44848"))
    with pytest.raises(ValueError, match="do not match its total line"):
        parse_sink(missing_burst)


def test_generator_outputs_parse_with_their_parser():
    xsk = read_fixture("xsk/xskgen_request.txt")
    parsed = parse(parser_for("xskgen"), xsk)
    assert parsed["packets"] == 20000 and parsed["pps"] == pytest.approx(20000 / 0.043394)
    info = parse_info("xskgen", xsk)
    assert info["tx_metadata"] == "request" and info["tx_timestamp_filled"] == 20000
    assert info["mode_note"].startswith("copy (zero-copy refused")
    udp = read_fixture("xsk/udpgen_count.txt")
    assert parse(parser_for("udpgen"), udp)["packets"] == 20000
    assert parse_info("udpgen", udp) == {"size": 64, "payload": 22, "batch": 64, "flows": 1, "send_errors": 0}


def test_every_generator_row_names_a_parser_and_builds_its_default_argv():
    for name, row in GENERATORS.items():
        assert row.parser in PARSERS, name
    argv, config = command("trafgen", {"interface": "veth0", "count": 10})
    assert "--conf" in argv and config and "udp" not in argv[0]


def test_unknown_generator_is_named_with_the_known_ones():
    with pytest.raises(GeneratorParamError, match=r"unknown generator 'pktgun'; known: xdpgen, trafgen"):
        command("pktgun", {})


def test_no_option_list_repeats_the_generator_table():
    """A new generator is a row of the table and its parser: bench_run's and bench_parse's tool options
    carry no choices list that would also need the name."""
    import yaml
    from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._bench_run_spec import GENERATOR_SPEC
    from ansible_collections.xdplab.testbed.plugins.modules import bench_parse, bench_run

    assert "choices" not in GENERATOR_SPEC["tool"]
    for mod in (bench_run, bench_parse):
        assert "choices" not in yaml.safe_load(mod.DOCUMENTATION)["options"]["tool"], mod.__name__
