# SPDX-License-Identifier: GPL-3.0-or-later
"""The KTAP reader and the lab's judgement of the kernel's driver selftests."""

from __future__ import annotations

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.results import _ktap

RUN = """\
TAP version 13
1..2
# timeout set to 45
# selftests: drivers/net: ping.py
# KTAP version 1
# 1..3
# ok 1 ping.test_v4
# ok 2 ping.test_v6 # SKIP no IPv6 address on the remote
# not ok 3 ping.test_tcp
# # Totals: pass:1 fail:1 xfail:0 xpass:0 skip:1 error:0
not ok 1 selftests: drivers/net: ping.py # exit=1
# timeout set to 45
# selftests: drivers/net: queues.py
# KTAP version 1
# 1..2
# ok 1 queues.get_queues
# ok 2 queues.addremove_queues # XFAIL channels fixed by the device
# # Totals: pass:1 fail:0 xfail:1 xpass:0 skip:0 error:0
ok 2 selftests: drivers/net: queues.py
"""


def test_programs_and_cases_in_order():
    progs = _ktap.parse(RUN)
    assert [p["program"] for p in progs] == ["ping.py", "queues.py"]
    assert progs[0]["collection"] == "drivers/net" and progs[0]["status"] == "fail"
    assert [(c["n"], c["name"], c["status"]) for c in progs[0]["cases"]] == [
        (1, "ping.test_v4", "pass"), (2, "ping.test_v6", "skip"), (3, "ping.test_tcp", "fail")]
    assert progs[0]["cases"][1]["reason"] == "no IPv6 address on the remote"
    assert progs[1]["cases"][1]["status"] == "xfail"


def test_totals_count_cases():
    assert _ktap.totals(_ktap.parse(RUN)) == {"pass": 2, "fail": 1, "skip": 1, "xfail": 1, "error": 0}


def test_a_program_without_cases_counts_as_one():
    progs = _ktap.parse("TAP version 13\n1..1\n# selftests: drivers/net/hw: csum.py\n"
                        "ok 1 selftests: drivers/net/hw: csum.py # SKIP no csum binary\n")
    assert progs[0]["cases"] == [] and progs[0]["status"] == "skip"
    assert _ktap.totals(progs)["skip"] == 1


def test_judge_accepts_only_explained_skips_and_failures():
    progs = _ktap.parse(RUN)
    problems = _ktap.judge(progs, {})
    assert problems == ["ping.py: ping.test_v6 skip (no IPv6 address on the remote), with no explanation",
                        "ping.py: ping.test_tcp fail, with no explanation"]
    assert _ktap.judge(progs, {"ping.test_v6": "v4 only lab", "ping.test_tcp": "no socat"}) == []


def test_a_whole_program_can_be_explained():
    progs = _ktap.parse(RUN)
    assert _ktap.judge(progs, {"ping.py": "the emulated device drops ICMP"}) == []


def test_an_explanation_of_a_case_that_passes_is_stale():
    problems = _ktap.judge(_ktap.parse(RUN), {"ping.test_v4": "igb under TCG drops pings",
                                              "ping.test_v6": "x", "ping.test_tcp": "y"})
    assert problems == ["ping.py: ping.test_v4 passed, but the lab explains it as not passing: "
                        "'igb under TCG drops pings'"]


def test_output_cut_off_mid_program_is_an_error():
    text = RUN.split("not ok 1 selftests", maxsplit=1)[0]
    progs = _ktap.parse(text)
    assert progs[-1]["status"] == "error" and len(progs[-1]["cases"]) == 3
    assert _ktap.totals(progs)["fail"] == 1


@pytest.mark.parametrize("text", ["", "make: *** No rule to make target\n", "TAP version 13\n1..0\n"])
def test_no_result_at_all_is_refused(text):
    with pytest.raises(_ktap.KtapError, match="no KTAP result line"):
        _ktap.parse(text)
