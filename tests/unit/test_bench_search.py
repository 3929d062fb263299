# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""bench_run's `search` option: the action drives the NDR/PDR planner trial by trial and records the
final repetitions at the rate found, with the trail (the DUT simulated: a counter read before and
after each generator run)."""

from __future__ import annotations

import pytest
from ansible.utils.display import Display
from ansible_collections.xdplab.testbed.plugins.action.bench_run import ActionModule

CAPACITY = 300_000.0  # packets/s the simulated DUT counts; above it the rest is lost


class Bed:
    def __init__(self, capacity: float = CAPACITY) -> None:
        self.capacity, self.counter, self.rates, self.finished = capacity, 0, [], None

    def snapshot(self, args, module_args, reps, task_vars):
        assert reps == 1 and args["sampler"] == "snapshot"
        rate = module_args["params"]["rate"]
        self.rates.append(rate)
        before = {"counts": [self.counter]}
        got = int(min(rate, self.capacity))
        self.counter += got
        parsed = {"pps": rate, "packets": int(rate), "seconds": 1.0}
        return [{"parsed": parsed, "elapsed": 1.0}], {"snapshots": [(before, {"counts": [self.counter]})]}

    def finish(self, result, args, params, runs, sample, mode, started, stopped, task_vars, more=None):
        self.finished = dict(args=args, params=params, runs=runs, sample=sample, mode=mode, more=more)
        return dict(result, record={"search": more["search"]})


def action(bed: Bed) -> ActionModule:
    am = ActionModule.__new__(ActionModule)
    am._display = Display()
    am._snapshot = bed.snapshot
    am._finish = bed.finish
    return am


def search(bed: Bed, **spec) -> dict:
    args = {"sampler": "snapshot", "search": {"max_rate": 1e6, **spec}, "scenario": "xdp_drop"}
    return action(bed)._search({}, args, {"params": {"interface": "veth0"}}, {"interface": "veth0"}, None, {})


def test_the_search_finds_the_duts_limit_and_records_its_trail():
    bed = Bed()
    out = search(bed, resolution=0.01, final_repetitions=2)
    found = out["record"]["search"]
    assert found["kind"] == "NDR" and found["confirmed"] and found["bound"] == "dut"
    assert CAPACITY * 0.99 <= found["rate"] <= CAPACITY < found["upper"]
    assert found["method"].startswith("binary (RFC 2544")
    assert bed.rates[0] == 1e6 and len(found["trail"]) == len(bed.rates) == found["trials"]
    first = found["trail"][0]
    assert (first["gen_packets"], first["dut_packets"], first["passed"]) == (1_000_000, 300_000, False)
    # the record is the final repetitions at the rate found, labelled as a search
    assert bed.finished["mode"] == "snapshot" and bed.finished["params"]["rate"] == found["rate"]
    assert len(bed.finished["runs"]) == len(bed.finished["sample"]["snapshots"]) == 3  # the pass + 2 finals
    assert bed.finished["args"]["record_params"] == {"search": "NDR", "search_loss_ratio": 0.0}


def test_a_pdr_allows_its_loss():
    out = search(Bed(), loss_ratio=0.05, resolution=0.01, final_repetitions=1)
    found = out["record"]["search"]
    assert found["kind"] == "PDR" and CAPACITY / 0.95 * 0.99 <= found["rate"] <= CAPACITY / 0.95


def test_nothing_passes_is_a_failure_with_the_trail():
    out = search(Bed(capacity=0.0), min_rate=1e5)
    assert out["failed"] and "NDR search found no rate with loss ratio <= 0.0 down to 100000 pps" in out["msg"]
    assert out["search"]["trail"] and not any(t["passed"] for t in out["search"]["trail"])


@pytest.mark.parametrize("capacity", [2e6])
def test_a_generator_bound_point_says_so(capacity):
    found = search(Bed(capacity), final_repetitions=1)["record"]["search"]
    assert found["rate"] == 1e6 and found["bound"] == "generator" and found["trials"] == 2
