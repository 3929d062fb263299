# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Result record v1: building, naming and atomic writing. Private to the xdplab.testbed collection.

The record format is a contract (DESIGN.md "Result record v1"); reading and validating records for
comparison and reports lives beside the statistics in _stats / _report.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import os
import re
import secrets
from typing import Any

from ansible_collections.xdplab.testbed.plugins.module_utils._stats import summarize

SCHEMA = "xdplab.result/v1"
_SLUG_BAD = re.compile(r"[^A-Za-z0-9_.=-]+")
RUN_ID_RE = re.compile(r"^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{6}\Z")


def utcnow() -> _dt.datetime:
    return _dt.datetime.now(_dt.UTC)


def iso(ts: _dt.datetime) -> str:
    return ts.astimezone(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_run_id(now: _dt.datetime | None = None) -> str:
    """A sortable, unique run id: 20261129T215000Z-1a2b3c."""
    now = now or utcnow()
    return now.strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def slug(value: Any) -> str:
    """A file-name-safe rendering of a value: no path separators, no dot-dot, bounded length."""
    text = re.sub(r"\.{2,}", "_", _SLUG_BAD.sub("_", str(value))).strip("._") or "_"
    return text[:64]


def record_filename(scenario: str, variant: str, params: dict) -> str:
    """<scenario>__<variant>__<hash of params>.json: one file per (scenario, variant, params)."""
    digest = hashlib.sha1(json.dumps(params, sort_keys=True, default=str).encode(), usedforsecurity=False)
    return f"{slug(scenario)}__{slug(variant)}__{digest.hexdigest()[:10]}.json"


def build_record(
    *,
    run_id: str,
    scenario: str,
    variant: str,
    tool: str,
    params: dict,
    samples: list[float],
    counters: dict | None = None,
    environment: dict | None = None,
    started: str,
    duration_s: float,
    extra: dict | None = None,
) -> dict:
    """Assemble a record v1; the summary is derived from the samples, never given."""
    if not samples:
        raise ValueError(f"scenario {scenario!r}: no samples, nothing to record")
    for s in samples:
        if not isinstance(s, (int, float)) or math.isnan(s) or s < 0:
            raise ValueError(f"scenario {scenario!r}: invalid sample {s!r} (packets/s must be a number >= 0)")
    pkt_size = params.get("pkt_size")
    try:
        pkt_size = int(pkt_size) if pkt_size is not None else None
    except (TypeError, ValueError):
        pkt_size = None
    record = {
        "schema": SCHEMA,
        "run_id": run_id,
        "scenario": scenario,
        "variant": variant,
        "tool": tool,
        "params": params,
        "samples": [float(s) for s in samples],
        "unit": "pps",
        "summary": summarize([float(s) for s in samples], pkt_size),
        "counters": counters or {},
        "environment": environment or {},
        "started": started,
        "duration_s": round(float(duration_s), 3),
    }
    if extra:
        for key, value in extra.items():
            if key in record:
                raise ValueError(f"extra key {key!r} would overwrite a record v1 field")
            record[key] = value
    return record


def write_json_atomic(path: str, data: Any, mode: int = 0o644) -> str:
    """Write JSON to a temp file in the same directory, fsync, then rename over ``path``.

    A reader sees either the old file or the whole new one, never a truncated file.
    """
    # _records_io reads records (and imports SCHEMA from here): import it when writing, not at load.
    from ansible_collections.xdplab.testbed.plugins.module_utils._records_io import atomic_write

    os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o755, exist_ok=True)

    def writer(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, sort_keys=False)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())

    return atomic_write(path, writer, mode)
