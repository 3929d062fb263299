# SPDX-License-Identifier: GPL-3.0-or-later
"""bench_run's per-repetition cross-check: short bursts, signed loss, calibrated bound labels,
alignment of bursts to runs by start time; the end-of-run summary table shows the warnings."""

from __future__ import annotations

import pytest
from ansible_collections.xdplab.testbed.plugins.action.bench_run import ActionModule, align_runs, overall_bound
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_schema import build_record, record_filename
from ansible_collections.xdplab.testbed.plugins.module_utils.results._run_summary import table
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._counter_bursts import Burst, SamplingError


def run(packets, pps=None, started=None):
    return {"parsed": {"packets": packets, "seconds": 1.0, "pps": pps or float(packets)}, "cpu": {},
            "started_epoch": started}


def sample(bursts, ethtool=None):
    return {"bursts": bursts, "counter": {"description": "xdp drop"}, "ethtool": ethtool or {}, "cpu": {}}


def burst(packets, rate, short=False):
    return {"packets": packets, "rate": rate, "interior": not short, "short": short, "ramp_trimmed": 0}


def test_surplus_is_a_warning_naming_it():
    reps, _dummy = ActionModule._cross_check([run(1000)], sample([burst(1200, 1200.0)]), "continuous")
    assert reps[0]["loss"] == pytest.approx(-0.2)
    assert "surplus of 200 packets" in reps[0]["warning"]


def test_bound_needs_the_calibration():
    runs = [run(1000, 5.8e6), run(1000, 5.8e6)]
    samp = sample([burst(1000, 5.8e6), burst(1000, 5.8e6)])
    reps, _dummy = ActionModule._cross_check(runs, samp, "continuous")
    assert [r["bound"] for r in reps] == ["undetermined"] * 2 and overall_bound(reps) == "undetermined"
    reps, _dummy = ActionModule._cross_check(runs, samp, "continuous", generator_max=6.0e6)
    assert overall_bound(reps) == "generator-bound"
    reps, counters = ActionModule._cross_check(runs, sample(samp["bursts"], {"veth0": {"rx_queue_0_drops": 0,
                                                                                       "rx_missed_errors": 7}}),
                                               "continuous", generator_max=6.0e6)
    assert counters["dut_drops"] == 7 and overall_bound(reps) == "dut-bound"


def test_short_burst_flagged_in_reps():
    reps, _dummy = ActionModule._cross_check([run(1000), run(1000)],
                                             sample([burst(1000, 1e6), burst(1000, 2e6, True)]), "continuous")
    assert [r["dut_short"] for r in reps] == [False, True]


def _b(t):
    return Burst(0, 1, 1, 1.0, 1.0, True, t_start=t)


def test_align_runs_by_start_times():
    runs = [{"started_epoch": 1000.0, "elapsed": 2.5}, {"started_epoch": 1003.0, "elapsed": 2.5},
            {"started_epoch": 1006.0, "elapsed": 2.5}]
    # bursts found in an order that is not the runs' (and an offset between the clocks)
    bursts = [_b(4.1), _b(1.05), _b(7.0)]
    assert align_runs(runs, bursts, started_epoch=999.0) == [1, 0, 2]
    with pytest.raises(SamplingError, match="run 3"):
        align_runs(runs, [_b(1.05), _b(4.1), _b(20.0)], started_epoch=999.0)
    assert align_runs([{}, {}], [_b(0), _b(1)], started_epoch=None) == [0, 1]


def _rec(warnings=None, reps=None):
    return build_record(run_id="20261129T215000Z-aaaaaa", scenario="xdp_drop", variant="baseline", tool="xdpgen",
                        params={"pkt_size": 64}, samples=[1e6, 1.1e6, 0.9e6], started="2026-11-29T21:50:00Z",
                        duration_s=3.0, extra={"warnings": warnings or [], "reps": reps or [], "bound": "undetermined"})


def test_summary_shows_warnings_caveat_and_signed_loss():
    text = table([_rec(["repetition(s) 2 of 3: burst shorter than 3 interior sampling intervals"],
                       [{"loss": 0.001}, {"loss": -0.05}])])
    assert "WARNING: xdp_drop/baseline: repetition(s) 2 of 3: burst shorter" in text
    assert "-5.00% surplus" in text
    assert "Caveat: n counts repetitions of one back-to-back run" in text
    # ns/packet column: the comparison estimator (mean of per-repetition ns/packet)
    mean_ns = sum(1e9 / x for x in (1e6, 1.1e6, 0.9e6)) / 3
    assert f"{mean_ns:.2f}" in text


def test_summary_zero_variance_no_interval():
    rec = build_record(run_id="20261129T215000Z-aaaaaa", scenario="s", variant="v", tool="xdpgen", params={},
                       samples=[1e6, 1e6], started="2026-11-29T21:50:00Z", duration_s=1.0)
    assert "zero variance, no interval" in table([rec])


def test_replicate_validated_and_in_file_name():
    rep = {"level": "round", "id": 3}
    rec = build_record(run_id="20261129T215000Z-aaaaaa", scenario="s", variant="v", tool="xdpgen", params={},
                       samples=[1e6], started="2026-11-29T21:50:00Z", duration_s=1.0, extra={"replicate": rep})
    assert rec["replicate"] == rep
    assert record_filename("s", "v", {}, rep).endswith("__round-3.json")
    assert record_filename("s", "v", {}, rep) != record_filename("s", "v", {}, {"level": "round", "id": 4})
    with pytest.raises(ValueError, match="replicate.level must be one of repetition, run, boot, round, got 'rnd'"):
        build_record(run_id="20261129T215000Z-aaaaaa", scenario="s", variant="v", tool="xdpgen", params={},
                     samples=[1e6], started="2026-11-29T21:50:00Z", duration_s=1.0,
                     extra={"replicate": {"level": "rnd", "id": 1}})


@pytest.mark.parametrize(("args", "needle"), [
    ({"generator_max": 0.0}, "generator_max must be a rate > 0 \\(packets/s\\), got 0.0"),
    ({"generator_max": -5.0}, "got -5.0"),
    ({"replicate": {"level": "round"}}, "replicate must be \\{'level': ..., 'id': ...\\}"),
    ({"replicate": {"level": "round", "id": ""}}, "replicate.id must be a non-empty string or an integer, got ''"),
])
def test_bad_calibration_and_replicate_named(args, needle):
    from ansible_collections.xdplab.testbed.plugins.action.bench_run import check_calibration
    from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._xdpgen_trafgen_argv import GeneratorParamError

    with pytest.raises(GeneratorParamError, match=needle):
        check_calibration(args)
    check_calibration({"generator_max": 6e6, "replicate": {"level": "round", "id": 1}})
