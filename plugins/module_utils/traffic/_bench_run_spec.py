# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Argument specs of bench_run, shared by its module (generator side) and its action (orchestration).
Private to the xdplab.testbed collection."""

from __future__ import annotations

# What the module on the generator host takes.
GENERATOR_SPEC = dict(
    # A name of the generator table or "command": checked against the table (generator()), not by a
    # choices list, so a new generator is one row there and nothing here.
    tool=dict(type="str", default="xdpgen"),
    params=dict(type="dict", default={}),
    binary=dict(type="path"),
    command=dict(type="list", elements="str"),
    parse_as=dict(type="str"),
    repetitions=dict(type="int", default=3),
    gap=dict(type="float", default=0.6),
    timeout=dict(type="float", default=120.0),
)
GENERATOR_REQUIRED_IF = [("tool", "command", ("command", "parse_as"))]

# What the action adds: the DUT sampler and the record.
ACTION_SPEC = dict(
    GENERATOR_SPEC,
    dut=dict(type="str"),
    counter=dict(type="dict"),
    sampler=dict(type="str", choices=["continuous", "snapshot", "none", "server"], default="continuous"),
    # A server or sink started on the DUT for the point and stopped after it (bench_server):
    # {tool: xsksink|udpsink|sockperf|iperf3, params: {...}, binary: path}.
    server=dict(type="dict"),
    sample_interval=dict(type="float", default=0.1),
    lead=dict(type="float", default=1.0),
    ethtool_interfaces=dict(type="list", elements="str", default=[]),
    dut_cost=dict(type="bool", default=True),
    scenario=dict(type="str", default="adhoc"),
    variant=dict(type="str", default="baseline"),
    run_id=dict(type="str"),
    results_dir=dict(type="path"),
    record_params=dict(type="dict", default={}),
    environment=dict(type="dict", default={}),
    generator_environment=dict(type="dict", default={}),
    # The replication unit the record is (docs/results.md, "Replication units"): {level, id}.
    replicate=dict(type="dict"),
    # Generator-only maximum (pps) from a calibration: "generator-bound" only near it.
    generator_max=dict(type="float"),
    # NDR/PDR search (traffic/_rate_search.py): {max_rate, loss_ratio, min_rate, resolution,
    # final_repetitions, max_trials}; the record is the rate found, with the search's trail.
    search=dict(type="dict"),
)
ACTION_REQUIRED_IF = GENERATOR_REQUIRED_IF + [
    ("sampler", "continuous", ("dut", "counter")),
    ("sampler", "snapshot", ("dut", "counter")),
    ("sampler", "server", ("dut", "server")),
]
