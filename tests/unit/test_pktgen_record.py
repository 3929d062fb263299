# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One pktgen step's record v1: the same from the QEMU guest's sweep and from the pktgen module on a
lab DUT (the pktgen_record filter)."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.filter.pktgen_record import pktgen_record
from ansible_collections.xdplab.testbed.plugins.filter.sweep_merge import sweep_merge
from ansible_collections.xdplab.testbed.plugins.module_utils.results._pktgen_record import pktgen_step_record

SPEC = {"pkt_size": 64, "burst": 8, "clone_skb": 64, "duration": 2.0, "threads": [1]}
# What xdplab.testbed.pktgen returned for a 2 s run on a lab DUT's igb port.
RESULT = {"changed": True, "pps": 61234.5, "packets": 122469, "errors": 0, "seconds": 2.01,
          "cpu": {"system_pct": 48.7, "softirq_pct": 1.2, "busy_pct": 50.3},
          "devices": [{"device": "igb0", "thread": 1, "packets": 122469, "pps": 61234.5}]}


def step(result=None, variant="clone_on", build="baseline"):
    return pktgen_record(RESULT if result is None else result, run_id="20261202-100000-ab12",
                         scenario="pktgen_burst", variant=variant,
                         sweep={"burst": 8, "pkt_size": 64}, spec=SPEC, device_kind="igb",
                         started="2026-12-02T10:00:00Z", environment={"kernel": "6.12.117-vmlab"}, build=build)


def test_the_filter_builds_the_steps_record():
    rec = step()
    assert rec["tool"] == "pktgen" and rec["variant"] == "clone_on" and rec["samples"] == [61234.5]
    assert rec["params"] == {"burst": 8, "pkt_size": 64, "clone_skb": 64, "duration": 2.0, "device": "igb",
                             "threads": 1, "sample": "repetition", "build": "baseline"}
    assert rec["counters"] == {"gen_packets": 122469, "gen_errors": 0}
    assert rec["bound"] == "generator-bound" and rec["environment"]["kernel"] == "6.12.117-vmlab"
    assert rec["reps"][0]["gen_cpu"]["system_pct"] == 48.7 and rec["reps"][0]["gen_seconds"] == 2.01
    assert rec["duration_s"] == pytest.approx(2.01)
    # two repetitions of the point make one record of two samples
    merged = sweep_merge(step(dict(RESULT, pps=60000.0)), sweep_merge(step()))
    assert merged["samples"] == [61234.5, 60000.0] and merged["summary"]["n"] == 2


def test_same_record_as_the_guest_sweep_builds():
    direct = pktgen_step_record(run_id="20261202-100000-ab12", scenario="pktgen_burst", variant="clone_on",
                                sweep={"burst": 8, "pkt_size": 64}, spec=SPEC, result=RESULT, device_kind="igb",
                                environment={"kernel": "6.12.117-vmlab"}, started="2026-12-02T10:00:00Z",
                                duration_s=2.01, build="baseline")
    assert direct == step()
    # no build: the A/B loop's guest (the kernel is the variant)
    assert "build" not in step(build=None)["params"]


def test_a_replicate_names_the_records_unit_and_survives_the_merge():
    unit = {"level": "boot", "id": "03-patched"}
    rec = pktgen_record(RESULT, run_id="20261202-100000-ab12", scenario="pktgen_burst", variant="clone_on",
                        sweep={"burst": 8, "pkt_size": 64}, spec=SPEC, device_kind="igb",
                        started="2026-12-02T10:00:00Z", replicate=unit)
    assert rec["replicate"] == unit
    assert sweep_merge(dict(rec, samples=[60000.0]), sweep_merge(rec))["replicate"] == unit
    assert "replicate" not in step() and "replicate" not in pktgen_record(
        RESULT, run_id="20261202-100000-ab12", scenario="pktgen_burst", variant="clone_on",
        sweep={"burst": 8, "pkt_size": 64}, spec=SPEC, device_kind="igb", started="2026-12-02T10:00:00Z",
        replicate={})


@pytest.mark.parametrize(("result", "needle"), [
    ({"failed": True, "msg": "pktgen refused 'burst 8' on eth1"},
     "pktgen_burst/clone_on: the pktgen run failed: pktgen refused 'burst 8' on eth1"),
    ({"changed": True, "packets": 5, "errors": 0}, "result without pps, packets and errors"),
    (dict(RESULT, pps=-1.0), "invalid sample -1.0"),
])
def test_a_failed_or_incomplete_run_is_named(result, needle):
    with pytest.raises(AnsibleFilterError, match="pktgen_record") as err:
        step(result)
    assert needle in str(err.value), str(err.value)


def test_the_device_file_it_was_parsed_from_is_kept_in_the_repetition():
    raw = "Device: pg0\nCurrent:\n     pkts-sofar: 122469  errors: 0\nResult: OK: 2000000(c1990000+d10000) usec\n"
    assert step(dict(RESULT, raw=raw))["reps"][0]["raw"] == raw
    # a result without its device file gets none made up
    assert "raw" not in step()["reps"][0]
