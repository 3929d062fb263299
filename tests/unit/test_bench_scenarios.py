# SPDX-License-Identifier: GPL-3.0-or-later
"""The bench scenarios are one table (roles/bench/vars/main.yml); the role's argument spec offers
exactly its rows, and every row names a counter the sampler knows and attachments it can resolve."""

from __future__ import annotations

import pathlib

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
TABLE = yaml.safe_load((ROOT / "roles/bench/vars/main.yml").read_text())["__bench_scenario_table"]
SPEC = yaml.safe_load((ROOT / "roles/bench/meta/argument_specs.yml").read_text())
DEFAULTS = yaml.safe_load((ROOT / "roles/bench/defaults/main.yml").read_text())


def test_argument_spec_choices_are_the_table():
    options = SPEC["argument_specs"]["main"]["options"]
    assert options["bench_scenarios"]["choices"] == list(TABLE)
    assert set(DEFAULTS["bench_scenarios"]) <= set(TABLE)


def test_every_row_is_complete():
    hosts, ports = {"dut", "generator", "sink"}, {"dut", "dut_egress", "generator", "sink"}
    for name, row in TABLE.items():
        assert row.get("title"), name
        assert row["counter"]["type"] in {"xdp", "tc", "nft"}, name
        assert row["counter"]["type"] == "nft" or row["counter"].get("action"), name
        assert row.get("hook", "") in {"", "tc", "nft"}, name
        assert row.get("attach") or row.get("hook"), f"{name}: nothing is set up on the DUT"
        for a in row.get("attach", []):
            assert a["at"] in hosts and a["port"] in ports, (name, a)
            assert (ROOT / "files/xdp" / f"{a['program']}.bpf.c").exists(), (name, a["program"])
            for entry in a.get("map_entries", []):
                assert entry["port"] in ports and "map" in entry and "key" in entry, (name, entry)
