# SPDX-License-Identifier: GPL-3.0-or-later
"""NDR / PDR search planner (traffic/_rate_search.py) against simulated DUTs."""

from __future__ import annotations

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._rate_search import (
    RateSearch,
    SearchError,
    search_from_spec,
    trial_counts,
)

SENT = 1_000_000


def dut(capacity: float):
    """A DUT that forwards at most `capacity` packets/s: loses the rest of the offered load."""
    def trial(rate: float) -> tuple[int, int]:
        return SENT, min(SENT, int(SENT * capacity / rate))
    return trial


def run(search: RateSearch, trial) -> dict:
    while (rate := search.next_rate()) is not None:
        search.record(rate, *trial(rate))
    return search.result()


def test_ndr_found_within_the_resolution_and_confirmed():
    r = run(RateSearch(1_000_000, resolution=0.01), dut(612_345))
    assert r["kind"] == "NDR" and r["bound"] == "dut" and r["confirmed"] and r["complete"]
    assert 612_345 * 0.99 <= r["rate"] <= 612_345
    assert r["upper"] > 612_345 and (r["upper"] - r["rate"]) <= 0.01 * r["upper"]
    finals = [t for t in r["trail"] if t["phase"] == "final"]
    assert len(finals) == 3 and all(t["rate"] == r["rate"] and t["passed"] for t in finals)
    assert r["trail"][0]["rate"] == 1_000_000 and not r["trail"][0]["passed"]


def test_pdr_allows_its_loss_ratio():
    r = run(RateSearch(1_000_000, loss_ratio=0.05, resolution=0.005), dut(500_000))
    # loss <= 5% up to 500000 / 0.95 = 526316 packets/s
    assert r["kind"] == "PDR" and 526_316 * 0.995 <= r["rate"] <= 526_316


def test_generator_bound_when_the_maximum_passes():
    r = run(RateSearch(400_000), dut(10e6))
    assert r["rate"] == 400_000 and r["bound"] == "generator" and r["confirmed"] and r["trials"] == 4


def test_a_lucky_pass_that_fails_its_final_repetitions_is_not_the_result():
    """A DUT whose first final repetition at every rate above 590000 loses a packet: the search must
    not report such a rate, and goes on below it."""
    base, failed_once = dut(600_000), set()

    def flaky(rate):
        if search.next_phase == "final" and rate > 590_000 and rate not in failed_once:
            failed_once.add(rate)
            return SENT, SENT - 1
        return base(rate)

    search = RateSearch(1_000_000, resolution=0.01)
    r = run(search, flaky)
    assert failed_once and r["rate"] <= 590_000 and r["confirmed"]
    assert any(t["phase"] == "final" and not t["passed"] for t in r["trail"])


def test_nothing_passes_even_at_the_minimum():
    r = run(RateSearch(1_000_000, min_rate=1000), lambda rate: (SENT, SENT // 2))
    assert r["rate"] is None and not r["confirmed"] and r["complete"]
    assert r["trail"][-1]["rate"] == 1000


def test_max_trials_ends_an_unfinished_search():
    r = run(RateSearch(1_000_000, resolution=1e-9, max_trials=5), dut(333_333))
    assert r["trials"] == 5 and not r["complete"]


@pytest.mark.parametrize("kwargs,msg", [
    ({"max_rate": 0}, "max_rate must be > 0, got 0"),
    ({"max_rate": "fast"}, "max_rate must be a number, got 'fast'"),
    ({"max_rate": 1e6, "loss_ratio": 1.0}, "loss_ratio must be below 1, got 1.0"),
    ({"max_rate": 1e6, "loss_ratio": -0.1}, "loss_ratio must be >= 0, got -0.1"),
    ({"max_rate": 1e6, "resolution": 0}, "resolution must be > 0, got 0"),
    ({"max_rate": 1e6, "min_rate": 2e6}, "min_rate 2000000.0 must be below max_rate 1000000.0"),
    ({"max_rate": 1e6, "final_repetitions": -1}, "final_repetitions must be an integer >= 0, got -1"),
    ({"max_rate": 1e6, "max_trials": 0}, "max_trials must be an integer >= 1, got 0"),
])
def test_bad_parameters_named(kwargs, msg):
    with pytest.raises(SearchError) as exc:
        RateSearch(**kwargs)
    assert msg in str(exc.value)


def test_a_trial_must_be_the_one_asked_for():
    s = RateSearch(1e6)
    assert s.next_rate() == 1e6
    with pytest.raises(SearchError, match="trial at rate 5.0: the search asked for 1000000.0"):
        s.record(5.0, 10, 10)
    with pytest.raises(SearchError, match="sent no packets"):
        s.record(1e6, 0, 0)
    with pytest.raises(SearchError, match="received must be an integer >= 0, got -1"):
        s.record(1e6, 10, -1)


def test_a_trial_that_could_not_send_its_rate_loses_against_the_offered_load():
    # a DUT pushing back (the transmit refused and retried) makes the generator send 80% of the rate
    # with nothing dropped: 20% of the offered load is lost
    offered, received = trial_counts(100_000.0, 80_000, 1.0, 80_000)
    assert (offered, received) == (100_000, 80_000)
    s = RateSearch(100_000.0)
    t = s.record(s.next_rate(), offered, received)
    assert not t.passed and t.loss_ratio == pytest.approx(0.2)
    # a generator within 1% of rate x seconds (a paced sender ends up to a slice short, or a little
    # over) offered what it sent: only what the DUT did not count is lost
    assert trial_counts(1000.0, 1010, 1.0, 1005) == (1010, 1005)
    assert trial_counts(100_000.0, 99_990, 1.0, 99_990) == (99_990, 99_990)
    assert trial_counts(100_000.0, 98_999, 1.0, 98_999) == (100_000, 98_999)


@pytest.mark.parametrize("args,msg", [
    ((1e3, -1, 1.0, 5), "gen_packets must be an integer >= 0, got -1"),
    ((1e3, 5, 1.0, 2.5), "dut_packets must be an integer >= 0, got 2.5"),
    ((1e3, 5, 0, 5), "generator seconds must be > 0, got 0"),
])
def test_bad_trial_counts_named(args, msg):
    with pytest.raises(SearchError, match=msg):
        trial_counts(*args)


def test_search_from_the_bench_run_option():
    s = search_from_spec({"max_rate": 2e6, "loss_ratio": 0.005, "final_repetitions": 2.0, "resolution": 0.02})
    assert (s.max_rate, s.loss_ratio, s.final_repetitions, s.resolution) == (2e6, 0.005, 2, 0.02)
    assert search_from_spec({"max_rate": 5e5}).final_repetitions == 3


@pytest.mark.parametrize("spec,msg", [
    ({}, "search needs max_rate > 0.*bench_calibrate.*got None"),
    ({"max_rate": 0.0}, "search needs max_rate > 0.*got 0.0"),
    ({"max_rate": 1e6, "loss": 0.1}, "unknown key.s. loss; known: max_rate, loss_ratio"),
    ({"max_rate": 1e6, "final_repetitions": 1.5}, "final_repetitions must be an integer >= 0, got 1.5"),
    ("fast", "search must be a dict"),
])
def test_bad_search_option_named(spec, msg):
    with pytest.raises(SearchError, match=msg):
        search_from_spec(spec)
