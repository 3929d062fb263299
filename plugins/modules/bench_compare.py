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
    directory of run directories). Records are paired only when they measured the same thing -
    scenario, every param (packet size, duration, sampler, ...), tool, xdpgen mode and, for a sweep's
    records, the datapath. Two record files are no exception. What does not pair is listed in
    C(unmatched) with the params that differ; nothing paired at all fails naming them.
  - A side without O(baseline_variant) / O(candidate_variant) must hold one variant; records of another
    variant in the same directory are never pooled into it as more units (it fails naming the variants).
  - One estimator throughout, the mean of per-unit ns/packet (1e9/pps of each unit); the interval is
    Welch's t on those units (95%, two-sided); a difference is significant only when that interval
    excludes zero. With n=1 on either side, or zero variance on both, there is no interval and the
    difference is never significant.
  - Units of replication. Several records of one scenario + params on a side (rounds, runs, boots,
    named by the record's C(replicate), else its run id) are its units, and the comparison uses the
    between-unit variance (unit means). With one record per side the units are the repetitions of
    one back-to-back run, and the result carries a C(caveat) saying so.
  - With several comparisons, C(p_holm) and C(significant_holm) give Holm's adjustment across them,
    and C(multiple) the count chance alone would call significant. The call then returned as
    C(significant) (and written in C(call) and C(verdict)) is Holm's; C(significant_raw) keeps the
    per-row call (interval excludes zero).
  - Shows what changed in the environment fingerprints besides the variant.
  - With O(by=boot), each boot is the unit of replication (the A/B loop of C(playbooks/ab.yml), see
    docs/ab.md). Every record must name its boot (C(replicate) level C(boot)); the records of one
    boot are pooled into one ns/packet per boot, Δns/packet and its 95% interval are over boots, and
    fewer than 2 boots of a kernel for a scenario + params fails naming the kernel and the count.
    The result adds C(ab) (per row the A/A check on the baseline's boots and a leave-one-boot-out
    check, the environment diff between the kernels, the .config diff and the series) and
    C(cover_letter) / C(cover_letter_markdown), the table to paste into a cover letter.
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
  by:
    description:
      - V(record) compares records (or their replication units, whatever they are) as described above.
      - V(boot) compares two kernels by boot; O(baseline_variant) and O(candidate_variant) then name
        the kernels when both sides are the same directory. A record's kernel is its environment's
        C(kernel_variant), else its C(variant); a scenario sweep's record, whose variant is the datapath
        it measured (C(xdp_flow), C(tc_bpf), ...), has that datapath in its row's params.
    type: str
    choices: [record, boot]
    default: record
  series:
    description:
      - With O(by=boot), the candidate's patch series for the report, as a series record (schema
        C(xdplab.kernel-series/v1), what M(xdplab.testbed.kernel_patch) returns and the kernel role
        writes) or a list of C({subject, patch_id}).
      - Default, unless O(series_files) is given, the C(kernel_patches) of the candidate's records
        (the series installed on the booted kernel). A given series that differs from the booted one
        is warned about.
    type: raw
  series_files:
    description:
      - With O(by=boot), patch files or C(git format-patch) mboxes of the series, in order; subjects are
        read from them and patch-ids computed with C(git patch-id --stable). Mutually exclusive with O(series).
    type: list
    elements: path
  baseline_config:
    description: With O(by=boot), the baseline kernel's C(.config), for the config diff.
    type: path
  candidate_config:
    description: With O(by=boot), the candidate kernel's C(.config), for the config diff.
    type: path
requirements:
  - scipy (the Student t distribution of the interval and p-value)
  - git (only for O(series_files))
extends_documentation_fragment:
  - xdplab.testbed.attributes
attributes:
  check_mode:
    support: full
    details: Reads only.
  diff_mode:
    support: none
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

- name: Two kernels booted in turn (A B B A A B), each boot one unit, with the series and config diff
  xdplab.testbed.bench_compare:
    baseline: results/ab-20261201
    candidate: results/ab-20261201
    baseline_variant: baseline
    candidate_variant: patched
    by: boot
    series_files: "{{ ab_series_files }}"
    baseline_config: /var/lib/xdplab/kernel/baseline/config
    candidate_config: /var/lib/xdplab/kernel/patched/config
  register: ab_boot

- name: Write the cover letter table
  ansible.builtin.copy:
    content: "{{ ab_boot.cover_letter }}"
    dest: results/ab-20261201-cover-letter.txt
    mode: "0644"
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
  description: First comparison's call - its interval excludes zero, and with several comparisons
    also after Holm's adjustment.
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
  description: Records without a counterpart (side, scenario, params, record, variant), with the
    closest record of the other side (closest) and the params that differ from it
    (differs, a list of {param, this, other}).
  returned: success
  type: list
environment_diff:
  description: Changed fingerprint keys of the first comparison, with both values.
  returned: success
  type: list
ab:
  description:
    - With O(by=boot), the A/B by boot. C(rows) holds one comparison per scenario + params (the keys of
      C(comparisons), with n counting boots) plus C(boots) (boot ids per kernel, in boot order),
      C(boot_ns_per_packet), C(aa) (the A/A check on the baseline's boots) and C(leave_one_out); a row
      whose records have AF_XDP sockets adds C(xsk_bind) (per kernel, the bind modes of the DUT's and the
      generator's sockets, C(copy) or C(zero-copy)).
    - Also C(kernels), C(boots) (per kernel), C(multiple), C(unmatched), C(environment_diff) (each with
      C(varies_between_boots)), C(config_diff) (null without both configs), C(series) (null when none
      is known) and C(warnings).
  returned: when by=boot
  type: dict
  sample:
    kernels: {baseline: baseline, candidate: patched}
    boots: {baseline: 3, candidate: 3}
    rows:
      - scenario: xdp_drop
        params: {pkt_size: 64}
        unit_level: boot
        baseline: {n: 3, mean: 6657797.0, ns_per_packet: 150.2}
        candidate: {n: 3, mean: 6750680.0, ns_per_packet: 148.13}
        delta_ns_per_packet: -2.07
        ci95_ns: [-2.48, -1.65]
        significant: true
        boots: {baseline: [01-baseline, 04-baseline, 05-baseline], candidate: [02-patched, 03-patched, 06-patched]}
        aa: {kernel: baseline, boots: 3, boot_stdev_ns: 0.2, spread_ns: 0.4, mde_ns: 0.61, ci95_ns: null,
             note: "3 boots of 'baseline': an A/A split needs 4 (2 per half), no interval"}
        leave_one_out: {deltas: 6, delta_min: -2.17, delta_max: -1.97, sign_stable: true}
    config_diff: [{option: CONFIG_HZ, baseline: "250", candidate: "1000"}]
    series: {series_id: 3f0c..., patches: [{subject: "pktgen: ...", patch_id: 73ecd92b...}]}
cover_letter:
  description: With O(by=boot), the cover-letter table, A/A check, environment and config diff and series
    as plain ASCII text (non-ASCII only where a subject has it).
  returned: when by=boot
  type: str
cover_letter_markdown:
  description: The same as Markdown.
  returned: when by=boot
  type: str
"""

import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible_collections.xdplab.testbed.plugins.module_utils.kernel import _build_logic as _kernel
from ansible_collections.xdplab.testbed.plugins.module_utils.kernel import _mailsplit
from ansible_collections.xdplab.testbed.plugins.module_utils.results._ab import analyze, kernel_of
from ansible_collections.xdplab.testbed.plugins.module_utils.results._compare import (
    compare_records,
    match,
    multiple_comparisons,
    unmatched_text,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_files import RecordError, load_results
from ansible_collections.xdplab.testbed.plugins.module_utils.results._render_ab import render_ab
from ansible_collections.xdplab.testbed.plugins.module_utils.results._statistics import HAS_SCIPY, StatsError

BOOT_ONLY = ("series", "series_files", "baseline_config", "candidate_config")


def _read(module: AnsibleModule, path: str, what: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as fh:
            return fh.read()
    except OSError as exc:
        module.fail_json(msg=f"{what} {path!r} cannot be read: {exc.strerror}")


def _series_from_files(module: AnsibleModule, paths: list[str]) -> dict:
    patch_id = _mailsplit.module_patch_id(module)

    infos = []
    for path in paths:
        infos += [i for i, _dummy in _kernel.read_series(path.rsplit("/", 1)[-1], _read(module, path, "patch"),
                                                         patch_id, start=len(infos) + 1)]
    return _kernel.series_record({}, infos)


def _series(module: AnsibleModule, ab: dict, records: list[dict]) -> dict | None:
    """The series for the report: given, read from files, or the one installed on the candidate's
    booted kernel (its records' kernel_patches). A given series that differs from the booted one is warned about."""
    p = module.params
    booted = None
    for r in records:
        env = r.get("environment")
        if ((p["candidate_variant"] is None or kernel_of(r) == p["candidate_variant"])
                and isinstance(env, dict) and env.get("kernel_patches")):
            booted = env["kernel_patches"]
            break
    booted_ids = [q["patch_id"] for q in _kernel.series_patches(booted)] if booted else None
    if p["series_files"]:
        record = _series_from_files(module, p["series_files"])
    elif p["series"] is not None:
        record = p["series"] if isinstance(p["series"], dict) else {"patches": p["series"]}
    elif booted:
        record = {"patches": booted}
    else:
        return None
    patches = _kernel.series_patches(record)
    ids = [q["patch_id"] for q in patches]
    if booted_ids is not None and booted_ids != ids:
        module.warn(f"the series given ({len(ids)} patches) is not the one installed on the booted candidate kernel "
                    f"({len(booted_ids)} patches, patch-ids {', '.join(i[:12] for i in booted_ids)})")
    return {"series_id": record.get("series_id") or _kernel.series_id(ids), "patches": patches}


def by_boot(module: AnsibleModule, base: list[dict], cand: list[dict]) -> None:
    p = module.params
    if p["baseline"] == p["candidate"] and not (p["baseline_variant"] and p["candidate_variant"]):
        module.fail_json(msg="by=boot on one results directory needs baseline_variant and candidate_variant "
                             "(the two kernels)")
    try:
        ab = analyze(base, cand, baseline=p["baseline_variant"], candidate=p["candidate_variant"])
        ab["series"] = _series(module, ab, cand)
        ab["config_diff"] = None
        if p["baseline_config"] and p["candidate_config"]:
            ab["config_diff"] = _kernel.config_diff(_read(module, p["baseline_config"], "baseline_config"),
                                                    _read(module, p["candidate_config"], "candidate_config"))
        text, markdown = render_ab(ab), render_ab(ab, markdown=True)
    except (RecordError, StatsError, _kernel.KernelError) as exc:
        module.fail_json(msg=str(exc))
    for w in ab["warnings"]:
        module.warn(w)
    for u in ab["unmatched"]:
        module.warn(f"measured on kernel {u['kernel']!r} only: {u['scenario']} {u['params']}")
    first = ab["rows"][0]
    module.exit_json(changed=False, ab=ab, comparisons=ab["rows"], cover_letter=text, cover_letter_markdown=markdown,
                     unmatched=ab["unmatched"], delta_ns_per_packet=first["delta_ns_per_packet"],
                     ci95_ns=first["ci95_ns"], significant=first["significant"], method=first["method"],
                     percent=first["percent"], environment_diff=ab["environment_diff"], baseline=first["baseline"],
                     candidate=first["candidate"], multiple=ab["multiple"])


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "baseline": {"type": "path", "required": True},
            "candidate": {"type": "path", "required": True},
            "baseline_variant": {"type": "str"},
            "candidate_variant": {"type": "str"},
            "allow_incomplete": {"type": "bool", "default": False},
            "by": {"type": "str", "choices": ["record", "boot"], "default": "record"},
            "series": {"type": "raw"},
            "series_files": {"type": "list", "elements": "path"},
            "baseline_config": {"type": "path"},
            "candidate_config": {"type": "path"},
        },
        mutually_exclusive=[("series", "series_files")],
        required_together=[("baseline_config", "candidate_config")],
        supports_check_mode=True,
    )
    p = module.params
    if not HAS_SCIPY:
        module.fail_json(msg=missing_required_lib("scipy"))
    if p["by"] == "record" and any(p[k] is not None for k in BOOT_ONLY):
        module.fail_json(msg=f"{', '.join(k for k in BOOT_ONLY if p[k] is not None)} only apply with by=boot")
    try:
        base = load_results(p["baseline"], p["allow_incomplete"])
        cand = base if p["candidate"] == p["baseline"] else load_results(p["candidate"], p["allow_incomplete"])
        if p["by"] == "boot":
            by_boot(module, base, cand)
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
        module.warn(f"unmatched: {unmatched_text(u)}: {u['record']}")
    module.exit_json(changed=False, comparisons=comparisons, unmatched=unmatched,
                     delta_ns_per_packet=first["delta_ns_per_packet"], ci95_ns=first["ci95_ns"],
                     significant=first["significant"], method=first["method"],
                     percent=first["percent"], environment_diff=first["environment_diff"],
                     baseline=first["baseline"], candidate=first["candidate"], multiple=multiple,
                     **({"caveat": first["caveat"]} if first.get("caveat") else {}))


if __name__ == "__main__":
    main()
