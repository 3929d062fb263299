#!/usr/bin/python
# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: host_tuning
short_description: Host knobs for packet-rate benchmarks (tuned, governor, turbo, C-states, SMT, netfilter), reversibly
version_added: "0.1.0"
description:
  - Sets what no well-kept module covers, after saving the previous values to a snapshot file;
    I(state=restored) puts them back and removes the snapshot. Sysctls are set by ansible.posix.sysctl;
    this module only records their previous values (I(sysctl_snapshot)) and hands them back on restore
    in RV(sysctl_restore).
  - A knob the host does not have (no cpufreq, no SMT control, no loadable modules, no tuned-adm, no grub
    file) fails naming it, unless I(on_unsupported) says C(warn) or C(skip). Nothing is applied when any
    requested knob fails validation.
  - Disruptive changes need opt-ins; SMT off needs I(allow_smt_change), unloading netfilter needs
    I(allow_netfilter_unload). A kernel command line change only edits the bootloader config and reports
    RV(reboot_required); rebooting is the caller's (gated) decision.
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
  state:
    description: C(present) applies, C(restored) puts the snapshot back, C(read) only reads.
    type: str
    choices: [present, restored, read]
    default: present
  tuned_profile:
    description: tuned profile to activate with C(tuned-adm profile).
    type: str
  governor:
    description: cpufreq scaling governor for every CPU.
    type: str
  turbo:
    description: Turbo/boost on or off (intel_pstate C(no_turbo) or cpufreq C(boost)).
    type: bool
  cpu_dma_latency:
    description:
      - Hold C(/dev/cpu_dma_latency) at this many microseconds (0 keeps CPUs out of deep C-states) with a
        background holder process until restored.
    type: int
  smt:
    description: SMT control (C(/sys/devices/system/cpu/smt/control)).
    type: str
    choices: ['on', 'off', forceoff]
  allow_smt_change:
    description: Opt-in for turning SMT off (takes sibling CPUs offline).
    type: bool
    default: false
  netfilter_unload:
    description: Unload the loaded iptable_*, ip6table_*, nf_conntrack*, nft_* (and helper) modules, users first.
    type: bool
    default: false
  allow_netfilter_unload:
    description: Opt-in for I(netfilter_unload).
    type: bool
    default: false
  kernel_cmdline:
    description:
      - Kernel parameters to set in C(GRUB_CMDLINE_LINUX), for example C(isolcpus) and C(nohz_full);
        a value of C(null) or C(false) removes the parameter, C(true) sets it without a value.
      - "The line edited is the one the effective value comes from, read as C(grub-mkconfig) reads it:
        I(grub_file), then the C(*.cfg) files of I(grub_file)C(.d), the last assignment winning. A last
        assignment that is not plain (inside C(if), C(case) or a loop, after C(&&), referring to other
        variables, C(unset)) is refused naming file, line and form; so is a parameter that
        C(GRUB_CMDLINE_LINUX_DEFAULT) also names, and a new value for a parameter given several times.
        Restore puts the line back byte for byte."
    type: dict
  grub_file:
    description: The bootloader defaults file; its C(.d/*.cfg) files are read (and edited) too.
    type: path
    default: /etc/default/grub
  sysctl_snapshot:
    description: Sysctl names whose current values are recorded before ansible.posix.sysctl changes them.
    type: list
    elements: str
  on_unsupported:
    description: What to do with a knob the host lacks.
    type: str
    choices: [fail, warn, skip]
    default: fail
  snapshot_key:
    description: Snapshot file name. Default C(host-<netns>-knobs).
    type: str
  state_dir:
    description: Directory of the snapshot files (the C-state holder's pid file lives there too).
    type: path
    default: /var/lib/xdplab/tuning
"""

EXAMPLES = r"""
- name: Latency host setup
  xdplab.testbed.host_tuning:
    tuned_profile: latency-performance
    governor: performance
    cpu_dma_latency: 0
    netfilter_unload: true
    allow_netfilter_unload: true

- name: Isolate CPUs 2-3 (takes effect after a reboot)
  xdplab.testbed.host_tuning:
    kernel_cmdline: {isolcpus: "2-3", nohz_full: "2-3"}
  register: cmdline

- name: Put everything back
  xdplab.testbed.host_tuning:
    state: restored
"""

RETURN = r"""
changes:
  description: Knob to {before, after} for what changed (or would change in check mode).
  returned: always
  type: dict
  sample: {"governor": {"before": "powersave", "after": "performance"}}
facts:
  description: Read-back after the call (tuned_profile, governor, turbo, smt, cpu_dma_latency, netfilter_modules);
    knobs the host lacks are absent.
  returned: always
  type: dict
  sample: {"smt": "on", "cpu_dma_latency": 2000000000}
skipped_settings:
  description: Unsupported knobs skipped under I(on_unsupported=warn) or C(skip).
  returned: always
  type: list
  elements: str
  sample: ["governor: this host has no cpufreq scaling_governor"]
reboot_required:
  description: The kernel command line in the bootloader config changed.
  returned: always
  type: bool
  sample: false
sysctl_restore:
  description:
    - On restore, the recorded sysctl values that do not read back equal yet (name to value). The caller
      writes them (ansible.posix.sysctl) and calls O(state=restored) again, which then finds them equal
      and removes the snapshot.
  returned: always
  type: dict
  sample: {"net.core.netdev_budget": "300"}
snapshot_kept:
  description:
    - On restore, the snapshot was kept because something does not read back equal to it yet (RV(differs),
      or sysctls still to write). The snapshot is removed only when everything reads back equal.
  returned: always
  type: bool
  sample: false
differs:
  description: On restore, the knobs that still read back different from the snapshot after writing them.
  returned: always
  type: list
  elements: str
  sample: []
snapshot_path:
  description: Snapshot file.
  returned: always
  type: str
  sample: /var/lib/xdplab/tuning/host-host-knobs.json
"""

import os  # noqa: E402
import traceback  # noqa: E402
from typing import Any  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _command  # noqa: E402
from ansible_collections.xdplab.testbed.plugins.module_utils.state import _ledger  # noqa: E402
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _host_knobs as th  # noqa: E402
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _plan_and_snapshots as _tuning  # noqa: E402
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _restore  # noqa: E402


def make_host(module: AnsibleModule) -> _restore.HostWriter:
    return _restore.HostWriter(module, module.params["state_dir"], module.params["grub_file"])


def _unsupported_reason(p: dict[str, Any], knob: str, cur: dict[str, Any], mods: Any,
                        host: _restore.HostWriter) -> str | None:
    value = p[knob]
    if knob == "governor":
        if "governor" not in cur:
            return "this host has no cpufreq scaling_governor"
        avail = th.available_governors()
        if avail and value not in avail:
            return f"governor {value!r} is not available (available: {', '.join(avail)})"
    if knob == "turbo" and "turbo" not in cur:
        return "this host has no intel_pstate/no_turbo or cpufreq/boost switch"
    if knob == "smt" and th.read_smt() is None:
        return "this kernel/CPU has no SMT control (smt/control is notsupported or absent)"
    if knob == "cpu_dma_latency" and not os.path.exists("/dev/cpu_dma_latency"):
        return "/dev/cpu_dma_latency does not exist"
    if knob == "tuned_profile":
        exe = host.m.get_bin_path("tuned-adm")
        if not exe:
            return "tuned-adm is not installed (Debian package tuned)"
        _rc, out, err = _command.run(host.m, [exe, "active"], ok=None)
        if "Cannot talk to TuneD daemon" in out + err:
            # Without the daemon, `tuned-adm profile` only records the name and applies nothing.
            return "the TuneD daemon is not running (tuned-adm cannot reach it over D-Bus; start tuned)"
    if knob == "netfilter_unload" and value and mods is None:
        return "this kernel has no loadable modules (/proc/modules absent)"
    if knob == "kernel_cmdline" and not os.path.exists(p["grub_file"]):
        return f"{p['grub_file']} does not exist (no grub bootloader config)"
    return None


KNOBS = ("tuned_profile", "governor", "turbo", "smt", "cpu_dma_latency", "netfilter_unload", "kernel_cmdline")


def present(module: AnsibleModule, host: _restore.HostWriter, store: _tuning.SnapshotStore, key: str) -> dict[str, Any]:
    p = module.params
    if p["smt"] in ("off", "forceoff") and not p["allow_smt_change"]:
        raise th.HostTuningError(f"smt={p['smt']} takes sibling CPUs offline: set allow_smt_change: true to opt in")
    if p["netfilter_unload"] and not p["allow_netfilter_unload"]:
        raise th.HostTuningError("netfilter_unload removes the firewall modules: set allow_netfilter_unload: true")
    cur = th.read_host()
    mods = th.read_modules()
    changes: dict[str, dict[str, Any]] = {}
    snapshot: dict[str, Any] = {}
    skipped: list[str] = []
    fatal: list[str] = []
    reboot = False
    for knob in KNOBS:
        if p[knob] is None or (knob == "netfilter_unload" and not p[knob]):
            continue
        reason = _unsupported_reason(p, knob, cur, mods, host)
        if reason:
            (fatal if p["on_unsupported"] == "fail" else skipped).append(f"{knob}: {reason}")
            continue
        if knob == "netfilter_unload":
            order = th.netfilter_unload_order(mods or {})
            if order:
                changes[knob] = {"before": order, "after": []}
                snapshot["netfilter_modules"] = order
        elif knob == "kernel_cmdline":
            # where the effective value comes from: grub_file or grub_file.d/*.cfg, as grub-mkconfig reads them
            edit = th.edit_grub_sources(th.read_grub_sources(p["grub_file"]), p["kernel_cmdline"], p["grub_file"])
            if edit.old != edit.new:
                changes[knob] = {"before": edit.old, "after": edit.new, "file": edit.path, "_text": edit.text,
                                 "_path": edit.path, "_restore": edit.saved}
                snapshot["kernel_cmdline"] = edit.saved  # the original line, restored byte for byte
                reboot = True
        elif knob == "cpu_dma_latency":
            holder = th.holder_pid(host.pidfile)
            if holder is None or cur.get("cpu_dma_latency") != p[knob]:
                changes[knob] = {"before": cur.get("cpu_dma_latency"), "after": p[knob]}
                snapshot["cpu_dma_latency"] = None
        elif cur.get(knob) != p[knob]:
            changes[knob] = {"before": cur.get(knob), "after": p[knob]}
            snapshot[knob] = cur.get(knob)
    for name in p["sysctl_snapshot"] or []:
        value = th.read_sysctl(name)
        if value is None:
            (fatal if p["on_unsupported"] == "fail" else skipped).append(f"sysctl {name}: no such sysctl")
        else:
            snapshot[f"sysctl:{name}"] = value
    if fatal:
        module.fail_json(msg="; ".join(fatal), unsupported=fatal, snapshot_path=store.path(key))
    for msg in skipped:
        if p["on_unsupported"] == "warn":
            module.warn(msg)
    result: dict[str, Any] = {"changed": bool(changes), "skipped_settings": skipped, "reboot_required": reboot}
    if not module.check_mode:
        if snapshot:
            _ledger.record_tuning(p["ledger_dir"], store.path(key), _tuning.current_netns(), p["run_id"],
                                  "host", "knobs", grub_file=p["grub_file"])  # before acting
            written, _dummy = store.save(key, "host", "knobs", snapshot, module.atomic_move)
            result["changed"] = result["changed"] or written
        _apply(host, changes)
    result["changes"] = {k: {kk: vv for kk, vv in v.items() if not kk.startswith("_")} for k, v in changes.items()}
    return result


def _apply(host: _restore.HostWriter, changes: dict[str, dict[str, Any]]) -> None:
    done: list[str] = []
    try:
        for knob, ch in changes.items():
            if knob == "netfilter_unload":
                host.unload_modules(ch["before"])
            elif knob == "kernel_cmdline":
                host.write_grub(ch["_text"], ch["_path"])
            else:
                getattr(host, f"set_{knob}")(ch["after"])
            done.append(knob)
    except Exception as exc:
        for knob in reversed(done):
            try:
                _restore.restore_knob(host, knob, changes[knob].get("_restore", changes[knob]["before"]))
            except Exception:  # noqa: BLE001,S110 - best effort, the original error is raised
                pass
        note = f" (rolled back: {', '.join(done) or 'nothing applied'})"
        if isinstance(exc, _restore.CommandError):
            raise _restore.CommandError(str(exc) + note, exc.rc, exc.stdout, exc.stderr) from exc
        raise RuntimeError(f"{exc}{note}") from exc


def restored(module: AnsibleModule, host: _restore.HostWriter, store: _tuning.SnapshotStore,
             key: str) -> dict[str, Any]:
    """The shared restore (module_utils.tuning._restore.restore_host); sysctls are handed back in
    RV(sysctl_restore) for ansible.posix.sysctl. The ledger entry goes with the snapshot."""
    result = _restore.restore_host(module, host, store, key, check_mode=module.check_mode)
    if not module.check_mode and not store.exists(key):
        _ledger.forget_tuning(module.params["ledger_dir"], store.path(key), _tuning.current_netns())
    return result


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["present", "restored", "read"], default="present"),
            tuned_profile=dict(type="str"),
            governor=dict(type="str"),
            turbo=dict(type="bool"),
            cpu_dma_latency=dict(type="int"),
            smt=dict(type="str", choices=["on", "off", "forceoff"]),
            allow_smt_change=dict(type="bool", default=False),
            netfilter_unload=dict(type="bool", default=False),
            allow_netfilter_unload=dict(type="bool", default=False),
            kernel_cmdline=dict(type="dict"),
            grub_file=dict(type="path", default="/etc/default/grub"),
            sysctl_snapshot=dict(type="list", elements="str"),
            on_unsupported=dict(type="str", choices=list(_tuning.ON_UNSUPPORTED), default="fail"),
            snapshot_key=dict(type="str", no_log=False),
            state_dir=dict(type="path", default=_tuning.DEFAULT_STATE_DIR),
            ledger_dir=dict(type="path", default=_ledger.DEFAULT_DIR),
            run_id=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    store = _tuning.SnapshotStore(p["state_dir"])
    try:
        key = p["snapshot_key"] or _tuning.default_key("host", "knobs")
        host = make_host(module)
        if p["state"] == "present":
            result = present(module, host, store, key)
        elif p["state"] == "restored":
            result = restored(module, host, store, key)
        else:
            result = {"changed": False, "changes": {}, "skipped_settings": [], "reboot_required": False}
        result.setdefault("sysctl_restore", {})
        result["snapshot_path"] = store.path(key)
        result["facts"] = th.read_host()
        if module._diff:
            result["diff"] = {"before": {k: v["before"] for k, v in result["changes"].items()},
                              "after": {k: v["after"] for k, v in result["changes"].items()}}
        module.exit_json(**result)
    except (th.HostTuningError, _tuning.TuningInputError) as exc:
        module.fail_json(msg=str(exc))
    except _ledger.LedgerError as exc:
        module.fail_json(msg=f"ledger: {exc}")
    except _restore.CommandError as exc:
        module.fail_json(**exc.fail_kwargs())
    except Exception as exc:  # noqa: BLE001 - one top-level handler
        module.fail_json(msg=str(exc), exception=traceback.format_exc())


if __name__ == "__main__":
    main()
