# SPDX-License-Identifier: GPL-3.0-or-later
"""Rate asked and achieved in the records (traffic/_generator_table.py): record keys and warnings."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible_collections.xdplab.testbed.plugins.action.bench_run import ActionModule
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._generator_table import (
    GENERATORS,
    offered_load,
    rate_warnings,
    record_figures,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._output_parsers import parse

FIXTURE = Path(__file__).parent / "fixtures" / "xdpgen" / "xdpgen_packet_rate_100k_interval.txt"


def test_xdpgen_record_keeps_mode_rates_and_spread():
    fig = record_figures("xdpgen", parse("xdpgen", FIXTURE.read_text()))
    assert fig["mode"] == "packet" and fig["rate_asked"] == 100000.0 and fig["rate_achieved"] == 99696.85
    assert abs(fig["interval_s"] - 0.1) < 0.001 and fig["intervals"] == 8 and fig["interval_pps_stdev_pct"] > 0
    assert "interval_pps" not in fig  # the series stays in the run's output, not in every record


def test_below_the_asked_rate_is_a_warning_naming_both():
    reps = [{"gen_figures": {"rate_asked": 1e6, "rate_achieved": 989_000.0}},
            {"gen_figures": {"rate_asked": 1e6, "rate_achieved": 991_000.0}},
            {"gen_figures": {"rate_asked": "max", "rate_achieved": 5.0}},
            {"gen_figures": {}}, {}]
    out = rate_warnings(reps, "xdpgen")
    assert out == ["repetition 1: xdpgen sent 989000 packets/s, below the asked rate of 1000000 packets/s "
                   "(98.9%): the offered load is not the one asked for (the generator's limit, or a CPU it shares)"]


def test_within_one_percent_is_no_warning():
    assert rate_warnings([{"gen_figures": {"rate_asked": 100000.0, "rate_achieved": 99696.85}}]) == []


# (tool, params, parsed) -> the offered load its record carries
OFFERED = [
    ("xdpgen", {"rate": 5000}, {"pps": 4990.0, "mode": "packet"}, ("packet", 5000.0, 4990.0)),
    ("xdpgen", {}, {"pps": 7.0e6, "mode": "live"}, ("live", "max", 7.0e6)),
    ("trafgen", {"rate": "20000"}, {"pps": 15000.0}, ("packet", 20000.0, 15000.0)),
    ("trafgen", {"rate": None}, {"pps": 15000.0}, ("packet", "max", 15000.0)),
    ("xskgen", {"rate": 5}, {"pps": 1.0e6, "bind_mode": "zero-copy"}, ("zero-copy", "max", 1.0e6)),
    ("xskgen", {}, {"pps": 1.0e6}, ("af_xdp", "max", 1.0e6)),
    ("udpgen", {}, {"pps": 3.0e5}, ("udp", "max", 3.0e5)),
    ("sockperf", {"mps": 1000}, {"pps": 999.0, "mode": "tp"}, ("tp", 1000.0, 999.0)),
    ("sockperf", {"mps": "max"}, {"pps": 9.0e4, "mode": "pp"}, ("pp", "max", 9.0e4)),
    ("iperf3", {"bitrate": "1G"}, {"pps": 8.0e4, "protocol": "udp"}, ("udp", "max", 8.0e4)),
    ("testpmd", {}, {"pps": 2.0e6}, ("dpdk", "max", 2.0e6)),
    ("pktgen", {"rate": 10}, {"pps": 1.0e6}, ("pktgen", "max", 1.0e6)),
]


@pytest.mark.parametrize(("tool", "params", "parsed", "want"), OFFERED,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(OFFERED)])
def test_every_generator_says_its_mode_and_the_rate_asked_and_achieved(tool, params, parsed, want):
    assert offered_load(tool, params, parsed) == dict(zip(("mode", "rate_asked", "rate_achieved"), want, strict=True))


def test_every_generator_row_is_covered():
    assert set(GENERATORS) <= {c[0] for c in OFFERED}


def test_every_repetition_of_a_paced_trafgen_carries_the_offered_load_and_its_shortfall_warns():
    runs = [{"parsed": {"pps": 15000.0, "packets": 15000, "seconds": 1.0}, "cpu": {}, "started_epoch": None}]
    reps, _dummy = ActionModule._cross_check(runs, None, "none", tool="trafgen", params={"rate": 20000})
    assert reps[0]["gen_figures"] == {"mode": "packet", "rate_asked": 20000.0, "rate_achieved": 15000.0}
    assert rate_warnings(reps, "trafgen") == [
        "repetition 1: trafgen sent 15000 packets/s, below the asked rate of 20000 packets/s (75.0%): the "
        "offered load is not the one asked for (the generator's limit, or a CPU it shares)"]
