# SPDX-License-Identifier: GPL-3.0-or-later
"""A/B of two kernels by boot (results._ab, results._render_ab): each boot is one unit, checked
against scipy (a test-only oracle), the A/A check, leave one boot out, the error for too few boots,
and a simulation showing why repetitions within a boot must not count as independent."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.common._atomic_files import write_json_atomic
from ansible_collections.xdplab.testbed.plugins.module_utils.results._ab import ABError, aa_check, analyze, collapse
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_files import load_results
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_schema import (
    build_record,
    record_filename,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.results._render_ab import render_ab
from ansible_collections.xdplab.testbed.plugins.module_utils.results._rounds import boot_plan
from ansible_collections.xdplab.testbed.plugins.module_utils.results._statistics import ns_samples, welch
from scipy import stats

ENV = {"cpu_model": "AMD EPYC", "cpu_mhz": 2596.1, "kernel": "6.12.0-base"}


def rec(kernel, boot, ns, scenario="xdp_drop", params=None, started=None, env=None, run_id="r1"):
    """A record of one boot: ``ns`` is its repetitions in ns/packet (samples are 1e9/ns pps)."""
    return build_record(run_id=run_id, scenario=scenario, variant=kernel, tool="xdpgen",
                        params=params or {"pkt_size": 64}, samples=[1e9 / x for x in ns],
                        environment=env or dict(ENV, kernel=f"6.12.0-{kernel}"),
                        started=started or f"2026-12-01T05:{boot:02d}:00Z", duration_s=3.0,
                        extra={"replicate": {"level": "boot", "id": f"{boot:02d}-{kernel}"}})


def records(base_boots, cand_boots):
    """Records from per-boot ns lists, booted A B B A A B ... (boot_plan order)."""
    plan = boot_plan(["base", "patched"], max(len(base_boots), len(cand_boots)))
    queues = {"base": list(base_boots), "patched": list(cand_boots)}
    out = []
    for step in plan:
        if queues[step["kernel"]]:
            out.append(rec(step["kernel"], step["boot"], queues[step["kernel"]].pop(0)))
    return out


def boot_means(boots):
    return [sum(b) / len(b) for b in boots]


@pytest.mark.parametrize("seed", range(6))
def test_delta_and_interval_over_boots_match_scipy(seed):
    rng = np.random.default_rng(seed)
    nb, nc = int(rng.integers(2, 7)), int(rng.integers(2, 7))
    base = [list(150 + rng.normal(0, 2) + rng.normal(0, 0.5, int(rng.integers(1, 8)))) for _dummy in range(nb)]
    cand = [list(148 + rng.normal(0, 2) + rng.normal(0, 0.5, int(rng.integers(1, 8)))) for _dummy in range(nc)]
    rs = records(base, cand)
    out = analyze(rs, rs, baseline="base", candidate="patched")
    row = out["rows"][0]
    # the oracle sees one value per boot: the mean of that boot's repetitions in ns/packet
    a = boot_means([ns_samples([1e9 / x for x in b]) for b in base])
    b = boot_means([ns_samples([1e9 / x for x in c]) for c in cand])
    ref = stats.ttest_ind(b, a, equal_var=False)
    ci = ref.confidence_interval(0.95)
    assert row["delta_ns_per_packet"] == pytest.approx(np.mean(b) - np.mean(a), rel=1e-12, abs=1e-12)
    assert row["ci95_ns"] == pytest.approx([ci.low, ci.high], rel=1e-9, abs=1e-9)
    assert row["p_value"] == pytest.approx(ref.pvalue, rel=1e-8, abs=1e-10)
    assert row["df"] == pytest.approx(ref.df, rel=1e-10)
    assert row["significant"] == (ci.low > 0 or ci.high < 0)
    assert (row["baseline"]["n"], row["candidate"]["n"]) == (nb, nc)
    assert row["unit_level"] == "boot"
    assert row["boot_ns_per_packet"]["baseline"] == pytest.approx(a, rel=1e-12)


def test_repetitions_and_records_within_a_boot_are_one_unit(tmp_path):
    # boot 01 of base has two records (two runs in one boot): pooled into one value, n stays 2 boots
    rs = [rec("base", 1, [150.0, 152.0]), rec("base", 1, [151.0], run_id="r2"),
          rec("base", 4, [153.0, 153.0, 153.0, 153.0]),
          rec("patched", 2, [149.0, 149.5]), rec("patched", 3, [150.0, 150.5])]
    for r in rs:
        d = tmp_path / r["run_id"]
        d.mkdir(exist_ok=True)
        write_json_atomic(str(d / record_filename(r["scenario"], r["variant"], r["params"], r["replicate"])), r)
    loaded = load_results(str(tmp_path))
    assert len(loaded) == 5
    row = analyze(loaded, loaded, baseline="base", candidate="patched")["rows"][0]
    assert row["baseline"]["n"] == 2 and row["baseline"]["repetitions"] == 7
    assert row["boots"]["baseline"] == ["01-base", "04-base"]
    assert row["boot_ns_per_packet"]["baseline"] == pytest.approx([151.0, 153.0])
    # the interval is over 2 vs 2 boot values, not 7 vs 4 repetitions
    assert row["ci95_ns"] == pytest.approx(welch([151.0, 153.0], [149.25, 150.25])["ci"])


def test_fewer_than_two_boots_names_the_kernel_and_the_count():
    rs = [rec("base", 1, [150.0, 151.0]), rec("base", 4, [150.5]), rec("patched", 2, [149.0, 149.2])]
    with pytest.raises(ABError, match=r"kernel 'patched': 1 boot\(s\) of xdp_drop \{'pkt_size': 64\} \(02-patched\); "
                                      r"an interval over boots needs at least 2 boots per kernel"):
        analyze(rs, rs, baseline="base", candidate="patched")


@pytest.mark.parametrize(("replicate", "needle"), [
    (None, "replicate level 'run'"),
    ({"level": "round", "id": 3}, "replicate level 'round' \\(id '3'\\), not 'boot'"),
])
def test_records_that_do_not_name_their_boot_are_refused(replicate, needle):
    rs = records([[150.0], [151.0]], [[149.0], [149.5]])
    if replicate is None:
        del rs[0]["replicate"]
    else:
        rs[0]["replicate"] = replicate
    with pytest.raises(ABError, match=needle):
        analyze(rs, rs, baseline="base", candidate="patched")


def test_missing_kernel_and_nothing_in_common_are_errors():
    rs = records([[150.0], [151.0]], [[149.0], [149.5]])
    with pytest.raises(ABError, match="no records of kernel 'other' on the candidate side"):
        analyze(rs, rs, baseline="base", candidate="other")
    other = [dict(r, scenario="tc_drop") if r["variant"] == "patched" else r for r in rs]
    with pytest.raises(ABError, match="no scenario \\+ params measured on both kernels"):
        analyze(other, other, baseline="base", candidate="patched")


def sweep_rec(kernel, boot, ns, datapath, scenario="xdp_flow"):
    """A scenario sweep's record of one boot: its variant is the datapath, the kernel is in its environment."""
    r = rec(kernel, boot, ns, scenario=scenario, params={"pkt_size": 64, "build": "baseline"},
            env=dict(ENV, kernel=f"6.12.0-{kernel}", kernel_variant=kernel))
    r["variant"] = datapath
    return r


def test_sweep_records_group_by_the_kernel_in_their_environment_one_row_per_datapath():
    ns = {("base", "xdp_flow"): [[100.0], [101.0]], ("base", "nft"): [[300.0], [302.0]],
          ("patched", "xdp_flow"): [[90.0], [91.0]], ("patched", "nft"): [[301.0], [303.0]]}
    boots = {"base": [1, 4], "patched": [2, 3]}
    rs = [sweep_rec(k, boots[k][i], v, dp) for (k, dp), per_boot in ns.items() for i, v in enumerate(per_boot)]
    # and the in-kernel runner's pktgen records of the same boots (variant = the kernel)
    rs += [rec(k, b, [2000.0 + b], scenario="pktgen_xmit") for k, bs in boots.items() for b in bs]
    out = analyze(rs, rs, baseline="base", candidate="patched")
    rows = {(r["scenario"], r["params"].get("variant")): r for r in out["rows"]}
    assert set(rows) == {("xdp_flow", "xdp_flow"), ("xdp_flow", "nft"), ("pktgen_xmit", None)}
    assert rows[("xdp_flow", "xdp_flow")]["delta_ns_per_packet"] == pytest.approx(90.5 - 100.5)
    assert rows[("xdp_flow", "nft")]["delta_ns_per_packet"] == pytest.approx(302.0 - 301.0)
    assert rows[("xdp_flow", "nft")]["boots"] == {
        "baseline": ["01-base", "04-base"], "candidate": ["02-patched", "03-patched"]}
    assert rows[("pktgen_xmit", None)]["params"] == {"pkt_size": 64}
    assert out["boots"] == {"baseline": 2, "candidate": 2}
    text = render_ab(out)
    assert "xdp_flow" in text and "nft" in text and "pktgen_xmit" in text
    # a datapath named like a kernel is still selected by the environment's kernel
    with pytest.raises(ABError, match="no records of kernel 'nft' on the candidate side"):
        analyze(rs, rs, baseline="base", candidate="nft")


def test_sweep_rows_are_named_by_datapath_with_what_they_share_once_and_the_sockets_bind_modes():
    rs = []
    for kernel, boots, mode in (("base", [1, 4], "copy"), ("patched", [2, 3], "zero-copy")):
        for b in boots:
            for dp, server in (("rx_syscall", "udpsink"), ("rx_xsk", "xsksink")):
                r = sweep_rec(kernel, b, [20000.0 + b], dp, scenario="xsk_vs_syscall")
                r["params"] = dict(r["params"], server=server, dst_ip="198.18.0.2")
                r["counters"] = {"server": {"tool": server, "info": {"mode": mode} if server == "xsksink" else {}}}
                r["reps"] = [{"gen_figures": {"bind_mode": "zero-copy"}}]
                rs.append(r)
    out = analyze(rs, rs, baseline="base", candidate="patched")
    rows = {r["params"]["variant"]: r for r in out["rows"]}
    assert rows["rx_xsk"]["xsk_bind"] == {"baseline": {"dut": ["copy"], "generator": ["zero-copy"]},
                                          "candidate": {"dut": ["zero-copy"], "generator": ["zero-copy"]}}
    assert rows["rx_syscall"]["xsk_bind"]["baseline"]["dut"] == []
    text = render_ab(out)
    table = text.split("\n\n")[1]
    assert "xsk_vs_syscall/rx_xsk server=xsksink " in table and "dst_ip" not in table, table
    assert "xsk_vs_syscall rows share: build=baseline dst_ip=198.18.0.2 pkt_size=64." in " ".join(text.split())
    assert ("xsk_vs_syscall/rx_xsk server=xsksink: AF_XDP sockets bound dut copy (A), zero-copy (B); "
            "generator zero-copy (A), zero-copy (B).") in " ".join(text.split())
    # records without sockets say nothing about binding
    plain = analyze(*[records([[150.0], [151.0]], [[149.0], [149.5]])] * 2, baseline="base", candidate="patched")
    assert "xsk_bind" not in plain["rows"][0] and "AF_XDP" not in render_ab(plain)
    # a scenario with one row keeps all its params in its name
    assert "xdp_drop pkt_size=64" in render_ab(plain)


def test_aa_split_of_four_boots_matches_scipy_and_three_say_why_not():
    base = [[150.0, 150.2], [151.0], [149.5, 149.7, 149.6], [150.8]]
    rs = records(base, [[148.0], [148.5], [147.9], [148.2]])
    units = [collapse(r["replicate"]["id"], [r]) for r in rs if r["variant"] == "base"]
    aa = aa_check(units, "base")
    values = boot_means([ns_samples([1e9 / x for x in b]) for b in base])
    ref = stats.ttest_ind(values[1::2], values[0::2], equal_var=False)
    assert aa["halves"] == [["01-base", "05-base"], ["04-base", "08-base"]]
    assert aa["ci95_ns"] == pytest.approx(list(ref.confidence_interval(0.95)), rel=1e-9)
    assert aa["boot_stdev_ns"] == pytest.approx(np.std(values, ddof=1), rel=1e-12)
    assert aa["spread_ns"] == pytest.approx(max(values) - min(values))
    assert aa["mde_ns"] > 0
    three = aa_check(units[:3], "base")
    assert three["ci95_ns"] is None and three["significant"] is False
    assert three["note"] == "3 boots of 'base': an A/A split needs 4 (2 per half), no interval"
    assert three["boot_stdev_ns"] is not None


def test_leave_one_out_shows_one_boot_deciding_the_direction():
    steady = analyze(*[records([[150.0], [150.4], [150.2]], [[148.0], [148.3], [148.1]])] * 2,
                     baseline="base", candidate="patched")["rows"][0]["leave_one_out"]
    assert steady["sign_stable"] is True and steady["deltas"] == 6
    assert -2.4 < steady["delta_min"] <= steady["delta_max"] < -1.9
    # one slow baseline boot makes the candidate look faster; without it, it is slower
    outlier = analyze(*[records([[150.0], [150.1], [160.0]], [[151.0], [151.1], [151.2]])] * 2,
                      baseline="base", candidate="patched")["rows"][0]
    assert outlier["delta_ns_per_packet"] < 0
    assert outlier["leave_one_out"]["sign_stable"] is False and outlier["leave_one_out"]["delta_max"] > 0


def test_environment_diff_marks_keys_that_vary_between_boots():
    rs = records([[150.0], [150.4]], [[148.0], [148.3]])
    for i, r in enumerate(rs):
        r["environment"] = dict(r["environment"], cpu_mhz=2596.1 + i)
    out = analyze(rs, rs, baseline="base", candidate="patched")
    diff = {d["key"]: d for d in out["environment_diff"]}
    assert diff["kernel"]["varies_between_boots"] is False
    assert diff["kernel"]["baseline"] == "6.12.0-base" and diff["kernel"]["candidate"] == "6.12.0-patched"
    assert diff["cpu_mhz"]["varies_between_boots"] is True
    # a row whose records fingerprint less (another sweep's ports): a key only the other row has does not
    # vary between boots for lacking there
    other = [dict(r, scenario="xsk_rx", environment={k: v for k, v in r["environment"].items() if k != "kernel"})
             for r in rs]
    mixed = analyze(rs + other, rs + other, baseline="base", candidate="patched")
    diff = {d["key"]: d for d in mixed["environment_diff"]}
    assert diff["kernel"]["varies_between_boots"] is False and diff["cpu_mhz"]["varies_between_boots"] is True


def test_series_is_shown_in_its_own_section_not_in_the_environment_diff():
    rs = records([[150.0], [150.4]], [[148.0], [148.3]])
    series = [{"subject": "net: faster", "patch_id": "ab" * 20}]
    for r in rs:
        r["environment"] = dict(r["environment"], kernel_patches=series if r["variant"] == "patched" else [])
    out = analyze(rs, rs, baseline="base", candidate="patched")
    assert "kernel_patches" not in {d["key"] for d in out["environment_diff"]}
    assert "kernel" in {d["key"] for d in out["environment_diff"]}


def test_zero_variance_over_boots_gives_no_interval_never_significant():
    rs = records([[150.0], [150.0]], [[149.0], [149.0]])
    row = analyze(rs, rs, baseline="base", candidate="patched")["rows"][0]
    assert row["ci95_ns"] is None and row["significant"] is False
    assert "zero variance" in render_ab(analyze(rs, rs, baseline="base", candidate="patched"))


def test_a_known_effect_is_found_with_its_sign_and_size():
    rng = np.random.default_rng(7)
    base = [list(150 + rng.normal(0, 0.3) + rng.normal(0, 0.2, 5)) for _dummy in range(5)]
    cand = [list(153 + rng.normal(0, 0.3) + rng.normal(0, 0.2, 5)) for _dummy in range(5)]
    row = analyze(*[records(base, cand)] * 2, baseline="base", candidate="patched")["rows"][0]
    assert row["significant"] and row["direction"] == "slower"
    assert row["ci95_ns"][0] < 3.0 < row["ci95_ns"][1]


def _fpr(rng, trials, boots, reps, between, within):
    by_boot = pooled = 0
    for _dummy in range(trials):
        # A/A: both "kernels" draw boots from the same distribution
        sides = [[list(150 + rng.normal(0, between) + rng.normal(0, within, reps)) for _dummy in range(boots)]
                 for _dummy in range(2)]
        # plain dicts with what analyze reads (build_record's summary would only slow the loop down)
        rs = [{"scenario": "s", "params": {}, "variant": k, "samples": [1e9 / x for x in b], "started": f"{i:03d}",
               "replicate": {"level": "boot", "id": f"{i:03d}-{k}"}, "environment": {}}
              for k, boots_of_k in zip(("base", "patched"), sides, strict=True)
              for i, b in enumerate(boots_of_k, start=1 if k == "base" else 100)]
        by_boot += analyze(rs, rs, baseline="base", candidate="patched")["rows"][0]["significant"]
        # counting every repetition as independent evidence
        pooled += welch([x for b in sides[0] for x in b], [x for b in sides[1] for x in b])["significant"]
    return by_boot / trials, pooled / trials


def test_boots_as_units_keep_the_aa_false_positive_rate_near_5_percent_and_pooled_repetitions_do_not():
    rng = np.random.default_rng(2026)
    by_boot, pooled = _fpr(rng, 400, boots=3, reps=10, between=1.0, within=1.0)
    assert 0.01 <= by_boot <= 0.08, by_boot
    assert pooled >= 0.3, pooled
    # without any between-boot variance the two agree: the boot is the unit, not a penalty
    by_boot0, pooled0 = _fpr(rng, 150, boots=3, reps=10, between=0.0, within=1.0)
    assert by_boot0 <= 0.09 and pooled0 <= 0.09


SERIES = {"series_id": "f" * 64, "patches": [
    {"subject": "pktgen: show an xdplab fixture marker in pgctrl",
     "patch_id": "73ecd92b29530f18f161a0b5b40741d36bd9d12a"},
    {"subject": "docs: pktgen: mention the xdplab fixture marker",
     "patch_id": "9da5ba92546adc45d3320279f8ca60a6abc602b0"}]}


def _report(**extra):
    rs = records([[150.0, 150.1], [150.4], [150.2], [150.3]], [[148.0], [148.3], [148.1], [148.2]])
    rs += records([[200.0], [201.0], [200.5], [200.2]], [[200.1], [200.9], [200.4], [200.6]])[::1]
    for r in rs[8:]:
        r["scenario"] = "tc_drop"
    return dict(analyze(rs, rs, baseline="base", candidate="patched"), **extra)


def test_text_is_a_cover_letter_table_with_aa_diff_and_series():
    cfg = [{"option": "CONFIG_HZ", "baseline": "250", "candidate": "1000"}]
    text = render_ab(_report(series=SERIES, config_diff=cfg))
    assert text.isascii()
    lines = text.splitlines()
    # a table wider than 100 columns is split, each part led by the row names: read it back whole
    head = " ".join(ln for ln in lines if ln.strip().startswith("scenario"))
    for col in ("scenario", "pps A", "pps B", "ns/pkt A", "ns/pkt B", "delta ns/pkt [95% CI]", "n boots A/B"):
        assert col in head
    row = " ".join(ln for ln in lines if ln.strip().startswith("xdp_drop pkt_size"))
    assert "faster" in row and "4/4" in row
    # ns/packet A: the mean over boots of per-boot ns/packet ((150.05 + 150.4 + 150.2 + 150.3) / 4)
    assert "150.24" in row and "148.15" in row
    tc = " ".join(ln for ln in lines if ln.strip().startswith("tc_drop pkt_size"))
    assert "n.s." in tc
    assert any(ln.startswith("- xdp_drop pkt_size=64: boots 01-base,05-base vs 04-base,08-base") for ln in lines)
    assert "CONFIG_HZ" in text and "1000" in text
    assert "73ecd92b29530f18f161a0b5b40741d36bd9d12a pktgen: show an xdplab fixture marker in pgctrl" in text
    assert "Series (2 patches, series id ffffffffffffffff)" in text
    assert "kernel" in text and "6.12.0-patched" in text


def test_markdown_has_pipe_tables_and_says_what_was_not_given():
    md = render_ab(_report(), markdown=True)
    assert "| scenario | pps A | pps B | ns/pkt A | ns/pkt B |" in md
    assert "| scenario | delta ns/pkt [95% CI] | n boots A/B |" in md
    assert "|---|---:|" in md
    assert "Kernel configs not given: no .config diff." in md and "Series: not given." in md
    assert md.count("### ") >= 4


def test_interval_in_the_table_is_the_analysis_interval():
    rep = _report()
    row = rep["rows"][[r["scenario"] for r in rep["rows"]].index("xdp_drop")]
    lo, hi = row["ci95_ns"]
    assert f"[{lo:+.2f}, {hi:+.2f}]" in render_ab(rep)
    delta = row["candidate"]["ns_per_packet"] - row["baseline"]["ns_per_packet"]
    assert math.isclose(row["delta_ns_per_packet"], delta, rel_tol=1e-12)


@pytest.mark.parametrize("markdown", [False, True])
def test_the_cover_letter_fits_100_columns_with_long_values_kept_whole_in_the_report(markdown):
    cmdline = "BOOT_IMAGE=/vmlinuz " + " ".join(f"opt{i}=value{i}" for i in range(60))
    report = _report(series={"patches": [{"patch_id": "f" * 40, "subject": "net: " + "a long subject " * 8}],
                             "series_id": "e" * 64},
                     config_diff=[{"option": "CONFIG_" + "X" * 40, "baseline": "y", "candidate": "m"}],
                     warnings=["a warning " * 20])
    report["environment_diff"] = [{"key": "kernel_cmdline", "baseline": cmdline, "candidate": cmdline + " quiet",
                                   "varies_between_boots": False}]
    text = render_ab(report, markdown=markdown)
    assert max(len(ln) for ln in text.splitlines()) <= 100, max(text.splitlines(), key=len)
    assert cmdline[:27] + "..." in text and cmdline not in text  # shortened in the text
    assert report["environment_diff"][0]["baseline"] == cmdline  # whole in what the JSON is written from
    assert "a long subject" in text and "WARNING: a warning" in text
