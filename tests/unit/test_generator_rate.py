# SPDX-License-Identifier: GPL-3.0-or-later
"""Rate asked and achieved in the records (traffic/_generator_table.py): record keys and warnings."""

from __future__ import annotations

from pathlib import Path

from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._generator_table import (
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
