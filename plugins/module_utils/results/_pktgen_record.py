# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The record v1 of one pktgen step: one repetition of one (point, variant) of a pktgen sweep.

One builder for every place pktgen runs a sweep step: inside a QEMU-booted kernel
(roles/scenarios/files/pktgen_guest.py, the A/B loop's guest) and on a lab DUT's real NIC through the
xdplab.testbed.pktgen module (the scenarios role's pktgen_burst point, through the pktgen_record filter).
"""

from __future__ import annotations

from typing import Any

from . import _record_schema as _record


def pktgen_step_record(*, run_id: str, scenario: str, variant: str, sweep: dict, spec: dict, result: dict,
                       device_kind: str, environment: dict, started: str, duration_s: float,
                       build: str | None = None, extra: dict | None = None) -> dict:
    """``result``: what a pktgen run returned (pps, packets, errors, seconds, devices and cpu, the share
    of the CPUs' time during the run; ``raw``, the device files it was parsed from, is kept in the
    repetition when given). ``spec``: the checked pktgen parameters it ran with (pkt_size,
    burst, clone_skb, duration, threads). ``build`` None leaves the build out of the params (the A/B
    loop: the kernel is the variant). pktgen sends as fast as the device takes its packets: the point is
    generator-bound by construction."""
    try:
        pps = float(result["pps"])
        packets, errors = int(result["packets"]), int(result["errors"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"pktgen {scenario}/{variant}: result without pps, packets and errors ({exc})") from exc
    params: dict[str, Any] = dict(sweep, pkt_size=spec["pkt_size"], burst=spec["burst"],
                                  clone_skb=spec["clone_skb"], duration=spec["duration"], device=device_kind,
                                  threads=len(spec["threads"]), sample="repetition")
    if build is not None:
        params["build"] = build
    rep = {"gen_packets": packets, "gen_seconds": result.get("seconds"), "gen_cpu": result.get("cpu"),
           "devices": result.get("devices", [])}
    if result.get("raw"):
        rep["raw"] = result["raw"]
    return _record.build_record(
        run_id=run_id, scenario=scenario, variant=variant, tool="pktgen", params=params, samples=[pps],
        counters={"gen_packets": packets, "gen_errors": errors}, environment=environment, started=started,
        duration_s=duration_s, extra={"reps": [rep], "bound": "generator-bound", **(extra or {})})
