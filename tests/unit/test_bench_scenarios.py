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


def test_argument_spec_names_every_row_of_the_table():
    # bench_scenarios also takes the names of bench_programs: prepare.yml checks the names, not choices
    options = SPEC["argument_specs"]["main"]["options"]
    assert "choices" not in options["bench_scenarios"]
    described = " ".join(options["bench_scenarios"]["description"])
    assert all(name in described for name in TABLE), [n for n in TABLE if n not in described]
    assert set(DEFAULTS["bench_scenarios"]) <= set(TABLE)
    assert options["bench_programs"]["default"] == DEFAULTS["bench_programs"] == {}


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


def _trusted(value):
    from ansible.template import trust_as_template

    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, dict):
        return {k: _trusted(v) for k, v in value.items()}
    return value


def _attachments(scenario: str, dut_programs: dict) -> list[tuple[str, str, str]]:
    """(host, interface, program) of every attachment scenario.yml makes for a scenario, rendered by Ansible."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar

    tasks = yaml.safe_load((ROOT / "roles/bench/tasks/scenario.yml").read_text())
    block = _trusted(next(t for t in tasks if "block" in t)["vars"])
    variables = {"__bench_table": TABLE, "__bench_scenario": scenario, "bench_dut": "dut", "bench_xdp_dir": "/x",
                 "bench_generator": "gen", "bench_sink": "sink", "bench_dut_interface": "veth0",
                 "bench_dut_egress_interface": "veth1", "bench_gen_interface": "gveth0",
                 "bench_sink_interface": "sveth0",
                 "bench_gen_xdp_program": "xdp_pass", "bench_dut_programs": dut_programs, **block}
    out = Templar(loader=DataLoader(), variables=variables).template(block["__bench_attachments"])
    for a in out:  # the object is the program's own file in bench_xdp_dir
        assert a["object"] == f"/x/{a['program']}.o" and a["section"] is None, a
    return [(a["host"], a["interface"], a["program"]) for a in out]


def test_dut_programs_replace_only_the_duts_own_program():
    assert _attachments("xdp_drop", {}) == [("dut", "veth0", "xdp_drop"), ("gen", "gveth0", "xdp_pass")]
    assert _attachments("xdp_drop", {"xdp_drop": "xdp_drop_work"}) == [
        ("dut", "veth0", "xdp_drop_work"), ("gen", "gveth0", "xdp_pass")]
    # xdp_tx attaches xdp_drop on the generator too: that one stays
    assert _attachments("xdp_tx", {"xdp_tx": "xdp_drop_work"}) == [
        ("dut", "veth0", "xdp_drop_work"), ("gen", "gveth0", "xdp_drop")]
    # a swap named for another scenario changes nothing here
    assert _attachments("xdp_tx", {"xdp_drop": "xdp_drop_work"})[0] == ("dut", "veth0", "xdp_tx")
