# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.
#
# The cover-letter table of an A/B by boot (results._ab.analyze), as plain text to paste into a
# cover letter (ASCII only) or as Markdown: the table, the A/A check, the leave-one-boot-out check,
# the environment and .config diff between the two kernels, and the series (subjects + patch-ids).
"""Cover-letter rendering of an A/B of two kernels by boot."""

from __future__ import annotations

import json
import textwrap

from ansible_collections.xdplab.testbed.plugins.module_utils.results._text_layout import (
    WIDTH,
    common_params,
    fitted_table,
    fixed2,
    params_text,
    signed2,
    wrap_text,
)

# The widest a value of the environment diff is printed (the JSON keeps it whole): a kernel command
# line runs to hundreds of characters, and the table has its key and two values in WIDTH columns.
VALUE_WIDTH = 30


def row_labels(rows: list[dict]) -> tuple[list[str], dict[str, dict]]:
    """Short names of the rows, and the params each scenario's rows share ({scenario: params}).

    A scenario with one row is named by its scenario and all its params. Several rows of one scenario
    (a sweep's datapaths and points) are named ``scenario/variant`` and the params that differ between
    them; what they share is shown once under the table."""
    by_scenario: dict[str, list[dict]] = {}
    for r in rows:
        by_scenario.setdefault(r["scenario"], []).append(r["params"])
    common = {sc: common_params(ps) for sc, ps in by_scenario.items() if len(ps) > 1}
    labels = []
    for r in rows:
        shared = common.get(r["scenario"])
        if shared is None:
            labels.append(f"{r['scenario']} {params_text(r['params'])}")
            continue
        rest = {k: v for k, v in r["params"].items() if k not in shared and k != "variant"}
        name = r["scenario"] + (f"/{r['params']['variant']}" if "variant" in r["params"] else "")
        labels.append(f"{name} {params_text(rest)}" if rest else name)
    return labels, common


def _delta_cell(row: dict) -> str:
    d = row["delta_ns_per_packet"]
    word = "faster" if d < 0 else "slower" if d > 0 else "no change"
    if row["ci95_ns"] is None:
        return f"{d:+.2f} ({row.get('note') or 'no interval'}) {word}"
    lo, hi = row["ci95_ns"]
    if row.get("decision") == "holm" and row["significant"] != row.get("significant_raw", row["significant"]):
        # the corrected call is what the reader acts on; the raw per-row call is beside it
        return f"{d:+.2f} [{lo:+.2f}, {hi:+.2f}] {word}, n.s. (Holm; raw: sig.)"
    return f"{d:+.2f} [{lo:+.2f}, {hi:+.2f}] {word}" + ("" if row["significant"] else ", n.s.")


def _aa_line(row: dict, what: str) -> str:
    aa = row["aa"]
    spread = (f"boot-to-boot stdev {fixed2(aa['boot_stdev_ns'])}, spread {fixed2(aa['spread_ns'])} ns/packet over "
              f"{aa['boots']} boots; smallest effect {aa['boots']} boots per kernel detect (80% power): "
              f"{fixed2(aa['mde_ns'])} ns/packet")
    if aa["ci95_ns"] is None:
        return f"{what}: {aa['note']}; {spread}"
    lo, hi = aa["ci95_ns"]
    sig = "significant: the boots of one kernel differ more than the interval allows" if aa["significant"] \
        else "not significant"
    halves = " vs ".join(",".join(h) for h in aa["halves"])
    return (f"{what}: boots {halves}: {aa['delta_ns_per_packet']:+.2f} [{lo:+.2f}, {hi:+.2f}] ns/packet, "
            f"{sig}; {spread}")


def _loo_line(row: dict, what: str) -> str:
    lo = row["leave_one_out"]
    if lo["sign_stable"]:
        stable = "same sign"
    elif row["significant"]:
        stable = "the sign changes: one boot decides the direction of a significant row"
    else:
        stable = "the sign changes"
    return (f"{what}: delta {signed2(lo['delta_min'])} to {signed2(lo['delta_max'])} "
            f"ns/packet with one of {lo['deltas']} boots left out ({stable})")


def _value(v: object) -> str:
    text = v if isinstance(v, str) else json.dumps(v, sort_keys=True)
    return text if len(text) <= VALUE_WIDTH else text[:VALUE_WIDTH - 3] + "..."


def _bullets(lines: list[str], markdown: bool) -> list[str]:
    """'- line' items in WIDTH columns, continuation lines indented under the text."""
    return [out for line in lines for out in wrap_text(f"- {line}", markdown, indent="  ")]


def render_ab(report: dict, markdown: bool = False) -> str:
    """The cover-letter text (``markdown`` False: plain ASCII text) of an A/B by boot, in WIDTH
    columns (a table too wide is split, each part led by the row names; long values are shortened).

    ``report`` is what results._ab.analyze returns, plus optionally ``series`` (``{"patches":
    [{"subject", "patch_id"}], "series_id"}``) and ``config_diff`` (``[{"option", "baseline",
    "candidate"}]``), which the caller reads from the kernel side.
    """
    h = (lambda s: f"### {s}") if markdown else (lambda s: f"{s}\n{'-' * len(s)}")
    k = report["kernels"]
    out = [h(f"{k['candidate']} vs {k['baseline']}, {report['boots']['baseline']} + "
             f"{report['boots']['candidate']} boots, interleaved"), ""]
    labels, common = row_labels(report["rows"])
    rows = [[label, f"{r['baseline']['mean']:.0f}",
             f"{r['candidate']['mean']:.0f}", fixed2(r["baseline"]["ns_per_packet"]),
             fixed2(r["candidate"]["ns_per_packet"]), _delta_cell(r),
             f"{r['baseline']['n']}/{r['candidate']['n']}"] for label, r in zip(labels, report["rows"], strict=True)]
    table = fitted_table(["scenario", "pps A", "pps B", "ns/pkt A", "ns/pkt B", "delta ns/pkt [95% CI]",
                          "n boots A/B"], rows, markdown)
    out += table if markdown else [f"  {line}" for line in table]
    prose = [f"{sc} rows share: {params_text(shared)}." for sc, shared in sorted(common.items()) if shared]
    prose.append(f"A = {k['baseline']}, B = {k['candidate']}: {report['method_text']} (n.s.: not significant).")
    for label, r in zip(labels, report["rows"], strict=True):
        bind = r.get("xsk_bind")
        if bind:
            prose.append(f"{label}: AF_XDP sockets bound " + "; ".join(
                f"{end} {'/'.join(bind['baseline'][end]) or '-'} (A), {'/'.join(bind['candidate'][end]) or '-'} (B)"
                for end in ("dut", "generator") if bind["baseline"][end] or bind["candidate"][end]) + ".")
    mc = report.get("multiple")
    if mc and mc["rows_tested"] > 1:
        prose.append(f"{mc['significant_raw']} of {mc['rows_tested']} rows significant at 95% each, "
                     f"{mc['significant_holm']} after Holm's adjustment; chance alone would call about "
                     f"{mc['expected_by_chance']:.1f} significant. n.s. marks the Holm-adjusted call "
                     "(family-wise 5%), the one to act on.")
    out.append("")
    for para in prose:
        out += wrap_text(para, markdown)
    for w in report.get("warnings") or []:
        out += wrap_text(f"WARNING: {w}", markdown, indent="  ")
    out += ["", h(f"A/A check ({k['baseline']} vs {k['baseline']} across boots)"), ""]
    out += _bullets([_aa_line(r, label) for label, r in zip(labels, report["rows"], strict=True)], markdown)
    out += ["", h("Leave one boot out"), ""]
    out += _bullets([_loo_line(r, label) for label, r in zip(labels, report["rows"], strict=True)], markdown)
    if report.get("unmatched"):
        out += [""] + wrap_text("Measured on one kernel only: " + "; ".join(
            f"{u['kernel']}: {u['scenario']} {params_text(u['params'])}" for u in report["unmatched"]), markdown)
    out += ["", h(f"Environment and config diff ({k['baseline']} -> {k['candidate']})"), ""]
    env = report.get("environment_diff") or []
    cfg = report.get("config_diff")
    if env:
        out += fitted_table(["key", k["baseline"], k["candidate"], "varies between boots"],
                            [[d["key"], _value(d["baseline"]), _value(d["candidate"]),
                              "yes" if d.get("varies_between_boots") else "no"] for d in env], markdown)
    else:
        out.append("No difference in the environment fingerprints.")
    out.append("")
    if cfg is None:
        out.append("Kernel configs not given: no .config diff.")
    elif cfg:
        out += fitted_table(["option", k["baseline"], k["candidate"]],
                            [[d["option"], d["baseline"], d["candidate"]] for d in cfg], markdown)
    else:
        out.append("The two .config files set the same options.")
    series = report.get("series")
    out += [""]
    if series is None:
        out.append("Series: not given.")
    else:
        patches = series.get("patches") or []
        sid = f", series id {series['series_id'][:16]}" if series.get("series_id") else ""
        out += [h(f"Series ({len(patches)} patch{'es' if len(patches) != 1 else ''}{sid})"), ""]
        lines = [wrapped for p in patches
                 for wrapped in textwrap.wrap(f"{p['patch_id']} {p['subject']}", WIDTH - 2,
                                              subsequent_indent=" " * (len(p["patch_id"]) + 1))] or ["(no patches)"]
        out += (["```"] + lines + ["```"]) if markdown else [f"  {line}" for line in lines]
        out.append("")
        out.append("patch-id: git patch-id --stable of each patch.")
    return "\n".join(out).rstrip("\n") + "\n"
