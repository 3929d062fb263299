# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""KTAP results of the kernel's selftests, read into plain data, and judged against the explanations a
lab gives for what an emulated device cannot do. Private to the xdplab.testbed collection; pure.

`run_kselftest.sh` prints TAP version 13 for the programs it runs, and each program's own KTAP
(Documentation/dev-tools/ktap.rst) indented by `# `:

    TAP version 13
    1..1
    # selftests: drivers/net: ping.py
    # KTAP version 1
    # 1..3
    # ok 1 ping.test_v4
    # ok 2 ping.test_v6 # SKIP no IPv6 address
    # not ok 3 ping.test_tcp
    # # Totals: pass:1 fail:1 xfail:0 xpass:0 skip:1 error:0
    not ok 1 selftests: drivers/net: ping.py # exit=1

No KTAP reader is packaged for Python (the kernel's own, tools/testing/kunit/kunit_parser.py, is for
KUnit's nesting and is not importable from a collection), so this is a small one: result lines, their
SKIP/XFAIL/TODO directive, and the program each case belongs to.
"""

from __future__ import annotations

import re

RESULT_RE = re.compile(r"^(?P<ok>ok|not ok) (?P<n>\d+)(?: -)? ?(?P<name>[^#]*?)\s*(?:#\s*(?P<directive>.*))?$")
PROGRAM_RE = re.compile(r"^selftests: (?P<collection>\S+): (?P<program>\S+)$")

STATUSES = ("pass", "fail", "skip", "xfail", "error")


class KtapError(ValueError):
    """Output that holds no KTAP/TAP result at all."""


def _status(ok: str, directive: str | None) -> tuple[str, str]:
    word, _sep, reason = (directive or "").partition(" ")
    word = word.upper()
    if word == "SKIP":
        return "skip", reason.strip()
    if word in ("XFAIL", "TODO"):
        return "xfail", reason.strip()
    if ok == "ok":
        return "pass", ""
    return "fail", (directive or "").strip()


def parse(text: str) -> list[dict]:
    """The programs of one run_kselftest.sh output, each with its cases, in order.

    A program is {"program", "collection", "status", "reason", "cases": [{"n", "name", "status",
    "reason"}]}. Lines of a program's own output come before its outer result line, so cases are
    collected until that line closes them. A program that printed no cases keeps an empty list.
    """
    programs: list[dict] = []
    pending: list[dict] = []
    seen_any = False
    for raw in text.splitlines():
        line = raw.rstrip()
        depth = 0
        while line.startswith("# "):
            line = line[2:]
            depth += 1
        m = RESULT_RE.match(line)
        if not m:
            continue
        seen_any = True
        status, reason = _status(m.group("ok"), m.group("directive"))
        name = m.group("name").strip()
        if depth == 0:
            pm = PROGRAM_RE.match(name)
            programs.append({
                "program": pm.group("program") if pm else name,
                "collection": pm.group("collection") if pm else "",
                "status": status,
                "reason": reason,
                "cases": pending,
            })
            pending = []
        elif depth == 1:
            pending.append({"n": int(m.group("n")), "name": name, "status": status, "reason": reason})
    if not seen_any:
        raise KtapError("no KTAP result line (\"ok N ...\" or \"not ok N ...\") in the selftest output")
    if pending:  # cut off before the program's own result line: the runner was killed
        programs.append({"program": "(unfinished)", "collection": "", "status": "error",
                         "reason": "output ended before the program's result line", "cases": pending})
    return programs


def totals(programs: list[dict]) -> dict:
    """Case counts by status over every program (a program without cases counts as one case)."""
    out = dict.fromkeys(STATUSES, 0)
    for prog in programs:
        for case in prog["cases"] or [prog]:
            out[case["status"]] += 1
    return out


def judge(programs: list[dict], explained: dict[str, str]) -> list[str]:
    """What is neither a pass nor explained, one line each (empty: the lab passes its own check).

    `explained` maps a case ("stats.check_pause") or a whole program ("csum.py") to why the emulated
    device cannot pass it; a skip or failure with an explanation is accepted, and the explanation of a
    case that passed is stale and reported too, so the table cannot outlive the reason it was written.
    """
    problems = []
    for prog in programs:
        for case in prog["cases"] or [prog]:
            key = case["name"] if prog["cases"] else prog["program"]
            why = explained.get(key) or explained.get(prog["program"])
            if case["status"] in ("pass", "xfail"):
                if key in explained:
                    problems.append(f"{prog['program']}: {key} passed, but the lab explains it as not passing: "
                                    f"{explained[key]!r}")
                continue
            if not why:
                detail = f" ({case['reason']})" if case["reason"] else ""
                problems.append(f"{prog['program']}: {key} {case['status']}{detail}, with no explanation")
    return problems
