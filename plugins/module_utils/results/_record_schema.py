# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Result record v1: building, naming and atomic writing. Private to the xdplab.testbed collection.

The record format is a contract (docs/architecture.md "Result record v1"); reading and validating records for
comparison and reports lives beside the statistics in _stats / _report.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import secrets
from typing import Any

from ansible_collections.xdplab.testbed.plugins.module_utils.common._validate import RUN_ID_RE, record_file_part
from ansible_collections.xdplab.testbed.plugins.module_utils.common._validate import run_id as check_run_id
from ansible_collections.xdplab.testbed.plugins.module_utils.results._statistics import summarize

__all__ = ["RUN_ID_RE", "SCHEMA", "build_record", "check_replicate", "check_run_id", "new_run_id", "record_filename"]

SCHEMA = "xdplab.result/v1"


def utcnow() -> _dt.datetime:
    return _dt.datetime.now(_dt.UTC)


def iso(ts: _dt.datetime) -> str:
    return ts.astimezone(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_run_id(now: _dt.datetime | None = None) -> str:
    """A sortable, unique run id: 20261129T215000Z-1a2b3c."""
    now = now or utcnow()
    return now.strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


REPLICATE_LEVELS = ("repetition", "run", "boot", "round")


def check_replicate(replicate: Any, where: str = "replicate") -> dict:
    """A record's replication unit: {"level": one of REPLICATE_LEVELS, "id": str or int}."""
    if not isinstance(replicate, dict) or set(replicate) != {"level", "id"}:
        raise ValueError(f"{where} must be {{'level': ..., 'id': ...}}, got {replicate!r}")
    if replicate["level"] not in REPLICATE_LEVELS:
        raise ValueError(f"{where}.level must be one of {', '.join(REPLICATE_LEVELS)}, got {replicate['level']!r}")
    if isinstance(replicate["id"], bool) or not isinstance(replicate["id"], (str, int)) or replicate["id"] == "":
        raise ValueError(f"{where}.id must be a non-empty string or an integer, got {replicate['id']!r}")
    return {"level": replicate["level"], "id": replicate["id"]}


def record_filename(scenario: str, variant: str, params: dict, replicate: dict | None = None) -> str:
    """<scenario>__<variant>__<hash of params>[__<level>-<id>].json: one file per (scenario, variant,
    params) and replication unit; distinct names give distinct files (_validate.record_file_part)."""
    digest = hashlib.sha1(json.dumps(params, sort_keys=True, default=str).encode(), usedforsecurity=False)
    unit = f"__{record_file_part(replicate['level'])}-{record_file_part(str(replicate['id']))}" if replicate else ""
    return f"{record_file_part(scenario)}__{record_file_part(variant)}__{digest.hexdigest()[:10]}{unit}.json"


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
            record[key] = check_replicate(value) if key == "replicate" else value
    return record
