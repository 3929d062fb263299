# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.
#
# Reading result records v1 back for comparison and reports: validation against
# the schema (every error names the file), results directories (a run dir or a
# dir of run dirs), the INCOMPLETE marker of unfinished runs, and atomic writes.
"""Result record v1 reading/validation and atomic file output."""

from __future__ import annotations

import json
import math
import os
import stat
from typing import Any

from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_schema import SCHEMA, check_replicate  # noqa: E402
from ansible_collections.xdplab.testbed.plugins.module_utils.results._statistics import (
    StatsError,
    check_samples,
    summarize,
)

INCOMPLETE_MARKER = "INCOMPLETE"
RUN_META = "run.json"

__all__ = ["RecordError", "SCHEMA", "check_results_dir", "validate_record", "load_record", "load_results",
           "params_key"]


class RecordError(ValueError):
    """A record or results directory that cannot be used; the message names the path."""


_REQUIRED = {"run_id": str, "scenario": str, "variant": str, "tool": str, "params": dict,
             "samples": list, "unit": str}


def validate_record(data: Any, path: str) -> dict:
    """Check a parsed record v1; return it with ``summary`` recomputed from ``samples``
    (the stored one is not trusted) and ``_path`` set. Raises RecordError naming path."""
    if not isinstance(data, dict):
        raise RecordError(f"{path}: not a result record (JSON {type(data).__name__}, expected an object)")
    schema = data.get("schema")
    if schema != SCHEMA:
        raise RecordError(f"{path}: schema {schema!r} is not {SCHEMA!r}")
    for key, typ in _REQUIRED.items():
        if key not in data:
            raise RecordError(f"{path}: record has no {key!r}")
        if not isinstance(data[key], typ):
            raise RecordError(f"{path}: {key!r} must be {typ.__name__}, got {type(data[key]).__name__}")
    if data["unit"] != "pps":
        raise RecordError(f"{path}: unit {data['unit']!r} is not 'pps'")
    try:
        check_samples(data["samples"])
    except StatsError as exc:
        raise RecordError(f"{path}: {exc}") from None
    if "replicate" in data:
        try:
            check_replicate(data["replicate"])
        except ValueError as exc:
            raise RecordError(f"{path}: {exc}") from None
    pkt = data["params"].get("pkt_size")
    try:
        pkt = int(pkt) if pkt is not None and not isinstance(pkt, bool) else None
    except (TypeError, ValueError):
        pkt = None
    rec = dict(data)
    rec["summary"] = summarize(data["samples"], pkt if pkt and pkt > 0 else None)
    stored = data.get("summary")
    if isinstance(stored, dict) and "dut_cost" in stored:
        # the DUT's cost comes from CPU accounting, not from samples: kept as recorded
        rec["summary"]["dut_cost"] = stored["dut_cost"]
    env = rec.get("environment")
    rec["environment"] = env if isinstance(env, dict) else {}
    rec["_path"] = path
    return rec


def _reject_constants(value: str) -> float:
    raise ValueError(f"non-standard JSON number {value}")


def load_record(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh, parse_constant=_reject_constants)
    except FileNotFoundError:
        raise RecordError(f"{path}: no such file") from None
    except (json.JSONDecodeError, ValueError, UnicodeDecodeError) as exc:
        raise RecordError(f"{path}: not valid JSON ({exc})") from None
    return validate_record(data, path)


def check_results_dir(path: str, owner: int | None = None) -> None:
    """A results directory records are read from or written to, checked before anything in it is
    trusted: refused, naming it, when it is a link, or when a user other than root, this one and
    ``owner`` (the owner of the results root the caller named: a checkout's results belong to whoever
    owns the checkout) owns it or could write into it - records planted there would be taken as a
    run's own. Its parents are not checked: a results root is where its user chose to keep it."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        what = "a link" if stat.S_ISLNK(st.st_mode) else "not a directory"
        raise RecordError(f"results directory {path!r} is {what}: refusing it")
    if st.st_uid not in (0, os.geteuid(), owner):
        raise RecordError(f"results directory {path!r} is owned by uid {st.st_uid}: refusing it")
    if st.st_mode & 0o022:
        raise RecordError(f"results directory {path!r} is group/world-writable (mode {oct(st.st_mode & 0o777)}): "
                          "refusing it")


def _record_files(run_dir: str) -> list[str]:
    return sorted(os.path.join(run_dir, f) for f in os.listdir(run_dir)
                  if f.endswith(".json") and f != RUN_META and not f.startswith("."))


def load_results(path: str, allow_incomplete: bool = False) -> list[dict]:
    """Records of a record file, a run directory, or a directory of run directories.

    A run directory holding the INCOMPLETE marker is refused, or with
    allow_incomplete its records are flagged ``incomplete: True``. A JSON file
    that is not a record v1 is an error naming it; so is finding no record.
    """
    if os.path.isfile(path):
        return [load_record(path)]
    if not os.path.isdir(path):
        raise RecordError(f"{path}: no such file or directory")
    run_dirs = [path] + sorted(os.path.join(path, d) for d in os.listdir(path)
                               if os.path.isdir(os.path.join(path, d)) and not d.startswith("."))
    root_owner = os.stat(path).st_uid
    records: list[dict] = []
    for run_dir in run_dirs:
        # the directory named may be a link; the run directories in it may not
        check_results_dir(os.path.realpath(run_dir) if run_dir == path else run_dir, owner=root_owner)
        files = _record_files(run_dir)
        incomplete = os.path.exists(os.path.join(run_dir, INCOMPLETE_MARKER))
        if incomplete and (files or run_dir != path):
            if not allow_incomplete:
                raise RecordError(f"{run_dir}: run is incomplete (marker {INCOMPLETE_MARKER} present); "
                                  "refusing to mix a partial run into results")
        for f in files:
            rec = load_record(f)
            rec["incomplete"] = incomplete
            records.append(rec)
    if not records:
        raise RecordError(f"{path}: no result records (*.json of schema {SCHEMA}) found")
    return records


def params_key(params: dict) -> str:
    """Canonical text of a params dict, for matching records by params."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"), default=str)


def finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
