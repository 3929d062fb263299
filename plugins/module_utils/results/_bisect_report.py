# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.
"""The report of a performance bisection (docs/bisect.md): text and Markdown of at most 100
columns, and the same figures as a mapping for the YAML file."""

from __future__ import annotations

from ansible_collections.xdplab.testbed.plugins.module_utils.results._bisect import (
    CPU_SOURCES,
    BisectError,
    planned_steps,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.results._text_layout import WIDTH

SCHEMA = "xdplab.bisect/v1"


def summary(state: dict) -> dict:
    """The report's figures: the state of the bisection (series, scenario, threshold, alpha, looks,
    steps, result, cost) with the culprit's subject, patch-id, Δ and interval added."""
    for key in ("series", "steps", "result", "threshold", "alpha"):
        if key not in state:
            raise BisectError(f"a bisection's state needs {key!r}; it has {sorted(state)}")
    series = [{"subject": p["subject"], "patch_id": p["patch_id"]} for p in state["series"]]
    n = len(series)
    result = dict(state["result"])
    steps = [dict(s) for s in state["steps"]]
    by_prefix = {s["prefix"]: s for s in steps}
    culprit = None
    if result.get("verdict") in ("culprit", "range"):
        bad = by_prefix[result["bad"]]
        culprit = {"first": result["first"], "last": result["last"],
                   "patches": [dict(series[i - 1], index=i) for i in range(result["first"], result["last"] + 1)],
                   "delta_ns_per_packet": bad.get("delta"), "ci_ns": bad.get("ci"), "level": bad.get("level"),
                   "direction": bad.get("direction"), "boots": bad.get("boots"), "prefix": result["bad"],
                   "rate_pps": _rate(bad), "cpu_ns_per_packet": _cpu(bad)}
        good = by_prefix.get(result.get("good"))
        if good is not None and good.get("delta") is not None and bad.get("delta") is not None:
            # the culprit's own share: the first moved prefix against the last that did not move
            culprit["delta_from_previous_prefix"] = bad["delta"] - good["delta"]
    return {"schema": SCHEMA, "run_id": state.get("run_id"), "scenario": state.get("scenario"),
            "series": [dict(p, index=i) for i, p in enumerate(series, start=1)], "patches": n,
            "threshold_ns": state["threshold"], "threshold_source": state.get("threshold_source", "given"),
            "alpha": state["alpha"], "looks": list(state.get("looks") or []),
            "planned_steps": planned_steps(n) if n else None, "method": method_text(state),
            "steps": steps, "result": result, "culprit": culprit, "cost": dict(state.get("cost") or {})}


def _rate(step: dict) -> dict | None:
    """A step's rate (pps of the base and of the prefix, one estimator with its ns/packet) and the
    prefix's change in percent; None when the step recorded none."""
    rate = step.get("rate_pps")
    if not isinstance(rate, dict) or not rate.get("base") or rate.get("prefix") is None:
        return None
    return {"base": rate["base"], "prefix": rate["prefix"], "percent": (rate["prefix"] / rate["base"] - 1.0) * 100.0}


def _cpu(step: dict) -> dict | None:
    cpu = step.get("cpu_ns_per_packet")
    if not isinstance(cpu, dict):
        return None
    return {k: cpu.get(k) for k in ("base", "prefix", "delta", "source")}


def method_text(state: dict) -> str:
    n = len(state["series"])
    s = planned_steps(n) if n else 0
    looks = state.get("looks") or []
    return (f"each step compares the base with a prefix over boots (interleaved, one ns/packet per boot), "
            f"adding boots at looks of {', '.join(map(str, looks))} boots per kernel; Welch's interval over "
            f"boots decides: moved when it excludes 0, not moved when it lies within +-threshold, else the "
            f"next look, undecided after the last. Error: all intervals of the bisection hold at once with "
            f"probability >= {1 - state['alpha']:.0%} (Bonferroni: alpha/{s + 1} for each of the {s} planned "
            f"steps, halved for each extra step, divided by {len(looks)} looks)")


def _num(v: float | None, sign: bool = True) -> str:
    if v is None:
        return "-"
    return f"{v:+.0f}" if sign else f"{v:.0f}"


def _interval(d: dict) -> str:
    if d.get("delta") is None:
        return "-"
    ci = d.get("ci")
    return f"{_num(d['delta'])} [{_num(ci[0])}, {_num(ci[1])}]" if ci else _num(d["delta"])


def _decision(s: dict) -> str:
    if s["decision"] == "skip":
        return "skip (below)"
    if s["decision"] == "moved":
        return f"moved ({s.get('direction')})"
    return s["decision"].replace("_", " ")


def _clip(text: str, width: int = WIDTH) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _headline(r: dict) -> str:
    res, n = r["result"], r["patches"]
    x = f"{r['threshold_ns']:.0f} ns/packet"
    if res["verdict"] == "culprit":
        return f"patch {res['first']}/{n} moves ns/packet"
    if res["verdict"] == "range":
        return f"one of patches {res['first']}-{res['last']} of {n} moves ns/packet"
    if res["verdict"] == "no_culprit":
        upto = "no patch" if not res["skipped"] else f"no patch of 1-{res['good']}"
        return f"{upto} moves ns/packet by >= {x}"
    if res["verdict"] == "undecided":
        return f"undecided: the series' last measurable prefix neither moved nor stayed within {x}"
    return "nothing measurable: no prefix applied, built and booted"


def _lines(r: dict) -> tuple[list[str], list[list[str]], list[str]]:
    """Head lines, step table rows and tail lines, shared by text and Markdown."""
    head = []
    c = r["culprit"]
    if c:
        for p in c["patches"]:
            head.append(_clip(f"culprit   {p['index']}/{r['patches']} {p['subject']}"))
            head.append(f"          patch-id {p['patch_id']}")
        level = f"{c['level']:.2%}" if c.get("level") else "?"
        head.append(f"delta     {_interval({'delta': c['delta_ns_per_packet'], 'ci': c['ci_ns']})} ns/packet, "
                    f"{c['direction']} ({level} interval)")
        more = ""
        if c.get("delta_from_previous_prefix") is not None:
            more = (f"; {_num(c['delta_from_previous_prefix'])} ns/packet more than prefix "
                    f"1-{r['result']['good']}")
        head.append(f"          prefix 1-{c['prefix']} against the base, {c['boots']} + {c['boots']} boots{more}")
        rate = c.get("rate_pps")
        head.append(f"rate      {rate['base']:.0f} -> {rate['prefix']:.0f} pps ({rate['percent']:+.1f}%), base -> "
                    f"prefix 1-{c['prefix']}" if rate else "rate      not recorded")
        cpu = c.get("cpu_ns_per_packet")
        head.append(f"CPU       {cpu['base']:.0f} -> {cpu['prefix']:.0f} ns/packet ({_num(cpu['delta'])}), "
                    f"{CPU_SOURCES.get(cpu['source'], cpu['source'])}" if cpu
                    else "CPU       cost per packet not recorded by the scenario's records")
    src = ("given" if r["threshold_source"] == "given"
           else "default: the loop's minimum detectable effect at its boots")
    head.append(f"threshold {r['threshold_ns']:.0f} ns/packet ({src})")
    rows = []
    for s in r["steps"]:
        rows.append([str(s.get("step") or "-"), f"1-{s['prefix']}",
                     f"{s.get('boots') or '-'}/{s.get('boots') or '-'}", _interval(s), _decision(s)])
    tail = []
    res = r["result"]
    # every prefix the bisection could not measure, also those outside the culprit's bracket
    skipped = sorted(s["prefix"] for s in r["steps"] if s["decision"] == "skip")
    if skipped:
        tail.append("skipped (do not apply, build or boot): prefix " + ", ".join(f"1-{k}" for k in skipped))
    for s in r["steps"]:
        if s["decision"] == "skip":
            tail.append(f"prefix 1-{s['prefix']}: {s.get('reason') or 'does not apply, build or boot'}")
    if res.get("undecided"):
        tail.append("undecided: prefix " + ", ".join(f"1-{k}" for k in res["undecided"]))
    cost = r["cost"]
    if cost:
        built = f"{cost.get('compiled', '?')} compiled"
        if cost.get("compiled") and cost.get("build_seconds") is not None:
            built += f" in {_duration(cost['build_seconds'])}"
        tail.append(f"cost: {cost.get('kernels', '?')} kernels ({built}), {cost.get('boots', '?')} boots, "
                    f"wall time {_duration(cost.get('seconds'))}")
    return head, rows, tail


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    m, s = divmod(int(round(seconds)), 60)
    return f"{m} min {s} s"


def _wrap(text: str, width: int = WIDTH, indent: str = "") -> list[str]:
    out, line = [], indent
    for word in text.split():
        if len(line) + len(word) + 1 > width and line.strip():
            out.append(line.rstrip())
            line = indent
        line += word + " "
    if line.strip():
        out.append(line.rstrip())
    return out


def render_text(state: dict) -> str:
    r = summary(state)
    title = f"Bisection of {r['patches']} patches, {r['scenario']}: {_headline(r)}"
    head, rows, tail = _lines(r)
    table = [["step", "prefix", "boots A/B", "delta ns/pkt [interval]", "decision"]] + rows
    widths = [max(len(row[i]) for row in table) for i in range(4)]
    out = [_clip(title), "-" * min(len(title), WIDTH), ""] + [f"  {h}" for h in head] + [""]
    for j, row in enumerate(table):
        cells = [row[0].rjust(widths[0]), row[1].ljust(widths[1]), row[2].rjust(widths[2]), row[3].ljust(widths[3])]
        out.append(_clip("  " + "  ".join(cells) + "  " + row[4]))
        if j == 0:
            out.append("  " + "  ".join("-" * w for w in widths) + "  " + "-" * 8)
    out.append("")
    for t in tail:
        out += _wrap(t, indent="  ")
    out += _wrap("method: " + r["method"], indent="  ")
    return "\n".join(out) + "\n"


def render_markdown(state: dict) -> str:
    r = summary(state)
    head, rows, tail = _lines(r)
    out = [_clip(f"### Bisection of {r['patches']} patches, {r['scenario']}: {_headline(r)}"), ""]
    out += [_clip(f"    {h}") for h in head] + [""]
    out.append("| step | prefix | boots A/B | Δ ns/pkt [interval] | decision |")
    out.append("|---:|---|---:|---|---|")
    out += [_clip("| " + " | ".join(row) + " |") for row in rows]
    out.append("")
    for t in tail:
        out += _wrap(t)
    out += [""] + _wrap("Method: " + r["method"])
    return "\n".join(out) + "\n"
