# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Restores are exact or keep the original: a snapshot is removed only after its values are written
back and read back equal (host knobs, sysctls, IRQ affinity, NIC settings), and knobs are restored in
an order where none overrides another (the tuned profile before the governor)."""

from __future__ import annotations

import pytest
from _fake_module import FakeModule
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _host_knobs as th
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _irq_strategies as _irq
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _plan_and_snapshots as _tuning
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _restore
from ansible_collections.xdplab.testbed.plugins.modules import host_tuning, irq_affinity, nic_tuning

Module = FakeModule


# ---- host_tuning ------------------------------------------------------------------------------

class World:
    """A host whose tuned profile rewrites the governor, as tuned does."""

    def __init__(self, tuned, governor, sysctls=None):
        self.tuned, self.governor, self.sysctls, self.log = tuned, governor, dict(sysctls or {}), []

    def read_host(self, root="/"):
        return {"tuned_profile": self.tuned, "governor": self.governor}


@pytest.fixture
def world(monkeypatch):
    w = World("balanced", "schedutil", {"net.core.netdev_budget": "300"})
    monkeypatch.setattr(th, "read_host", w.read_host)
    monkeypatch.setattr(th, "read_sysctl", lambda name, root="/": w.sysctls.get(name))

    def set_tuned(self, value):
        w.log.append(("tuned_profile", value))
        w.tuned = value
        w.governor = "performance" if value == "throughput-performance" else "schedutil"

    def set_governor(self, value):
        w.log.append(("governor", value))
        w.governor = value
    monkeypatch.setattr(_restore.HostWriter, "set_tuned_profile", set_tuned)
    monkeypatch.setattr(_restore.HostWriter, "set_governor", set_governor)
    monkeypatch.setattr(th, "holder_pid", lambda pidfile: None)
    return w


def _snapshot(tmp_path, state):
    store = _tuning.SnapshotStore(str(tmp_path / "state"))
    store.save("host-t", "host", "knobs", state)
    return store


def test_tuned_profile_is_restored_before_the_governor(tmp_path, world):
    # originals: profile balanced, governor powersave; the run set throughput-performance + performance
    world.tuned, world.governor = "throughput-performance", "performance"
    store = _snapshot(tmp_path, {"governor": "powersave", "tuned_profile": "balanced"})
    m = Module(tmp_path)
    result = host_tuning.restored(m, host_tuning.make_host(m), store, "host-t")
    assert [k for k, _dummy in world.log] == ["tuned_profile", "governor"]
    assert (world.tuned, world.governor) == ("balanced", "powersave")
    assert not result["snapshot_kept"] and store.load("host-t") is None


@pytest.mark.parametrize("keys", [["governor", "tuned_profile"], ["turbo", "governor", "tuned_profile", "smt"],
                                  ["sysctl:a", "governor", "tuned_profile", "kernel_cmdline"]])
def test_restore_order_puts_the_profile_first(keys):
    order = _restore.restore_order(keys)
    assert order[0] == "tuned_profile" and order.index("tuned_profile") < order.index("governor")
    assert sorted(order) == sorted(keys)


def test_snapshot_kept_until_sysctls_read_back_equal(tmp_path, world):
    world.sysctls["net.core.netdev_budget"] = "600"  # the run changed it
    store = _snapshot(tmp_path, {"sysctl:net.core.netdev_budget": "300"})
    m = Module(tmp_path)
    first = host_tuning.restored(m, host_tuning.make_host(m), store, "host-t")
    assert first["sysctl_restore"] == {"net.core.netdev_budget": "300"}
    assert first["snapshot_kept"] and store.load("host-t") is not None  # not before the write-back
    world.sysctls["net.core.netdev_budget"] = "300"  # ansible.posix.sysctl wrote it
    second = host_tuning.restored(m, host_tuning.make_host(m), store, "host-t")
    assert second["sysctl_restore"] == {} and not second["snapshot_kept"] and store.load("host-t") is None


def test_snapshot_kept_when_a_knob_does_not_read_back(tmp_path, world, monkeypatch):
    world.governor = "performance"
    store = _snapshot(tmp_path, {"governor": "powersave"})
    monkeypatch.setattr(_restore.HostWriter, "set_governor", lambda self, v: None)  # the write is ignored
    m = Module(tmp_path)
    result = host_tuning.restored(m, host_tuning.make_host(m), store, "host-t")
    assert result["snapshot_kept"] and result["differs"] == ["governor"]
    assert store.load("host-t")["state"] == {"governor": "powersave"}
    assert any("kept" in w for w in m.warnings)


def _host_module(tmp_path, cmdline):
    params = {k: None for k in host_tuning.KNOBS}
    params.update(kernel_cmdline=cmdline, netfilter_unload=False, allow_smt_change=False,
                  allow_netfilter_unload=False, on_unsupported="fail", sysctl_snapshot=None)
    return Module(tmp_path, **params)


def test_grub_restore_through_the_module_is_byte_exact(tmp_path, world):
    grub = tmp_path / "grub"
    original = 'GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX="quiet splash" # c\n'
    grub.write_text(original)
    m = _host_module(tmp_path, {"isolcpus": "2"})
    store = _tuning.SnapshotStore(m.params["state_dir"])
    host_tuning.present(m, host_tuning.make_host(m), store, "host-t")
    assert 'GRUB_CMDLINE_LINUX="quiet splash isolcpus=2" # c' in grub.read_text()
    result = host_tuning.restored(m, host_tuning.make_host(m), store, "host-t")
    assert grub.read_text() == original and not result["snapshot_kept"]


def test_kernel_cmdline_injection_changes_nothing(tmp_path, world):
    grub = tmp_path / "grub"
    grub.write_text('GRUB_CMDLINE_LINUX="quiet"\n')
    m = _host_module(tmp_path, {"isolcpus": '2"; touch /tmp/p; x="'})
    store = _tuning.SnapshotStore(m.params["state_dir"])
    with pytest.raises(th.HostTuningError, match="touch /tmp/p"):
        host_tuning.present(m, host_tuning.make_host(m), store, "host-t")
    assert grub.read_text() == 'GRUB_CMDLINE_LINUX="quiet"\n' and store.load("host-t") is None and not m.calls


# ---- irq_affinity -----------------------------------------------------------------------------

@pytest.fixture
def irqs(monkeypatch):
    live = {40: [0], 41: [1]}
    monkeypatch.setattr(_irq, "find_queue_irqs", lambda ifname: [{"irq": i} for i in sorted(live)])
    monkeypatch.setattr(_irq, "read_affinity", lambda irq: list(live[irq]))
    monkeypatch.setattr(_irq, "write_affinity", lambda irq, cpus: live.__setitem__(irq, list(cpus)))
    monkeypatch.setattr(_irq, "irqbalance_pids", lambda: [])
    monkeypatch.setattr(_irq, "read_irq_state", lambda ifname: {})
    return live


def _irq_module(tmp_path):
    return Module(tmp_path, interface="eth0", state="restored", snapshot_key="irq-t", strategy="sequential",
                  start_cpu=0, cpus=None, map=None, stop_irqbalance=False)


@pytest.mark.parametrize("saved", [{"40": "2", "39": "3"}, {"38": "1"}, {"40": "2", "41": "3", "99": "0"}])
def test_irq_restore_with_vanished_irqs_keeps_the_snapshot(tmp_path, irqs, saved):
    store = _tuning.SnapshotStore(str(tmp_path / "state"))
    store.save("irq-t", "irq", "eth0", {"affinity": saved, "irqbalance_running": False})
    m = _irq_module(tmp_path)
    result = irq_affinity.run(m)
    assert result["vanished_irqs"] and result["snapshot_kept"]
    assert store.load("irq-t")["state"]["affinity"] == saved
    assert all(irqs[int(k)] == _irq.parse_cpulist(v) for k, v in saved.items() if int(k) in irqs)


def test_irq_restore_complete_removes_the_snapshot(tmp_path, irqs):
    store = _tuning.SnapshotStore(str(tmp_path / "state"))
    store.save("irq-t", "irq", "eth0", {"affinity": {"40": "2", "41": "3"}, "irqbalance_running": False})
    result = irq_affinity.run(_irq_module(tmp_path))
    assert not result["snapshot_kept"] and store.load("irq-t") is None and irqs == {40: [2], 41: [3]}


def test_irq_restore_that_does_not_read_back_keeps_the_snapshot(tmp_path, irqs, monkeypatch):
    monkeypatch.setattr(_irq, "write_affinity", lambda irq, cpus: None)  # the kernel refused it
    store = _tuning.SnapshotStore(str(tmp_path / "state"))
    store.save("irq-t", "irq", "eth0", {"affinity": {"40": "2"}, "irqbalance_running": False})
    result = irq_affinity.run(_irq_module(tmp_path))
    assert result["differs"] == [40] and result["snapshot_kept"] and store.load("irq-t") is not None


def test_irq_snapshot_of_a_port_in_a_namespace_is_restored_by_its_saved_names(tmp_path, irqs, monkeypatch):
    # The ledger runs in the initial namespace, whose /sys/class/net does not show a port of a named
    # namespace; /proc/interrupts (the host's) does. IRQ 41 now has another device's name: left alone.
    monkeypatch.setattr(_irq, "find_queue_irqs", lambda ifname: pytest.fail("read /sys/class/net of the wrong netns"))
    monkeypatch.setattr(_irq, "irq_names", lambda: {40: "ens5-TxRx-0", 41: "nvme0q1"})
    monkeypatch.setattr(_tuning, "current_netns", lambda *a: None)
    store = _tuning.SnapshotStore(str(tmp_path / "state"))
    store.save("irq-lab-ens5", "irq", "ens5", {"affinity": {"40": "2", "41": "3"}, "irqbalance_running": False,
                                               "names": {"40": "ens5-TxRx-0", "41": "ens5-TxRx-1"}})
    out = _restore.restore_snapshot(Module(tmp_path), store.path("irq-lab-ens5"), "lab", True)
    assert irqs == {40: [2], 41: [1]}
    assert not out["done"] and "vanished IRQs [41]" in out["reason"] and store.exists("irq-lab-ens5")
    # all of them still named as saved: restored, snapshot gone
    monkeypatch.setattr(_irq, "irq_names", lambda: {40: "ens5-TxRx-0", 41: "ens5-TxRx-1"})
    out = _restore.restore_snapshot(Module(tmp_path), store.path("irq-lab-ens5"), "lab", True)
    assert out["done"] and irqs == {40: [2], 41: [3]} and not store.exists("irq-lab-ens5")


def test_irq_snapshot_in_a_namespace_without_names_is_kept_and_named(tmp_path, irqs, monkeypatch):
    monkeypatch.setattr(_tuning, "current_netns", lambda *a: None)
    store = _tuning.SnapshotStore(str(tmp_path / "state"))
    store.save("irq-lab-ens5", "irq", "ens5", {"affinity": {"40": "2"}, "irqbalance_running": False})
    out = _restore.restore_snapshot(Module(tmp_path), store.path("irq-lab-ens5"), "lab", True)
    assert not out["done"] and "no IRQ names" in out["reason"] and irqs[40] == [0] and store.exists("irq-lab-ens5")


# ---- nic_tuning -------------------------------------------------------------------------------

@pytest.mark.parametrize("mismatch", [{"mtu": {"wanted": 1500, "read_back": 9000}},
                                      {"ring": {"rx": {"wanted": 512, "read_back": 256}}},
                                      {"features": {"gro": {"wanted": True, "read_back": False}}}])
def test_nic_restore_keeps_the_snapshot_when_read_back_differs(tmp_path, monkeypatch, mismatch):
    store = _tuning.SnapshotStore(str(tmp_path / "state"))
    store.save("nic-t", "nic", "eth0", {"mtu": 1500})
    plan = _tuning.NicPlan("eth0")
    plan.add("mtu", "mtu", 9000, 1500)

    class Eth:
        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False
    monkeypatch.setattr(_restore._ethtool, "read_link", lambda ifname, netns=None: {"mtu": 9000})
    monkeypatch.setattr(_restore._ethtool, "EthtoolNetlink", lambda netns=None: Eth())
    monkeypatch.setattr(_restore._ethtool, "public_view", lambda raw: {})
    monkeypatch.setattr(_restore, "read_nic", lambda eth, ifname, netns=None: ({}, {}, {"mtu": 9000}))
    monkeypatch.setattr(_restore._tuning, "plan_nic", lambda *a: plan)
    monkeypatch.setattr(_restore, "apply_nic_all_or_nothing", lambda *a: None)
    monkeypatch.setattr(_restore, "nic_mismatches", lambda *a: mismatch)
    m = Module(tmp_path, interface="eth0", state="restored", snapshot_key="nic-t", on_missing="fail",
               on_unsupported="warn", snapshot=True)
    result = nic_tuning.run(m)
    assert result["snapshot_removed"] is False and store.load("nic-t")["state"] == {"mtu": 1500}
    monkeypatch.setattr(_restore, "nic_mismatches", lambda *a: {})
    assert nic_tuning.run(m)["snapshot_removed"] is True and store.load("nic-t") is None
