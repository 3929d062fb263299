# SPDX-License-Identifier: GPL-3.0-or-later
"""The A/B loop's plan of one boot (results._ab_guest_plan, filter ab_guest_plan)."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.filter.ab_guest_plan import ab_guest_plan
from ansible_collections.xdplab.testbed.plugins.module_utils.results._ab_guest_plan import (
    AB_SCENARIOS,
    boot_guest_plan,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.results._rounds import boot_plan
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._pktgen_proc import check_spec

BOOTS = boot_plan(["baseline", "patched"], 3)


def test_steps_interleave_scenarios_and_name_the_kernel_and_boot():
    plan = boot_guest_plan("ab-1", BOOTS[1], ["pktgen_xmit", "pktgen_burst"], 2, 1.5,
                           environment={"kernel_variant": "patched"}, expect_kernel="6.1.0-patched")
    assert [(s["scenario"], s["repetition"]) for s in plan["steps"]] == [
        ("pktgen_xmit", 1), ("pktgen_burst", 1), ("pktgen_xmit", 2), ("pktgen_burst", 2)]
    assert {s["variant"] for s in plan["steps"]} == {"patched"} and plan["variants"] == {"patched": {}}
    assert [s["index"] for s in plan["steps"]] == [0, 1, 2, 3]
    keys = [s["key"] for s in plan["steps"]]
    assert keys[0] == keys[2] and keys[1] == keys[3] and keys[0] != keys[1]  # one record file per scenario
    assert all(k.startswith("patched__") and k.endswith(".json") for k in keys), keys
    assert plan["replicate"] == {"level": "boot", "id": "02-patched"}
    assert plan["build"] is None and plan["duration"] == 1.5 and plan["expect_kernel"] == "6.1.0-patched"
    assert plan["environment"] == {"kernel_variant": "patched"}
    assert plan["steps"][1]["params"] == AB_SCENARIOS["pktgen_burst"]["pktgen"]


def test_both_kernels_get_equal_params_so_their_records_match():
    a = boot_guest_plan("ab-1", BOOTS[0], ["pktgen_xmit"], 1, 1)
    b = boot_guest_plan("ab-1", BOOTS[1], ["pktgen_xmit"], 1, 1)
    assert a["steps"][0]["params"] == b["steps"][0]["params"]
    assert a["steps"][0]["variant"] != b["steps"][0]["variant"]


def test_every_table_row_is_a_valid_pktgen_spec():
    for name, row in AB_SCENARIOS.items():
        spec = check_spec(dict(row["pktgen"], interface="pg0", duration=1.0))
        assert spec["burst"] >= 1, name
        assert row["measures"], name


@pytest.mark.parametrize(("kwargs", "named"), [
    ({"scenarios": ["pktgen_xmit", "nope"]}, "'nope'"),
    ({"scenarios": []}, "non-empty"),
    ({"scenarios": ["pktgen_xmit", "pktgen_xmit"]}, "distinct"),
    ({"repetitions": 0}, "repetitions"),
    ({"repetitions": True}, "repetitions"),
    ({"duration": 0}, "duration"),
    ({"boot": {"kernel": "x"}}, "boot must be"),
])
def test_bad_input_is_named(kwargs, named):
    args = {"run_id": "r", "boot": BOOTS[0], "scenarios": ["pktgen_xmit"], "repetitions": 1, "duration": 1.0}
    args.update(kwargs)
    with pytest.raises(ValueError, match=named):
        boot_guest_plan(**args)


def test_filter_wraps_errors_and_passes_values():
    plan = ab_guest_plan(BOOTS[2], run_id="r", scenarios=["pktgen_burst"], repetitions="2", duration="1")
    assert len(plan["steps"]) == 2 and plan["replicate"]["id"] == "03-patched"
    with pytest.raises(AnsibleFilterError, match="ab_guest_plan: unknown loop scenario"):
        ab_guest_plan(BOOTS[0], run_id="r", scenarios=["xdp_drop"])
