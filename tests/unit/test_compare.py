# SPDX-License-Identifier: GPL-3.0-or-later
"""Reading records back, matching, A/B in ns/packet, sweeps, noise.

Records are built with the lead's record writer (module_utils/results/_record_schema.py), so
what is read here is what bench_run writes.
"""

from __future__ import annotations

import json
import os
import random

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.common._atomic_files import write_json_atomic
from ansible_collections.xdplab.testbed.plugins.module_utils.results._compare import (
    compare_records,
    match,
    noise,
    sweep_tables,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_files import RecordError, load_results
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_schema import (
    build_record,
    record_filename,
)

ENV_A = {"cpu_model": "AMD EPYC", "cpu_mhz": 2596.1, "kernel": "6.18.44", "ethtool": {"veth0": {"ring": {"rx": 256}}}}
ENV_B = {**ENV_A, "kernel": "6.18.44+patched"}


def rec(scenario="xdp_drop", variant="baseline", params=None, samples=(5e6, 5.01e6, 4.99e6), env=None,
        run_id="20261129T215000Z-aaaaaa"):
    env = ENV_A if env is None else env
    return build_record(run_id=run_id, scenario=scenario, variant=variant, tool="xdpgen",
                        params=params or {"pkt_size": 64}, samples=list(samples), environment=env,
                        started="2026-11-29T21:50:00Z", duration_s=3.0)


def put(run_dir, r):
    run_dir.mkdir(parents=True, exist_ok=True)
    return write_json_atomic(str(run_dir / record_filename(r["scenario"], r["variant"], r["params"])), r)


def test_compare_faster_significant():
    b = rec(samples=[5.00e6, 5.01e6, 4.99e6, 5.00e6])
    c = rec(variant="patched", samples=[5.20e6, 5.21e6, 5.19e6, 5.20e6], env=ENV_B)
    out = compare_records(b, c)
    # the estimator: mean of per-unit ns/packet (here one run: units are its repetitions)
    mean_ns = [sum(1e9 / x for x in r["samples"]) / 4 for r in (b, c)]
    assert out["delta_ns_per_packet"] == pytest.approx(mean_ns[1] - mean_ns[0], rel=1e-12)
    assert out["direction"] == "faster"
    assert out["significant"] is True
    assert out["ci95_ns"][1] < 0
    assert out["percent"] == pytest.approx(4.0, abs=1e-3)
    assert out["method"] == "welch-t"
    assert out["environment_diff"] == [{"key": "kernel", "baseline": "6.18.44", "candidate": "6.18.44+patched"}]
    assert out["verdict"].startswith("-7.69 ns/packet (faster)")


def test_compare_overlapping_not_significant():
    b = rec(samples=[5.0e6, 5.3e6, 4.8e6])
    c = rec(variant="patched", samples=[5.05e6, 4.85e6, 5.25e6])
    out = compare_records(b, c)
    assert out["ci95_ns"][0] < 0 < out["ci95_ns"][1]
    assert out["significant"] is False


def test_compare_n1_is_no_interval_never_significant():
    out = compare_records(rec(samples=[5e6]), rec(variant="patched", samples=[6e6]))
    assert out["ci95_ns"] is None and out["significant"] is False
    assert out["note"] == "n=1, no interval"
    assert "n=1, no interval" in out["verdict"]
    assert out["delta_ns_per_packet"] == pytest.approx(1e9 / 6e6 - 200.0)


def test_load_and_match_dirs(tmp_path):
    for pkt in (64, 128):
        put(tmp_path / "runA", rec(params={"pkt_size": pkt}))
        put(tmp_path / "runB", rec(variant="patched", params={"pkt_size": pkt}, env=ENV_B))
    put(tmp_path / "runB", rec(variant="patched", params={"pkt_size": 1500}))
    (tmp_path / "runA" / "run.json").write_text(json.dumps({"run_id": "x"}))
    a, b = load_results(str(tmp_path / "runA")), load_results(str(tmp_path / "runB"))
    pairs, unmatched = match(a, b)
    assert [p[0][0]["params"]["pkt_size"] for p in pairs] == [64, 128]  # numeric param order
    (u,) = unmatched
    assert {k: u[k] for k in ("side", "scenario", "params", "record")} == {
        "side": "candidate", "scenario": "xdp_drop", "params": {"pkt_size": 1500},
        "record": str(tmp_path / "runB" / record_filename("xdp_drop", "patched", {"pkt_size": 1500}))}
    assert u["differs"] == [{"param": "pkt_size", "this": 1500, "other": 64}]


def test_match_variants_in_one_dir(tmp_path):
    put(tmp_path / "run", rec())
    put(tmp_path / "run", rec(variant="patched"))
    recs = load_results(str(tmp_path / "run"))
    pairs, _dummy = match(recs, recs, base_variant="baseline", cand_variant="patched")
    assert [(b[0]["variant"], c[0]["variant"]) for b, c in pairs] == [("baseline", "patched")]
    with pytest.raises(RecordError, match="needs baseline_variant and candidate_variant"):
        match(recs, recs)


def test_nothing_matchable(tmp_path):
    put(tmp_path / "a", rec(scenario="xdp_drop"))
    put(tmp_path / "a", rec(scenario="xdp_drop", params={"pkt_size": 128}))
    put(tmp_path / "b", rec(scenario="xdp_tx", variant="patched"))
    put(tmp_path / "b", rec(scenario="xdp_tx", variant="patched", params={"pkt_size": 128}))
    with pytest.raises(RecordError, match="no records measured the same thing.*differs in scenario xdp_drop vs xdp_tx"):
        match(load_results(str(tmp_path / "a")), load_results(str(tmp_path / "b")))


def test_ambiguous_records_named(tmp_path):
    put(tmp_path / "r1", rec())
    put(tmp_path / "r2", rec())
    put(tmp_path / "c", rec(variant="patched"))
    put(tmp_path / "c", rec(variant="patched", params={"pkt_size": 128}))
    with pytest.raises(RecordError, match="ambiguous"):
        match(load_results(str(tmp_path)), load_results(str(tmp_path / "c")), base_variant="baseline")
    # without a variant, the patched records under tmp_path are never pooled into the baseline side
    with pytest.raises(RecordError, match=r"holds records of 2 variants \(baseline, patched\)"):
        match(load_results(str(tmp_path)), load_results(str(tmp_path / "c")))


@pytest.mark.parametrize("mutate,needle", [
    (lambda r: r.update(schema="xdplab.result/v0"), "schema 'xdplab.result/v0' is not 'xdplab.result/v1'"),
    (lambda r: r.update(samples=[5e6, -1.0]), r"samples\[1\] must be a rate > 0, got -1.0"),
    (lambda r: r.update(samples=[]), "samples is empty"),
    (lambda r: r.pop("scenario"), "record has no 'scenario'"),
    (lambda r: r.update(unit="bps"), "unit 'bps' is not 'pps'"),
])
def test_bad_records_named_by_path(tmp_path, mutate, needle):
    r = rec()
    mutate(r)
    path = tmp_path / "run" / "bad.json"
    path.parent.mkdir()
    path.write_text(json.dumps(r))
    with pytest.raises(RecordError, match=needle) as exc:
        load_results(str(tmp_path / "run"))
    assert str(path) in str(exc.value)


def test_nan_in_json_refused(tmp_path):
    path = tmp_path / "nan.json"
    path.write_text(json.dumps(rec()).replace("5000000.0", "NaN", 1))
    with pytest.raises(RecordError, match="nan.json.*(not valid JSON|not a finite)"):
        load_results(str(path))


def test_empty_and_incomplete_dirs(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(RecordError, match="no result records"):
        load_results(str(tmp_path / "empty"))
    put(tmp_path / "inc", rec())
    (tmp_path / "inc" / "INCOMPLETE").write_text("")
    with pytest.raises(RecordError, match="incomplete"):
        load_results(str(tmp_path / "inc"))
    flagged = load_results(str(tmp_path / "inc"), allow_incomplete=True)
    assert flagged[0]["incomplete"] is True


@pytest.mark.parametrize("plant", ["group-writable", "another user's", "a link"])
def test_a_run_directory_another_user_could_fill_is_refused_naming_it(tmp_path, plant):
    """Records are trusted as a run's own only from a directory nobody else could write them into."""
    root = tmp_path / "results"
    put(root / "run", rec())
    run = root / "run"
    if plant == "group-writable":
        run.chmod(0o775)
    elif plant == "another user's":
        if os.geteuid() != 0:
            pytest.skip("giving a directory to another user needs root")
        os.chown(run, 65534, 65534)
    else:
        put(tmp_path / "elsewhere", rec())
        run = root / "linked"
        run.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(RecordError, match=f"results directory '{run}'"):
        load_results(str(root))
    if plant == "group-writable":
        with pytest.raises(RecordError, match=f"results directory '{run}' is group/world-writable"):
            load_results(str(run))
    else:
        # the directory named is the user's choice: it may be a link, and its owner's records are taken
        assert len(load_results(str(run))) == 1


def test_stored_summary_not_trusted(tmp_path):
    r = rec(samples=[4e6, 4e6])
    r["summary"]["mean"] = 9e9
    put(tmp_path / "run", r)
    (loaded,) = load_results(str(tmp_path / "run"))
    assert loaded["summary"]["mean"] == 4e6


def test_sweep_rows_and_deltas():
    recs = [rec(params={"pkt_size": s}, samples=[p, p]) for s, p in ((1500, 1e6), (64, 5e6), (512, 4e6))]
    (t,) = sweep_tables(recs)
    assert t["varying"] == ["pkt_size"]
    rows = t["rows"]
    assert [r["params"]["pkt_size"] for r in rows] == [64, 512, 1500]  # numeric order
    assert [round(r["ns_per_packet"], 2) for r in rows] == [200.0, 250.0, 1000.0]
    assert rows[0]["delta_prev_ns"] is None and rows[0]["delta_base_ns"] is None
    assert rows[1]["delta_prev_ns"] == pytest.approx(50.0)
    assert rows[2]["delta_prev_ns"] == pytest.approx(750.0)
    assert rows[2]["delta_base_ns"] == pytest.approx(800.0)
    assert [r["n"] for r in rows] == [2, 2, 2]


def test_noise_aa_and_repetitions():
    rng = random.Random(42)
    recs = [rec(samples=[rng.gauss(5e6, 2.5e4) for _dummy in range(5)], run_id=f"r{i}") for i in range(30)]
    nz = noise(recs)
    # 2.5e4 / 5e6 * 200 ns = 1 ns per repetition
    assert nz["pooled_stdev_ns"] == pytest.approx(1.0, rel=0.15)
    assert nz["aa_comparisons"] == 30 * 29 // 2
    assert nz["aa_false_positive_rate"] <= 0.10
    assert 15 <= nz["repetitions_needed"] <= 20  # 2*(1.96+0.84)^2*1^2/1 ~ 15.7, t-corrected
    n1 = noise([rec(samples=[5e6])])
    assert n1["pooled_stdev_ns"] is None and n1["repetitions_needed"] is None
