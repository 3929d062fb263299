# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_tuning_host on fake trees: the knobs this VM lacks (cpufreq governors, turbo, SMT control,
loadable netfilter modules, a grub defaults file) exercised on tmp_path copies of what real hosts have."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _host_knobs as th

# /proc/modules of a Debian 12 host with iptables-nft and conntrack loaded (trimmed, real format).
PROC_MODULES = """\
nft_chain_nat 16384 3 - Live 0x0000000000000000
xt_MASQUERADE 16384 1 - Live 0x0000000000000000
nf_nat 61440 2 nft_chain_nat,xt_MASQUERADE, Live 0x0000000000000000
xt_conntrack 16384 1 - Live 0x0000000000000000
nf_conntrack 184320 3 xt_MASQUERADE,nf_nat,xt_conntrack, Live 0x0000000000000000
nf_defrag_ipv6 24576 1 nf_conntrack, Live 0x0000000000000000
nf_defrag_ipv4 16384 1 nf_conntrack, Live 0x0000000000000000
nft_compat 20480 4 - Live 0x0000000000000000
nf_tables 339968 44 nft_chain_nat,nft_compat, Live 0x0000000000000000
libcrc32c 16384 3 nf_nat,nf_conntrack,nf_tables, Live 0x0000000000000000
nfnetlink 20480 2 nft_compat,nf_tables, Live 0x0000000000000000
x_tables 53248 4 xt_MASQUERADE,xt_conntrack,nft_compat, Live 0x0000000000000000
virtio_net 69632 0 - Live 0x0000000000000000
"""


def test_unload_order_puts_users_first():
    mods = th.parse_proc_modules(PROC_MODULES)
    order = th.netfilter_unload_order(mods)
    assert "virtio_net" not in order and "libcrc32c" not in order
    assert set(order) == {m for m in mods if m not in ("virtio_net", "libcrc32c")}
    for mod, users in mods.items():
        for user in users:
            if mod in order and user in order:
                assert order.index(user) < order.index(mod), f"{user} must go before {mod}"


def test_unload_refused_when_a_foreign_module_holds_one():
    mods = th.parse_proc_modules(PROC_MODULES + "ip_vs 180224 0 - Live 0x0\n")
    mods["nf_conntrack"].append("ip_vs")
    with pytest.raises(th.HostTuningError, match="nf_conntrack is used by ip_vs"):
        th.netfilter_unload_order(mods)


def test_nothing_loaded_means_nothing_to_unload():
    assert th.netfilter_unload_order(th.parse_proc_modules("virtio_net 69632 0 - Live 0x0\n")) == []


GRUB = 'GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT="quiet"\nGRUB_CMDLINE_LINUX="console=ttyS0 isolcpus=1"\n'


def test_grub_edit_sets_replaces_and_removes():
    text, old, new = th.edit_grub(GRUB, {"isolcpus": "2-3", "nohz_full": "2-3", "console": None})
    assert old == "console=ttyS0 isolcpus=1" and new == "isolcpus=2-3 nohz_full=2-3"
    assert 'GRUB_CMDLINE_LINUX="isolcpus=2-3 nohz_full=2-3"\n' in text
    assert 'GRUB_CMDLINE_LINUX_DEFAULT="quiet"' in text  # the other line untouched
    assert th.restore_grub(text, old) == GRUB
    same, old2, new2 = th.edit_grub(GRUB, {"isolcpus": "1"})
    assert old2 == new2 and same == GRUB


def test_grub_without_cmdline_line_gets_one_and_bad_keys_fail():
    text, old, new = th.edit_grub("GRUB_DEFAULT=0\n", {"nosmt": True})
    assert old == "" and new == "nosmt" and text.endswith('GRUB_CMDLINE_LINUX="nosmt"\n')
    with pytest.raises(th.HostTuningError, match="'isol cpus' is not a kernel parameter name"):
        th.edit_grub(GRUB, {"isol cpus": "1"})


@pytest.fixture
def host(tmp_path: Path) -> str:
    cpu = tmp_path / "sys/devices/system/cpu"
    for n, gov in ((0, "powersave"), (1, "powersave")):
        d = cpu / f"cpu{n}/cpufreq"
        d.mkdir(parents=True)
        (d / "scaling_governor").write_text(gov + "\n")
        (d / "scaling_available_governors").write_text("performance powersave\n")
    (cpu / "intel_pstate").mkdir()
    (cpu / "intel_pstate/no_turbo").write_text("0\n")
    (cpu / "smt").mkdir()
    (cpu / "smt/control").write_text("on\n")
    (tmp_path / "etc/tuned").mkdir(parents=True)
    (tmp_path / "etc/tuned/active_profile").write_text("balanced\n")
    (tmp_path / "proc/sys/net/core").mkdir(parents=True)
    (tmp_path / "proc/sys/net/core/netdev_budget").write_text("300\n")
    (tmp_path / "proc/modules").write_text(PROC_MODULES)
    return str(tmp_path)


def test_read_host_shapes(host):
    facts = th.read_host(host)
    assert facts["governor"] == "powersave"
    assert facts["turbo"] is True  # intel_pstate no_turbo=0
    assert facts["smt"] == "on" and facts["tuned_profile"] == "balanced"
    assert "nf_conntrack" in facts["netfilter_modules"] and "virtio_net" not in facts["netfilter_modules"]
    assert "cpu_dma_latency" not in facts  # no /dev in the fake tree: absent, not invented
    assert th.available_governors(host) == ["performance", "powersave"]


def test_mixed_governors_reported_per_cpu(host):
    Path(host, "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor").write_text("performance\n")
    assert th.read_governor(host) == {"cpu0": "powersave", "cpu1": "performance"}


def test_boost_switch_is_not_inverted(host):
    Path(host, "sys/devices/system/cpu/intel_pstate/no_turbo").unlink()
    Path(host, "sys/devices/system/cpu/intel_pstate").rmdir()
    (Path(host) / "sys/devices/system/cpu/cpufreq").mkdir()
    Path(host, "sys/devices/system/cpu/cpufreq/boost").write_text("0\n")
    assert th.turbo_path(host) == ("/sys/devices/system/cpu/cpufreq/boost", False)
    assert th.read_turbo(host) is False


def test_smt_notsupported_is_not_a_knob(host):
    Path(host, "sys/devices/system/cpu/smt/control").write_text("notsupported\n")
    assert th.read_smt(host) is None
    assert th.read_host(host)["smt"] == "notsupported"  # the fingerprint still says so


def test_sysctl_read_and_names(host):
    assert th.read_sysctl("net.core.netdev_budget", host) == "300"
    assert th.read_sysctl("net.core.nope", host) is None
    with pytest.raises(th.HostTuningError, match="not a sysctl name"):
        th.read_sysctl("../../etc/shadow", host)


def test_latency_holder_refuses_negative(tmp_path):
    with pytest.raises(th.HostTuningError, match="must be >= 0"):
        th.start_latency_holder(-1, str(tmp_path / "pid"))
    with pytest.raises(th.HostTuningError, match="does not exist on this host"):
        th.start_latency_holder(0, str(tmp_path / "pid"), root=str(tmp_path))


def test_sysctl_of_a_vlan_interface_is_read_from_its_own_directory(tmp_path):
    conf = tmp_path / "proc/sys/net/ipv4/conf"
    (conf / "eth0.1").mkdir(parents=True)
    (conf / "eth0.1" / "rp_filter").write_text("2\n")
    (conf / "eth0" / "1").mkdir(parents=True)
    (conf / "eth0" / "1" / "rp_filter").write_text("0\n")  # what the '.' -> '/' mapping would have read
    from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _host_knobs

    for name in ("net.ipv4.conf.eth0/1.rp_filter", "net/ipv4/conf/eth0.1/rp_filter"):
        assert _host_knobs.read_sysctl(name, root=str(tmp_path)) == "2"
