# SPDX-License-Identifier: GPL-3.0-or-later
"""Reports: cover-letter text (environment first), Markdown, CSV, PNG; atomic
writes and no partial files on bad input. The module
tests run the real bench_report module through `ansible localhost -m`."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
from pathlib import Path

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.common._atomic_files import atomic_write, write_json_atomic
from ansible_collections.xdplab.testbed.plugins.module_utils.results import _report
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_files import RecordError
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_schema import (
    build_record,
    record_filename,
)

REPO = Path(__file__).resolve().parents[2]
ENV = {"cpu_model": "AMD EPYC", "cpu_mhz": 2596.142, "cpus_online": 2, "smt": "notsupported",
       "kernel": "6.18.44-fc-v669", "kernel_patches": [{"subject": "net: veth: bulk xdp", "patch_id": "ab12cd34ef56"}],
       "nic": {"veth0": {"driver": "veth", "version": "1.0", "mtu": 1500}},
       "ethtool": {"veth0": {"channels": {"rx": 1, "tx": 1, "max": {"rx": 2, "tx": 2}}}},
       "governor": "performance", "netfilter_modules": []}


def put(run_dir: Path, scenario="xdp_drop", variant="baseline", params=None, samples=(5e6, 5.01e6, 4.99e6), env=None):
    env = ENV if env is None else env
    run_dir.mkdir(parents=True, exist_ok=True)
    r = build_record(run_id="20261129T215000Z-aaaaaa", scenario=scenario, variant=variant, tool="xdpgen",
                     params=params or {"pkt_size": 64}, samples=list(samples), environment=env,
                     started="2026-11-29T21:50:00Z", duration_s=3.0)
    write_json_atomic(str(run_dir / record_filename(scenario, variant, r["params"])), r)


@pytest.fixture
def sweep_dir(tmp_path):
    for size, pps in ((64, 5.0e6), (128, 4.8e6), (256, 4.5e6)):
        put(tmp_path / "run", params={"pkt_size": size}, samples=[pps, pps * 1.001, pps * 0.999])
    return tmp_path / "run"


@pytest.fixture
def ab_dirs(tmp_path):
    for size in (64, 128):
        put(tmp_path / "base", params={"pkt_size": size}, samples=[5.0e6, 5.01e6, 4.99e6])
        put(tmp_path / "cand", variant="patched", params={"pkt_size": size}, samples=[5.2e6, 5.21e6, 5.19e6],
            env={**ENV, "kernel": "6.18.44-patched"})
    return tmp_path / "base", tmp_path / "cand"


def test_text_sweep_environment_first(sweep_dir):
    rep = _report.build([str(sweep_dir)])
    text = _report.render_text(rep)
    lines = text.splitlines()
    assert lines[0] == "Environment"
    assert lines[3] == "CPU:     AMD EPYC @ 2596 MHz (2 CPUs online, SMT notsupported)"
    assert "Kernel:  6.18.44-fc-v669 + 1 patch(es)" in text and "ab12cd34ef56 net: veth: bulk xdp" in text
    assert "NIC:     veth0: driver veth, version 1.0, mtu 1500" in text
    assert "governor performance" in text
    assert text.index("Environment") < text.index("sweep over pkt_size") < text.index("Noise")
    row128 = next(ln for ln in lines if ln.startswith("pkt_size=128"))
    assert "208.33" in row128 and "+8.33" in row128  # 1e9/4.8e6 - 1e9/5e6
    assert [r["delta_base_ns"] for r in rep["rows"]][0] is None
    assert rep["rows"][2]["delta_base_ns"] == pytest.approx(1e9 / 4.5e6 - 200.0)
    assert "repetitions per side" in " ".join(text.split())


def test_text_n1_no_interval(tmp_path):
    put(tmp_path / "a", samples=[5e6])
    put(tmp_path / "b", variant="patched", samples=[5.5e6])
    rep = _report.build([str(tmp_path / "a"), str(tmp_path / "b")])
    text = _report.render_text(rep)
    assert "n=1, no interval" in text
    assert rep["comparisons"][0]["significant"] is False
    assert "every record has n=1" in text


def test_ab_text_markdown_csv(ab_dirs):
    rep = _report.build([str(p) for p in ab_dirs])
    text = _report.render_text(rep)
    assert "-7.69 faster" in text and "Welch t-test" in text
    assert "kernel" in text.split("environment diff")[1] and '"6.18.44-patched"' in text
    md = _report.render_text(rep, markdown=True)
    assert md.startswith("## Environment\n\n```\nCPU:")
    assert "| scenario/params |" in md
    rows = list(csv.DictReader(io.StringIO(_report.render_csv(rep))))
    assert len(rows) == 2 and rows[0]["delta_ns_per_packet"] == "-7.69" and rows[0]["significant"] == "true"
    assert rows[0]["method"] == "welch-t"


def test_sweep_csv(sweep_dir):
    rows = list(csv.DictReader(io.StringIO(_report.render_csv(_report.build([str(sweep_dir)])))))
    assert [r["ns_per_packet"] for r in rows] == ["200.00", "208.33", "222.22"]
    assert rows[0]["delta_prev_ns"] == "" and rows[2]["delta_prev_ns"] == "13.89"


@pytest.mark.parametrize("which", ["sweep", "ab"])
def test_png(which, sweep_dir, ab_dirs, tmp_path):
    paths = [str(sweep_dir)] if which == "sweep" else [str(p) for p in ab_dirs]
    dest = tmp_path / f"{which}.png"
    atomic_write(str(dest), lambda tmp: _report.render(_report.build(paths), "png", tmp))
    data = dest.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


def test_atomic_write_leaves_nothing_on_error(tmp_path):
    dest = tmp_path / "r.txt"
    dest.write_text("old")

    def boom(tmp):
        Path(tmp).write_text("partial")
        raise RuntimeError("render failed")

    with pytest.raises(RuntimeError):
        atomic_write(str(dest), boom)
    assert dest.read_text() == "old"
    assert sorted(os.listdir(tmp_path)) == ["r.txt"]


def test_build_bad_arity():
    with pytest.raises(ValueError, match="one path or a list of two"):
        _report.build(["a", "b", "c"])


# ------------------------------------------------------------ module, end to end

def ansible(module: str, args: dict) -> tuple[int, dict]:
    cp = subprocess.run([str(REPO / ".venv/bin/ansible"), "localhost", "-m", f"xdplab.testbed.{module}",
                         "-a", json.dumps(args)], capture_output=True, text=True, cwd=REPO,
                        env={**os.environ, "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
                             "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1"}, check=False)
    out, _dummy = json.JSONDecoder().raw_decode(cp.stdout[cp.stdout.index("{"):])
    return cp.returncode, out["plays"][0]["tasks"][0]["hosts"]["localhost"]


def test_module_bench_report_text(sweep_dir, tmp_path):
    dest = tmp_path / "out" / "report.txt"
    dest.parent.mkdir()
    rc, res = ansible("bench_report", {"results": [str(sweep_dir)], "format": "text", "dest": str(dest)})
    assert rc == 0, res
    assert res["changed"] is True
    assert dest.read_text().startswith("Environment\n")
    assert [r["n"] for r in res["rows"]] == [3, 3, 3]
    assert set(res["rows"][0]) >= {"params", "pps", "ns_per_packet", "delta_prev_ns", "delta_base_ns", "n"}
    assert os.listdir(dest.parent) == ["report.txt"]


def test_module_bench_report_bad_schema_leaves_nothing(tmp_path):
    bad = tmp_path / "run"
    bad.mkdir()
    (bad / "x.json").write_text(json.dumps({"schema": "other/v9"}))
    out = tmp_path / "out"
    out.mkdir()
    rc, res = ansible("bench_report", {"results": [str(bad)], "format": "csv", "dest": str(out / "r.csv")})
    assert rc != 0
    assert "x.json: schema 'other/v9' is not 'xdplab.result/v1'" in res["msg"]
    assert os.listdir(out) == []


def test_module_bench_compare(ab_dirs):
    rc, res = ansible("bench_compare", {"baseline": str(ab_dirs[0]), "candidate": str(ab_dirs[1])})
    assert rc == 0, res
    assert res["method"] == "welch-t" and res["significant"] is True
    assert res["delta_ns_per_packet"] == pytest.approx(1e9 / 5.2e6 - 200.0, rel=1e-3)
    assert len(res["comparisons"]) == 2
    assert {"key": "kernel", "baseline": "6.18.44-fc-v669", "candidate": "6.18.44-patched"} in res["environment_diff"]


def test_module_bench_compare_empty_dir(tmp_path):
    (tmp_path / "e").mkdir()
    rc, res = ansible("bench_compare", {"baseline": str(tmp_path / "e"), "candidate": str(tmp_path / "e")})
    assert rc != 0 and "no result records" in res["msg"]


def test_record_error_is_value_error():
    assert issubclass(RecordError, ValueError)
