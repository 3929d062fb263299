# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.
#
# What one boot of an A/B kernel loop (playbooks/ab.yml) runs inside the booted kernel: the table of
# the loop's pktgen scenarios and the plan that roles/scenarios/files/pktgen_guest.py executes.
"""The A/B loop's in-guest pktgen scenarios (a table) and the plan of one boot."""

from __future__ import annotations

from typing import Any

from ansible_collections.xdplab.testbed.plugins.module_utils.common._testbed_facts import DEFAULT_PKT_SIZE
from ansible_collections.xdplab.testbed.plugins.module_utils.results._sweep import point_key

__all__ = ["AB_SCENARIOS", "boot_guest_plan"]

# One row per scenario the loop can run inside a booted kernel: the pktgen settings that make it, and
# what it measures. Every row sends on a dummy device (pktgen's cost per packet, generator-bound by
# construction: nothing else runs in the guest).
AB_SCENARIOS: dict[str, dict[str, Any]] = {
    "pktgen_xmit": {
        "pktgen": {"burst": 1, "clone_skb": 0, "pkt_size": DEFAULT_PKT_SIZE},
        "measures": "one fresh skb built and transmitted per packet (pktgen_xmit, fill_packet, the driver's xmit)",
    },
    "pktgen_burst": {
        "pktgen": {"burst": 32, "clone_skb": 64, "pkt_size": DEFAULT_PKT_SIZE},
        "measures": "bursts of 32 with xmit_more and a clone reused 64 times (the xmit_more path)",
    },
}


def boot_guest_plan(run_id: str, boot: dict, scenarios: list, repetitions: int, duration: float,
                    base: dict | None = None, environment: dict | None = None,
                    expect_kernel: str | None = None) -> dict:
    """The plan of one boot for pktgen_guest.py: every scenario ``repetitions`` times, interleaved
    (s1 s2 s1 s2 ...), each record named by the boot's kernel (``variant``) and replicate.

    ``boot`` is one entry of results._rounds.boot_plan. ``environment`` goes into every record (the
    kernel's series, say); ``expect_kernel`` is the release the guest must be running. Raises
    ValueError naming a bad value.
    """
    if not isinstance(scenarios, list) or not scenarios:
        raise ValueError(f"scenarios must be a non-empty list of names, got {scenarios!r}")
    unknown = [s for s in scenarios if s not in AB_SCENARIOS]
    if unknown:
        raise ValueError(f"unknown loop scenario(s) {', '.join(map(repr, unknown))}: known are "
                         f"{', '.join(sorted(AB_SCENARIOS))}")
    if len(set(scenarios)) != len(scenarios):
        raise ValueError(f"scenarios must be distinct, got {scenarios!r}")
    if isinstance(repetitions, bool) or not isinstance(repetitions, int) or repetitions < 1:
        raise ValueError(f"repetitions must be an integer >= 1, got {repetitions!r}")
    if isinstance(duration, bool) or not isinstance(duration, (int, float)) or not duration > 0:
        raise ValueError(f"duration must be a number of seconds > 0, got {duration!r}")
    if not isinstance(boot, dict) or not {"kernel", "replicate", "boot"} <= set(boot):
        raise ValueError(f"boot must be an entry of ab_boot_plan ({{boot, kernel, replicate, ...}}), got {boot!r}")
    kernel = str(boot["kernel"])
    steps = []
    for rep in range(repetitions):
        for name in scenarios:
            steps.append({"index": len(steps), "scenario": name, "variant": kernel, "repetition": rep + 1,
                          "sweep": {}, "params": dict(AB_SCENARIOS[name]["pktgen"]),
                          "key": point_key(kernel, dict(AB_SCENARIOS[name]["pktgen"], scenario=name))})
    return {
        "run_id": run_id,
        "scenario": scenarios[0],
        "build": None,  # both kernels' records must have equal params: the kernel is the variant
        "steps": steps,
        "base": dict(base or {}),
        "duration": float(duration),
        "device": {"name": "pg0", "kind": "dummy"},
        "variants": {kernel: {}},
        "replicate": dict(boot["replicate"]),
        "environment": dict(environment or {}),
        "expect_kernel": expect_kernel,
    }
