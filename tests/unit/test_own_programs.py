# SPDX-License-Identifier: GPL-3.0-or-later
"""Programs of the user's own as bench scenarios (bench_programs): the rows the bench_scenarios filter
adds to the role's table, the errors that name a bad entry, and the runs counter that counts them."""

from __future__ import annotations

import pathlib

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.filter.bench_scenarios import bench_scenarios
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic import _dut_counters
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._own_programs import (
    OwnProgramError,
    scenario_rows,
)

ROOT = pathlib.Path(__file__).resolve().parents[2]
TABLE = yaml.safe_load((ROOT / "roles/bench/vars/main.yml").read_text())["__bench_scenario_table"]


def test_an_xdp_source_and_a_tc_object_become_rows():
    rows = scenario_rows({"mine": {"source": "/src/mine.bpf.c"},
                          "mine_tc": {"object": "/src/t.o", "hook": "tc"},
                          "pick": {"object": "/src/two.o", "program": "second"}}, TABLE, "/var/lib/xdplab/xdp/")
    assert rows["mine"]["attach"] == [{"at": "dut", "port": "dut", "program": None,
                                       "object": "/var/lib/xdplab/xdp/own/mine.o"}]
    assert rows["mine"]["counter"] == {"type": "runs", "hook": "xdp"} and "hook" not in rows["mine"]
    assert rows["mine"]["own"] == {"name": "mine", "kind": "source", "path": "/src/mine.bpf.c",
                                   "object": "/var/lib/xdplab/xdp/own/mine.o", "hook": "xdp"}
    assert "/src/mine.bpf.c" in rows["mine"]["title"]
    tc = rows["mine_tc"]
    assert tc["hook"] == "tc" and tc["hook_object"] == "/var/lib/xdplab/xdp/own/mine_tc.o"
    assert tc["hook_section"] == "tc" and tc["counter"] == {"type": "runs", "hook": "tc"} and "attach" not in tc
    assert rows["pick"]["attach"][0]["program"] == "second"
    # the collection's table comes first and stays as it is
    merged = bench_scenarios(TABLE, {"mine": {"source": "/src/mine.bpf.c"}}, "/x")
    assert list(merged) == [*TABLE, "mine"] and all(merged[k] == TABLE[k] for k in TABLE)
    assert bench_scenarios(TABLE, {}, "/x") == TABLE


@pytest.mark.parametrize(("programs", "named"), [
    ({"xdp_drop": {"source": "/a.bpf.c"}}, "one of the collection's scenarios"),
    ({"9lives": {"source": "/a.bpf.c"}}, "'9lives'"),
    ({"a b": {"source": "/a.bpf.c"}}, "'a b'"),
    ({"mine": {}}, "exactly one of source"),
    ({"mine": {"source": "/a.bpf.c", "object": "/a.o"}}, "exactly one of source"),
    ({"mine": {"source": "a.bpf.c"}}, "'a.bpf.c'"),
    ({"mine": {"source": "/x/../etc/a.bpf.c"}}, "without '..'"),
    ({"mine": {"source": "/a.c"}}, "must end in .bpf.c"),
    ({"mine": {"object": "/a.o", "hook": "lwt"}}, "'lwt'"),
    ({"mine": {"object": "/a.o", "program": "x;rm"}}, "'x;rm'"),
    ({"mine": {"object": "/a.o", "section": "tc x"}}, "'tc x'"),
    ({"mine": {"object": "/a.o", "hook": "tc", "program": "f"}}, "chosen by its section"),
    ({"mine": {"object": "/a.o", "sources": "/b"}}, "unknown key(s) sources"),
    ({"mine": "/a.o"}, "must be a dict"),
    (["mine"], "must be a dict of scenario name"),
])
def test_a_bad_entry_is_named(programs, named):
    with pytest.raises(OwnProgramError) as err:
        scenario_rows(programs, TABLE, "/x")
    assert named in str(err.value)
    with pytest.raises(AnsibleFilterError, match="bench_programs"):
        bench_scenarios(TABLE, programs, "/x")


def test_runs_counter_spec():
    spec = _dut_counters.check_spec({"type": "runs", "interface": "veth0"})
    assert spec["hook"] == "xdp" and _dut_counters.describe(spec) == "runs of the xdp program on veth0"
    assert _dut_counters.describe(_dut_counters.check_spec({"type": "runs", "interface": "veth0", "hook": "tc"})) \
        == "runs of the tc program on veth0"
    with pytest.raises(_dut_counters.CounterError, match="'lwt'"):
        _dut_counters.check_spec({"type": "runs", "interface": "veth0", "hook": "lwt"})
    with pytest.raises(_dut_counters.CounterError, match="interface"):
        _dut_counters.check_spec({"type": "runs", "interface": "a/b"})


def test_runs_counter_refuses_when_bpf_stats_are_off(tmp_path, monkeypatch):
    off = tmp_path / "bpf_stats_enabled"
    off.write_text("0\n")
    monkeypatch.setattr(_dut_counters, "BPF_STATS", str(off))
    assert not _dut_counters.bpf_stats_enabled(str(off))
    with pytest.raises(_dut_counters.CounterError, match=r"kernel.bpf_stats_enabled is 1, and it is not"):
        _dut_counters.make_reader({"type": "runs", "interface": "veth0"})
    off.write_text("1\n")
    assert _dut_counters.bpf_stats_enabled(str(off))
    # switched on, the reader looks for the program: an interface without one is named
    with pytest.raises(_dut_counters.CounterError, match="cannot read runs of the xdp program on xdplab-none0"):
        _dut_counters.make_reader({"type": "runs", "interface": "xdplab-none0"})
