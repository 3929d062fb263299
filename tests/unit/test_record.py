# SPDX-License-Identifier: GPL-3.0-or-later
"""Result record v1 building and atomic writing (module_utils/results/_record_schema.py)."""

from __future__ import annotations

import json
import os

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _atomic_files
from ansible_collections.xdplab.testbed.plugins.module_utils.common._atomic_files import write_json_atomic
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_schema import (
    RUN_ID_RE,
    SCHEMA,
    build_record,
    new_run_id,
    record_filename,
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
    # the comparison estimator, as every report prints it: the mean of per-repetition 1e9/pps
    assert s["ns_per_packet"] == pytest.approx(sum(1e9 / x for x in (6310000.0, 6295000.0, 6322000.0)) / 3,
                                               rel=1e-12)
    assert s["ci95_ns"][0] < s["ns_per_packet"] < s["ci95_ns"][1]
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
    # A name that is not plain keeps a readable part and a digest of the whole name (distinct names,
    # distinct files: 'a/b' and 'a_b' used to write the same record).
    assert name.startswith("etc~") and "__base_line~" in name
    assert record_filename("xdp_drop", "baseline", {}).startswith("xdp_drop__baseline__")
    assert name.endswith(".json")
    assert record_filename("s", "v", {"a": 1, "b": 2}) == record_filename("s", "v", {"b": 2, "a": 1})
    assert record_filename("s", "v", {"a": 1}) != record_filename("s", "v", {"a": 2})


def test_atomic_write_leaves_old_file_on_failure(tmp_path, monkeypatch):
    path = tmp_path / "r.json"
    write_json_atomic(str(path), {"a": 1})
    assert json.loads(path.read_text()) == {"a": 1}
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"  # records hold /proc/cmdline: not world-readable

    def boom(*_a, **_k):
        raise OSError("disk full")

    monkeypatch.setattr(_atomic_files.os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        write_json_atomic(str(path), {"a": 2})
    assert json.loads(path.read_text()) == {"a": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]  # no temp file left


def test_run_id_filter_draws_a_new_id_or_checks_the_given_one():
    from ansible.errors import AnsibleFilterError
    from ansible_collections.xdplab.testbed.plugins.filter.run_id import run_id

    new = run_id("")
    assert RUN_ID_RE.match(new) and run_id(None) != new
    assert run_id("20261201T010203Z-0a1b2c") == "20261201T010203Z-0a1b2c"
    for bad in ("../../x", "20261201T010203Z-0A1B2C", "20261201T010203Z-0a1b2c\n", "x; rm -rf /", 7):
        with pytest.raises(AnsibleFilterError, match="is not of the form"):
            run_id(bad)
