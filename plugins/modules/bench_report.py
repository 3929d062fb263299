#!/usr/bin/python
# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Render a report (text, Markdown, CSV, PNG, HTML) from result records."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: bench_report
short_description: Cover-letter text, Markdown, CSV, PNG or HTML report from results directories
version_added: "0.1.0"
description:
  - One results directory (or record file) gives sweep tables per scenario and variant
    (pps, ns/packet, delta vs the previous row and vs the first row, two decimals, n).
  - A list of two compares them (first = baseline) like M(xdplab.testbed.bench_compare), with
    the environment diff; one directory with O(baseline_variant)/O(candidate_variant) compares variants.
  - C(text) is for a mailing-list cover letter, environment block first (CPU model and MHz,
    kernel and patches, NIC, tuning), then the tables and the noise figures (pooled ns/packet
    stdev, repetitions a 1 ns/packet difference needs, A/A false-positive rate of repeated runs).
  - C(png) draws one bar per scenario (Mpps and ns/packet with 95% intervals) for a run of one
    point per scenario, one line per scenario/variant against the swept param for sweeps, and one
    bar of delta ns/packet with its 95% interval per row for an A/B comparison (matplotlib, Agg backend).
  - C(html) is one self-contained page (no external resources) with the warnings (n=1, short bursts,
    generator-bound figures, incomplete runs), the summary table, the plot as a data URI, the
    environment and, for A/B, the environment diff.
  - C(csv) carries the 95% intervals (pps and ns/packet; for A/B each side's ns/packet and the delta's).
  - A comparison is written to its own directory; O(dest) inside one of the compared results
    directories is refused, so a run's own report files are never overwritten. So is any O(dest) in a
    run directory whose records the report reads (record files given one by one, or a parent directory
    of runs), unless O(results) names that one run directory, which asks for that run's own report.
  - Idempotent - a re-run that renders the same bytes leaves a file alone and reports C(changed=false).
  - Each file is written to a temp name beside it and renamed; on any error nothing is left of it.
  - With O(trend=true), O(results) is a directory of runs (or any number of run directories), and each report
    row (scenario, variant, params) is drawn across the runs in the order O(trend_order), with each run's rate,
    DUT cost and program stage (the same estimator and 95% interval as a one-run report), and the runs where a
    row moved beyond the scatter between runs are marked as change points (binary segmentation with the
    maximum two-sample Student t, Bonferroni over the series' splits, 5%), each with its run, the level
    before and after, and the size in ns/packet.
options:
  results:
    description: A results directory or record file, or a list of two (baseline, candidate); with O(trend=true),
      a directory of runs or a list of run directories.
    type: list
    elements: path
    required: true
  format:
    description:
      - Output format, or a list of them when O(dest) is a directory.
      - Default - every format when O(dest) is a directory, else V(text).
    type: list
    elements: str
    choices: [text, markdown, csv, png, html]
  dest:
    description:
      - File to write (its directory must exist), or an existing directory, where each format goes to
        its own file - C(report.txt), C(report.md), C(report.csv), C(report.png), C(report.html).
    type: path
    required: true
  baseline_variant:
    description: Compare variants inside one directory - baseline side.
    type: str
  candidate_variant:
    description: Compare variants inside one directory - candidate side.
    type: str
  allow_incomplete:
    description: Include runs still marked C(INCOMPLETE) (flagged in the report) instead of failing.
    type: bool
    default: false
  trend:
    description: Draw every row across the runs of O(results) and mark its change points (see above); needs
      records of two runs or more.
    type: bool
    default: false
    version_added: "0.3.0"
  trend_order:
    description: Order of the runs in a trend - C(time) (their start) or C(kernel) (the kernel release in
      their fingerprint, version-aware, then their start). Only with O(trend=true).
    type: str
    choices: [time, kernel]
    default: time
    version_added: "0.3.0"
requirements:
  - scipy (the Student t distribution of intervals and p-values)
  - matplotlib (for O(format=png) and O(format=html))
extends_documentation_fragment:
  - xdplab.testbed.attributes
attributes:
  check_mode:
    support: full
    details: Builds and renders the report in a scratch directory, returns rows and whether dest would
      change, writes nothing beside it.
  diff_mode:
    support: none
author:
  - xdplab.testbed contributors (!UNKNOWN)"""

EXAMPLES = r"""
- name: Cover letter text of a run
  xdplab.testbed.bench_report:
    results: results/20261129T215000Z-1a2b3c
    format: text
    dest: results/20261129T215000Z-1a2b3c/report.txt

- name: A/B plot of two runs, in a directory of its own
  xdplab.testbed.bench_report:
    results: [results/run-baseline, results/run-patched]
    format: png
    dest: results/compare-run-baseline-vs-run-patched/report.png

- name: The last runs of results/ as a trend, with their change points
  xdplab.testbed.bench_report:
    results: results
    trend: true
    format: png
    dest: results/trend/report.png

- name: Self-contained HTML page of a run (table, plot, environment, warnings)
  xdplab.testbed.bench_report:
    results: results/20261129T215000Z-1a2b3c
    format: html
    dest: results/20261129T215000Z-1a2b3c/report.html

- name: Every format of a run's report, into the run's directory (report.txt, report.md, ...)
  xdplab.testbed.bench_report:
    results: results/20261129T215000Z-1a2b3c
    dest: results/20261129T215000Z-1a2b3c
"""

RETURN = r"""
dest:
  description: The written file, or the directory the files went to.
  returned: success
  type: str
files:
  description: The report file of each format (written, or already holding the same bytes), by format.
  returned: success
  type: dict
  sample: {text: results/20261129T215000Z-1a2b3c/report.txt, png: results/20261129T215000Z-1a2b3c/report.png}
rows:
  description: Table rows (sweep rows, or one per A/B comparison with the candidate's figures and
    the delta in both delta fields; for a trend one per row and run, with run_id, position, started,
    kernel, the delta vs the previous and the first run, the fitted levels and the change sizes).
  returned: success
  type: list
  elements: dict
  sample:
    - {scenario: xdp_drop, variant: baseline, params: {pkt_size: 64}, pps: 6309000.0,
       ns_per_packet: 158.5, delta_prev_ns: null, delta_base_ns: null, n: 3}
    - {scenario: xdp_drop, variant: baseline, params: {pkt_size: 128}, pps: 6100000.0,
       ns_per_packet: 163.93, delta_prev_ns: 5.43, delta_base_ns: 5.43, n: 3}
noise:
  description: pooled_stdev_ns, repetitions_needed (for delta_ns), aa_comparisons, aa_significant,
    aa_false_positive_rate, and aa_rounds (A/A in interleaved rounds of one configuration, one entry
    per configuration with 6 rounds or more, with false_positive_rate and its exact
    false_positive_interval, round_stdev_ns and mde_ns_all_rounds).
  returned: success, not with O(trend=true)
  type: dict
change_points:
  description: The change points of a trend, in row and run order - scenario, variant, params, quantity
    (C(rate), C(cost) or C(program)), position and run_id (the first run of the new level), previous_run_id, before and
    after (levels, ns/packet), size (after minus before), p_bonferroni, splits, changed (fingerprint keys
    naming what was measured that differ from the run before).
  returned: with O(trend=true)
  type: list
  elements: dict
  sample:
    - {scenario: xdp_drop, variant: baseline, params: {pkt_size: 64}, quantity: cost, position: 13,
       run_id: 20261207T123600Z-00000c, before: 59.86, after: 410.16, size: 350.3, p_bonferroni: 1.1e-11,
       splits: 17, changed: [{key: xdp.veth0.program, baseline: xdp_drop, candidate: xdp_drop_work}]}
environment_diff:
  description: Changed fingerprint keys (A/B only).
  returned: when two sides are compared
  type: list
"""

import filecmp
import os
import tempfile
import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible_collections.xdplab.testbed.plugins.module_utils.common._atomic_files import atomic_write
from ansible_collections.xdplab.testbed.plugins.module_utils.results import _render_trend, _report, _trend
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_files import RecordError
from ansible_collections.xdplab.testbed.plugins.module_utils.results._statistics import HAS_SCIPY, StatsError

try:
    import matplotlib  # noqa: F401  # pylint: disable=unused-import

    HAS_MPL = True
    MPL_ERR = None
except ImportError:  # pragma: no cover - depends on the host
    HAS_MPL = False
    MPL_ERR = traceback.format_exc()


class _Unchanged(Exception):
    """The rendered report is byte-identical to dest: nothing to replace."""


def _write_if_different(dest: str, writer) -> bool:
    """Render to a temp file beside dest and rename it over dest, unless dest already holds the same
    bytes (then the temp file is dropped and dest keeps its inode and mtime). Returns changed."""

    def render_and_compare(tmp: str) -> None:
        writer(tmp)
        if os.path.isfile(dest) and filecmp.cmp(tmp, dest, shallow=False):
            raise _Unchanged

    try:
        atomic_write(dest, render_and_compare)
    except _Unchanged:
        return False
    return True


def _foreign_run_dir(results: list[str], report: dict, dest_dir: str, comparing: bool) -> str | None:
    """The run directory holding records of this report that dest would write into, unless the report
    is of that one run directory named in results (the run's own report, asked for by name)."""
    own = None
    if not comparing and len(results) == 1 and os.path.isdir(results[0]):
        own = os.path.realpath(results[0])
    run_dirs = {os.path.realpath(os.path.dirname(path)) for path in report.get("record_meta") or {}}
    if dest_dir in run_dirs and dest_dir != own:
        return dest_dir
    return None


ARGUMENT_SPEC = {
    "results": {"type": "list", "elements": "path", "required": True},
    "format": {"type": "list", "elements": "str", "choices": list(_report.FORMATS)},
    "dest": {"type": "path", "required": True},
    "baseline_variant": {"type": "str"},
    "candidate_variant": {"type": "str"},
    "allow_incomplete": {"type": "bool", "default": False},
    "trend": {"type": "bool", "default": False},
    "trend_order": {"type": "str", "default": "time", "choices": list(_trend.ORDERS)},
}


def _checked_files(module: AnsibleModule, p: dict) -> tuple[dict[str, str], bool, str]:
    """The file each format goes to, after the checks on results, dest and formats.
    Returns (format -> file, whether this compares, the directory dest writes into)."""
    if len(p["results"]) not in (1, 2) and not p["trend"]:
        module.fail_json(msg=f"results must be one path or a list of two, got {len(p['results'])}: {p['results']} "
                             "(a trend over runs: trend=true)")
    for what, path in [("dest", p["dest"])] + [("results", r) for r in p["results"]]:
        if "\x00" in path:
            module.fail_json(msg=f"{what} {path!r} holds a NUL byte: not a path")
    in_dir = os.path.isdir(p["dest"])
    formats = p["format"] or (list(_report.FORMATS) if in_dir else ["text"])
    if len(formats) > 1 and not in_dir:
        module.fail_json(msg=f"format {formats} writes several files: dest {p['dest']!r} must be an existing directory")
    if {"png", "html"} & set(formats) and not HAS_MPL:
        module.fail_json(msg=missing_required_lib("matplotlib"), exception=MPL_ERR)
    files = {fmt: os.path.join(p["dest"], _report.REPORT_FILES[fmt]) if in_dir else p["dest"] for fmt in formats}
    comparing = not p["trend"] and (len(p["results"]) == 2 or bool(p["baseline_variant"]))
    dest_dir = os.path.realpath(p["dest"] if in_dir else os.path.dirname(os.path.abspath(p["dest"])))
    if comparing and any(os.path.realpath(r) == dest_dir for r in p["results"]):
        module.fail_json(msg=f"a comparison is written to its own directory, not into the results directory "
                             f"{dest_dir} it compares (its own report files stay as they are)")
    return files, comparing, dest_dir


def _write_reports(module: AnsibleModule, p: dict, files: dict[str, str], comparing: bool, dest_dir: str):
    """Build the report (or trend) and write each format where it differs (compared only in check
    mode). Returns (report, changed)."""
    changed = False
    if p["trend"]:
        report = _trend.build(p["results"], order=p["trend_order"], allow_incomplete=p["allow_incomplete"])
        renderer = _render_trend.render
    else:
        report = _report.build(p["results"], baseline_variant=p["baseline_variant"],
                               candidate_variant=p["candidate_variant"],
                               allow_incomplete=p["allow_incomplete"])
        renderer = _report.render
    owner = _foreign_run_dir(p["results"], report, dest_dir, comparing or p["trend"])
    if owner:
        module.fail_json(msg=f"dest {p['dest']} is inside the run directory {owner}, whose own files this report "
                             "must not replace: a report goes into a run's directory only when results names "
                             "that one run directory; write it elsewhere")
    for fmt, dest in files.items():
        if not module.check_mode:
            changed |= _write_if_different(dest, lambda tmp, fmt=fmt: renderer(report, fmt, tmp))
            continue
        with tempfile.TemporaryDirectory() as scratch:
            tmp = os.path.join(scratch, "report")
            renderer(report, fmt, tmp)
            changed |= not (os.path.isfile(dest) and filecmp.cmp(tmp, dest, shallow=False))
    return report, changed


def main() -> None:
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        mutually_exclusive=[("trend", "baseline_variant")],
        required_together=[("baseline_variant", "candidate_variant")],
        supports_check_mode=True,
    )
    p = module.params
    if not HAS_SCIPY:
        module.fail_json(msg=missing_required_lib("scipy"))
    files, comparing, dest_dir = _checked_files(module, p)
    try:
        report, changed = _write_reports(module, p, files, comparing, dest_dir)
    except (RecordError, StatsError, ValueError) as exc:
        module.fail_json(msg=str(exc))
    except Exception as exc:
        module.fail_json(msg=f"bench_report: {exc}", exception=traceback.format_exc())
    result = {"changed": changed, "dest": os.path.abspath(p["dest"]),
              "files": {fmt: os.path.abspath(f) for fmt, f in files.items()},
              "rows": report["rows"], "records": report["records"]}
    if p["trend"]:
        result["change_points"] = report["change_points"]
    else:
        result["noise"] = report["noise"]
    if "environment_diff" in report:
        result["environment_diff"] = report["environment_diff"]
        result["comparisons"] = report["comparisons"]
    if report["incomplete"]:
        module.warn(f"report includes records of incomplete runs: {report['incomplete']}")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
