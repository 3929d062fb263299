# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.
#
# Reports from result records: the data (sweep rows, A/B comparisons, noise,
# environment block) and its renderings: plain text for a mailing-list cover
# letter (environment first), Markdown and CSV; PNG (_render_png) and HTML
# (_render_html) render the same data.
# Files are written atomically by the caller through common._atomic_files.atomic_write.
"""Report building and rendering for xdplab.testbed results."""

from __future__ import annotations

import csv
import io
import json
import os
import textwrap
from typing import Any

from ansible_collections.xdplab.testbed.plugins.module_utils.results._compare import (
    CAVEAT_ONE_RUN,
    HOLM_NOTE,
    METHOD_TEXT,
    compare_records,
    match,
    multiple_comparisons,
    noise,
    replicate_of,
    sweep_tables,
    unmatched_text,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_files import load_results
from ansible_collections.xdplab.testbed.plugins.module_utils.results._render_png import (
    ns_interval,
    pps_interval,
    render_png,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.results._run_summary import worst_loss
from ansible_collections.xdplab.testbed.plugins.module_utils.results._text_layout import (
    WIDTH,
    common_params,
    fitted_table,
    fixed2,
    params_text,
    signed2,
    wrap_text,
)

# The report formats and the file each is written to in a directory (bench_report's dest).
REPORT_FILES = {"text": "report.txt", "markdown": "report.md", "csv": "report.csv", "png": "report.png",
                "html": "report.html"}
FORMATS = tuple(REPORT_FILES)


# ------------------------------------------------------------------- data

def build(results: list[str], *, baseline_variant: str | None = None,
          candidate_variant: str | None = None, allow_incomplete: bool = False) -> dict:
    """Report data for one results path (sweeps) or two (A/B comparison)."""
    if not results or len(results) > 2:
        raise ValueError(f"results must be one path or a list of two, got {results!r}")
    sets = [load_results(p, allow_incomplete=allow_incomplete) for p in results]
    for i, recs in enumerate(sets):
        for r in recs:
            r["_set"] = i  # A/A noise never groups records of the two sides together
    all_records = [r for s in sets for r in s]
    report: dict[str, Any] = {
        "results": list(results),
        "records": len(all_records),
        "incomplete": sorted({r["_path"] for r in all_records if r.get("incomplete")}),
        "environment": _first_env(sets[0]),
        "noise": noise(all_records),
        "warnings": [f"{r['_path']}: {w}" for r in all_records for w in r.get("warnings") or []],
        "record_meta": record_meta(all_records),
    }
    if len(sets) == 2 or baseline_variant or candidate_variant:
        base = sets[0]
        cand = sets[1] if len(sets) == 2 else sets[0]
        pairs, unmatched = match(base, cand, base_variant=baseline_variant,
                                 cand_variant=candidate_variant, base_where=results[0],
                                 cand_where=results[-1])
        report["comparisons"] = [compare_records(b, c) for b, c in pairs]
        report["multiple"] = multiple_comparisons(report["comparisons"])
        if any(c.get("caveat") for c in report["comparisons"]):
            report["caveat"] = CAVEAT_ONE_RUN
        report["unmatched"] = unmatched
        report["candidate_environment"] = _first_env([r for _dummy, cs in pairs for r in cs])
        report["environment_diff"] = report["comparisons"][0]["environment_diff"]
        report["rows"] = [_row_from_cmp(c) for c in report["comparisons"]]
    else:
        report["sweeps"] = sweep_tables(sets[0])
        if len({replicate_of(r) for r in sets[0]}) == 1:
            report["caveat"] = CAVEAT_ONE_RUN
        keys = ("params", "pps", "ns_per_packet", "ci95_ns", "delta_prev_ns", "delta_base_ns", "n", "unit_level",
                "bound", "cost_ns", "cost_ci95_ns", "cost_n")
        report["rows"] = [{k: row[k] for k in keys} | {"scenario": t["scenario"], "variant": t["variant"]}
                          for t in report["sweeps"] for row in t["rows"]]
    return report


def record_meta(records: list[dict]) -> dict:
    """What the renderers' warnings need from the records beyond the rows, by record path."""
    return {r["_path"]: {"bound": r.get("bound"), "duration_s": r.get("duration_s"),
                         "warnings": list(r.get("warnings") or []), "loss": worst_loss(r)} for r in records}


def _first_env(records: list[dict]) -> dict:
    for r in records:
        if r.get("environment"):
            return r["environment"]
    return {}


def _row_from_cmp(c: dict) -> dict:
    """A/B comparison as report rows: baseline row then the candidate with its delta."""
    return {"scenario": c["scenario"], "params": c["params"], "variant": c["candidate"]["variant"],
            "pps": c["candidate"]["mean"], "ns_per_packet": c["candidate"]["ns_per_packet"],
            "delta_prev_ns": c["delta_ns_per_packet"], "delta_base_ns": c["delta_ns_per_packet"],
            "n": c["candidate"]["n"], "baseline_pps": c["baseline"]["mean"],
            "baseline_ns_per_packet": c["baseline"]["ns_per_packet"], "baseline_n": c["baseline"]["n"],
            "ci95_ns": c["ci95_ns"], "significant": c["significant"], "p_value": c["p_value"],
            "significant_raw": c.get("significant_raw", c["significant"]), "decision": c.get("decision", "raw"),
            "p_holm": c.get("p_holm"), "significant_holm": c.get("significant_holm"), "unit_level": c["unit_level"],
            "bound": c["candidate"].get("bound"), "baseline_bound": c["baseline"].get("bound"),
            "rate_not_dut_bound": c.get("rate_not_dut_bound"), "cost_delta_ns": c.get("cost_delta_ns"),
            "cost_ci95_ns": c.get("cost_ci95_ns"), "headline": c.get("headline")}


# ----------------------------------------------------------------- helpers

def _csv2(v: float | None) -> str:
    return "" if v is None else f"{v:.2f}"


def _csvg(v: float | None) -> str:
    return "" if v is None else f"{v:.6g}"


def _csv_ci(ci: list[float | None] | None) -> list[str]:
    return ["", ""] if not ci else ["" if x is None else f"{x:.2f}" for x in ci]


FOOTER = ("ns/packet: each repetition's 1e9/pps; a unit's (run, round, boot) is the mean over its repetitions; "
          "a row's is the mean over its units, with a Student t 95% interval over the units, n = units (one "
          "back-to-back run: its repetitions are the units). pps = 1e9 / that ns/packet, its interval the same "
          "one. Gbit/s figures count frame bytes only (no preamble/IFG).")


def ci_text(ci: list[float] | None) -> str:
    """A 95% interval of ns/packet as every format writes it, or "no interval"."""
    return "no interval" if not ci else f"[{ci[0]:.2f}, {ci[1]:.2f}]"


def _n(n: int) -> str:
    return str(n) + ("" if n > 1 else " (no interval)")


def shorten(text: str, width: int) -> str:
    """text cut to width columns with a note of how long it was (the records keep it whole)."""
    if len(text) <= width:
        return text
    tail = f" ... ({len(text)} chars, whole in the records)"
    return text[:max(0, width - len(tail))] + tail


def env_lines(env: dict, width: int | None = None) -> list[str]:
    """Environment block of a cover letter: CPU and clock, kernel and patches, NIC, tuning. With
    ``width``, every line fits it: a long kernel command line is shortened (the records and the JSON
    keep it whole), other lines are wrapped."""
    lines = _env_lines(env)
    if width is None:
        return lines
    out = []
    for line in lines:
        if line.startswith("Cmdline: "):
            out.append("Cmdline: " + shorten(line[len("Cmdline: "):], width - len("Cmdline: ")))
        else:
            out += textwrap.wrap(line, width, subsequent_indent=" " * 9, break_on_hyphens=False)
    return out


def _env_lines(env: dict) -> list[str]:
    if not env:
        return ["(no environment fingerprint in the records)"]
    lines = []
    cpu = env.get("cpu_model", "unknown CPU")
    if "cpu_mhz" in env:
        cpu += f" @ {env['cpu_mhz']:.0f} MHz"
    extra = [f"{env['cpus_online']} CPUs online"] if "cpus_online" in env else []
    extra += [f"SMT {env['smt']}"] if "smt" in env else []
    extra += [f"{env['numa_nodes']} NUMA node(s)"] if "numa_nodes" in env else []
    lines.append(f"CPU:     {cpu}" + (f" ({', '.join(extra)})" if extra else ""))
    kern = env.get("kernel", "unknown")
    patches = env.get("kernel_patches")
    if patches:
        kern += f" + {len(patches)} patch(es)"
    lines.append(f"Kernel:  {kern}")
    for p in patches or []:
        if isinstance(p, dict):
            lines.append(f"         {p.get('patch_id', '?')[:12]} {p.get('subject', '?')}")
        else:
            lines.append(f"         {p}")
    if env.get("kernel_config_sha256"):
        lines.append(f"Config:  sha256 {env['kernel_config_sha256'][:16]}")
    if env.get("kernel_cmdline"):
        lines.append(f"Cmdline: {env['kernel_cmdline']}")
    for ifname, nic in sorted((env.get("nic") or {}).items()):
        desc = ", ".join(f"{k} {nic[k]}" for k in ("driver", "version", "firmware", "bus", "speed_mbps", "mtu")
                         if k in nic)
        lines.append(f"NIC:     {ifname}: {desc}")
    for ifname, xdp in sorted((env.get("xdp") or {}).items()):
        lines.append(f"XDP:     {ifname}: {xdp.get('program', '?')} ({xdp.get('mode')}, tag {xdp.get('tag', '?')})")
    tuning = []
    for key in ("governor", "tuned_profile"):
        if key in env:
            tuning.append(f"{key} {env[key] if isinstance(env[key], str) else json.dumps(env[key])}")
    if "netfilter_modules" in env:
        tuning.append(f"netfilter modules: {', '.join(env['netfilter_modules']) or 'none'}")
    for ifname, eth in sorted((env.get("ethtool") or {}).items()):
        parts = []
        for grp in ("ring", "channels"):
            if grp in eth:
                parts.append(f"{grp} " + ",".join(f"{k}={v}" for k, v in sorted(eth[grp].items()) if k != "max"))
        if "features" in eth:
            on = [k for k in ("rx-gro", "generic-receive-offload", "rx-checksum", "tx-generic-segmentation")
                  if eth["features"].get(k)]
            parts.append("on: " + (",".join(on) or "none of gro/csum/gso"))
        if parts:
            tuning.append(f"{ifname}: {'; '.join(parts)}")
    for ifname, aff in sorted((env.get("irq_affinity") or {}).items()):
        tuning.append(f"{ifname} IRQs: " + ", ".join(f"{irq}->{cpus}" for irq, cpus in sorted(aff.items())))
    lines.append("Tuning:  " + ("; ".join(tuning) if tuning else "nothing recorded"))
    gen = env.get("generator")
    if isinstance(gen, dict) and gen:
        lines.append(f"Generator host: {gen.get('cpu_model', '?')}, kernel {gen.get('kernel', '?')}")
    return lines


def noise_lines(nz: dict) -> list[str]:
    out = []
    if nz["pooled_stdev_ns"] is None:
        out.append("Noise: every record has n=1, no interval; noise unknown.")
    else:
        out.append(f"Noise: pooled stdev {nz['pooled_stdev_ns']:.2f} ns/packet per repetition; "
                   f"a {nz['delta_ns']:.0f} ns/packet difference needs {nz['repetitions_needed']} "
                   "repetitions per side (95% confidence, 80% power).")
    if nz.get("pooled_unit_stdev_ns") is not None:
        out.append(f"Between units (rounds, runs, boots of one configuration): pooled stdev "
                   f"{nz['pooled_unit_stdev_ns']:.2f} ns/packet per unit; a {nz['delta_ns']:.0f} ns/packet "
                   f"difference needs {nz['units_needed']} units per side. This, not the per-repetition "
                   "figure, is the noise a compare of separate runs sees.")
    if nz["aa_comparisons"]:
        out.append(f"A/A: {nz['aa_significant']} of {nz['aa_comparisons']} comparisons of repeated runs of "
                   f"one configuration called significant ({nz['aa_false_positive_rate'] * 100:.1f}%, "
                   "expected <= 5%; repetition-level Welch: it does not see the variance between runs).")
    for aa in nz.get("aa_rounds") or []:
        out.append(f"A/A in rounds ({aa['scenario']}/{aa['variant']}): {aa['rounds']} interleaved rounds, "
                   f"{aa['significant']} of {aa['compares']} compares of {aa['per_side']} vs {aa['per_side']} rounds "
                   f"called significant ({aa['false_positive_rate'] * 100:.1f}%{_rate_interval(aa)}; "
                   f"by pooled repetitions "
                   f"{aa['repetition_level_false_positive_rate'] * 100:.1f}%). Round stdev "
                   f"{aa['round_stdev_ns']:.2f} ns/packet at {aa['mean_ns']:.2f} ns/packet; minimum detectable "
                   f"effect (80% power) {fixed2(aa['mde_ns_all_rounds'])} ns/packet with {aa['mde_rounds_per_side']} "
                   f"rounds per side.")
        out.extend(f"A/A by stage ({aa['scenario']}/{aa['variant']}), {line}" for line in aa.get("stage_lines") or [])
    return out


def _rate_interval(aa: dict) -> str:
    ci = aa.get("false_positive_interval")
    if not ci:
        return ""
    return f", exact 95% interval {ci[0] * 100:.1f}-{ci[1] * 100:.1f}% if independent, wider as windows overlap"


# ----------------------------------------------------------------- notices

# Repetitions shorter than this (seconds) are bursts: start-up, caches and IRQ moderation weigh in.
SHORT_BURST_S = 5.0
# A loss or surplus smaller than this share of the packets sent is not worth a line.
LOSS_NOTICE = 0.001


def _duration(params: dict | None) -> float | None:
    try:
        return float((params or {}).get("duration"))
    except (TypeError, ValueError):
        return None


def _paths(record: str | list[str] | None) -> list[str]:
    """A row's or side's record: one path, or a list of paths when it pools several records."""
    if record is None:
        return []
    return [p for p in record if p] if isinstance(record, list) else [record]


def _items(report: dict) -> list[dict]:
    """The report's rows as {name, params, n, records} for the notices."""
    if "series" in report:  # a trend: one item per series, its records over all the runs
        return [{"name": s["name"], "params": s["params"], "n": min(p["n"] for p in s["points"]),
                 "records": [path for p in s["points"] for path in p["records"]]} for s in report["series"]]
    if "comparisons" in report:
        return [{"name": f"{c['scenario']} {params_text(c['params'])}", "params": c["params"],
                 "n": min(c["baseline"]["n"], c["candidate"]["n"]), "note": c.get("note"),
                 "records": _paths(c["baseline"].get("record")) + _paths(c["candidate"].get("record"))}
                for c in report["comparisons"]]
    return [{"name": f"{t['scenario']}/{t['variant']} {params_text(r['params'])}", "params": r["params"], "n": r["n"],
             "records": _paths(r.get("record"))}
            for t in report.get("sweeps") or [] for r in t["rows"]]


def notices(report: dict) -> list[tuple[str, str]]:
    """Everything a reader must know before trusting the numbers, as (kind, sentence), in the order
    every format prints them: incomplete runs, the one-run caveat, rows without an interval, short
    bursts, the bottleneck of rows not bound by the DUT, loss and surplus, the records' own warnings
    (each once, with the rows it concerns) and Holm's adjustment."""
    out: list[tuple[str, str]] = []
    meta = report.get("record_meta") or {}
    items = _items(report)
    if report.get("incomplete"):
        out.append(("warning", "records from incomplete runs are included: "
                    + ", ".join(_rel(report, p) for p in report["incomplete"])))
    if report.get("caveat"):
        out.append(("caveat", report["caveat"]))
    n1 = [i["name"] for i in items if i["n"] < 2]
    if n1:
        out.append(("warning", f"n=1, no interval: {', '.join(n1)}. One repetition cannot show its own noise; "
                    "repeat (3 or more) before comparing."))
    flat = [i["name"] for i in items if i["n"] >= 2 and i.get("note")]
    if flat:
        out.append(("warning", f"No spread on either side (every value equal to 1e-9), no interval: {', '.join(flat)}. "
                    "The noise is unknown, not zero (a rate cap, integer rates); never called significant."))
    short = sorted({d for i in items if (d := _duration(i["params"])) is not None and d < SHORT_BURST_S})
    if short:
        out.append(("warning", f"Short bursts: {', '.join(f'{d:g} s' for d in short)} per repetition (under "
                    f"{SHORT_BURST_S:g} s); start-up, caches and interrupt moderation weigh in. "
                    "Use longer repetitions for numbers to publish."))
    for label, text in (("generator-bound", "Generator-bound: {}. The DUT counted everything the generator sent, "
                         "so the figure is the generator's rate, a lower bound of what the DUT can do."),
                        ("shared-core", "Shared core: {}. The generator and the DUT shared a CPU, so the rate is "
                         "neither's capacity; a rate-based delta between such rows is not the DUT's.")):
        rows = sorted({i["name"] for i in items if any((meta.get(p) or {}).get("bound") == label
                                                       for p in i["records"])})
        if rows:
            out.append(("warning", text.format(", ".join(rows))))
    for i in items:
        losses = [x for p in i["records"] if (x := (meta.get(p) or {}).get("loss")) is not None]
        if losses and abs(worst := max(losses, key=abs)) >= LOSS_NOTICE:
            what = ("surplus: the DUT counted more packets than were sent (packets not ours)" if worst < 0
                    else "loss: packets sent that the DUT's counter did not see")
            out.append(("warning", f"{i['name']}: {abs(worst) * 100:.2f}% {what}."))
    by_text: dict[str, list[str]] = {}
    for i in items:
        for p in i["records"]:
            for w in (meta.get(p) or {}).get("warnings") or []:
                names = by_text.setdefault(w, [])
                if i["name"] not in names:
                    names.append(i["name"])
    for w, names in by_text.items():
        out.append(("warning", f"{', '.join(names)}: {w}"))
    out += [("note", text) for text in report.get("notes") or []]  # the report's own (a trend's ties, ...)
    mc = report.get("multiple")
    if mc and mc.get("decision") == "holm":
        out.append(("note", f"{mc['rows_tested']} rows tested: {HOLM_NOTE}; {mc['significant_raw']} significant "
                    f"raw, {mc['significant_holm']} after Holm."))
    return out


def row_notices(report: dict, name: str) -> list[str]:
    """The notices that concern one row (named by it), and those that concern every row."""
    names = [i["name"] for i in _items(report)]
    return [f"{kind}: {text}" for kind, text in notices(report)
            if name in text or not any(other in text for other in names)]


def _rel(report: dict, path: str) -> str:
    """A path as the reader needs it: relative to the (first) results directory."""
    base = (report.get("results") or [""])[0]
    try:
        rel = os.path.relpath(path, base if os.path.isdir(base) else os.path.dirname(base))
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


# ----------------------------------------------------------------- renderers

def _cost_head(rows: list[dict]) -> list[str]:
    return (["DUT cost ns [95% CI]"] if any(r.get("cost_ns") is not None for r in rows) else []) + (
        ["bound"] if any(r.get("bound") for r in rows) else [])


def _cost_cells(row: dict, rows: list[dict]) -> list[str]:
    """The cost and bound cells of a row, when any row of its table has them."""
    out = [cost_text(row)] if any(r.get("cost_ns") is not None for r in rows) else []
    return out + ([row.get("bound") or "-"] if any(r.get("bound") for r in rows) else [])


def _yes(v: bool) -> str:
    return "sig." if v else "n.s."


def ab_table(report: dict) -> tuple[list[str], list[list[str]]]:
    """The A/B table of every text format: per row A and B ns/packet with n, the delta with its
    direction, its 95% interval, the call the reader acts on (Holm-adjusted when several rows are
    tested) and the raw per-row call beside it."""
    cmps = report["comparisons"]
    holm_used = (report.get("multiple") or {}).get("decision") == "holm"
    with_cost = any(c.get("cost_delta_ns") is not None for c in cmps)
    common = common_params([c["params"] for c in cmps])
    rows = []
    for c in cmps:
        b, k = c["baseline"], c["candidate"]
        if c["ci95_ns"] is None:  # why: in the notices
            ci, call, raw = "no interval", "-", "-"
        else:
            ci = f"[{c['ci95_ns'][0]:+.2f}, {c['ci95_ns'][1]:+.2f}]"
            call, raw = _yes(c["significant"]), _yes(c.get("significant_raw", c["significant"]))
        mark = RATE_MARK if c.get("rate_not_dut_bound") else ""
        own = {k: v for k, v in c["params"].items() if k not in common} if len(cmps) > 1 else c["params"]
        rows.append([f"{c['scenario']} {params_text(own)}".strip(), f"{fixed2(b['ns_per_packet'])} ({b['n']})",
                     f"{fixed2(k['ns_per_packet'])} ({k['n']})",
                     f"{signed2(c['delta_ns_per_packet'])}{mark} {c['direction']}", ci, call, raw])
        if with_cost:
            rows[-1].append(cost_delta_text(c))
    head = ["scenario/params", "A ns/pkt (n)", "B ns/pkt (n)", "delta ns/pkt", "95% CI ns",
            "Holm" if holm_used else "call", "raw"] + (["DUT cost delta [95% CI]"] if with_cost else [])
    return head, rows


RATE_MARK = "*"
RATE_MARK_TEXT = ("* rate-based delta of a row that is not DUT-bound (generator-bound or shared-core): it measures "
                  "the generator or a shared CPU, not the DUT; where the DUT's cost per packet is recorded, the "
                  "cost delta is the headline.")


def cost_delta_text(c: dict) -> str:
    if c.get("cost_delta_ns") is None:
        return "-"
    ci = c.get("cost_ci95_ns")
    return f"{c['cost_delta_ns']:+.2f}" + (f" [{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else " (no interval)")


def cost_text(row: dict) -> str:
    """A row's DUT cost per packet with its interval, or "-" when the records carry none."""
    if row.get("cost_ns") is None:
        return "-"
    ci = row.get("cost_ci95_ns")
    return f"{row['cost_ns']:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def multiple_text(mc: dict) -> str:
    text = (f"Multiple comparisons: {mc['significant_raw']} of {mc['rows_tested']} rows significant at 95% "
            f"each, {mc['significant_holm']} after Holm's adjustment (family-wise 5%). Chance alone would call "
            f"about {mc['expected_by_chance']:.1f} of {mc['rows_tested']} rows significant "
            f"({mc['chance_of_any'] * 100:.0f}% chance of at least one).")
    if mc.get("decision") == "holm":
        text += f" The call column is Holm's: {HOLM_NOTE}."
    return text


def render_text(report: dict, markdown: bool = False) -> str:
    h = (lambda s: f"## {s}") if markdown else (lambda s: f"{s}\n{'=' * len(s)}")
    out = [h("Environment"), ""]
    env = env_lines(report["environment"], WIDTH)
    out += (["```"] + env + ["```"]) if markdown else env
    out.append("")
    found = notices(report)
    for kind, text in found:
        out += wrap_text(("- " if markdown else "") + f"{kind.upper()}: {text}", markdown, indent="  ")
    if found:
        out.append("")
    if "comparisons" in report:
        out += [h("A/B comparison (candidate minus baseline)"), ""]
        out += wrap_text(f"Method: {METHOD_TEXT}.", markdown) + [""]
        common = common_params([c["params"] for c in report["comparisons"]])
        if common and len(report["comparisons"]) > 1:
            out += wrap_text(f"Common params: {params_text(common)}", markdown) + [""]
        out += fitted_table(*ab_table(report), markdown)
        if any(c.get("rate_not_dut_bound") for c in report["comparisons"]):
            out += wrap_text(RATE_MARK_TEXT, markdown)
        out.append("")
        mc = report.get("multiple")
        if mc:
            out += wrap_text(multiple_text(mc), markdown)
            out.append(f"Units: {', '.join(sorted({c['unit_level'] for c in report['comparisons']}))}; "
                       "n counts units.")
            out.append("")
        if report.get("unmatched"):
            out.append("Unmatched (not compared: no record of the other side measured the same thing):")
            out += [w for u in report["unmatched"] for w in wrap_text(f"- {unmatched_text(u)}", markdown, "  ")]
            out.append("")
        out += [h("What changed besides the variant (environment diff)"), ""]
        diff = report.get("environment_diff") or []
        if not diff:
            out.append("No difference in the environment fingerprints.")
        else:
            rows = [[d["key"], shorten(json.dumps(d["baseline"]), 38), shorten(json.dumps(d["candidate"]), 38)]
                    for d in diff]
            out += fitted_table(["key", "baseline", "candidate"], rows, markdown)
        out.append("")
    else:
        singles = [t for t in report["sweeps"] if len(t["rows"]) == 1]
        if len(singles) >= 2:
            # One point per scenario (the default bench run): one table, each scenario against the first,
            # which is how "XDP vs tc vs netfilter drop on the same DUT" reads.
            first = singles[0]["rows"][0]["ns_per_packet"]
            out += [h(f"Scenarios (d first = ns/packet minus {singles[0]['scenario']})"), ""]
            common = common_params([t["rows"][0]["params"] for t in singles])
            if common:
                out += wrap_text(f"Common params: {params_text(common)}", markdown) + [""]
            rows = [[t["scenario"], t["variant"], f"{t['rows'][0]['pps']:.0f}", fixed2(t["rows"][0]["ns_per_packet"]),
                     ci_text(t["rows"][0]["ci95_ns"]), signed2(t["rows"][0]["ns_per_packet"] - first),
                     _n(t["rows"][0]["n"])] + _cost_cells(t["rows"][0], [t["rows"][0] for t in singles])
                    for t in singles]
            out += fitted_table(["scenario", "variant", "pps", "ns/packet", "95% CI ns", "d first ns", "n"]
                                + _cost_head([t["rows"][0] for t in singles]), rows, markdown)
            out.append("")
        for t in report["sweeps"]:
            if len(singles) >= 2 and t in singles:
                continue
            title = f"{t['scenario']} / {t['variant']}"
            if len(t["varying"]) == 1:
                title += f": sweep over {t['varying'][0]}"
            elif t["varying"]:
                title += f": records differ in {', '.join(t['varying'])}"
            out += [h(title), ""]
            shown = t["varying"]  # only what differs between the rows; the rest is said once
            shared = params_text(common_params([r["params"] for r in t["rows"]]))
            out += wrap_text(f"Common params: {shared}", markdown) + [""]
            rows = [[params_text({k: v for k, v in r["params"].items() if k in shown}) if shown else "(common)",
                     f"{r['pps']:.0f}", fixed2(r["ns_per_packet"]), ci_text(r["ci95_ns"]), signed2(r["delta_prev_ns"]),
                     signed2(r["delta_base_ns"]), _n(r["n"])] + _cost_cells(r, t["rows"])
                    for r in t["rows"]]
            out += fitted_table(["params", "pps", "ns/packet", "95% CI ns", "d prev ns", "d first ns", "n"]
                                + _cost_head(t["rows"]), rows, markdown)
            out.append("")
    out += [h("Noise"), ""] + [w for line in noise_lines(report["noise"]) for w in wrap_text(line, markdown)] + [""]
    out += wrap_text(FOOTER, markdown)
    return "\n".join(out) + "\n"


def render_csv(report: dict) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    if "comparisons" in report:
        w.writerow(["scenario", "params", "baseline_pps", "baseline_ns_per_packet", "baseline_n",
                    "candidate_pps", "candidate_ns_per_packet", "candidate_n", "delta_ns_per_packet",
                    "ci95_ns_lo", "ci95_ns_hi", "significant", "significant_raw", "p_value", "p_holm",
                    "decision", "percent", "method",
                    "baseline_ns_ci95_lo", "baseline_ns_ci95_hi", "candidate_ns_ci95_lo", "candidate_ns_ci95_hi",
                    "baseline_bound", "candidate_bound", "rate_not_dut_bound", "cost_delta_ns", "cost_ci95_ns_lo",
                    "cost_ci95_ns_hi", "headline", "notices"])
        for c in report["comparisons"]:
            ci = c["ci95_ns"] or [None, None]
            w.writerow([c["scenario"], json.dumps(c["params"], sort_keys=True), f"{c['baseline']['mean']:.2f}",
                        f"{c['baseline']['ns_per_packet']:.2f}", c["baseline"]["n"], f"{c['candidate']['mean']:.2f}",
                        f"{c['candidate']['ns_per_packet']:.2f}", c["candidate"]["n"],
                        f"{c['delta_ns_per_packet']:.2f}", _csv2(ci[0]), _csv2(ci[1]),
                        "" if c["ci95_ns"] is None else str(c["significant"]).lower(),
                        "" if c["ci95_ns"] is None else str(c.get("significant_raw", c["significant"])).lower(),
                        _csvg(c.get("p_value")), _csvg(c.get("p_holm")), c.get("decision", "raw"),
                        f"{c['percent']:.2f}", c["method"],
                        *_csv_ci(c["baseline"].get("ci95_ns")), *_csv_ci(c["candidate"].get("ci95_ns")),
                        c["baseline"].get("bound") or "", c["candidate"].get("bound") or "",
                        str(bool(c.get("rate_not_dut_bound"))).lower(), _csv2(c.get("cost_delta_ns")),
                        *_csv_ci(c.get("cost_ci95_ns")), c.get("headline", "rate"),
                        " | ".join(row_notices(report, f"{c['scenario']} {params_text(c['params'])}"))])
    else:
        w.writerow(["scenario", "variant", "params", "pps", "ns_per_packet", "delta_prev_ns", "delta_base_ns", "n",
                    "pps_ci95_lo", "pps_ci95_hi", "ns_ci95_lo", "ns_ci95_hi", "bound", "cost_ns", "cost_ci95_ns_lo",
                    "cost_ci95_ns_hi", "cost_n", "notices"])
        for t in report["sweeps"]:
            for r in t["rows"]:
                w.writerow([t["scenario"], t["variant"], json.dumps(r["params"], sort_keys=True),
                            f"{r['pps']:.2f}", f"{r['ns_per_packet']:.2f}", _csv2(r["delta_prev_ns"]),
                            _csv2(r["delta_base_ns"]), r["n"], *_csv_ci(pps_interval(r)), *_csv_ci(ns_interval(r)),
                            r.get("bound") or "", _csv2(r.get("cost_ns")), *_csv_ci(r.get("cost_ci95_ns")),
                            r.get("cost_n") or "",
                            " | ".join(row_notices(report,
                                                   f"{t['scenario']}/{t['variant']} {params_text(r['params'])}"))])
    return buf.getvalue()


def render(report: dict, fmt: str, path: str) -> None:
    """Write the report in fmt to path (the caller makes path a temp file)."""
    if fmt == "png":
        render_png(report, path)
        return
    if fmt == "html":
        # Imported here: _render_html uses this module's text helpers.
        from ansible_collections.xdplab.testbed.plugins.module_utils.results._render_html import render_html

        text = render_html(report)
    elif fmt == "text":
        text = render_text(report)
    elif fmt == "markdown":
        text = render_text(report, markdown=True)
    elif fmt == "csv":
        text = render_csv(report)
    else:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
