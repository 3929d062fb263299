# SPDX-License-Identifier: GPL-3.0-or-later
"""Environment fingerprint from a captured host tree (module_utils/results/_environment.py).

The tree is built from files read on this test VM (6.18 kernel, 2 vCPUs) plus
small, clearly synthetic values where the VM has no such file (cpufreq, tuned,
netfilter modules, an MSI NIC), so each key is exercised and absence is tested.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.results import _environment as ef

CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC
cpu MHz\t\t: 2596.142
flags\t\t: fpu vme

processor\t: 1
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC
cpu MHz\t\t: 2596.142
"""


def write(root: Path, rel: str, text: str | bytes) -> None:
    p = root / rel.lstrip("/")
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(text if isinstance(text, bytes) else text.encode())


@pytest.fixture
def vm_root(tmp_path):
    write(tmp_path, "/proc/cpuinfo", CPUINFO)
    write(tmp_path, "/sys/devices/system/cpu/online", "0-1\n")
    write(tmp_path, "/sys/devices/system/cpu/smt/control", "notsupported\n")
    write(tmp_path, "/sys/devices/system/node/online", "0\n")
    write(tmp_path, "/proc/sys/kernel/osrelease", "6.18.44-fc-v669\n")
    write(tmp_path, "/proc/cmdline", "console=ttyS0 quiet reboot=k panic=1\n")
    write(tmp_path, "/proc/config.gz", gzip.compress(b"CONFIG_XDP_SOCKETS=y\nCONFIG_BPF_JIT=y\n"))
    (tmp_path / "sys/class/net/veth0").mkdir(parents=True)
    write(tmp_path, "/sys/class/net/veth0/mtu", "1500\n")
    write(tmp_path, "/sys/class/net/veth0/speed", "10000\n")
    return tmp_path


def test_host_facts_from_vm_tree(vm_root):
    facts, warnings = ef.gather(["veth0"], root=str(vm_root), live=False)
    assert facts["cpu_model"] == "AMD EPYC"
    assert facts["cpu_mhz"] == pytest.approx(2596.142)
    assert facts["cpus_online"] == 2
    assert facts["smt"] == "notsupported"
    assert facts["numa_nodes"] == 1
    assert facts["kernel"] == "6.18.44-fc-v669"
    assert facts["kernel_cmdline"].startswith("console=ttyS0")
    assert facts["kernel_config_sha256"] == hashlib.sha256(
        b"CONFIG_XDP_SOCKETS=y\nCONFIG_BPF_JIT=y\n").hexdigest()
    assert facts["nic"] == {"veth0": {"mtu": 1500, "speed_mbps": 10000}}
    # not on this VM: absent, never invented
    for key in ("governor", "tuned_profile", "kernel_patches", "netfilter_modules",
                "irq_affinity", "xdp", "ethtool"):
        assert key not in facts, key
    assert warnings == []


def test_boot_config_fallback_and_patches(vm_root):
    (vm_root / "proc/config.gz").unlink()
    write(vm_root, "/boot/config-6.18.44-fc-v669", "CONFIG_X=y\n")
    series = [{"subject": "net: pktgen: add foo", "patch_id": "0123abcd"}]
    write(vm_root, "/etc/xdplab/kernel-series.json", json.dumps({"variant": "patched", "patches": series}))
    facts, _dummy = ef.gather([], root=str(vm_root), live=False)
    assert facts["kernel_config_sha256"] == hashlib.sha256(b"CONFIG_X=y\n").hexdigest()
    assert facts["kernel_config_source"] == "/boot/config-6.18.44-fc-v669"
    assert facts["kernel_patches"] == series


def test_no_config_anywhere_is_absent(vm_root):
    (vm_root / "proc/config.gz").unlink()
    facts, _dummy = ef.gather([], root=str(vm_root), live=False)
    assert "kernel_config_sha256" not in facts


def test_bad_patches_file_warns_and_omits(vm_root):
    write(vm_root, "/etc/xdplab/kernel-series.json", "{not json")
    facts, warnings = ef.gather([], root=str(vm_root), live=False)
    assert "kernel_patches" not in facts
    assert any("kernel-series.json is not valid JSON" in w for w in warnings)


def test_governor_tuned_netfilter_irqs(vm_root):
    for cpu, gov in (("cpu0", "performance"), ("cpu1", "performance")):
        write(vm_root, f"/sys/devices/system/cpu/{cpu}/cpufreq/scaling_governor", gov + "\n")
    write(vm_root, "/etc/tuned/active_profile", "network-latency\n")
    write(vm_root, "/proc/modules",
          "nf_tables 344064 0 - Live 0x0\nnfnetlink 20480 1 nf_tables, Live 0x0\n"
          "veth 40960 0 - Live 0x0\nxt_conntrack 16384 0 - Live 0x0\n")
    (vm_root / "sys/class/net/eth0/device/msi_irqs").mkdir(parents=True)
    for irq in ("41", "42"):
        write(vm_root, f"/sys/class/net/eth0/device/msi_irqs/{irq}", "msix\n")
        write(vm_root, f"/proc/irq/{irq}/smp_affinity_list", "1\n" if irq == "42" else "0\n")
    facts, _dummy = ef.gather(["eth0"], root=str(vm_root), live=False)
    assert facts["governor"] == "performance"
    assert facts["tuned_profile"] == "network-latency"
    assert facts["netfilter_modules"] == ["nf_tables", "nfnetlink", "xt_conntrack"]
    assert facts["irq_affinity"] == {"eth0": {"41": "0", "42": "1"}}


def test_mixed_governors_per_cpu(vm_root):
    write(vm_root, "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "performance\n")
    write(vm_root, "/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "powersave\n")
    facts, _dummy = ef.gather([], root=str(vm_root), live=False)
    assert facts["governor"] == {"cpu0": "performance", "cpu1": "powersave"}


def test_unknown_interface_named(vm_root):
    with pytest.raises(ValueError, match="interface 'nosuch0' does not exist"):
        ef.gather(["nosuch0"], root=str(vm_root), live=False)


def test_reader_failures_become_warnings(vm_root):
    r = ef.SystemReader(str(vm_root))

    def boom(_dummy):
        raise RuntimeError("netlink says no")

    out = ef.interface_facts("veth0", r, ethtool_reader=boom, xdp_reader=boom,
                             warnings=(w := []))
    assert "ethtool" not in out and "xdp" not in out
    assert len(w) == 2 and "netlink says no" in w[0]


def test_fingerprint_diff():
    a = {"kernel": "6.18.44", "cpu_model": "AMD EPYC", "ethtool": {"eth0": {"ring": {"rx": 512}}},
         "generator": {"kernel": "6.18.44"}}
    b = {"kernel": "6.18.44+patched", "cpu_model": "AMD EPYC", "ethtool": {"eth0": {"ring": {"rx": 1024}}},
         "generator": {"kernel": "6.18.44"}, "tuned_profile": "throughput-performance"}
    d = ef.fingerprint_diff(a, b)
    assert d == [
        {"key": "ethtool.eth0.ring.rx", "baseline": 512, "candidate": 1024},
        {"key": "kernel", "baseline": "6.18.44", "candidate": "6.18.44+patched"},
        {"key": "tuned_profile", "baseline": "(absent)", "candidate": "throughput-performance"},
    ]
    assert ef.fingerprint_diff(a, a) == []


def test_series_record_of_another_release_is_not_this_kernels(vm_root):
    # installed but not booted, or fallen back from: the record names the other kernel's release
    series = [{"subject": "net: pktgen: add foo", "patch_id": "0123abcd"}]
    write(vm_root, "/etc/xdplab/kernel-series.json",
          json.dumps({"variant": "panics", "release": "6.12.117-panics", "patches": series}))
    facts, warnings = ef.gather([], root=str(vm_root), live=False)
    assert "kernel_patches" not in facts
    assert any("records the series of 6.12.117-panics, not of the running 6.18.44-fc-v669" in w for w in warnings)
    write(vm_root, "/etc/xdplab/kernel-series.json",
          json.dumps({"variant": "patched", "release": "6.18.44-fc-v669", "patches": series}))
    facts, warnings = ef.gather([], root=str(vm_root), live=False)
    assert facts["kernel_patches"] == series and warnings == []
