# SPDX-License-Identifier: GPL-3.0-or-later
"""bench_compare by=boot: the module around results._ab and results._render_ab (records on disk, git
patch-id mocked with the captured output of the fixture series, the .config diff, the errors)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args
from ansible_collections.xdplab.testbed.plugins.module_utils.common._atomic_files import write_json_atomic
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_schema import (
    build_record,
    record_filename,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.results._rounds import boot_plan
from ansible_collections.xdplab.testbed.plugins.modules import bench_compare

ROOT = Path(__file__).resolve().parents[2]
PATCHES = sorted((ROOT / "files" / "patches" / "fixture").glob("*.patch"))
CAPTURED = (ROOT / "tests" / "unit" / "fixtures" / "git_patch_id" / "fixture-series.txt").read_text().splitlines()[1:]
IDS = [line.split()[0] for line in CAPTURED]
INSTALLED = [{"subject": "pktgen: show an xdplab fixture marker in pgctrl", "patch_id": IDS[0]},
             {"subject": "docs: pktgen: mention the xdplab fixture marker", "patch_id": IDS[1]}]


class Done(BaseException):  # past the module's own "except Exception"
    def __init__(self, result):
        super().__init__(result.get("msg"))
        self.result = result


def _raise(exc: BaseException):
    raise exc


def write_run(tmp_path, boots=3, ns=None):
    """One results directory of an A/B loop: records of each boot, patched ones with the installed series."""
    ns = ns or {"baseline": 150.0, "patched": 148.0}
    d = tmp_path / "ab"
    d.mkdir()
    for step in boot_plan(["baseline", "patched"], boots):
        k, b = step["kernel"], step["boot"]
        env = {"kernel": f"6.12.0-{k}"} | ({"kernel_patches": INSTALLED} if k == "patched" else {})
        jitter = 0.1 * (b % 3)
        r = build_record(run_id=f"r{b}", scenario="xdp_drop", variant=k, tool="xdpgen", params={"pkt_size": 64},
                         samples=[1e9 / (ns[k] + jitter + x) for x in (0.0, 0.05, -0.05)], environment=env,
                         started=f"2026-12-01T05:{b:02d}:00Z", duration_s=3.0,
                         extra={"replicate": step["replicate"]})
        write_json_atomic(str(d / record_filename("xdp_drop", k, r["params"], r["replicate"])), r)
    return d


def run(monkeypatch, args):
    calls, warnings = [], []

    def run_command(self, argv, data=None, **kw):
        calls.append(list(argv))
        # git patch-id --stable of the one patch given: the captured id of the fixture patch it is
        idx = [p.read_text() for p in PATCHES].index(data)
        return 0, CAPTURED[idx] + "\n", ""

    monkeypatch.setattr(basic.AnsibleModule, "run_command", run_command)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, **kw: f"/usr/bin/{name}")
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, msg: warnings.append(msg))
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", lambda self, **kw: _raise(Done(kw)))
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", lambda self, **kw: _raise(Done(dict(kw, failed=True))))
    with patch_module_args(args), pytest.raises(Done) as done:
        bench_compare.main()
    return done.value.result, calls, warnings


def args(d, **extra):
    return {"baseline": str(d), "candidate": str(d), "baseline_variant": "baseline", "candidate_variant": "patched",
            "by": "boot", **extra}


def test_by_boot_with_series_files_and_configs(tmp_path, monkeypatch):
    d = write_run(tmp_path)
    (tmp_path / "a.config").write_text("CONFIG_HZ=250\nCONFIG_BPF=y\n")
    (tmp_path / "b.config").write_text("CONFIG_HZ=1000\nCONFIG_BPF=y\n")
    res, calls, warnings = run(monkeypatch, args(
        d, series_files=[str(p) for p in PATCHES], baseline_config=str(tmp_path / "a.config"),
        candidate_config=str(tmp_path / "b.config")))
    assert not res.get("failed"), res
    assert calls == [["/usr/bin/git", "patch-id", "--stable"]] * 2
    assert warnings == []  # the files are the series installed on the booted candidate
    row = res["ab"]["rows"][0]
    assert (row["baseline"]["n"], row["candidate"]["n"]) == (3, 3) and row["unit_level"] == "boot"
    assert res["delta_ns_per_packet"] == row["delta_ns_per_packet"] and row["direction"] == "faster"
    assert res["ab"]["config_diff"] == [{"option": "CONFIG_HZ", "baseline": "250", "candidate": "1000"}]
    assert [p["patch_id"] for p in res["ab"]["series"]["patches"]] == IDS
    assert f"{IDS[0]} pktgen: show an xdplab fixture marker in pgctrl" in res["cover_letter"]
    assert "CONFIG_HZ" in res["cover_letter"] and "| xdp_drop pkt_size=64 |" in res["cover_letter_markdown"]
    assert "3/3" in res["cover_letter"]


def test_series_defaults_to_the_booted_one_and_a_different_given_series_is_warned(tmp_path, monkeypatch):
    d = write_run(tmp_path)
    res, calls, warnings = run(monkeypatch, args(d))
    assert calls == [] and res["ab"]["series"]["patches"] == INSTALLED
    other = [{"subject": "net: something else", "patch_id": "cd" * 20}]
    res, _dummy, warnings = run(monkeypatch, args(d, series=other))
    assert res["ab"]["series"]["patches"] == other
    assert len(warnings) == 1 and "not the one installed on the booted candidate kernel" in warnings[0]


def test_one_boot_fails_naming_the_kernel(tmp_path, monkeypatch):
    d = write_run(tmp_path)
    for f in d.glob("*__patched__*boot-03-patched.json"):
        f.unlink()
    for f in d.glob("*__patched__*boot-06-patched.json"):
        f.unlink()
    res, _dummy, _dummy = run(monkeypatch, args(d))
    assert res["failed"] and "kernel 'patched': 1 boot(s) of xdp_drop" in res["msg"]


@pytest.mark.parametrize(("extra", "needle"), [
    ({"by": "record", "series": []}, "series only apply with by=boot"),
    ({"baseline_variant": None, "candidate_variant": None}, "needs baseline_variant and candidate_variant"),
    ({"series": [{"subject": "x", "patch_id": "123"}]}, "patch_id '123' is not a git patch-id"),
])
def test_bad_arguments_are_named(tmp_path, monkeypatch, extra, needle):
    res, _dummy, _dummy = run(monkeypatch, args(write_run(tmp_path), **extra))
    assert res["failed"] and needle in res["msg"], res
