# SPDX-License-Identifier: GPL-3.0-or-later
"""The bisection's filters as playbooks/bisect.yml calls them: bisect_next, bisect_decide (with the
default threshold), bisect_report; bad input is an AnsibleFilterError naming it."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.filter.bisect_cpu import bisect_cpu
from ansible_collections.xdplab.testbed.plugins.filter.bisect_decide import bisect_decide
from ansible_collections.xdplab.testbed.plugins.filter.bisect_next import bisect_next
from ansible_collections.xdplab.testbed.plugins.filter.bisect_report import bisect_report
from ansible_collections.xdplab.testbed.plugins.module_utils.results._statistics import min_detectable_effect

SERIES = [{"subject": s, "patch_id": c * 40, "path": f"/r/series/000{i}.patch", "entry": {"path": "x"}}
          for i, (s, c) in enumerate([("a: one", "1"), ("b: two", "2"), ("c: three", "3")], start=1)]


def test_next_numbers_the_measured_steps_and_spends_alpha():
    assert bisect_next([], 3) == {"next": 3, "step": 1, "alpha": pytest.approx(0.05 / 4)}
    steps = [{"prefix": 3, "decision": "moved"}, {"prefix": 2, "decision": "skip"}]
    assert bisect_next(steps, 3) == {"next": 1, "step": 2, "alpha": pytest.approx(0.05 / 4)}
    with pytest.raises(AnsibleFilterError, match="bisect_next: prefix 4 is not one of 1..3"):
        bisect_next([{"prefix": 4, "decision": "moved"}], 3)
    with pytest.raises(AnsibleFilterError, match="bisect_next: a step is a mapping with prefix and decision"):
        bisect_next([{"prefix": 3}], 3)


def test_decide_with_the_default_threshold_returns_it():
    values = {"baseline": [3000.0, 3100.0, 2900.0], "candidate": [7000.0, 7100.0, 6900.0]}
    d = bisect_decide(values, alpha=0.01)
    assert d["decision"] == "moved" and d["direction"] == "slower"
    assert d["threshold"] == pytest.approx(min_detectable_effect(100.0, 3))
    given = bisect_decide(values, alpha=0.01, threshold=500, looks=[3, 6])
    assert given["threshold"] == 500.0 and given["level"] == pytest.approx(1 - 0.01 / 2)
    with pytest.raises(AnsibleFilterError, match="bisect_decide: .*looks must be boots per kernel"):
        bisect_decide(values, alpha=0.01, threshold=1, looks=[1])
    with pytest.raises(AnsibleFilterError, match="bisect_decide: 'candidate'"):
        bisect_decide({"baseline": [1.0, 2.0, 3.0]}, alpha=0.01, threshold=1)


def test_report_keeps_the_subjects_and_patch_ids_only():
    steps = [{"prefix": 3, "step": 1, "decision": "not_moved", "boots": 5, "delta": -12.0, "ci": [-300.0, 276.0],
              "level": 0.9958, "direction": None}]
    state = {"series": SERIES, "steps": steps, "threshold": 1500.0, "alpha": 0.05, "looks": [3, 5, 8],
             "result": bisect_next(steps, 3)["result"], "scenario": "pktgen_xmit", "threshold_source": "given"}
    out = bisect_report(state)
    assert out["summary"]["series"] == [{"subject": p["subject"], "patch_id": p["patch_id"], "index": i}
                                        for i, p in enumerate(SERIES, start=1)]
    assert "no patch moves ns/packet by >= 1500 ns/packet" in out["text"].splitlines()[0]
    assert out["markdown"].startswith("### Bisection of 3 patches, pktgen_xmit: no patch moves")
    with pytest.raises(AnsibleFilterError, match="bisect_report: .*needs 'steps'"):
        bisect_report({k: v for k, v in state.items() if k != "steps"})


def test_cpu_takes_the_records_and_refuses_anything_else():
    rec = [{"variant": k, "replicate": {"level": "boot", "id": b},
            "reps": [{"devices": [{"usec_cpu": us, "packets": 100}]}]}
           for k, b, us in (("baseline", "01", 300), ("bisect", "02", 500))]
    assert bisect_cpu(rec, "baseline", "bisect")["delta"] == pytest.approx(2000.0)
    with pytest.raises(AnsibleFilterError, match="bisect_cpu: the records must be a list of mappings, got str"):
        bisect_cpu("records", "baseline", "bisect")
