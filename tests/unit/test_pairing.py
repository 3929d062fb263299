# SPDX-License-Identifier: GPL-3.0-or-later
"""bench_compare pairs only like with like: scenario, params, tool, xdpgen mode, datapath; what does
not pair is listed with the params that differ; another variant is never pooled into a side."""

from __future__ import annotations

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.common._atomic_files import write_json_atomic
from ansible_collections.xdplab.testbed.plugins.module_utils.results import _report
from ansible_collections.xdplab.testbed.plugins.module_utils.results._compare import generator_mode, match
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_files import RecordError, load_results
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_schema import build_record, record_filename


def rec(scenario="xdp_drop", variant="baseline", params=None, samples=(1e6, 1.01e6, 0.99e6), tool="xdpgen",
        reps=None, env=None, run_id="20261129T215000Z-aaaaaa"):
    extra = {"reps": reps} if reps else None
    return build_record(run_id=run_id, scenario=scenario, variant=variant, tool=tool,
                        params=params or {"pkt_size": 64}, samples=list(samples), started="2026-11-29T21:50:00Z",
                        duration_s=3.0, environment=env or {}, extra=extra)


def put(d, r):
    d.mkdir(parents=True, exist_ok=True)
    path = d / record_filename(r["scenario"], r["variant"], r["params"])
    write_json_atomic(str(path), r)
    return str(path)


def test_two_single_records_of_different_things_are_not_paired(tmp_path):
    a = put(tmp_path / "a", rec(params={"pkt_size": 64, "xdpgen_mode": "packet"}))
    b = put(tmp_path / "b", rec(scenario="tc_drop", variant="patched", params={"pkt_size": 1500}))
    with pytest.raises(RecordError) as err:
        match(load_results(a), load_results(b))
    msg = str(err.value)
    assert "scenario xdp_drop vs tc_drop" in msg and "pkt_size 64 vs 1500" in msg
    assert "xdpgen_mode packet vs live" in msg


def test_generator_mode_from_the_repetitions_when_params_lack_it(tmp_path):
    packet = rec(reps=[{"gen_figures": {"mode": "packet"}}] * 3)
    live = rec(variant="patched", reps=[{"gen_figures": {"mode": "live"}}] * 3)
    assert generator_mode(packet) == "packet" and generator_mode(live) == "live"
    assert generator_mode(rec(tool="pktgen")) is None
    with pytest.raises(RecordError, match="xdpgen_mode packet vs live"):
        match([dict(packet, _path="a.json")], [dict(live, _path="b.json")])


def test_unmatched_names_the_differing_params_in_every_text_format(tmp_path):
    put(tmp_path / "a", rec())
    put(tmp_path / "a", rec(params={"pkt_size": 1500, "duration": 10}))
    put(tmp_path / "b", rec(variant="patched"))
    put(tmp_path / "b", rec(variant="patched", params={"pkt_size": 1500, "duration": 5}))
    pairs, unmatched = match(load_results(str(tmp_path / "a")), load_results(str(tmp_path / "b")))
    assert len(pairs) == 1 and len(unmatched) == 2
    assert {u["side"] for u in unmatched} == {"baseline", "candidate"}
    base = next(u for u in unmatched if u["side"] == "baseline")
    assert base["differs"] == [{"param": "duration", "this": 10, "other": 5}]
    report = _report.build([str(tmp_path / "a"), str(tmp_path / "b")])
    for fmt in ("text", "markdown", "html"):
        dest = tmp_path / f"r.{fmt}"
        _report.render(report, fmt, str(dest))
        assert "differs from the closest candidate in duration 10 vs 5" in " ".join(dest.read_text().split()), fmt


def test_another_variant_is_never_pooled_into_a_side(tmp_path):
    # a patched run written into the baseline's directory: not one more unit of the baseline
    put(tmp_path / "a" / "run1", rec())
    put(tmp_path / "a" / "run2", rec(variant="patched", run_id="20261129T215100Z-bbbbbb"))
    put(tmp_path / "b", rec(variant="patched", run_id="20261129T215200Z-cccccc"))
    with pytest.raises(RecordError, match=r"holds records of 2 variants \(baseline, patched\)"):
        match(load_results(str(tmp_path / "a")), load_results(str(tmp_path / "b")))
    pairs, _dummy = match(load_results(str(tmp_path / "a")), load_results(str(tmp_path / "b")),
                          base_variant="baseline")
    (b, c), = pairs
    assert [r["variant"] for r in b] == ["baseline"] and [r["variant"] for r in c] == ["patched"]


def test_sweep_datapaths_pair_by_kernel_and_datapath(tmp_path):
    # a scenario sweep's record: variant is the datapath, the kernel is environment.kernel_variant
    for kernel, d in (("baseline", "a"), ("patched", "b")):
        for dp in ("xdp_flow", "tc_bpf"):
            put(tmp_path / d, rec(scenario="flow", variant=dp, env={"kernel_variant": kernel}))
    pairs, unmatched = match(load_results(str(tmp_path / "a")), load_results(str(tmp_path / "b")))
    assert not unmatched
    assert sorted((b[0]["variant"], c[0]["variant"]) for b, c in pairs) == [("tc_bpf", "tc_bpf"),
                                                                            ("xdp_flow", "xdp_flow")]


def test_tool_must_agree(tmp_path):
    with pytest.raises(RecordError, match="tool xdpgen vs pktgen"):
        match([dict(rec(), _path="a.json")], [dict(rec(variant="p", tool="pktgen"), _path="b.json")])
