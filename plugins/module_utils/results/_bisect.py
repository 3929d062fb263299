# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.
"""Performance bisection of a patch series (docs/bisect.md): the decision rule of one step, the
error it spends, and the planner that picks the next prefix.

A step compares the base kernel (no patch of the series) with a prefix (patches 1..k), boots as the
unit of replication, interleaved (A B B A ...). Boots are added in looks fixed in advance (boots
per kernel at each look, e.g. 3, 5, 8); at each look Welch's interval over boots decides:

- ``moved``: the interval excludes 0 (the prefix is slower or faster than the base);
- ``not_moved``: the interval lies inside (-X, +X), X the threshold: the prefix did not move
  ns/packet by X or more;
- else the next look, and after the last look ``undecided``: never guessed.

A decision is wrong only when the interval of the look that made it misses the true difference
(``moved`` with a true difference of 0, ``not_moved`` with one of X or more; for a true difference
strictly between 0 and X either decision is right: the indifference zone). The intervals are
Bonferroni-adjusted so that all the intervals of a whole bisection cover at once with probability
at least 1 - alpha: the planned steps (1 + ceil(log2 N) for N patches: the whole series, then a
binary search) get alpha / (S + 1) each, S their number; a step beyond them (forced by skipped or
undecided prefixes) gets half of what the previous extra step got, starting at alpha / (2 (S + 1)),
so the sum never exceeds alpha; within a step, each of its L looks gets the step's level / L.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from ansible_collections.xdplab.testbed.plugins.module_utils.results._compare import kernel_of, replicate_of
from ansible_collections.xdplab.testbed.plugins.module_utils.results._statistics import (
    StatsError,
    min_detectable_effect,
    welch,
)

DECISIONS = ("moved", "not_moved", "undecided")
SKIP = "skip"  # the prefix did not apply, build or boot: git bisect skip
DEFAULT_LOOKS = (3, 5, 8)
DEFAULT_ALPHA = 0.05
METHOD = "bonferroni-sequential-welch"


class BisectError(StatsError):
    """Bad input to the bisection; the message names the bad value."""


# --------------------------------------------------------------------------- the error spent


def planned_steps(n_patches: int) -> int:
    """Steps of a bisection of ``n_patches`` with nothing skipped: the whole series, then a binary
    search of the first moved prefix among 1..N-1 (ceil(log2 N) steps)."""
    _check_count(n_patches)
    return 1 + math.ceil(math.log2(n_patches))


def step_alpha(step: int, n_patches: int, alpha: float = DEFAULT_ALPHA) -> float:
    """The error level of the ``step``-th measured step (1-based) of a bisection of ``n_patches``:
    alpha / (S + 1) for the S planned steps, then alpha / (S + 1) / 2**j for the j-th step beyond
    them; the levels of all steps, however many, sum to at most alpha."""
    _check_alpha(alpha)
    if isinstance(step, bool) or not isinstance(step, int) or step < 1:
        raise BisectError(f"a step is counted from 1, got {step!r}")
    planned = planned_steps(n_patches)
    share = alpha / (planned + 1)
    return share if step <= planned else share / 2 ** (step - planned)


def check_looks(looks: Sequence[int]) -> tuple[int, ...]:
    """Boots per kernel at each look: integers >= 2, strictly increasing."""
    out = tuple(looks) if isinstance(looks, (list, tuple)) else ()
    if (not out or any(isinstance(n, bool) or not isinstance(n, int) for n in out) or out[0] < 2
            or any(b <= a for a, b in zip(out, out[1:], strict=False))):
        raise BisectError(f"looks must be boots per kernel, integers >= 2 in increasing order, got {looks!r}")
    return out


# --------------------------------------------------------------------------- one step


def decide(base: Sequence[float], prefix: Sequence[float], threshold: float, alpha_step: float,
           looks: Sequence[int] = DEFAULT_LOOKS) -> dict:
    """The decision of a step after its boots so far: per-boot ns/packet of the base and of the
    prefix, as many of each (interleaved boots give equal counts at every look).

    Returns ``{decision, boots, delta, ci, level, direction, next_boots}``: ``decision`` one of
    moved, not_moved, undecided, or ``continue`` with ``next_boots`` the boots per kernel of the
    next look; ``level`` the confidence of the look's interval (1 - alpha_step / L)."""
    looks = check_looks(looks)
    _check_alpha(alpha_step)
    if not isinstance(threshold, (int, float)) or isinstance(threshold, bool) or not threshold > 0:
        raise BisectError(f"the threshold must be a number of ns/packet > 0, got {threshold!r}")
    if len(base) != len(prefix):
        raise BisectError(f"a look needs as many boots of the base as of the prefix, got {len(base)} and "
                          f"{len(prefix)}")
    n = len(base)
    level = 1.0 - alpha_step / len(looks)
    out = {"decision": "continue", "boots": n, "delta": None, "ci": None, "level": level,
           "direction": None, "next_boots": None}
    later = [k for k in looks if k > n]
    if n not in looks:
        if not later:
            raise BisectError(f"{n} boots per kernel is past the last look ({looks[-1]})")
        out["next_boots"] = later[0]
        return out
    w = welch(base, prefix, level)
    out["delta"] = w["delta"]
    if w["ci"] is not None:
        lo, hi = w["ci"]  # pylint: disable=unpacking-non-sequence  # a pair once set (welch's "ci": None default)
        out["ci"] = [lo, hi]
        if lo > 0.0 or hi < 0.0:
            out.update(decision="moved", direction="slower" if lo > 0.0 else "faster")
            return out
        if -threshold < lo and hi < threshold:
            out["decision"] = "not_moved"
            return out
    if later:
        out["next_boots"] = later[0]
    else:
        out["decision"] = "undecided"
    return out


def default_threshold(base: Sequence[float], boots: int) -> float:
    """The loop's minimum detectable effect (95%, 80% power) with ``boots`` boots per kernel, from
    the boot-to-boot stdev of the base's per-boot ns/packet (the figure the loop's A/A line gives)."""
    values = [float(v) for v in base]
    if len(values) < 2:
        raise BisectError(f"the default threshold needs at least 2 boots of the base, got {len(values)}")
    mean = sum(values) / len(values)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
    mde = min_detectable_effect(sd, boots)
    if not mde:
        raise BisectError(f"the base's boots {values} have no spread: give the threshold (bisect_threshold)")
    return mde


# --------------------------------------------------------------------------- the planner


def plan(n_patches: int, outcomes: dict[int, str]) -> dict:
    """What to do next, given the outcome of each prefix measured or tried so far (prefix k =
    patches 1..k; outcome moved, not_moved, undecided or skip). Each prefix is measured once: an
    outcome already known is reused, never measured again.

    Returns ``{"next": k}`` for the prefix to measure next, or ``{"next": None, "result": ...}``:
    ``result`` has ``verdict`` (culprit, range, no_culprit, undecided, unmeasurable), ``first`` and
    ``last`` (the patches the culprit is among, equal for a single culprit), ``good`` and ``bad``
    (the last prefix that did not move, the first that moved), ``skipped`` and ``undecided`` (the
    prefixes in between that could not say, or beyond the last measurable one)."""
    _check_count(n_patches)
    known = {}
    for k, outcome in dict(outcomes).items():
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= n_patches:
            raise BisectError(f"prefix {k!r} is not one of 1..{n_patches}")
        if outcome not in DECISIONS + (SKIP,):
            raise BisectError(f"prefix {k}: outcome {outcome!r} is not one of {', '.join(DECISIONS + (SKIP,))}")
        known[k] = outcome
    # the end of the series first: the last prefix that applies, builds and boots
    top = None
    for k in range(n_patches, 0, -1):
        if k not in known:
            return {"next": k}
        if known[k] != SKIP:
            top = k
            break
    beyond = [k for k in range(n_patches, 0, -1) if known.get(k) == SKIP and (top is None or k > top)][::-1]
    if top is None:
        return _done("unmeasurable", None, None, skipped=beyond, undecided=[])
    if known[top] == "undecided":
        return _done("undecided", None, None, skipped=beyond, undecided=[top])
    if known[top] == "not_moved":
        return _done("no_culprit", top, None, skipped=beyond, undecided=[])
    moved = [k for k in known if known[k] == "moved"]
    bad = min(moved)
    good = max([k for k in known if known[k] == "not_moved" and k < bad], default=0)
    todo = [k for k in range(good + 1, bad) if k not in known]
    if todo:
        middle = (good + bad) / 2.0
        return {"next": min(todo, key=lambda k: (abs(k - middle), k))}
    between = range(good + 1, bad)
    return _done("culprit" if bad == good + 1 else "range", good, bad,
                 skipped=[k for k in between if known[k] == SKIP],
                 undecided=[k for k in between if known[k] == "undecided"])


def _done(verdict: str, good: int | None, bad: int | None, skipped: list[int], undecided: list[int]) -> dict:
    result = {"verdict": verdict, "good": good, "bad": bad, "first": None, "last": None,
              "skipped": skipped, "undecided": undecided}
    if bad is not None:
        result.update(first=(good or 0) + 1, last=bad)
    return {"next": None, "result": result}


# --------------------------------------------------------------------------- a whole bisection


def next_step(n_patches: int, steps: Sequence[dict], alpha: float = DEFAULT_ALPHA,
              patch_ids: Sequence[str] | None = None) -> dict:
    """The next step of a bisection given the steps so far (``{prefix, decision}`` each, in the
    order they were taken; decision moved, not_moved, undecided or skip): ``{next, step, alpha}``
    (the prefix, its step number among the measured steps, its error level), or ``{next: None,
    result}`` (see :func:`plan`). With ``patch_ids`` (the series' patch-ids, in order), every step
    must name the patch-ids of its prefix (``patch_ids``) and they must be the series' first ones: a
    step measured on another series is refused, never reused."""
    outcomes = {}
    for s in steps:
        if not isinstance(s, dict) or "prefix" not in s or "decision" not in s:
            raise BisectError(f"a step is a mapping with prefix and decision, got {s!r}")
        if patch_ids is not None:
            _check_prefix(s, list(patch_ids))
        outcomes[s["prefix"]] = s["decision"]
    nxt = plan(n_patches, outcomes)
    if nxt["next"] is None:
        return nxt
    number = 1 + sum(1 for s in steps if s["decision"] != SKIP)
    return {"next": nxt["next"], "step": number, "alpha": step_alpha(number, n_patches, alpha)}


def _check_prefix(step: dict, patch_ids: list[str]) -> None:
    k = step["prefix"]
    mine = step.get("patch_ids")
    want = patch_ids[:k] if isinstance(k, int) and not isinstance(k, bool) else None
    if mine != want:
        raise BisectError(f"the step of prefix 1-{k} was measured on patches {_short(mine)}, but this series' "
                          f"first {k} are {_short(want)}: resume a run with the series it was started with")


def _short(ids: object) -> object:
    return [str(i)[:12] for i in ids] if isinstance(ids, list) else ids


def bisect(n_patches: int, measure: Callable[[int, int], tuple[list[float], list[float]] | None],
           threshold: float, alpha: float = DEFAULT_ALPHA, looks: Sequence[int] = DEFAULT_LOOKS,
           known: Sequence[dict] = ()) -> dict:
    """Run a bisection with ``measure(prefix, boots)``: the per-boot ns/packet of the base and of
    the prefix after ``boots`` boots per kernel (all of them, the earlier ones included), or None
    when the prefix does not apply, build or boot. ``known`` holds the steps of an earlier attempt,
    reused as they are. Returns ``{result, steps, threshold, alpha, looks}``, the steps in the order
    they were taken, each with its prefix, step number, level, looks and decision. (The playbook
    runs the same steps with :func:`next_step` and :func:`decide`, one task at a time.)"""
    looks = check_looks(looks)
    steps = [dict(s) for s in known]
    while True:
        nxt = next_step(n_patches, steps, alpha)
        if nxt["next"] is None:
            break
        k = nxt["next"]
        step = {"prefix": k, "step": nxt["step"], "alpha": nxt["alpha"], "looks": []}
        boots = looks[0]
        while True:
            values = measure(k, boots)
            if values is None:
                step.update(decision=SKIP, step=None, alpha=None)
                break
            d = decide(values[0], values[1], threshold, nxt["alpha"], looks)
            step["looks"].append(d)
            if d["decision"] != "continue":
                step.update(decision=d["decision"], boots=d["boots"], delta=d["delta"], ci=d["ci"],
                            level=d["level"], direction=d["direction"], base=list(values[0]),
                            values=list(values[1]))
                break
            boots = d["next_boots"]
        steps.append(step)
    return {"result": nxt["result"], "steps": steps, "threshold": threshold, "alpha": alpha, "looks": list(looks)}


# --------------------------------------------------------------------------- checks


def _check_count(n_patches: int) -> None:
    if isinstance(n_patches, bool) or not isinstance(n_patches, int) or n_patches < 1:
        raise BisectError(f"a series has at least one patch, got {n_patches!r}")


def _check_alpha(alpha: float) -> None:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0.0 < alpha < 1.0:
        raise BisectError(f"alpha must be a probability strictly between 0 and 1, got {alpha!r}")


# --------------------------------------------------------------------------- rate and CPU of a step


CPU_SOURCES = {"dut_cost": "the DUT's CPU accounting", "pktgen": "pktgen's CPU time per packet"}


def record_cpu(record: dict) -> tuple[float, float, str] | None:
    """The CPU time and packets a record carries, as ``(cpu ns, packets, source)``: the DUT's CPU
    accounting (``summary.dut_cost.ns_per_packet`` over the record's packets), else pktgen's own
    (each device's ``usec_cpu`` and ``packets``, summed over the repetitions). None when it carries
    neither: a cost is never guessed."""
    cost = (record.get("summary") or {}).get("dut_cost") if isinstance(record.get("summary"), dict) else None
    ns = _count(cost.get("ns_per_packet")) if isinstance(cost, dict) else None
    if ns is not None:
        return ns, 1.0, "dut_cost"
    cpu_us = packets = 0.0
    devices = [d for rep in record.get("reps") or [] if isinstance(rep, dict)
               for d in rep.get("devices") or [] if isinstance(d, dict)]
    for d in devices:
        us, n = _count(d.get("usec_cpu")), _count(d.get("packets"))
        if us is None or n is None:
            return None
        cpu_us += us
        packets += n
    if not devices or packets <= 0 or not math.isfinite(cpu_us + packets):
        return None
    return cpu_us * 1e3, packets, "pktgen"


def _count(v: object) -> float | None:
    """A finite number >= 0 as a float, else None."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:
        return None
    return f if math.isfinite(f) and f >= 0 else None


def step_cpu(records: Sequence[dict], base: str, prefix: str) -> dict | None:
    """The CPU cost per packet of a step's two kernels from their records: one value per boot (its
    records' CPU time over their packets), the mean over boots per kernel, and prefix - base. None
    when a record of either kernel carries no CPU figure, or a kernel has no boot."""
    boots: dict[str, dict[str, list[float]]] = {base: {}, prefix: {}}
    sources = set()
    for rec in records:
        kernel = kernel_of(rec)
        if kernel not in boots:
            continue
        got = record_cpu(rec)
        if got is None:
            return None
        ns, packets, source = got
        sources.add(source)
        acc = boots[kernel].setdefault(replicate_of(rec)[1], [0.0, 0.0])
        acc[0] += ns
        acc[1] += packets
    if not boots[base] or not boots[prefix] or len(sources) != 1:
        return None
    per_boot = {k: [ns / n for ns, n in (boots[k][b] for b in sorted(boots[k]))] for k in (base, prefix)}
    mean = {k: math.fsum(v) / len(v) for k, v in per_boot.items()}
    (source,) = sources
    return {"base": mean[base], "prefix": mean[prefix], "delta": mean[prefix] - mean[base],
            "boots": {"base": len(per_boot[base]), "prefix": len(per_boot[prefix])},
            "source": source, "values": {"base": per_boot[base], "prefix": per_boot[prefix]}}
