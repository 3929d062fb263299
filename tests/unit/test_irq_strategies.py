# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_irq on fake sysfs/procfs trees: a 4-queue NIC on NUMA node 1 of a two-node, 8-CPU host (what no
machine here has)., a virtio-net device (vectors on the parent PCI function, as on this VM) and a
driver without MSI naming its IRQs after the interface.
/proc/interrupts columns are squeezed to fit the line length."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _irq_strategies as _irq

INTERRUPTS = """\
           CPU0       CPU1       CPU2       CPU3       CPU4       CPU5       CPU6       CPU7
  0:  10  0  0  0  0  0  0  0  IO-APIC  2-edge  timer
 99:  0  0  0  0  0  0  0  0  PCI-MSIX-0000:3b:00.0  0-edge  ens1f0-misc
100:  10  0  0  0  0  0  0  0  PCI-MSIX-0000:3b:00.0  1-edge  ens1f0-TxRx-0
101:  10  0  0  0  0  0  0  0  PCI-MSIX-0000:3b:00.0  2-edge  ens1f0-TxRx-1
102:  10  0  0  0  0  0  0  0  PCI-MSIX-0000:3b:00.0  3-edge  ens1f0-TxRx-2
103:  10  0  0  0  0  0  0  0  PCI-MSIX-0000:3b:00.0  4-edge  ens1f0-TxRx-3
 38:  0  4668  0  0  0  0  0  0  PCI-MSIX-0000:00:03.0  1-edge  virtio2-input.0
 39:  3687  0  0  0  0  0  0  0  PCI-MSIX-0000:00:03.0  2-edge  virtio2-output.0
 37:  0  0  0  0  0  0  0  0  PCI-MSIX-0000:00:03.0  0-edge  virtio2-config
 50:  5  0  0  0  0  0  0  0  IO-APIC  11-fasteoi  eth7
NMI:  0  0  0  0  0  0  0  0  Non-maskable interrupts
"""


@pytest.fixture
def tree(tmp_path: Path):
    sys_root, proc_root = tmp_path / "sys", tmp_path / "proc"
    (sys_root / "devices/system/cpu").mkdir(parents=True)
    (sys_root / "devices/system/cpu/online").write_text("0-7\n")
    for node, cpus in ((0, "0-3"), (1, "4-7")):
        d = sys_root / f"devices/system/node/node{node}"
        d.mkdir(parents=True)
        (d / "cpulist").write_text(cpus + "\n")
    pci = sys_root / "devices/pci0000:3a/0000:3b:00.0"
    (pci / "msi_irqs").mkdir(parents=True)
    for irq in (99, 100, 101, 102, 103):
        (pci / "msi_irqs" / str(irq)).write_text("msix\n")
    (pci / "numa_node").write_text("1\n")
    virtio_pci = sys_root / "devices/pci0000:00/0000:00:03.0"
    (virtio_pci / "msi_irqs").mkdir(parents=True)
    for irq in (37, 38, 39):
        (virtio_pci / "msi_irqs" / str(irq)).write_text("msix\n")
    (virtio_pci / "virtio2").mkdir()
    plain = sys_root / "devices/platform/plain"
    plain.mkdir(parents=True)
    net = sys_root / "class/net"
    for name, dev in (("ens1f0", pci), ("eth0", virtio_pci / "virtio2"), ("eth7", plain)):
        (net / name).mkdir(parents=True)
        (net / name / "device").symlink_to(dev)
    (net / "veth0").mkdir()
    proc_root.mkdir()
    (proc_root / "interrupts").write_text(INTERRUPTS)
    for irq in (37, 38, 39, 50, 99, 100, 101, 102, 103):
        d = proc_root / "irq" / str(irq)
        d.mkdir(parents=True)
        (d / "smp_affinity_list").write_text("0-7\n")
    return str(sys_root), str(proc_root)


def test_cpulist_round_trip():
    assert _irq.parse_cpulist("0-2,5,7-8") == [0, 1, 2, 5, 7, 8]
    assert _irq.format_cpulist([8, 7, 5, 2, 1, 0]) == "0-2,5,7-8"
    assert _irq.parse_cpulist([1, "3-4"]) == [1, 3, 4]
    for bad in ("1-", "a", "3-1"):
        with pytest.raises(_irq.IrqError, match="not a CPU list"):
            _irq.parse_cpulist(bad)


def test_queue_irqs_of_multiqueue_nic_skip_misc_vector(tree):
    irqs = _irq.find_queue_irqs("ens1f0", *tree)
    assert [(d["irq"], d["queue"]) for d in irqs] == [(100, 0), (101, 1), (102, 2), (103, 3)]


def test_virtio_vectors_found_on_parent_pci_function(tree):
    irqs = _irq.find_queue_irqs("eth0", *tree)
    assert [(d["irq"], d["name"], d["queue"]) for d in irqs] == [
        (38, "virtio2-input.0", 0), (39, "virtio2-output.0", 0)]


def test_without_msi_names_in_proc_interrupts_are_used(tree):
    assert [d["irq"] for d in _irq.find_queue_irqs("eth7", *tree)] == [50]


def test_no_irqs_and_missing_interface_are_named(tree):
    with pytest.raises(_irq.IrqError, match="interface 'veth0' has no queue IRQs"):
        _irq.find_queue_irqs("veth0", *tree)
    with pytest.raises(_irq.IrqError, match="interface 'nope0' does not exist"):
        _irq.find_queue_irqs("nope0", *tree)


def test_sequential_from_start_cpu_wraps(tree):
    irqs = _irq.find_queue_irqs("ens1f0", *tree)
    online = _irq.online_cpus(tree[0])
    assert _irq.plan_affinity("ens1f0", irqs, "sequential", online, start_cpu=6) == {
        100: [6], 101: [7], 102: [0], 103: [1]}
    assert _irq.plan_affinity("ens1f0", irqs, "sequential", online, start_cpu=2, cpus=[2, 3]) == {
        100: [2], 101: [3], 102: [2], 103: [3]}


def test_queue_pair_vectors_share_a_cpu(tree):
    irqs = _irq.find_queue_irqs("eth0", *tree)
    assert _irq.plan_affinity("eth0", irqs, "sequential", [0, 1], start_cpu=1) == {38: [1], 39: [1]}


def test_numa_strategy_uses_device_node(tree):
    irqs = _irq.find_queue_irqs("ens1f0", *tree)
    node, cpus = _irq.numa_cpus("ens1f0", tree[0])
    assert (node, cpus) == (1, [4, 5, 6, 7])
    plan = _irq.plan_affinity("ens1f0", irqs, "numa", _irq.online_cpus(tree[0]), start_cpu=0, node_cpus=cpus)
    assert plan == {100: [4], 101: [5], 102: [6], 103: [7]}
    with pytest.raises(_irq.IrqError, match="none of CPUs 0-1 is on the device's NUMA node"):
        _irq.plan_affinity("ens1f0", irqs, "numa", list(range(8)), cpus=[0, 1], node_cpus=cpus)


def test_numa_unknown_node_falls_back_to_all_online(tree):
    assert _irq.numa_cpus("eth7", tree[0]) == (None, None)


def test_explicit_map_by_queue_and_name(tree):
    irqs = _irq.find_queue_irqs("ens1f0", *tree)
    plan = _irq.plan_affinity("ens1f0", irqs, "explicit", list(range(8)),
                              explicit={0: 2, "1": "3", "ens1f0-TxRx-3": "4-5"})
    assert plan == {100: [2], 101: [3], 103: [4, 5]}
    with pytest.raises(_irq.IrqError, match="map key 9 names no queue IRQ"):
        _irq.plan_affinity("ens1f0", irqs, "explicit", list(range(8)), explicit={9: 1})
    with pytest.raises(_irq.IrqError, match="CPU\\(s\\) 12 are not online"):
        _irq.plan_affinity("ens1f0", irqs, "explicit", list(range(8)), explicit={0: 12})


def test_offline_cpus_refused(tree):
    irqs = _irq.find_queue_irqs("ens1f0", *tree)
    with pytest.raises(_irq.IrqError, match="start_cpu 9 is not online"):
        _irq.plan_affinity("ens1f0", irqs, "sequential", list(range(8)), start_cpu=9)
    with pytest.raises(_irq.IrqError, match="CPU\\(s\\) 8-9 are not online"):
        _irq.plan_affinity("ens1f0", irqs, "sequential", list(range(8)), cpus=[7, 8, 9])


def test_write_then_read_back(tree):
    _irq.write_affinity(101, [5], tree[1])
    assert _irq.read_affinity(101, tree[1]) == [5]
    state = _irq.read_irq_state("ens1f0", *tree)
    assert state == {"100": "0-7", "101": "5", "102": "0-7", "103": "0-7"}
    with pytest.raises(_irq.IrqError, match="IRQ 4242: cannot read"):
        _irq.read_affinity(4242, tree[1])


def test_explicit_queue_key_pins_every_vector_of_that_queue():
    # igb with one channel: separate rx and tx vectors for queue 0 (found on the lab's igb, where
    # only one of them was pinned).
    irqs = [{"irq": 38, "name": "igb0-rx-0", "queue": 0}, {"irq": 39, "name": "igb0-tx-0", "queue": 0},
            {"irq": 40, "name": "igb0-rx-1", "queue": 1}]
    assert _irq.plan_affinity("igb0", irqs, "explicit", [0, 1], explicit={0: "1"}) == {38: [1], 39: [1]}
    assert _irq.plan_affinity("igb0", irqs, "explicit", [0, 1], explicit={"igb0-tx-0": 0}) == {39: [0]}
    with pytest.raises(_irq.IrqError, match=r"map key 7 names no queue IRQ \(queues: 0, 1;"):
        _irq.plan_affinity("igb0", irqs, "explicit", [0, 1], explicit={7: "1"})


def test_daemons_are_found_by_their_comm(tmp_path):
    # A fake /proc: irqbalance twice, ovs-vswitchd, a comm that only starts like it, a pid without comm.
    for pid, comm in {"40": "irqbalance\n", "7": "irqbalance\n", "9": "ovs-vswitchd\n", "11": "irqbalancer\n"}.items():
        (tmp_path / pid).mkdir()
        (tmp_path / pid / "comm").write_text(comm)
    (tmp_path / "12").mkdir()
    (tmp_path / "self").mkdir()
    assert _irq.irqbalance_pids(str(tmp_path)) == [7, 40]
    from ansible_collections.xdplab.testbed.plugins.module_utils.common import _process_identity
    assert _process_identity.pids_by_comm("ovs-vswitchd", str(tmp_path)) == [9]
    assert _process_identity.pids_by_comm("sshd", str(tmp_path)) == []
