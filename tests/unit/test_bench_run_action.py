# SPDX-License-Identifier: GPL-3.0-or-later
"""bench_run's action: a DUT sampler that started after the generator (its module start-up outran
the lead on a loaded host) makes the point run again with a longer lead, not fail."""

from __future__ import annotations

from ansible_collections.xdplab.testbed.plugins.action import bench_run
from ansible_collections.xdplab.testbed.plugins.action.bench_run import ActionModule

LATE = {"sampler": {"started_epoch": 105.0}, "runs": [{"started_epoch": 100.0}], "failed": True,
        "msg": "the counter was already moving at the first sample"}
FOREIGN = {"sampler": {"started_epoch": 95.0}, "runs": [{"started_epoch": 100.0}], "failed": True,
           "msg": "the counter was already moving at the first sample"}


def drive(outcomes):
    action = ActionModule.__new__(ActionModule)
    leads = []

    def once(args, module_args, reps, params, task_vars, lead):
        leads.append(lead)
        return outcomes[len(leads) - 1]

    action._continuous_once = once
    result = action._continuous({"dut": "dut", "lead": 1.0}, {}, 3, {}, {})
    return result, leads


def test_a_late_sampler_is_retried_with_a_longer_lead():
    good = ([{"started_epoch": 200.0}], {"bursts": []})
    result, leads = drive([(None, LATE), good])
    assert result == good
    assert leads == [1.0, 3.0]


def test_traffic_already_flowing_before_the_sampler_fails_at_once():
    # The sampler read before the generator started: foreign traffic, not a late sampler.
    result, leads = drive([(None, FOREIGN)])
    assert result == (None, FOREIGN) and leads == [1.0]


def test_retries_are_bounded():
    result, leads = drive([(None, LATE)] * bench_run.LATE_SAMPLER_ATTEMPTS)
    assert result == (None, LATE)
    assert leads == [1.0, 3.0, 9.0][:bench_run.LATE_SAMPLER_ATTEMPTS]
