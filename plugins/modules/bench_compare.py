#!/usr/bin/python
# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A/B comparison of result records in ns/packet."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: bench_compare
short_description: Compare baseline and candidate result records in ns/packet
version_added: "0.1.0"
description:
  - Reads result records v1 (schema C(xdplab.result/v1)) and compares candidate against baseline,
    candidate minus baseline in ns/packet (ns/packet = 1e9/pps; negative is faster).
  - O(baseline) and O(candidate) are record files, or results directories (a run directory or a
    directory of run directories) whose records are matched by scenario and params.
  - One estimator throughout, the mean of per-unit ns/packet (1e9/pps of each unit); the interval is
    Welch's t on those units (95%, two-sided); a difference is significant only when that interval
    excludes zero. With n=1 on either side, or zero variance on both, there is no interval and the
    difference is never significant.
  - Units of replication. Several records of one scenario + params on a side (rounds, runs, boots,
    named by the record's C(replicate), else its run id) are its units, and the comparison uses the
    between-unit variance (unit means). With one record per side the units are the repetitions of
    one back-to-back run, and the result carries a C(caveat) saying so.
  - With several comparisons, C(p_holm) and C(significant_holm) give Holm's adjustment across them,
    and C(multiple) the count chance alone would call significant.
  - Shows what changed in the environment fingerprints besides the variant.
  - Runs on the controller; reads only. Bad input (other schema, NaN or negative rates, no records,
    nothing matchable, incomplete runs) fails with a message naming the file.
options:
  baseline:
    description: Baseline record file or results directory.
    type: path
    required: true
  candidate:
    description: Candidate record file or results directory (may be the same directory as
      O(baseline) when O(baseline_variant) and O(candidate_variant) select the sides).
    type: path
    required: true
  baseline_variant:
    description: Only records of this variant on the baseline side.
    type: str
  candidate_variant:
    description: Only records of this variant on the candidate side.
    type: str
  allow_incomplete:
    description: Use records of run directories still holding the C(INCOMPLETE) marker (flagged in
      the output) instead of refusing them.
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    description: Reads only.
  diff_mode:
    support: none
    description: Returns no diff.
author:
  - xdplab.testbed contributors (!UNKNOWN)"""

EXAMPLES = r"""
- name: Patched kernel against baseline, same results directory
  xdplab.testbed.bench_compare:
    baseline: results/20261129T215000Z-1a2b3c
    candidate: results/20261129T215000Z-1a2b3c
    baseline_variant: baseline
    candidate_variant: patched
  register: ab

- name: Print the verdicts
  ansible.builtin.debug:
    msg: "{{ ab.comparisons | map(attribute='verdict') | list }}"
"""

RETURN = r"""
comparisons:
  description: One entry per matched scenario + params.
  returned: success
  type: list
  elements: dict
  sample:
    - scenario: xdp_drop
      params: {pkt_size: 64}
      method: welch-t
      baseline: {n: 3, mean: 6309000.0, stdev: 13500.0, ci95: [6275000.0, 6343000.0], ns_per_packet: 158.5}
      candidate: {n: 3, mean: 6400000.0, stdev: 9000.0, ci95: [6377600.0, 6422400.0], ns_per_packet: 156.25}
      delta_ns_per_packet: -2.25
      ci95_ns: [-3.1, -1.4]
      significant: true
      percent: 1.44
      verdict: "-2.25 ns/packet (faster), +1.44% pps; 95% CI [-3.10, -1.40] ns, significant (n=3 vs n=3)"
      environment_diff: [{key: kernel, baseline: "6.18.44", candidate: "6.18.44+"}]
delta_ns_per_packet:
  description: Of the first comparison (the only one when two records are compared).
  returned: success
  type: float
ci95_ns:
  description: 95% interval of delta_ns_per_packet (first comparison); null with n=1.
  returned: success
  type: list
significant:
  description: First comparison's interval excludes zero.
  returned: success
  type: bool
method:
  description: Statistical method used.
  returned: success
  type: str
  sample: welch-t
multiple:
  description: Holm's adjustment across the comparisons (rows_tested, significant_raw,
    significant_holm, expected_by_chance, chance_of_any).
  returned: success
  type: dict
caveat:
  description: Present when a side has a single unit (one back-to-back run); says what the interval
    does not cover.
  returned: when a side has one unit
  type: str
unmatched:
  description: Records without a counterpart (side, scenario, params, record).
  returned: success
  type: list
environment_diff:
  description: Changed fingerprint keys of the first comparison, with both values.
  returned: success
  type: list
"""

import traceback

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils.results._compare import (
    compare_records,
    match,
    multiple_comparisons,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_files import RecordError, load_results
from ansible_collections.xdplab.testbed.plugins.module_utils.results._statistics import StatsError


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "baseline": {"type": "path", "required": True},
            "candidate": {"type": "path", "required": True},
            "baseline_variant": {"type": "str"},
            "candidate_variant": {"type": "str"},
            "allow_incomplete": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    p = module.params
    try:
        base = load_results(p["baseline"], p["allow_incomplete"])
        cand = base if p["candidate"] == p["baseline"] else load_results(p["candidate"], p["allow_incomplete"])
        pairs, unmatched = match(base, cand, base_variant=p["baseline_variant"],
                                 cand_variant=p["candidate_variant"], base_where=p["baseline"],
                                 cand_where=p["candidate"])
        comparisons = [compare_records(b, c) for b, c in pairs]
        multiple = multiple_comparisons(comparisons)
    except (RecordError, StatsError) as exc:
        module.fail_json(msg=str(exc))
    except Exception as exc:
        module.fail_json(msg=f"bench_compare: {exc}", exception=traceback.format_exc())
    first = comparisons[0]
    for w in sorted({w for c in comparisons for w in c["warnings"]}):
        module.warn(w)
    for u in unmatched:
        module.warn(f"unmatched {u['side']} record {u['record']} ({u['scenario']} {u['params']})")
    module.exit_json(changed=False, comparisons=comparisons, unmatched=unmatched,
                     delta_ns_per_packet=first["delta_ns_per_packet"], ci95_ns=first["ci95_ns"],
                     significant=first["significant"], method=first["method"],
                     percent=first["percent"], environment_diff=first["environment_diff"],
                     baseline=first["baseline"], candidate=first["candidate"], multiple=multiple,
                     **({"caveat": first["caveat"]} if first.get("caveat") else {}))


if __name__ == "__main__":
    main()
