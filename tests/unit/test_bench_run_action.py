# SPDX-License-Identifier: GPL-3.0-or-later
"""bench_run's action: a DUT sampler that started after the generator (its module start-up outran
the lead on a loaded host), or traffic already arriving at the sampler's first reading, makes the
point run again with a longer lead, not fail; traffic that keeps arriving fails it after the last try."""

from __future__ import annotations

from ansible_collections.xdplab.testbed.plugins.action import bench_run
from ansible_collections.xdplab.testbed.plugins.action.bench_run import ActionModule

LATE = {"sampler": {"started_epoch": 105.0}, "runs": [{"started_epoch": 100.0}], "failed": True,
        "msg": "the counter was already moving at the first sample"}
FOREIGN = {"sampler": {"started_epoch": 95.0}, "runs": [{"started_epoch": 100.0}], "failed": True,
           "msg": "the counter was already moving at the first sample", "traffic_at_start": True}
# a point that failed otherwise, the sampler having read first
OTHER = {"sampler": {"started_epoch": 95.0}, "runs": [{"started_epoch": 100.0}], "failed": True,
         "msg": "DUT counter showed 2 bursts (expected 3, one per repetition)"}


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


def test_traffic_at_the_first_reading_is_tried_again_and_fails_only_when_it_keeps_flowing():
    # The sampler read before the generator started, yet the counter moved: a transient (a real NIC's
    # link coming back after an XDP detach reset it) is gone at the next try, with a longer lead ...
    good = ([{"started_epoch": 200.0}], {"bursts": []})
    result, leads = drive([(None, dict(FOREIGN)), good])
    assert result == good and leads == [1.0, 3.0]
    # ... and traffic that keeps flowing fails the point, saying how often it was tried
    result, leads = drive([(None, dict(FOREIGN)) for _dummy in range(bench_run.LATE_SAMPLER_ATTEMPTS)])
    assert result[0] is None and leads == [1.0, 3.0, 9.0][:bench_run.LATE_SAMPLER_ATTEMPTS]
    assert result[1]["msg"] == ("the counter was already moving at the first sample "
                                "(in 3 tries with leads of 1, 3, 9 s)")


def test_another_failure_with_an_early_sampler_fails_at_once():
    result, leads = drive([(None, OTHER)])
    assert result == (None, OTHER) and leads == [1.0]


def test_retries_are_bounded():
    result, leads = drive([(None, LATE)] * bench_run.LATE_SAMPLER_ATTEMPTS)
    assert result == (None, LATE)
    assert leads == [1.0, 3.0, 9.0][:bench_run.LATE_SAMPLER_ATTEMPTS]


def earlier_traffic_series():
    """0.1 s samples: 0.2 s of an earlier step's frames, idle, then one 0.6 s burst of this point."""
    rates = [4e5, 3e5, 0, 0] + [6e6] * 6 + [0] * 4
    times, counts = [0.0], [0]
    for rate in rates:
        times.append(round(times[-1] + 0.1, 6))
        counts.append(counts[-1] + int(rate * 0.1))
    return times, counts


def test_earlier_traffic_that_stopped_before_the_first_run_is_left_out():
    times, counts = earlier_traffic_series()
    samp = {"times": times, "counts": counts, "started_epoch": 100.0}
    kept_t, kept_c = ActionModule._without_earlier_traffic(samp, [{"started_epoch": 100.3}])
    assert kept_t[0] == 0.2 and kept_c[0] == 70000
    assert samp["earlier_traffic"] == {"packets": 70000, "until_s": 0.2}


def test_traffic_still_arriving_when_the_first_run_began_is_kept_for_find_bursts_to_refuse():
    times, counts = earlier_traffic_series()
    for runs in ([{"started_epoch": 100.1}], [{}], []):  # began during it, or no start time to tell
        samp = {"times": times, "counts": counts, "started_epoch": 100.0}
        assert ActionModule._without_earlier_traffic(samp, runs) == (times, counts)
        assert "earlier_traffic" not in samp
