# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The DUT's cost per packet from raw counters (traffic/_dut_cost.py) and the bound it decides."""

from __future__ import annotations

import ctypes

import pytest
from _fake_module import FakeModule
from ansible_collections.xdplab.testbed.plugins.action.bench_run import overall_bound
from ansible_collections.xdplab.testbed.plugins.module_utils.results._statistics import t_quantile
from ansible_collections.xdplab.testbed.plugins.module_utils.state import _kinds, _ledger
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic import _dut_cost as dc
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._counter_bursts import find_bursts
from ansible_collections.xdplab.testbed.plugins.module_utils.xdp import _bpf

# /proc/stat of this 2-core machine (kernel 6.18), two cpuN lines kept as captured.
PROC_STAT = """cpu  2386717 3113 1226342 37633522 12063 0 120420 0 0 0
cpu0 1216353 1482 640005 18759011 5890 0 105911 0 0 0
cpu1 1170364 1631 586337 18874511 6173 0 14509 0 0 0
intr 1 2 3
ctxt 123
"""


def jiffies(*per_cpu):
    """One reading: {cpu: [busy, total, softirq]} as the sampler returns it (string keys)."""
    return {str(c): list(v) for c, v in enumerate(per_cpu)}


def test_parse_cpu_jiffies_busy_is_all_but_idle_and_iowait():
    got = dc.parse_cpu_jiffies(PROC_STAT)
    assert sorted(got) == [0, 1]
    total0 = 1216353 + 1482 + 640005 + 18759011 + 5890 + 0 + 105911 + 0
    assert got[0] == [total0 - 18759011 - 5890, total0, 105911]


@pytest.mark.parametrize("text", ["cpu0 1 2 x 4 5 6 7\n", "cpu0 1 2 3\n", "intr 1\n"])
def test_parse_cpu_jiffies_rejects_bad_text(text):
    with pytest.raises(dc.CostError):
        dc.parse_cpu_jiffies(text)


def test_program_ns_is_delta_time_over_delta_runs():
    runs = [[1000, 10], [5000, 60], [45_000, 1010]]
    assert dc.program_ns(runs, 0, 2) == pytest.approx(44_000 / 1000)
    assert dc.program_ns(runs, 1, 2) == pytest.approx(40_000 / 950)


def test_program_ns_absent_when_statistics_are_off_or_idle():
    assert dc.program_ns([[0, 0], [0, 500]], 0, 1) is None  # bpf_stats_enabled=0: run_cnt moves, time not
    assert dc.program_ns([[7, 3], [7, 3]], 0, 1) is None
    assert dc.program_ns([None, [7, 3]], 0, 1) is None


def test_program_ns_refuses_counters_going_backwards():
    with pytest.raises(dc.CostError, match="backwards"):
        dc.program_ns([[100, 10], [50, 5]], 0, 1)


def test_busy_share_over_the_interval_and_cpus():
    series = [jiffies((0, 0, 0), (0, 0, 0)), jiffies((50, 100, 10), (10, 100, 0)),
              jiffies((150, 200, 20), (20, 200, 0))]
    assert dc.busy_share(series, 0, 2, [0]) == 0.75
    assert dc.busy_share(series, 1, 2, [0]) == 1.0
    assert dc.busy_share(series, 0, 2, [0, 1]) == pytest.approx((0.75 + 0.1) / 2)
    assert dc.busy_share(series, 0, 2, [7]) is None


def test_dut_cpus_from_per_cpu_packets():
    assert dc.dut_cpus({"0": 1_000_000, "1": 0}) == [0]
    assert dc.dut_cpus({"0": 500_000, "1": 500_000}) == [0, 1]
    assert dc.dut_cpus({"0": 1_000_000, "1": 5}) == [0]  # below CPU_SHARE: stray packets
    assert dc.dut_cpus({}) == [] and dc.dut_cpus(None) == []


def test_softirq_cpus_where_the_receive_path_ran():
    series = [jiffies((0, 0, 0), (0, 0, 0)), jiffies((90, 100, 80), (5, 100, 1))]
    assert dc.softirq_cpus(series, 0, 1) == [0]


@pytest.mark.parametrize(("kw", "label"), [
    ({"loss_label": "dut-bound"}, "dut-bound"),
    ({"loss_label": "unknown"}, "unknown"),
    ({"dut": [0], "generator": [0]}, "shared-core"),
    ({"dut": [0], "generator": [0], "same_kernel": False}, "generator-bound"),
    ({"dut": [1], "generator": [0], "busy_dut": 0.97}, "dut-bound"),
    ({"dut": [1], "generator": [0], "busy_dut": 0.40}, "generator-bound"),
    ({"dut": [], "generator": [0], "busy_dut": None}, "undetermined"),
])
def test_decide_bound(kw, label):
    args = {"loss_label": "undetermined", "dut": [1], "generator": [0], "same_kernel": True,
            "busy_dut": 0.5, "busy_generator": 1.0}
    args.update(kw)
    assert dc.decide_bound(**args) == label


def cost_series(shared: bool):
    """Four readings: the program ran 1000 packets per interval at 44 ns each."""
    runs = [[i * 44_000, i * 1000] for i in range(4)]
    cpu_jiffies = [jiffies((i * 10, i * 10, i * 9), (i * 3, i * 10, 0)) for i in range(4)]
    return {"prog_runs": runs, "cpu_jiffies": cpu_jiffies,
            "packets_by_cpu": {"0": 3000, "1": 0} if shared else {"0": 0, "1": 3000}}


def test_rep_cost_shared_core_gives_program_stage_and_no_total():
    got = dc.rep_cost(cost_series(shared=True), 1, 3, generator_cpus=[0], same_kernel=True)
    assert got["stages"] == {"program": 44.0}
    assert got["cpus"] == [0] and got["busy"] == {"dut": 1.0, "generator": 1.0}
    assert "ns_per_packet" not in got
    assert "generator's CPU(s) 0" in got["not_separable"]
    assert got["method"] == "bpf_stats+proc_stat"


def test_rep_cost_separate_cores_still_withholds_an_unvalidated_total():
    got = dc.rep_cost(cost_series(shared=False), 0, 3, generator_cpus=[0], same_kernel=True)
    assert got["cpus"] == [1] and got["busy"] == {"dut": 0.3, "generator": 1.0}
    assert "ns_per_packet" not in got and got["not_separable"] == dc.UNVALIDATED_REASON


def test_rep_cost_rejects_an_interval_outside_the_readings():
    with pytest.raises(dc.CostError, match="outside"):
        dc.rep_cost(cost_series(shared=True), 2, 9, generator_cpus=[0], same_kernel=True)


def test_summarize_cost_means_and_intervals():
    reps = [{"method": "m", "cpus": [0], "stages": {"program": v}, "busy": {"dut": 1.0, "generator": 0.5},
             "not_separable": "why"} for v in (44.0, 45.0, 46.0)]
    got = dc.summarize_cost(reps, t_quantile)
    assert got["stages"]["program"] == pytest.approx(45.0)
    lo, hi = got["stages_ci95"]["program"]
    # t(0.975, 2) = 4.303; sd 1; n 3
    assert hi - 45.0 == pytest.approx(4.3027 / 3 ** 0.5, rel=1e-3) and lo < 45.0
    assert "ns_per_packet" not in got and got["not_separable"] == "why"
    assert got["busy"] == {"dut": 1.0, "generator": 0.5} and got["n"] == 3


def test_summarize_cost_with_totals_gives_ci95_and_skips_partial_stages():
    reps = [{"method": "m", "cpus": [1], "ns_per_packet": v, "stages": {"program": 1.0} if v > 100 else {},
             "busy": {"dut": 0.5, "generator": None}} for v in (100.0, 102.0)]
    got = dc.summarize_cost(reps, t_quantile)
    assert got["ns_per_packet"] == 101.0 and got["ci95"][0] < 101.0 < got["ci95"][1]
    assert got["stages"] == {} and "not_separable" not in got
    assert got["busy"] == {"dut": 0.5, "generator": None}
    assert dc.summarize_cost([None, {}], t_quantile) is None


def test_cost_text():
    assert dc.cost_text(None) == "no DUT cost"
    text = dc.cost_text({"stages": {"program": 44.123}, "busy": {"dut": 1.0, "generator": 0.97},
                         "not_separable": "x"})
    assert text == "DUT total not separable, program 44.12 ns/packet, busy dut 100% / generator 97%"
    assert dc.cost_text({"ns_per_packet": 500.0, "stages": {}, "busy": {}}) == "DUT 500.00 ns/packet"


def test_generator_cpus():
    assert dc.generator_cpus("xdpgen", {"cpu": 1, "threads": 2}) == [1, 2]
    assert dc.generator_cpus("trafgen", {}) == [0]
    assert dc.generator_cpus("iperf3", {"cpu": 1}) == []


def test_bursts_carry_the_steady_interval_the_cost_is_taken_over():
    times = [i * 0.1 for i in range(12)]
    counts = [0, 0, 50, 150, 250, 350, 450, 550, 600, 600, 600, 600]
    (burst,) = find_bursts(times, counts)
    assert (burst.first, burst.last) == (2, 7)  # the rate's interior: 100 packets per interval
    assert counts[burst.last] - counts[burst.first] == 500


def test_overall_bound():
    assert overall_bound([{"bound": "shared-core"}, {"bound": "generator-bound"}]) == "shared-core"
    assert overall_bound([{"bound": "shared-core"}, {"bound": "dut-bound"}]) == "dut-bound"
    assert overall_bound([{"bound": "generator-bound"}] * 2) == "generator-bound"
    assert overall_bound([{"bound": "generator-bound"}, {"bound": "undetermined"}]) == "undetermined"


def test_prog_run_info_layout_matches_the_uapi():
    # struct bpf_prog_info: run_time_ns at byte 192, run_cnt at 200 (include/uapi/linux/bpf.h)
    assert _bpf._ProgRunInfo.run_time_ns.offset == 192
    assert _bpf._ProgRunInfo.run_cnt.offset == 200
    assert _bpf._ProgRunInfo.netns_dev.offset == 88
    assert ctypes.sizeof(_bpf._ProgInfo) <= 88


def test_cross_check_puts_dut_cost_and_the_decided_bound_in_every_repetition():
    from ansible_collections.xdplab.testbed.plugins.action.bench_run import ActionModule

    cost = dict(cost_series(shared=True), same_kernel=True)
    burst = {"packets": 3000, "rate": 10_000.0, "interior": True, "short": False, "first": 0, "last": 3}
    runs = [{"parsed": {"packets": 3000, "pps": 10_000.0, "seconds": 0.3}}]
    reps, _counters = ActionModule._cross_check(runs, {"bursts": [burst], "cost": cost, "counter": {
        "description": "xdp"}}, "continuous", tool="xdpgen", gen_cpus=[0])
    assert reps[0]["dut_cost"]["stages"] == {"program": 44.0}
    assert reps[0]["bound"] == "shared-core"
    cost["packets_by_cpu"] = {"0": 0, "1": 3000}  # the DUT's receive path on the other CPU, 30% busy
    reps, _counters = ActionModule._cross_check(runs, {"bursts": [burst], "cost": cost, "counter": {
        "description": "xdp"}}, "continuous", tool="xdpgen", gen_cpus=[0])
    assert reps[0]["bound"] == "generator-bound" and reps[0]["dut_cost"]["busy"]["dut"] == 0.3


def test_rep_cost_threaded_napi_names_the_thread_time_but_gives_no_total():
    cost = cost_series(shared=False)
    cost["napi_thread_ns"] = [i * 600_000 for i in range(4)]  # 600 ns per packet of 1000
    got = dc.rep_cost(cost, 0, 3, generator_cpus=[0], same_kernel=True)
    assert got["method"] == "bpf_stats+proc_stat+schedstat"
    assert "ran 600 ns per packet" in got["not_separable"] and "ns_per_packet" not in got
    assert got["unvalidated"] == {"napi_thread": 600.0}
    summary = dc.summarize_cost([got, got], lambda p, df: 12.706)
    assert "ns_per_packet" not in summary and "unvalidated" not in summary and "ci95" not in summary
    del cost["prog_runs"], cost["packets_by_cpu"]  # an nft counter: packets from the DUT counter
    cost["napi_thread_cpus"] = [1]
    got = dc.rep_cost(cost, 0, 3, generator_cpus=[0], same_kernel=True, counts=[0, 1000, 2000, 3000])
    assert "ran 600 ns per packet" in got["not_separable"]
    assert got["cpus"] == [1] and got["cpus_from"] == "NAPI kthread affinity" and got["busy"]["dut"] == 0.3


def make_proc(tmp_path, tasks):
    for tid, comm in tasks.items():
        (tmp_path / str(tid)).mkdir()
        (tmp_path / str(tid) / "comm").write_text(comm + "\n")
        (tmp_path / str(tid) / "schedstat").write_text(f"{tid * 1000} 5 7\n")
    (tmp_path / "self").mkdir()
    return str(tmp_path)


def test_napi_threads_by_name(tmp_path):
    from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _napi_threads as nt

    proc = make_proc(tmp_path, {12: "napi/veth0-8193", 13: "napi/veth1-8194", 14: "bash",
                                15: "napi/averyveryl"})
    assert nt.napi_threads("veth0", proc) == {12: "napi/veth0-8193"}
    assert nt.napi_threads("averyverylongname", proc) == {15: "napi/averyveryl"}  # 15-character names
    assert nt.thread_runtime_ns(12, proc) == 12000
    assert nt.thread_runtime_ns(99, proc) is None


def test_pick_cpu_avoids_the_generator():
    from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _napi_threads as nt

    assert nt.pick_cpu({0, 1}, [0]) == 1
    assert nt.pick_cpu({0, 1, 2, 3}, [2, 3]) == 1
    with pytest.raises(nt.NapiError, match="no CPU left"):
        nt.pick_cpu({0}, [0])


def test_threaded_value_read_and_written(tmp_path):
    from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _napi_threads as nt

    (tmp_path / "veth0").mkdir()
    (tmp_path / "veth0" / "threaded").write_text("0\n")
    assert nt.read_threaded("veth0", str(tmp_path)) == "0"
    nt.write_threaded("veth0", "1", str(tmp_path))
    assert nt.read_threaded("veth0", str(tmp_path)) == "1"
    with pytest.raises(nt.NapiError, match="'eth9'"):
        nt.read_threaded("eth9", str(tmp_path))


def test_ledger_knows_the_napi_kind():
    entry = _ledger.check_entry("napi", {"interface": "veth0"}, "xdplab-dut")
    assert entry == {"kind": "napi", "key": {"interface": "veth0"}, "netns": "xdplab-dut"}
    with pytest.raises(_ledger.LedgerError):
        _ledger.check_entry("napi", {"port": "veth0"})


def test_ledger_undo_writes_the_threaded_value_found_back_in_the_namespace(tmp_path, monkeypatch):
    class Module(FakeModule):
        def run_command(self, argv, environ_update=None, data=None, binary_data=False):
            self.calls.append([*argv, f"<{data}"])
            return 0, "", ""

    m = Module(tmp_path)
    cleaner = _kinds.Cleaner(m)
    monkeypatch.setattr(cleaner, "netns_exists", lambda name: True)
    restored = []
    monkeypatch.setattr(_kinds, "restore_affinity", lambda ifname, aff: restored.append((ifname, aff)))
    entry = dict(_ledger_entry(), found="0", affinity={"4242": [0, 1]})
    assert cleaner.remove(entry) is None
    assert m.calls == [["/usr/sbin/ip", "netns", "exec", "xdplab-dut", "/usr/sbin/tee",
                        "/sys/class/net/veth0/threaded", "<0"]]
    assert restored == [("veth0", {"4242": [0, 1]})]
    monkeypatch.setattr(cleaner, "netns_exists", lambda name: False)  # gone with its namespace
    m.calls.clear()
    assert cleaner.remove(entry) is None and m.calls == []


def _ledger_entry():
    return _ledger.check_entry("napi", {"interface": "veth0"}, "xdplab-dut")


def test_every_ledger_kind_has_a_teardown_rank():
    # a kind without one made ledger state=cleaned fail with KeyError, leaving everything behind
    assert set(_kinds.TABLE) == set(_ledger.KINDS) and all(isinstance(r.order, int) for r in _kinds.TABLE.values())
    netns = _ledger.check_entry("netns", {"name": "xdplab-dut"})
    plan = _ledger.teardown_plan([("a", dict(_ledger_entry())), ("b", netns)])
    assert [e["kind"] for _p, e in plan] == ["netns", "napi"]  # inside a namespace deleted first: skipped last


def test_sampler_cost_reader_reads_every_cpu_at_every_reading():
    from ansible_collections.xdplab.testbed.plugins.modules import bench_sample

    reader = bench_sample.CostReader({"type": "netdev", "interface": "lo", "stat": "rx_packets"})
    reader()
    reader()
    out = reader.result()
    assert len(out["cpu_jiffies"]) == 2 and "0" in out["cpu_jiffies"][0]
    assert "prog_runs" not in out and out["boot_id"]  # no program behind a netdev counter
    assert out["bpf_stats_enabled"] in (0, 1, None)
    times, counts = bench_sample.sample(lambda: 5, 0.001, 1, 0.01, 0.05, after_read=reader)
    assert len(reader.cpu_jiffies) == 2 + len(times)  # one cost reading per counter reading
