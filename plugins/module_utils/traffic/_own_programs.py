# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A user's own BPF programs as bench scenarios (the bench role's ``bench_programs``).
Private to the xdplab.testbed collection.

``bench_programs`` maps a scenario name to where the program comes from and where it goes::

    {"my_filter": {"source": "/home/me/my_filter.bpf.c"},            # XDP on the DUT's port
     "my_tc": {"object": "/home/me/my_tc.o", "hook": "tc", "section": "tc"}}

``scenario_rows`` turns it into rows of the bench role's scenario table: the program is attached to the
DUT's port (XDP) or put on its clsact ingress (tc, cls_bpf direct action), and its packets are counted
by its own run count (the ``runs`` counter: BPF run-time statistics), so the program needs no counter
map of the collection's. Everything is checked here, each error naming the scenario and the bad value,
before anything is built or attached.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,47}\Z")
SECTION_RE = re.compile(r"^[A-Za-z0-9_./]{1,64}\Z")
HOOKS = ("xdp", "tc")
KEYS = ("source", "object", "hook", "program", "section")
SOURCE_SUFFIX = ".bpf.c"
# Where a host keeps the users' programs: <bench_xdp_dir>/own/<name>.o, their sources under own/src.
OWN_DIR = "own"


class OwnProgramError(ValueError):
    """A bench_programs entry that cannot be a scenario."""


def _entry(name: str, spec: object, builtin: Mapping) -> dict:
    where = f"bench_programs: {name}"
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise OwnProgramError(f"bench_programs: scenario name {name!r} must be a letter then up to 47 letters, "
                              "digits or underscores")
    if name in builtin:
        raise OwnProgramError(f"{where}: the name is one of the collection's scenarios ({', '.join(builtin)}); "
                              "choose another")
    if not isinstance(spec, Mapping):
        raise OwnProgramError(f"{where}: must be a dict with source or object, got {spec!r}")
    unknown = sorted(set(spec) - set(KEYS))
    if unknown:
        raise OwnProgramError(f"{where}: unknown key(s) {', '.join(map(str, unknown))} (known: {', '.join(KEYS)})")
    has = [k for k in ("source", "object") if spec.get(k)]
    if len(has) != 1:
        raise OwnProgramError(f"{where}: give exactly one of source (a {SOURCE_SUFFIX} file) or object (a .o file)")
    path = spec[has[0]]
    if not isinstance(path, str) or not path.startswith("/") or "\n" in path or "/../" in f"{path}/":
        raise OwnProgramError(f"{where}: {has[0]} must be an absolute path without '..', got {path!r}")
    if has[0] == "source" and not path.endswith(SOURCE_SUFFIX):
        raise OwnProgramError(f"{where}: source {path!r} must end in {SOURCE_SUFFIX} (the collection's Makefile "
                              "builds those)")
    hook = spec.get("hook", "xdp")
    if hook not in HOOKS:
        raise OwnProgramError(f"{where}: hook must be one of {', '.join(HOOKS)}, got {hook!r}")
    for key, pattern in (("program", NAME_RE), ("section", SECTION_RE)):
        value = spec.get(key)
        if value is not None and (not isinstance(value, str) or not pattern.match(value)):
            raise OwnProgramError(f"{where}: {key} {value!r} is not a plain {key} name")
    if hook == "tc" and spec.get("program"):
        raise OwnProgramError(f"{where}: a tc program is chosen by its section (tc loads by section), not by program")
    return {"kind": has[0], "path": path, "hook": hook, "program": spec.get("program"),
            "section": spec.get("section") or ("tc" if hook == "tc" else None)}


def scenario_rows(programs: Mapping | None, builtin: Mapping, xdp_dir: str) -> dict[str, dict]:
    """Rows of the bench scenario table for ``bench_programs``, keyed by scenario name.

    A row has the keys of the role's table (title, attach or hook, counter) and ``own``: what the
    role builds or copies (kind source/object, path on the controller, the object's path on the DUT).
    """
    if programs is None:
        return {}
    if not isinstance(programs, Mapping):
        raise OwnProgramError(f"bench_programs must be a dict of scenario name to program, got {programs!r}")
    rows = {}
    for name, spec in programs.items():
        entry = _entry(name, spec, builtin)
        obj = f"{xdp_dir.rstrip('/')}/{OWN_DIR}/{name}.o"
        own = {"name": name, "kind": entry["kind"], "path": entry["path"], "object": obj, "hook": entry["hook"]}
        title = f"your program {name} ({entry['path']})"
        if entry["hook"] == "xdp":
            attach = {"at": "dut", "port": "dut", "program": entry["program"], "object": obj}
            if entry["section"]:
                attach["section"] = entry["section"]
            rows[name] = {"title": f"{title}, XDP on the DUT", "attach": [attach],
                          "counter": {"type": "runs", "hook": "xdp"}, "own": own}
        else:
            rows[name] = {"title": f"{title}, tc ingress on the DUT", "hook": "tc",
                          "hook_object": obj, "hook_section": entry["section"],
                          "counter": {"type": "runs", "hook": "tc"}, "own": own}
    return rows
