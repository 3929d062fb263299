# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The generator table's record keys: every key a row names comes out of its parser on real output,
and bench_run's repetitions carry them into the record."""

from __future__ import annotations

import pytest
from ansible_collections.xdplab.testbed.plugins.action.bench_run import ActionModule
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._generator_table import (
    GENERATORS,
    record_figures,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._output_parsers import TOOLS, parse
from test_parsers_tools import load

# Real captures of each generator's output (the parser tests say where each comes from); between them
# they show every mode of the tool (sockperf throughput and ping-pong, iperf3 UDP and TCP).
CAPTURES = {
    "xdpgen": ["xdpgen/xdpgen_1thread_64b_h2.txt", "xdpgen/xdpgen_2threads_128b_flows16_h2.txt",
               "xdpgen/xdpgen_packet_rate_100k_interval.txt"],
    "trafgen": ["trafgen/trafgen_1thread_64b_h2.txt"],
    "xskgen": ["xskgen/format_from_source.txt", "xskgen/xskgen_auto_copy_veth.txt"],
    "udpgen": ["xskgen/format_from_source.txt"],
    "sockperf": ["sockperf/sockperf_tp_udp_64.txt", "sockperf/sockperf_pp_udp_64.txt"],
    "iperf3": ["iperf3/iperf3_udp_64.json", "iperf3/iperf3_tcp.json"],
    "testpmd": ["testpmd/txonly_multiblock_derived.txt", "testpmd/af_xdp_pmd_virtio.txt"],
}


def test_every_generator_has_captures_and_a_known_parser():
    assert set(CAPTURES) == set(GENERATORS), "a generator without captures here, or captures of no generator"
    for name, row in GENERATORS.items():
        assert row.parser in TOOLS, f"{name}: parser {row.parser!r} is not registered"


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_record_keys_come_out_of_the_parser(name):
    row = GENERATORS[name]
    seen: set[str] = set()
    for capture in CAPTURES[name]:
        parsed = parse(row.parser, load(capture))
        figures = record_figures(name, parsed)
        assert set(figures) <= set(row.record_keys)
        assert all(figures[k] == parsed[k] for k in figures)
        seen |= set(figures)
    missing = set(row.record_keys) - seen
    assert not missing, f"{name}: record keys {sorted(missing)} never come out of parser {row.parser!r}"
    assert not {"pps", "packets", "seconds"} & set(row.record_keys), "pps/packets/seconds have their own fields"


def run(parsed):
    return {"parsed": parsed, "cpu": {"user": 1.0}, "started_epoch": None}


def test_repetitions_carry_the_latency_of_sockperf():
    parsed = parse("sockperf", load("sockperf/sockperf_pp_udp_64.txt"))
    reps, _dummy = ActionModule._cross_check([run(parsed), run(parsed)], None, "none", tool="sockperf")
    for rep in reps:
        figures = rep["gen_figures"]
        assert figures["latency_usec"] == pytest.approx(9.904)
        assert figures["max_latency_usec"] == pytest.approx(2689.819)
        assert figures["percentiles_usec"] == parsed["percentiles_usec"] and figures["percentiles_usec"]
        assert figures["mode"] == "pp"
        assert rep["gen_pps"] == parsed["pps"]


def test_command_parsed_as_a_tool_keeps_that_tools_figures():
    parsed = parse("iperf3", load("iperf3/iperf3_udp_64.json"))
    reps, _dummy = ActionModule._cross_check([run(parsed)], None, "none", tool="iperf3")
    assert reps[0]["gen_figures"]["lost_packets"] == 9916
    assert reps[0]["gen_figures"]["bits_per_second"] == parsed["bits_per_second"]
    # a parser no generator row uses (pktgen's, through bench_run's command tool) keeps no figures of
    # its own, only the offered load every record carries (its name as the mode)
    assert record_figures("pktgen", {"pps": 1.0, "packets": 5, "devices": []}) == {}
    reps, _dummy = ActionModule._cross_check([run({"pps": 5.0, "packets": 5})], None, "none", tool="pktgen")
    assert reps[0]["gen_figures"] == {"mode": "pktgen", "rate_asked": "max", "rate_achieved": 5.0}


def test_xskgen_records_how_its_socket_was_bound():
    parsed = parse("xskgen", load("xskgen/xskgen_auto_copy_veth.txt"))
    figures = record_figures("xskgen", parsed)
    assert figures["bind_mode"] == "copy"
    assert "zero-copy refused" in figures["mode_note"]
    zc = parse("xskgen", "xskgen: dev=eth1 queue=0 mode=zero-copy size=64 batch=64 busy_poll=0 tx_metadata=off\n"
                         "sent 10 packets 5120 bits, took 1.000000 sec, 0.000005 gbps 0.000010 mpps\n")
    assert record_figures("xskgen", zc) == {"bits": 5120, "gbps": pytest.approx(5.12e-6), "bind_mode": "zero-copy"}
    # udpgen prints the same summary line and binds nothing
    assert "bind_mode" not in record_figures("udpgen", parse("xskgen", load("xskgen/format_from_source.txt")))
