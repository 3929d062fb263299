# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.
#
# A/B of two kernels by boot (docs/ab.md): the records of each boot are one replication unit,
# compared with the collection's one estimator (results._compare), plus the A/A check on the
# baseline's boots, a leave-one-boot-out check of the delta, and the environment diff between the
# kernels with the keys that vary from boot to boot marked.
"""A/B analysis of two kernels with each boot as the unit of replication."""

from __future__ import annotations

import math
from typing import Any

from ansible_collections.xdplab.testbed.plugins.module_utils.results._compare import (  # noqa: F401  kernel_of: re-exported
    compare_records,
    kernel_of,
    multiple_comparisons,
    replicate_of,
    row_params,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.results._environment import fingerprint_diff, flatten
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_files import params_key
from ansible_collections.xdplab.testbed.plugins.module_utils.results._statistics import (
    StatsError,
    min_detectable_effect,
    ns_samples,
    summarize,
    welch,
)

LEVEL = "boot"
MIN_BOOTS = 2
AA_MIN_BOOTS = 4  # two interleaved halves of at least two boots each
METHOD_TEXT = ("each boot is one unit: its repetitions are averaged to one ns/packet (1e9/pps) per boot; "
               "delta = B - A of the means over boots (negative is faster), with Welch's t 95% two-sided "
               "interval over boots; n counts boots; a row is significant when its interval excludes 0")


class ABError(StatsError):
    """Records that cannot be compared by boot; the message names the kernel, record or count."""


def _boot_id(rec: dict) -> str:
    level, ident = replicate_of(rec)
    if level != LEVEL:
        raise ABError(f"{rec.get('_path', 'record')}: replicate level {level!r} (id {ident!r}), not {LEVEL!r}: an "
                      "A/B by boot needs records that name their boot (replicate: {level: boot, id: ...})")
    return ident


def xsk_bind(records: list[dict]) -> dict[str, list[str]]:
    """How the AF_XDP sockets behind records were bound (``zero-copy`` or ``copy``): the DUT's (the
    xsksink server's own report) and the generator's (xskgen's bind_mode); empty lists without sockets."""
    dut, gen = set(), set()
    for r in records:
        server = (r.get("counters") or {}).get("server") or {}
        mode = (server.get("info") or {}).get("mode") if server.get("tool") == "xsksink" else None
        if isinstance(mode, str):
            dut.add(mode)
        for rep in r.get("reps") or []:
            bound = ((rep or {}).get("gen_figures") or {}).get("bind_mode")
            if isinstance(bound, str):
                gen.add(bound)
    return {"dut": sorted(dut), "generator": sorted(gen)}


def collapse(boot: str, records: list[dict]) -> dict:
    """The records of one boot (one scenario + params) as one unit: their repetitions together."""
    first = min(records, key=lambda r: str(r.get("started", "")))
    return {
        "scenario": first["scenario"], "params": row_params(first), "variant": kernel_of(first),
        "run_id": first.get("run_id"), "started": str(first.get("started", "")),
        "replicate": {"level": LEVEL, "id": boot},
        "samples": [s for r in records for s in r["samples"]],
        "environment": first.get("environment") or {},
        "warnings": [w for r in records for w in r.get("warnings") or []],
        "xsk_bind": xsk_bind(records),
        "_path": [r.get("_path") for r in records] if len(records) > 1 else first.get("_path"),
    }


# Environment keys the report shows in a section of their own, not in the environment diff.
SHOWN_APART = ("kernel_patches",)  # the series: subjects and patch-ids


def boots_by_key(records: list[dict], kernel: str | None) -> dict[tuple[str, str], list[dict]]:
    """{(scenario, params key): [one collapsed unit per boot, in boot order]} of one kernel's records
    (kernel_of(record) == kernel; every record when kernel is None). A sweep's datapath variant is part
    of the row's params (row_params). Boot order: first start, then boot id."""
    grouped: dict[tuple[str, str], dict[str, list[dict]]] = {}
    for rec in records:
        if kernel is not None and kernel_of(rec) != kernel:
            continue
        key = (rec["scenario"], params_key(row_params(rec)))
        grouped.setdefault(key, {}).setdefault(_boot_id(rec), []).append(rec)
    out = {}
    for key, boots in grouped.items():
        units = [collapse(b, recs) for b, recs in boots.items()]
        out[key] = sorted(units, key=lambda u: (u["started"], u["replicate"]["id"]))
    return out


def _unit_values(units: list[dict]) -> list[float]:
    """One ns/packet per unit: the mean of its repetitions' ns/packet (the estimator of results._compare)."""
    return [math.fsum(v) / len(v) for v in (ns_samples(u["samples"]) for u in units)]


def aa_check(units: list[dict], kernel: str, level: float = 0.95) -> dict:
    """A/A on one kernel's boots: its boots in boot order split into two interleaved halves (1st, 3rd, ...
    against 2nd, 4th, ...) and compared like an A/B, when there are at least 4; with fewer, no interval
    and a note. Always: boot-to-boot stdev and spread (max - min) of the per-boot ns/packet, and the
    minimum detectable effect (95%, 80% power) of an A/B with as many boots per kernel."""
    values = _unit_values(units)
    n = len(values)
    stats = summarize(values)
    out: dict[str, Any] = {
        "kernel": kernel, "boots": n, "mean_ns": stats["mean"],
        "boot_stdev_ns": stats["stdev"] if n > 1 else None,
        "spread_ns": max(values) - min(values),
        "mde_ns": min_detectable_effect(stats["stdev"], n, level) if n > 1 else None,
        "halves": None, "delta_ns_per_packet": None, "ci95_ns": None, "significant": False, "p_value": None,
        "note": None,
    }
    if n < AA_MIN_BOOTS:
        out["note"] = (f"{n} boots of {kernel!r}: an A/A split needs {AA_MIN_BOOTS} "
                       f"({AA_MIN_BOOTS // 2} per half), no interval")
        return out
    first, second = list(range(0, n, 2)), list(range(1, n, 2))
    w = welch([values[i] for i in first], [values[i] for i in second], level)
    ids = [u["replicate"]["id"] for u in units]
    out.update(halves=[[ids[i] for i in first], [ids[i] for i in second]], delta_ns_per_packet=w["delta"],
               ci95_ns=w["ci"], significant=bool(w["significant"]), p_value=w["p_value"], note=w["note"])
    return out


def leave_one_out(base: list[dict], cand: list[dict]) -> dict:
    """The delta recomputed with each boot of either kernel left out: its range, and whether its sign
    ever differs from the delta over all boots (one boot deciding the direction)."""
    vb, vc = _unit_values(base), _unit_values(cand)
    full = math.fsum(vc) / len(vc) - math.fsum(vb) / len(vb)
    deltas = []
    for side, values in (("baseline", vb), ("candidate", vc)):
        for i in range(len(values)):
            rest = values[:i] + values[i + 1:]
            m = math.fsum(rest) / len(rest)
            deltas.append(math.fsum(vc) / len(vc) - m if side == "baseline" else m - math.fsum(vb) / len(vb))
    sign = (full > 0) - (full < 0)
    return {"deltas": len(deltas), "delta_min": min(deltas), "delta_max": max(deltas),
            "sign_stable": all(((d > 0) - (d < 0)) == sign for d in deltas)}


def _varying_keys(units: list[dict]) -> set[str]:
    """Environment keys whose value differs between boots of one kernel."""
    flats = [flatten(u["environment"]) for u in units]
    keys = set().union(*flats) if flats else set()
    return {k for k in keys if len({repr(f.get(k)) for f in flats}) > 1}


def analyze(base_records: list[dict], cand_records: list[dict], *, baseline: str | None = None,
            candidate: str | None = None, level: float = 0.95) -> dict:
    """A/B of two kernels by boot. ``baseline``/``candidate`` select records by kernel (kernel_of: the
    environment's kernel_variant, else the variant; None: all the records of that side). Every record
    must name its boot (``replicate`` level "boot"); several records of one boot and one scenario +
    params (row_params) are pooled into that boot's one value. Fewer than 2 boots of a kernel for a
    scenario + params is an error naming the kernel, the row and the count."""
    b = boots_by_key(base_records, baseline)
    c = boots_by_key(cand_records, candidate)
    names = {"baseline": baseline or "baseline", "candidate": candidate or "candidate"}
    for side, groups in (("baseline", b), ("candidate", c)):
        if not groups:
            raise ABError(f"no records of kernel {names[side]!r} on the {side} side")
    common = sorted(set(b) & set(c))
    if not common:
        raise ABError(f"no scenario + params measured on both kernels: {names['baseline']!r} has "
                      f"{sorted(k[0] for k in b)}, {names['candidate']!r} has {sorted(k[0] for k in c)}")
    for key in common:
        for side, groups in (("baseline", b), ("candidate", c)):
            n = len(groups[key])
            if n < MIN_BOOTS:
                raise ABError(
                    f"kernel {names[side]!r}: {n} boot(s) of {key[0]} {groups[key][0]['params']} "
                    f"({', '.join(u['replicate']['id'] for u in groups[key])}); an interval over boots needs at "
                    f"least {MIN_BOOTS} boots per kernel")
    rows = []
    for key in common:
        row = compare_records(b[key], c[key])
        row.pop("caveat", None)  # several units per side: never the one-run case
        row["method_text"] = METHOD_TEXT
        row["boots"] = {side: [u["replicate"]["id"] for u in g[key]] for side, g in (("baseline", b), ("candidate", c))}
        row["boot_ns_per_packet"] = {side: _unit_values(g[key]) for side, g in (("baseline", b), ("candidate", c))}
        row["aa"] = aa_check(b[key], names["baseline"], level)
        row["leave_one_out"] = leave_one_out(b[key], c[key])
        bind = {side: {end: sorted({m for u in g[key] for m in u["xsk_bind"][end]}) for end in ("dut", "generator")}
                for side, g in (("baseline", b), ("candidate", c))}
        if any(modes for side in bind.values() for modes in side.values()):
            row["xsk_bind"] = bind  # the sockets' bind modes per kernel: copy vs zero-copy is often the point
        rows.append(row)
    multiple = multiple_comparisons(rows, level)
    unmatched = [{"kernel": names[side], "scenario": k[0], "params": groups[k][0]["params"]}
                 for side, groups, other in (("baseline", b, c), ("candidate", c, b))
                 for k in sorted(groups) if k not in other]
    units_b = [u for k in common for u in b[k]]
    units_c = [u for k in common for u in c[k]]
    # per row: the sweeps of one boot fingerprint different ports, so a key one row lacks does not vary
    varying = set().union(*(_varying_keys(g[key]) for key in common for g in (b, c)))
    env_b, env_c = units_b[0]["environment"], units_c[0]["environment"]
    env_diff = [dict(d, varies_between_boots=d["key"] in varying) for d in fingerprint_diff(env_b, env_c)
                if d["key"] not in SHOWN_APART]
    return {
        "unit_level": LEVEL, "method_text": METHOD_TEXT, "kernels": names,
        "boots": {"baseline": len({u["replicate"]["id"] for u in units_b}),
                  "candidate": len({u["replicate"]["id"] for u in units_c})},
        "rows": rows, "multiple": multiple, "unmatched": unmatched,
        "environment": {"baseline": env_b, "candidate": env_c}, "environment_diff": env_diff,
        "warnings": sorted({w for r in rows for w in r["warnings"]}),
    }
