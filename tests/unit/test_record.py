"""Result record v1 building and atomic writing (module_utils/_record.py)."""

from __future__ import annotations

import json
import os

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _record
from ansible_collections.xdplab.testbed.plugins.module_utils._record import (
    RUN_ID_RE,
    SCHEMA,
    build_record,
    new_run_id,
    record_filename,
    write_json_atomic,
)


def make(samples, **kw):
    base = dict(run_id="20261129T215000Z-1a2b3c", scenario="xdp_drop", variant="baseline", tool="xdpgen",
                params={"pkt_size": 64, "duration": 2}, samples=samples, started="2026-11-29T21:50:00Z",
                duration_s=7.25)
    base.update(kw)
    return build_record(**base)


def test_record_has_v1_fields_and_derived_summary():
    rec = make([6310000.0, 6295000.0, 6322000.0], counters={"dut_packets": 1}, environment={"kernel": "6.18"})
    assert rec["schema"] == SCHEMA == "xdplab.result/v1"
    assert rec["unit"] == "pps"
    s = rec["summary"]
    assert s["n"] == 3
    assert s["mean"] == pytest.approx(6309000.0)
    assert s["ns_per_packet"] == pytest.approx(1e9 / 6309000.0, rel=1e-6)
    assert s["gbps"] == pytest.approx(6309000.0 * 64 * 8 / 1e9, rel=1e-6)
    lo, hi = s["ci95"]
    assert lo < 6309000.0 < hi
    assert rec["environment"] == {"kernel": "6.18"}


def test_single_sample_has_no_interval():
    assert make([5e6])["summary"]["ci95"] is None


@pytest.mark.parametrize("bad", [[], [float("nan")], [-1.0], ["fast"]])
def test_bad_samples_are_refused_naming_the_value(bad):
    with pytest.raises(ValueError, match="no samples" if not bad else "invalid sample"):
        make(bad)


def test_extra_fields_cannot_overwrite_v1_fields():
    with pytest.raises(ValueError, match="'samples'"):
        make([1.0], extra={"samples": [2.0]})
    assert make([1.0], extra={"bound": "generator-bound"})["bound"] == "generator-bound"


def test_run_id_format_and_uniqueness():
    ids = {new_run_id() for _dummy in range(20)}
    assert len(ids) == 20
    assert all(RUN_ID_RE.match(i) for i in ids)


def test_record_filename_is_path_safe_and_distinct_per_params():
    name = record_filename("../../etc", "base/line", {"dst": "a b/../c", "pkt_size": 64})
    assert "/" not in name and ".." not in name
    assert name.startswith("etc__base_line__")
    assert name.endswith(".json")
    assert record_filename("s", "v", {"a": 1, "b": 2}) == record_filename("s", "v", {"b": 2, "a": 1})
    assert record_filename("s", "v", {"a": 1}) != record_filename("s", "v", {"a": 2})


def test_atomic_write_leaves_old_file_on_failure(tmp_path, monkeypatch):
    path = tmp_path / "r.json"
    write_json_atomic(str(path), {"a": 1})
    assert json.loads(path.read_text()) == {"a": 1}
    assert oct(os.stat(path).st_mode & 0o777) == "0o644"

    def boom(*_a, **_k):
        raise OSError("disk full")

    monkeypatch.setattr(_record.os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        write_json_atomic(str(path), {"a": 2})
    assert json.loads(path.read_text()) == {"a": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]  # no temp file left
