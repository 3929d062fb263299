# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
name: pktgen_record
short_description: The result record v1 of one pktgen sweep step run by the pktgen module
version_added: 0.1.0
description:
  - Turns what M(xdplab.testbed.pktgen) returned for one repetition of one (point, variant) into that
    step's record v1, the same record a sweep inside a QEMU-booted kernel writes, ready for
    P(xdplab.testbed.sweep_merge#filter). pktgen sends as fast as the device takes its packets, so the
    record is labelled generator-bound.
options:
  _input:
    description: The registered result of M(xdplab.testbed.pktgen) with O(xdplab.testbed.pktgen#module:state=run).
    type: dict
    required: true
  run_id:
    description: The run's id.
    type: str
    required: true
  scenario:
    description: The scenario name.
    type: str
    required: true
  variant:
    description: The step's variant.
    type: str
    required: true
  sweep:
    description: The step's sweep parameters (the point).
    type: dict
    required: true
  spec:
    description: The pktgen parameters the step ran with (pkt_size, burst, clone_skb, duration, threads).
    type: dict
    required: true
  device_kind:
    description: What the device is (a driver name such as C(igb), or C(dummy)).
    type: str
    required: true
  environment:
    description: The sending host's environment fingerprint (M(xdplab.testbed.env_facts)).
    type: dict
    default: {}
  started:
    description: ISO 8601 UTC time the step started.
    type: str
    required: true
  build:
    description: The build named in the record's params; null leaves it out.
    type: str
  replicate:
    description: The replication unit the record is (C({level, id}), e.g. the A/B loop's boot); empty or null for none.
    type: dict
author: xdplab.testbed developers
"""

EXAMPLES = r"""
- name: The step's record
  ansible.builtin.set_fact:
    rec: >-
      {{ pg | xdplab.testbed.pktgen_record(run_id=run_id, scenario='pktgen_burst', variant='clone_off',
             sweep={'burst': 8, 'pkt_size': 64}, device_kind='igb', started=t0,
             spec={'pkt_size': 64, 'burst': 8, 'clone_skb': 0, 'duration': 2, 'threads': [0]}) }}
"""

RETURN = r"""
_value:
  description: The step's record v1 (one sample, packets per second).
  type: dict
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.module_utils.results._pktgen_record import pktgen_step_record


def pktgen_record(result, run_id, scenario, variant, sweep, spec, device_kind, started, environment=None,
                  build=None, replicate=None):
    if not isinstance(result, dict) or result.get("failed"):
        why = result.get("msg", "no message") if isinstance(result, dict) else f"not a module result: {result!r}"
        raise AnsibleFilterError(f"pktgen_record: {scenario}/{variant}: the pktgen run failed: {why}")
    try:
        return pktgen_step_record(
            run_id=run_id, scenario=scenario, variant=variant, sweep=dict(sweep), spec=dict(spec), result=result,
            device_kind=device_kind, environment=dict(environment or {}), started=started,
            duration_s=float(result.get("seconds") or spec["duration"]), build=build,
            extra={"replicate": dict(replicate)} if replicate else None)
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"pktgen_record: {exc}") from exc


class FilterModule:
    def filters(self):
        return {"pktgen_record": pktgen_record}
