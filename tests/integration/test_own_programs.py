# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Programs of the user's own measured by bench.yml on its embedded test bed (bench_programs): an XDP
program given by source and a tc program given by object, neither with the collection's counter map,
counted by their run counts; then a source that does not build, named, with nothing left behind."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from _netns_runs import lock_not_stale, run_lock, run_playbook

pytestmark = [pytest.mark.root, run_lock]

XDP_SOURCE = """// a user's XDP program: no maps of the collection's, no xdplab.h
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int my_drop(struct xdp_md *ctx)
{
\treturn XDP_DROP;
}

char _license[] SEC("license") = "GPL";
"""
TC_SOURCE = """#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

SEC("tc")
int my_shot(struct __sk_buff *skb)
{
\treturn TC_ACT_SHOT;
}

char _license[] SEC("license") = "GPL";
"""


def bench(tmp_path: Path, pfx: str, programs: dict, scenarios: list[str]) -> subprocess.CompletedProcess:
    extra = {"bench_programs": programs, "bench_scenarios": scenarios, "bench_repetitions": 2,
             "bench_duration": 2, "xdplab_lock_wait": 900, "xdplab_results_root": str(tmp_path / "results")}
    proc = run_playbook("bench.yml", pfx, extra)
    lock_not_stale()
    return proc


def test_own_xdp_source_and_tc_object_are_measured(tmp_path):
    src = tmp_path / "my_drop.bpf.c"
    src.write_text(XDP_SOURCE)
    tc_src = tmp_path / "my_shot.c"
    tc_src.write_text(TC_SOURCE)
    tc_obj = tmp_path / "my_shot.o"
    subprocess.run(["clang", "-O2", "-g", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu", "-c", str(tc_src),  # noqa: S607
                    "-o", str(tc_obj)], check=True)
    programs = {"mine": {"source": str(src)}, "mine_tc": {"object": str(tc_obj), "hook": "tc"}}
    proc = bench(tmp_path, f"h9o{os.getpid() % 10000}-", programs, ["mine", "mine_tc"])
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    (run_dir,) = (tmp_path / "results").iterdir()
    assert not (run_dir / "INCOMPLETE").exists()
    recs = {rec["scenario"]: rec for rec in (json.loads(p.read_text()) for p in run_dir.glob("*__*.json"))}
    assert set(recs) == {"mine", "mine_tc"}, sorted(recs)
    for name, hook in (("mine", "xdp"), ("mine_tc", "tc")):
        rec = recs[name]
        assert rec["counters"]["dut_counter"].startswith(f"runs of the {hook} program on "), rec["counters"]
        assert rec["summary"]["n"] == 2 and min(rec["samples"]) > 1000, rec["samples"]
        # the program's own run time per packet: the program stage of the DUT's cost
        assert rec["summary"]["dut_cost"]["stages"]["program"] > 0, rec["summary"]["dut_cost"]
    assert recs["mine"]["environment"]["xdp"], recs["mine"]["environment"]
    report = (run_dir / "report.txt").read_text()
    assert "mine" in report and "mine_tc" in report


def test_own_source_that_does_not_build_is_named(tmp_path):
    src = tmp_path / "broken.bpf.c"
    src.write_text(XDP_SOURCE.replace("return XDP_DROP;", "return XDP_DROP"))
    proc = bench(tmp_path, f"h9b{os.getpid() % 10000}-", {"broken": {"source": str(src)}}, ["broken"])
    assert proc.returncode != 0
    assert "does not build with the collection's clang flags" in proc.stdout and str(src) in proc.stdout, \
        proc.stdout[-4000:]
    assert "expected ';'" in proc.stdout, proc.stdout[-4000:]
    assert not list((tmp_path / "results").glob("*/*.json"))
