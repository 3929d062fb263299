# SPDX-License-Identifier: GPL-3.0-or-later
"""The ledger as the undo log of tuning: nic_tuning / irq_affinity / host_tuning record their snapshot
in the ledger before they act, `ledger state=cleaned` restores it with the modules' own restore (host
knobs, then IRQs, then NICs; the tuned profile before the governor), keeps a snapshot that does not
read back equal and names it, and drops the snapshot of a port whose namespace is gone."""

from __future__ import annotations

import json
import os

import pytest
from _fake_module import FakeModule
from ansible_collections.xdplab.testbed.plugins.module_utils.state import _ledger
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _host_knobs as th
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _plan_and_snapshots as _tuning
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _restore
from ansible_collections.xdplab.testbed.plugins.modules import host_tuning
from ansible_collections.xdplab.testbed.plugins.modules.ledger import Cleaner


class Module(FakeModule):
    """host_tuning's parameters, defaulted, under the fake module."""

    def __init__(self, tmp_path, **params):
        defaults = dict.fromkeys(("tuned_profile", "governor", "turbo", "cpu_dma_latency", "smt", "kernel_cmdline",
                                  "sysctl_snapshot", "snapshot_key"))
        defaults.update(state="present", allow_smt_change=False, netfilter_unload=False,
                        allow_netfilter_unload=False, on_unsupported="fail")
        super().__init__(tmp_path, **dict(defaults, **params))


class World:
    """A host whose tuned profile rewrites the governor, as tuned does."""

    def __init__(self):
        self.tuned, self.governor, self.log = "balanced", "schedutil", []
        self.sysctls = {"net.core.netdev_budget": "300"}
        self.ignore_governor = False


@pytest.fixture
def world(monkeypatch):
    w = World()
    monkeypatch.setattr(th, "read_host", lambda root="/": {"tuned_profile": w.tuned, "governor": w.governor})
    monkeypatch.setattr(th, "read_sysctl", lambda name, root="/": w.sysctls.get(name))
    monkeypatch.setattr(th, "holder_pid", lambda pidfile: None)
    monkeypatch.setattr(_tuning, "current_netns_name", lambda *a: "host")

    def set_tuned(self, value):
        w.log.append(("tuned_profile", value))
        w.tuned = value
        w.governor = "performance" if value == "throughput-performance" else "schedutil"

    def set_governor(self, value):
        w.log.append(("governor", value))
        if not w.ignore_governor:
            w.governor = value

    def write_sysctl(self, name, value):
        w.log.append((f"sysctl:{name}", value))
        w.sysctls[name] = value
    monkeypatch.setattr(_restore.HostWriter, "set_tuned_profile", set_tuned)
    monkeypatch.setattr(_restore.HostWriter, "set_governor", set_governor)
    monkeypatch.setattr(_restore.HostWriter, "write_sysctl", write_sysctl)
    return w


def ledger_entries(m):
    return [e for _dummy, e in _ledger.entries(m.params["ledger_dir"])]


def tune(tmp_path, world, **knobs):
    """host_tuning present as the tuning role runs it; returns the module and its store."""
    m = Module(tmp_path, **knobs)
    host_tuning.present(m, host_tuning.make_host(m), _tuning.SnapshotStore(m.params["state_dir"]), "host-host-knobs")
    return m


def clean(m):
    """What `ledger state=cleaned` does for each entry, in its order."""
    cleaner = Cleaner(m)
    failed = []
    subrank = {"tuning": lambda e: _restore.snapshot_kind_rank(e.get("snapshot_kind"))}
    for path, entry in _ledger.teardown_plan(_ledger.entries(m.params["ledger_dir"]), subrank=subrank):
        try:
            cleaner.remove(entry)
        except RuntimeError as exc:
            failed.append(str(exc))
            continue
        os.unlink(path)
    return failed


def test_host_tuning_records_its_snapshot_in_the_ledger_before_acting(tmp_path, world, monkeypatch):
    def broken(self, value):
        raise th.HostTuningError("the write failed")
    monkeypatch.setattr(_restore.HostWriter, "set_governor", broken)
    m = Module(tmp_path, governor="performance")
    with pytest.raises(RuntimeError, match="the write failed"):
        host_tuning.present(m, host_tuning.make_host(m), _tuning.SnapshotStore(m.params["state_dir"]),
                            "host-host-knobs")
    # the change failed half-way, and still the ledger names the snapshot to restore from
    [entry] = ledger_entries(m)
    assert entry["kind"] == "tuning" and entry["snapshot_kind"] == "host" and entry["netns"] is None
    assert entry["key"] == {"state_file": str(tmp_path / "state" / "host-host-knobs.json")}
    assert os.path.exists(entry["key"]["state_file"])


def test_check_mode_records_nothing(tmp_path, world):
    m = Module(tmp_path, governor="performance")
    m.check_mode = True
    host_tuning.present(m, host_tuning.make_host(m), _tuning.SnapshotStore(m.params["state_dir"]), "host-host-knobs")
    assert not ledger_entries(m) and world.governor == "schedutil"


def test_module_restore_drops_the_entry_with_the_snapshot(tmp_path, world):
    m = tune(tmp_path, world, tuned_profile="throughput-performance", governor="powersave")
    assert len(ledger_entries(m)) == 1
    host_tuning.restored(m, host_tuning.make_host(m), _tuning.SnapshotStore(m.params["state_dir"]), "host-host-knobs")
    assert not ledger_entries(m) and (world.tuned, world.governor) == ("balanced", "schedutil")


def test_cleaned_restores_host_knobs_profile_first_and_sysctls(tmp_path, world):
    world.governor = "powersave"  # not what the balanced profile sets: the profile must go back first
    m = tune(tmp_path, world, tuned_profile="throughput-performance", governor="ondemand",
             sysctl_snapshot=["net.core.netdev_budget"])
    world.sysctls["net.core.netdev_budget"] = "600"  # what ansible.posix.sysctl set
    world.log.clear()
    assert clean(m) == []
    assert [k for k, _dummy in world.log] == ["tuned_profile", "governor", "sysctl:net.core.netdev_budget"]
    assert (world.tuned, world.governor, world.sysctls["net.core.netdev_budget"]) == ("balanced", "powersave", "300")
    assert not os.listdir(m.params["state_dir"]) or os.listdir(m.params["state_dir"]) == ["cpu_dma_latency.pid"]
    assert not os.listdir(m.params["ledger_dir"])


def test_cleaned_keeps_a_snapshot_that_does_not_read_back_and_names_it(tmp_path, world):
    m = tune(tmp_path, world, governor="performance")
    world.ignore_governor = True  # the kernel refuses the original governor now
    failed = clean(m)
    assert len(failed) == 1 and "host snapshot of knobs" in failed[0] and "governor" in failed[0]
    assert len(ledger_entries(m)) == 1
    snap = json.loads((tmp_path / "state" / "host-host-knobs.json").read_text())
    assert snap["state"] == {"governor": "schedutil"}
    world.ignore_governor = False  # the next teardown can: entry and snapshot go
    assert clean(m) == [] and not ledger_entries(m) and world.governor == "schedutil"


def _nic_snapshot(tmp_path, key, netns):
    store = _tuning.SnapshotStore(str(tmp_path / "state"))
    store.save(key, "nic", "veth0", {"mtu": 1500})
    _ledger.record_tuning(str(tmp_path / "ledger"), store.path(key), netns, None, "nic", "veth0")
    return store


def test_snapshot_of_a_port_whose_namespace_is_gone_is_dropped(tmp_path, monkeypatch):
    store = _nic_snapshot(tmp_path, "nic-xdplab-gone-veth0", "xdplab-gone")
    monkeypatch.setattr(Cleaner, "netns_exists", lambda self, name: False)
    m = Module(tmp_path)
    assert clean(m) == [] and not store.exists("nic-xdplab-gone-veth0") and not ledger_entries(m)


def test_missing_port_of_the_initial_namespace_keeps_its_snapshot(tmp_path, monkeypatch):
    store = _nic_snapshot(tmp_path, "nic-host-ens9", None)
    monkeypatch.setattr(_restore._ethtool, "read_link", lambda ifname, netns=None: None)
    m = Module(tmp_path)
    [failed] = clean(m)
    assert "nic snapshot of veth0" in failed and "does not exist" in failed
    assert store.exists("nic-host-ens9") and len(ledger_entries(m)) == 1


def test_an_older_runs_entry_naming_the_snapshot_directory_restores_every_snapshot(tmp_path, world, monkeypatch):
    m = tune(tmp_path, world, governor="powersave")
    nic = _tuning.SnapshotStore(m.params["state_dir"])
    nic.save("nic-xdplab-dut-veth0", "nic", "veth0", {"mtu": 1500})
    for path, _entry in _ledger.entries(m.params["ledger_dir"]):
        os.unlink(path)
    _ledger.record(m.params["ledger_dir"], _ledger.tuning_entry(m.params["state_dir"]), "20261129T215000Z-1a2b3c")
    seen = []
    monkeypatch.setattr(Cleaner, "netns_exists", lambda self, name: seen.append(name) or False)
    assert clean(m) == []
    assert world.governor == "schedutil" and seen == ["xdplab-dut"] and not nic.exists("nic-xdplab-dut-veth0")


def test_teardown_order_of_tuning_entries_and_kept_namespaces():
    def tuning(name, kind, netns=None):
        return dict(_ledger.tuning_entry(f"/var/lib/xdplab/tuning/{name}.json", netns), snapshot_kind=kind)
    items = [
        ("a-nic", tuning("nic-host-ens1", "nic")),
        ("b-host", tuning("host-host-knobs", "host")),
        ("c-irq", tuning("irq-host-ens1", "irq")),
        ("d-ns", _ledger.check_entry("netns", {"name": "xdplab-dut"})),
        ("e-in", tuning("nic-xdplab-dut-veth0", "nic", "xdplab-dut")),
        ("f-xdp", _ledger.check_entry("xdp", {"interface": "veth0"}, "xdplab-dut")),
    ]
    subrank = {"tuning": lambda e: _restore.snapshot_kind_rank(e.get("snapshot_kind"))}
    order = [p for p, _dummy in _ledger.teardown_plan(items, subrank=subrank)]
    assert order == ["b-host", "c-irq", "a-nic", "d-ns", "e-in", "f-xdp"]
    # namespaces kept: what is inside them is undone in its own turn, before the host's NIC
    kept = [p for p, _dummy in _ledger.teardown_plan(items, keep=["netns"], subrank=subrank)]
    assert kept.index("f-xdp") < kept.index("b-host") and kept.index("e-in") > kept.index("b-host")
    assert kept[-1] == "d-ns"
