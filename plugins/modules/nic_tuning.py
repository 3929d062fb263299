#!/usr/bin/python
# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nic_tuning
short_description: Tune a network interface through ethtool netlink, reversibly
version_added: "0.1.0"
description:
  - Sets coalescing, ring sizes, channels, pause parameters, features, private flags and the MTU of one
    interface through ethtool generic netlink (pyroute2) and rtnetlink. No ethtool CLI is run.
  - Reads the live state first, validates the whole request against it (names, the device's maxima,
    what the device supports) and changes only what differs. If any requested value is invalid nothing
    is applied; if the kernel rejects a change midway, the groups already applied in this call are put back.
  - With I(state=present) the state of the interface is saved to a snapshot file before the first change.
    A later call never replaces that snapshot until I(state=restored) has put it back and removed it.
  - Works in the current network namespace (use the C(xdplab.testbed.netns) connection for namespaces).
author:
  - xdplab.testbed contributors (!UNKNOWN)
requirements:
  - pyroute2 >= 0.9
  - Linux with CONFIG_ETHTOOL_NETLINK (5.6 or later)
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
    description:
      - C(present) applies the settings (snapshot first).
      - C(restored) puts back the snapshot of this interface and removes it; without a snapshot nothing happens.
    type: str
    choices: [present, restored]
    default: present
  coalesce:
    description:
      - Interrupt coalescing, ethtool C(-C) names with C(_) or C(-), for example C(rx_usecs), C(rx_frames),
        C(tx_usecs), C(tx_frames), C(adaptive_rx), C(adaptive_tx), C(rx_usecs_irq), C(pkt_rate_low),
        C(sample_interval), C(cqe_mode_rx).
    type: dict
  ring:
    description:
      - Ring sizes C(rx), C(rx_mini), C(rx_jumbo), C(tx) (checked against the device maxima; C(max) means the maximum),
        C(rx_buf_len), C(cqe_size), C(tx_push), C(rx_push).
    type: dict
  channels:
    description:
      - Queue counts C(rx), C(tx), C(other), C(combined) (checked against the device maxima; C(max) means the maximum).
    type: dict
  pause:
    description: Ethernet flow control C(autoneg), C(rx), C(tx) (booleans).
    type: dict
  features:
    description:
      - "Offload features as C(name: bool). Short ethtool names (C(gro), C(lro), C(tso), C(gso), C(sg), C(rx), C(tx),
        C(rxvlan), C(txvlan), C(ntuple), C(rxhash), ...) or kernel names (C(rx-gro), C(tx-udp-segmentation), ...)."
      - A short name covering several kernel features (C(tso)) sets those the device can change.
      - An unknown name is always an error; a feature fixed on the device follows I(on_unsupported).
    type: dict
  private_flags:
    description: "Driver private flags as C(name: bool); an unknown name is an error that lists the device's flags."
    type: dict
  mtu:
    description: MTU, checked against the device's minimum and maximum.
    type: int
  on_unsupported:
    description:
      - What to do with a setting the device does not support (group or key missing, feature fixed, or a group
        the driver reads but refuses to set, as virtio_net's coalescing without the device's notification
        coalescing feature).
      - C(fail) fails naming the device and the setting and applies nothing; C(warn) skips it with a warning;
        C(skip) skips it and lists it in RV(skipped_settings).
      - Invalid values (above a maximum, unknown names) always fail.
    type: str
    choices: [fail, warn, skip]
    default: fail
  snapshot:
    description: Save the interface state before the first change (I(state=present)).
    type: bool
    default: true
  snapshot_key:
    description:
      - Snapshot file name (without C(.json)). Default C(nic-<netns>-<interface>),
        C(<netns>) being C(host) outside a named namespace.
    type: str
  state_dir:
    description: Directory of the snapshot files.
    type: path
    default: /var/lib/xdplab/tuning
  on_missing:
    description:
      - I(state=restored) only. What to do when the interface has a snapshot but no longer exists
        (a veth whose peer's namespace was deleted, a removed netdevsim or VF port).
      - C(fail) fails naming the interface and keeps the snapshot, so nothing is forgotten.
      - C(discard) removes the snapshot with a warning and reports RV(interface_missing); use it for
        ports the run itself created, whose settings went with them.
    type: str
    choices: [fail, discard]
    default: fail
notes:
  - veth supports features, channels and MTU; coalesce, ring, pause and private flags are unsupported there.
seealso:
  - module: xdplab.testbed.irq_affinity
  - module: xdplab.testbed.host_tuning
"""

EXAMPLES = r"""
- name: Latency setup of the DUT port
  xdplab.testbed.nic_tuning:
    interface: ens1f0
    coalesce: {rx_usecs: 30, adaptive_rx: false}
    pause: {autoneg: false, rx: false, tx: false}
    features: {gro: false, lro: false, ntuple: true}
    ring: {rx: 4096}

- name: Veth knobs only, skipping what veth lacks
  xdplab.testbed.nic_tuning:
    interface: dut0
    channels: {rx: 2, tx: 2}
    features: {gro: true}
    coalesce: {rx_usecs: 30}
    on_unsupported: skip

- name: Put back what was there
  xdplab.testbed.nic_tuning:
    interface: ens1f0
    state: restored
"""

RETURN = r"""
interface:
  description: The interface.
  returned: always
  type: str
  sample: dut0
changes:
  description: What was (or in check mode would be) changed, per group; features by kernel name.
  returned: always
  type: dict
  sample: {"channels": {"rx": 2}, "features": {"rx-gro": true}}
before:
  description: Previous values of the changed settings.
  returned: always
  type: dict
  sample: {"channels": {"rx": 4}, "features": {"rx-gro": false}}
skipped_settings:
  description: Messages for unsupported settings skipped under I(on_unsupported=warn) or C(skip).
  returned: always
  type: list
  elements: str
  sample: ["dut0: coalesce setting rx_usecs is not supported by the device (Operation not supported)"]
refused_groups:
  description:
    - Groups the driver refused to set although it reads them (skipped under I(on_unsupported=warn) or C(skip)).
  returned: with I(state=present)
  type: list
  elements: str
  sample: ["coalesce"]
mismatched:
  description: Settings whose read-back differs from what was written (driver rounding, dependencies).
  returned: always
  type: dict
  sample: {}
snapshot_path:
  description: Snapshot file of this interface.
  returned: always
  type: str
  sample: /var/lib/xdplab/tuning/nic-dut-dut0.json
snapshot_created:
  description: Whether this call wrote the snapshot (false when one already existed or nothing changed).
  returned: always
  type: bool
  sample: true
snapshot_removed:
  description:
    - Whether a restore removed the snapshot. It is kept when the device reads back different from it
      (RV(mismatched)), so the original is never lost.
  returned: always
  type: bool
  sample: false
interface_missing:
  description:
    - The interface does not exist, nothing was asked and it has no snapshot (a restore or read-back of
      a port deleted under a run), so nothing was done. With a snapshot, a missing interface fails
      unless I(on_missing=discard), which removes the snapshot (RV(snapshot_removed)).
  returned: when the interface is missing
  type: bool
  sample: true
state:
  description:
    - Read-back after the call (verify), the C(ethtool) shape of the environment fingerprint;
      groups the device does not support are absent. C(ring) and C(channels) carry their C(max).
  returned: always
  type: dict
  sample: {"channels": {"rx": 2, "tx": 2, "max": {"rx": 4, "tx": 4}}, "features": {"rx-gro": true}, "mtu": 1500}
unsupported_groups:
  description: Groups the device rejected on read, with the kernel's reason.
  returned: always
  type: dict
  sample: {"coalesce": "Operation not supported", "pause": "Operation not supported"}
"""

import traceback  # noqa: E402
from typing import Any  # noqa: E402

from ansible.module_utils.basic import AnsibleModule, missing_required_lib  # noqa: E402
from ansible_collections.xdplab.testbed.plugins.module_utils.state import _ledger  # noqa: E402
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _ethtool_netlink as _ethtool  # noqa: E402
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _plan_and_snapshots as _tuning  # noqa: E402
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _restore  # noqa: E402


def run(module: AnsibleModule) -> dict[str, Any]:
    p = module.params
    ifname = p["interface"]
    store = _tuning.SnapshotStore(p["state_dir"])
    key = p["snapshot_key"] or _tuning.default_key("nic", ifname)
    if p["state"] == "restored":
        result = _restore.restore_nic(module, store, key, ifname, on_missing=p["on_missing"],
                                      check_mode=module.check_mode)
        if result["snapshot_removed"]:
            _ledger.forget_tuning(p["ledger_dir"], store.path(key), _tuning.current_netns())
        diff = result.pop("diff", None)
        if module._diff and diff is not None:
            result["diff"] = diff
        return result

    result: dict[str, Any] = {
        "changed": False, "interface": ifname, "changes": {}, "before": {}, "skipped_settings": [],
        "refused_groups": [], "mismatched": {},
        "snapshot_path": store.path(key), "snapshot_created": False, "snapshot_removed": False,
    }
    desired = _tuning.normalize_request(p)
    if not desired and store.load(key) is None and _ethtool.read_link(ifname) is None:
        # Nothing asked, nothing snapshotted, and the port is gone (its namespace or veth peer was
        # deleted under a run): nothing to read back.
        module.warn(f"interface {ifname!r} does not exist and has no snapshot: nothing to restore")
        return dict(result, interface_missing=True, state={}, unsupported_groups={})

    with _ethtool.EthtoolNetlink() as eth:
        raw, unsupported_groups, link = _restore.read_nic(eth, ifname)
        plan = _tuning.plan_nic(ifname, raw, unsupported_groups, desired, link)
        if plan.errors:
            module.fail_json(msg="; ".join(plan.errors), errors=plan.errors, **result)
        fatal, soft = _tuning.split_unsupported(plan, p["on_unsupported"])
        if fatal:
            module.fail_json(msg="; ".join(fatal), unsupported=fatal, **result)
        for msg in soft:
            if p["on_unsupported"] == "warn":
                module.warn(msg)
        result["skipped_settings"] = soft
        result.update(changes=plan.changes, before=plan.before, changed=plan.changed)

        if not module.check_mode and plan.changed:
            if p["snapshot"]:
                _ledger.record_tuning(p["ledger_dir"], store.path(key), _tuning.current_netns(), p["run_id"],
                                      "nic", ifname)  # before acting
                written, _doc = store.save(key, "nic", ifname, _tuning.snapshot_from_raw(raw, link),
                                           module.atomic_move)
                result["snapshot_created"] = written
            refused: list[tuple[str, str]] = []
            _restore.apply_nic_all_or_nothing(eth, ifname, plan,
                                              refused=None if p["on_unsupported"] == "fail" else refused)
            for group, msg in refused:  # read but not settable: unsupported, under on_unsupported
                if p["on_unsupported"] == "warn":
                    module.warn(msg)
                plan.changes.pop(group, None)
                plan.before.pop(group, None)
            result["skipped_settings"] = soft + [msg for _group, msg in refused]
            result["refused_groups"] = [group for group, _msg in refused]
            result.update(changes=plan.changes, before=plan.before, changed=plan.changed)
            raw, unsupported_groups, link = _restore.read_nic(eth, ifname)
            result["mismatched"] = _restore.nic_mismatches(plan, raw, link)
            for group, keys in result["mismatched"].items():
                module.warn(f"{ifname}: {group} read back differs from what was written: {keys}")

    raw["mtu"] = link["mtu"]
    result["state"] = _ethtool.public_view(raw)
    result["unsupported_groups"] = unsupported_groups
    if module._diff:
        result["diff"] = {"before": plan.before, "after": plan.changes}
    return result


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            interface=dict(type="str", required=True),
            state=dict(type="str", choices=["present", "restored"], default="present"),
            coalesce=dict(type="dict"),
            ring=dict(type="dict"),
            channels=dict(type="dict"),
            pause=dict(type="dict"),
            features=dict(type="dict"),
            private_flags=dict(type="dict"),
            mtu=dict(type="int"),
            on_unsupported=dict(type="str", choices=list(_tuning.ON_UNSUPPORTED), default="fail"),
            snapshot=dict(type="bool", default=True),
            snapshot_key=dict(type="str", no_log=False),
            state_dir=dict(type="path", default=_tuning.DEFAULT_STATE_DIR),
            ledger_dir=dict(type="path", default=_ledger.DEFAULT_DIR),
            run_id=dict(type="str"),
            on_missing=dict(type="str", choices=["fail", "discard"], default="fail"),
        ),
        supports_check_mode=True,
    )
    if not _ethtool.HAS_PYROUTE2:
        module.fail_json(msg=missing_required_lib("pyroute2"), exception=_ethtool.PYROUTE2_IMPORT_ERROR)
    if module.params["state"] == "restored":
        given = [k for k in ("coalesce", "ring", "channels", "pause", "features", "private_flags", "mtu")
                 if module.params[k] is not None]
        if given:
            module.fail_json(msg=f"state=restored takes no settings, got {', '.join(given)}")
    try:
        module.exit_json(**run(module))
    except _restore.RestoreError as exc:
        module.fail_json(msg=str(exc), **exc.result)
    except (_tuning.TuningInputError, _ledger.LedgerError) as exc:
        module.fail_json(msg=str(exc), interface=module.params["interface"])
    except _ethtool.EthtoolError as exc:
        module.fail_json(msg=str(exc), interface=exc.ifname, errno=exc.code, exception=traceback.format_exc())
    except Exception as exc:  # noqa: BLE001 - one top-level handler, as the collection's modules do
        module.fail_json(msg=f"{module.params['interface']}: {exc}", exception=traceback.format_exc())


if __name__ == "__main__":
    main()
