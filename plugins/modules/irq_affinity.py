#!/usr/bin/python
# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: irq_affinity
short_description: Pin the queue IRQs of an interface to CPUs, reversibly
version_added: "0.1.0"
description:
  - Finds the interface's queue IRQs (MSI vectors in sysfs C(msi_irqs) minus control vectors, named from
    C(/proc/interrupts); without MSI, the C(/proc/interrupts) lines naming the interface) and writes
    C(/proc/irq/N/smp_affinity_list) by strategy.
  - Snapshots the previous affinities (and whether irqbalance ran) before the first change;
    I(state=restored) writes them back and starts irqbalance again if it had been stopped.
author:
  - xdplab.testbed contributors (!UNKNOWN)
extends_documentation_fragment:
  - xdplab.testbed.attributes
  - xdplab.testbed.tuning_ledger
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
options:
  interface:
    description: Interface name.
    type: str
    required: true
  state:
    description: C(present) pins, C(restored) puts the snapshot back, C(read) only reads the affinities.
    type: str
    choices: [present, restored, read]
    default: present
  strategy:
    description:
      - C(sequential) one queue per CPU from I(start_cpu) over I(cpus) (default all online), wrapping.
      - C(numa) the same over the CPUs of the device's NUMA node (all online CPUs when the node is unknown).
      - C(explicit) uses I(map).
    type: str
    choices: [sequential, numa, explicit]
    default: sequential
  start_cpu:
    description: First CPU of C(sequential) and C(numa).
    type: int
    default: 0
  cpus:
    description: CPUs to use (a list or a CPU list string such as C(2-5,8)).
    type: raw
  map:
    description: For C(explicit), queue index (or IRQ name) to CPU list.
    type: dict
  stop_irqbalance:
    description: Stop irqbalance (systemd) before pinning, so it does not move the IRQs again.
    type: bool
    default: false
  snapshot_key:
    description: Snapshot file name. Default C(irq-<netns>-<interface>).
    type: str
  state_dir:
    description: Directory of the snapshot files.
    type: path
    default: /var/lib/xdplab/tuning
notes:
  - veth and other virtual devices have no queue IRQs; the module fails naming the interface.
"""

EXAMPLES = r"""
- name: One queue per CPU starting at CPU 2
  xdplab.testbed.irq_affinity:
    interface: ens1f0
    strategy: sequential
    start_cpu: 2
    stop_irqbalance: true

- name: Explicit map
  xdplab.testbed.irq_affinity:
    interface: ens1f0
    strategy: explicit
    map: {0: 2, 1: 3, 2: "4-5"}

- name: Put back
  xdplab.testbed.irq_affinity:
    interface: ens1f0
    state: restored
"""

RETURN = r"""
vanished_irqs:
  description: With O(state=restored), IRQs in the snapshot that no longer exist; the snapshot is then kept.
  returned: with state=restored
  type: list
  elements: int
  sample: []
differs:
  description: With O(state=restored), IRQs whose affinity reads back different from the snapshot.
  returned: with state=restored and a snapshot
  type: list
  elements: int
  sample: []
snapshot_kept:
  description: With O(state=restored), the snapshot was kept because something could not be restored exactly.
  returned: with state=restored and a snapshot
  type: bool
  sample: false
interface:
  description: The interface.
  returned: always
  type: str
  sample: ens1f0
irqs:
  description: Queue IRQs found, in queue order.
  returned: success
  type: list
  elements: dict
  sample: [{"irq": 38, "name": "virtio2-input.0", "queue": 0}]
affinity:
  description: Read-back after the call, IRQ number to CPU list (the irq_affinity part of the fingerprint).
  returned: success
  type: dict
  sample: {"38": "1", "39": "1"}
changes:
  description: IRQ number to the new CPU list for each IRQ that changed.
  returned: success
  type: dict
  sample: {"38": "2"}
irqbalance_stopped:
  description: Whether this call stopped irqbalance.
  returned: success
  type: bool
  sample: false
snapshot_path:
  description: Snapshot file.
  returned: always
  type: str
  sample: /var/lib/xdplab/tuning/irq-host-ens1f0.json
"""

import traceback  # noqa: E402
from typing import Any  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.xdplab.testbed.plugins.module_utils.state import _ledger  # noqa: E402
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _irq_strategies as _irq  # noqa: E402
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _plan_and_snapshots as _tuning  # noqa: E402
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _restore  # noqa: E402


def run(module: AnsibleModule) -> dict[str, Any]:
    p = module.params
    ifname = p["interface"]
    store = _tuning.SnapshotStore(p["state_dir"])
    key = p["snapshot_key"] or _tuning.default_key("irq", ifname)
    if p["state"] == "restored":
        result = _restore.restore_irq(module, store, key, ifname, check_mode=module.check_mode)
        if not module.check_mode and result.get("snapshot_kept") is False:
            _ledger.forget_tuning(p["ledger_dir"], store.path(key), _tuning.current_netns())
    else:
        result = {"changed": False, "interface": ifname, "snapshot_path": store.path(key), "changes": {},
                  "irqbalance_stopped": False, "diff": {"before": {}, "after": {}}}
        irqs = _irq.find_queue_irqs(ifname)
        result["irqs"] = irqs
        if p["state"] == "present":
            present(module, store, key, result)
    diff = result.pop("diff")
    if module._diff:
        result["diff"] = diff
    result["affinity"] = _irq.read_irq_state(ifname)
    return result


def present(module: AnsibleModule, store: _tuning.SnapshotStore, key: str, result: dict[str, Any]) -> None:
    p = module.params
    ifname, irqs = p["interface"], result["irqs"]
    current = {d["irq"]: _irq.read_affinity(d["irq"]) for d in irqs}
    irqbalance_running = bool(_irq.irqbalance_pids())
    online = _irq.online_cpus()
    cpus = _irq.parse_cpulist(p["cpus"]) if p["cpus"] is not None else None
    _node, node_cpus = _irq.numa_cpus(ifname) if p["strategy"] == "numa" else (None, None)
    desired = _irq.plan_affinity(ifname, irqs, p["strategy"], online, p["start_cpu"], cpus, node_cpus, p["map"])
    stop = p["stop_irqbalance"] and irqbalance_running
    changes = {irq: cpus for irq, cpus in desired.items() if current.get(irq) != cpus}
    result["changes"] = {str(k): _irq.format_cpulist(v) for k, v in changes.items()}
    result["changed"] = bool(changes) or stop
    result["diff"] = {"before": {str(k): _irq.format_cpulist(current[k]) for k in changes},
                      "after": result["changes"]}
    if module.check_mode or not result["changed"]:
        return
    _ledger.record_tuning(p["ledger_dir"], store.path(key), _tuning.current_netns(), p["run_id"],
                          "irq", ifname)  # before acting
    snap = {"affinity": {str(k): _irq.format_cpulist(v) for k, v in current.items()},
            "names": {str(d["irq"]): d["name"] for d in irqs},
            "irqbalance_running": irqbalance_running}
    store.save(key, "irq", ifname, snap, module.atomic_move)
    if stop:
        _restore.systemctl(module, "stop")
        result["irqbalance_stopped"] = True
    for irq, cpus in changes.items():
        _irq.write_affinity(irq, cpus)


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            interface=dict(type="str", required=True),
            state=dict(type="str", choices=["present", "restored", "read"], default="present"),
            strategy=dict(type="str", choices=list(_irq.STRATEGIES), default="sequential"),
            start_cpu=dict(type="int", default=0),
            cpus=dict(type="raw"),
            map=dict(type="dict"),
            stop_irqbalance=dict(type="bool", default=False),
            snapshot_key=dict(type="str", no_log=False),
            state_dir=dict(type="path", default=_tuning.DEFAULT_STATE_DIR),
            ledger_dir=dict(type="path", default=_ledger.DEFAULT_DIR),
            run_id=dict(type="str"),
        ),
        required_if=[("strategy", "explicit", ("map",))],
        supports_check_mode=True,
    )
    try:
        module.exit_json(**run(module))
    except (_irq.IrqError, _tuning.TuningInputError, _ledger.LedgerError) as exc:
        module.fail_json(msg=str(exc), interface=module.params["interface"])
    except _restore.CommandError as exc:
        module.fail_json(**exc.fail_kwargs())
    except Exception as exc:  # noqa: BLE001 - one top-level handler
        module.fail_json(msg=f"{module.params['interface']}: {exc}", exception=traceback.format_exc())


if __name__ == "__main__":
    main()
