# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Writing tuning back from its snapshots (private to xdplab.testbed).

This module is private to the xdplab.testbed collection: its API may change
without notice.

The one restore of each snapshot kind - ``nic`` (ethtool netlink + MTU), ``irq`` (queue IRQ
affinity, irqbalance), ``host`` (tuned profile, governor, turbo, SMT, C-state holder, netfilter
modules, kernel command line, sysctls) - used by the modules' ``state=restored`` and by the
ledger's ``state=cleaned``. Each restore writes the snapshot back in the order its kind needs (the
tuned profile before the knobs it rewrites; MTU and queue counts before the rest), reads it back,
and removes the snapshot only when everything reads back equal; otherwise the snapshot stays and the
result names what differs.

``runner`` is anything with AnsibleModule's ``run_command``, ``get_bin_path``, ``warn`` and
``atomic_move``: the calling module itself.
"""

from __future__ import annotations

import os
from typing import Any, Protocol

from ansible_collections.xdplab.testbed.plugins.module_utils.common import _command, _validate
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _ethtool_netlink as _ethtool
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _host_knobs as th
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _irq_strategies as _irq
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _plan_and_snapshots as _tuning

# Snapshot kinds in the order a teardown restores them: host knobs and sysctls (a tuned profile may
# move IRQs and NIC settings), then IRQ affinity, then the NIC.
KIND_ORDER = ("host", "irq", "nic")


class Runner(Protocol):
    def run_command(self, args: list[str], **kwargs: Any) -> tuple[int, str, str]: ...
    def get_bin_path(self, arg: str, required: bool = False) -> str | None: ...
    def warn(self, warning: str) -> None: ...
    def atomic_move(self, src: str, dest: str) -> None: ...


# A tool failed; raised (not fail_json) so a caller can roll back or go on first.
CommandError = _command.CommandError


class RestoreError(RuntimeError):
    """A restore that cannot be done; the snapshot is kept. ``result`` holds what is known so far."""

    def __init__(self, msg: str, result: dict[str, Any]) -> None:
        super().__init__(msg)
        self.result = result


def split_state_file(state_file: str) -> tuple[_tuning.SnapshotStore, str]:
    """(store, key) of a snapshot file path (<state_dir>/<key>.json)."""
    directory, name = os.path.split(state_file)
    if not name.endswith(".json"):
        raise _tuning.TuningInputError(f"{state_file} is not a snapshot file (<state_dir>/<key>.json)")
    return _tuning.SnapshotStore(directory), _tuning.safe_key(name[:-len(".json")])


# -- NIC -------------------------------------------------------------------------------------------

def apply_nic(eth: Any, ifname: str, changes: dict[str, dict[str, Any]], netns: str | None = None) -> None:
    for group in _tuning.apply_order(changes):
        values = changes[group]
        if group == "mtu":
            _ethtool.set_mtu(ifname, values["mtu"], netns)
        elif group == "features":
            eth.set_features(ifname, values)
        elif group == "private_flags":
            eth.set_private_flags(ifname, values)
        else:
            eth.set(group, ifname, values)


def apply_nic_all_or_nothing(eth: Any, ifname: str, plan: _tuning.NicPlan, netns: str | None = None,
                             refused: list[tuple[str, str]] | None = None) -> None:
    """Apply group by group; on a kernel error put back the groups already applied, then re-raise.

    With ``refused`` (a list), a group the driver refuses to set although it reads it (EOPNOTSUPP:
    virtio_net reads coalescing but sets it only when the device offers notification coalescing) is
    left as it is and named there ((group, message)), and the other groups go on.

    After a group that resets the device, a link that had carrier is waited for before the next
    group (_tuning.wait_for_carrier: a later link-up may resolve flow control again). Only in this
    process's own namespace, whose /sys shows the device."""
    done: list[str] = []
    had_carrier = netns is None and _tuning.wait_for_carrier(ifname, timeout=0)
    try:
        for group in _tuning.apply_order(plan.changes):
            try:
                apply_nic(eth, ifname, {group: plan.changes[group]}, netns)
            except _ethtool.EthtoolError as exc:
                if refused is None or not exc.unsupported:
                    raise
                refused.append((group, f"{ifname}: the driver refuses to set {group} ({exc}); left as it is"))
                continue
            done.append(group)
            if had_carrier and group in _tuning.RESETTING_GROUPS and not _tuning.wait_for_carrier(ifname):
                raise RuntimeError(f"{ifname}: the link did not come back within 15 s after the {group} change")
    except Exception as exc:
        rollback_errors = []
        for group in reversed(done):
            try:
                apply_nic(eth, ifname, {group: plan.before[group]}, netns)
            except Exception as rb_exc:  # noqa: BLE001 - reported, original error re-raised
                rollback_errors.append(f"{group}: {rb_exc}")
        note = f"; rollback failed for {'; '.join(rollback_errors)}" if rollback_errors else (
            f"; rolled back {', '.join(done)}" if done else "; nothing had been applied")
        raise RuntimeError(f"{exc}{note}") from exc


def read_nic(eth: Any, ifname: str, netns: str | None = None) -> tuple[dict[str, Any], dict[str, str], dict[str, int]]:
    link = _ethtool.read_link(ifname, netns)
    if link is None:
        raise _tuning.TuningInputError(f"interface {ifname!r} does not exist")
    raw, unsupported = _ethtool.read_nic_raw(eth, ifname)
    return raw, unsupported, link


def nic_mismatches(plan: _tuning.NicPlan, raw: dict[str, Any], link: dict[str, int]) -> dict[str, Any]:
    """Planned settings whose read-back differs from what was written."""
    out: dict[str, Any] = {}
    for group, values in plan.changes.items():
        for key, want in values.items():
            if group == "mtu":
                got = link["mtu"]
            elif group == "features":
                got = raw.get("features", {}).get("wanted", {}).get(key)
            else:
                got = raw.get(group, {}).get(key)
            if got != want:
                out.setdefault(group, {})[key] = {"wanted": want, "read_back": got}
    return out


def restore_nic(runner: Runner, store: _tuning.SnapshotStore, key: str, ifname: str, netns: str | None = None,
                on_missing: str = "fail", check_mode: bool = False) -> dict[str, Any]:
    """Put the NIC snapshot back, read it back, remove the snapshot only when it reads back equal.

    A missing interface with a snapshot raises RestoreError (snapshot kept) unless ``on_missing`` is
    ``discard`` (a port the run created, whose settings went with it). Without a snapshot the
    interface is only read back."""
    result: dict[str, Any] = {
        "changed": False, "interface": ifname, "changes": {}, "before": {}, "skipped_settings": [], "mismatched": {},
        "snapshot_path": store.path(key), "snapshot_created": False, "snapshot_removed": False,
    }
    doc = store.load(key)
    if _ethtool.read_link(ifname, netns) is None:
        if doc is None:
            runner.warn(f"interface {ifname!r} does not exist and has no snapshot: nothing to restore")
            return dict(result, interface_missing=True, state={}, unsupported_groups={})
        if on_missing != "discard":
            raise RestoreError(f"interface {ifname!r} does not exist: its snapshot {store.path(key)} cannot be "
                               "restored and is kept (on_missing=discard drops it)", result)
        runner.warn(f"interface {ifname!r} no longer exists: its settings went with it, snapshot "
                    f"{store.path(key)} discarded")
        removed = False if check_mode else store.remove(key)
        return dict(result, changed=True, interface_missing=True, snapshot_removed=removed,
                    state={}, unsupported_groups={})
    desired = doc["state"] if doc else {}
    with _ethtool.EthtoolNetlink(netns) as eth:
        raw, unsupported_groups, link = read_nic(eth, ifname, netns)
        plan = _tuning.plan_nic(ifname, raw, unsupported_groups, desired, link)
        if plan.errors:
            raise RestoreError("; ".join(plan.errors), dict(result, errors=plan.errors))
        _fatal, soft = _tuning.split_unsupported(plan, "warn")
        for msg in soft:
            runner.warn(msg)
        result.update(skipped_settings=soft, changes=plan.changes, before=plan.before, changed=plan.changed)
        if doc is not None:
            result["changed"] = True
        if not check_mode:
            if plan.changed:
                apply_nic_all_or_nothing(eth, ifname, plan, netns)
                raw, unsupported_groups, link = read_nic(eth, ifname, netns)
                result["mismatched"] = nic_mismatches(plan, raw, link)
            if doc is not None:
                # The snapshot is the only record of the original: dropped only once the device reads
                # back equal to it; otherwise kept (and named) for another restore or a human.
                if result["mismatched"]:
                    runner.warn(f"{ifname}: read back differs from the snapshot ({result['mismatched']}); "
                                f"{store.path(key)} kept")
                else:
                    result["snapshot_removed"] = store.remove(key)
    raw["mtu"] = link["mtu"]
    result["state"] = _ethtool.public_view(raw)
    result["unsupported_groups"] = unsupported_groups
    result["diff"] = {"before": plan.before, "after": plan.changes}
    return result


# -- IRQ affinity ----------------------------------------------------------------------------------

def systemctl(runner: Runner, action: str, unit: str = "irqbalance") -> None:
    if not os.path.isdir("/run/systemd/system"):
        raise CommandError(f"{unit} is running but systemd is not: cannot {action} it (do it by hand)", 1, "", "")
    exe = runner.get_bin_path("systemctl", required=True)
    _command.run(runner, [exe, action, unit], what=f"systemctl {action} {unit}")


def restore_irq(runner: Runner, store: _tuning.SnapshotStore, key: str, ifname: str,
                check_mode: bool = False, by_saved_names: bool = False) -> dict[str, Any]:
    """Write the saved affinity of the interface's queue IRQs back and start irqbalance again if it had
    been running. IRQs of the snapshot that are no longer the interface's (a driver reload renumbered
    them) are named in ``vanished_irqs``; with those, or with a read-back that differs (``differs``),
    the snapshot is kept (``snapshot_kept``).

    ``by_saved_names`` finds the IRQs without /sys/class/net, for an interface in another network
    namespace than this process: an IRQ of the snapshot is still the interface's when /proc/interrupts
    (the host's, from any namespace) still gives it the name the snapshot saved."""
    result: dict[str, Any] = {"changed": False, "interface": ifname, "snapshot_path": store.path(key),
                              "changes": {}, "irqbalance_stopped": False}
    doc = store.load(key)
    if by_saved_names:
        saved_names = (doc or {}).get("state", {}).get("names") or {}
        live = _irq.irq_names()
        irqs = [{"irq": int(k), "name": name, "queue": None} for k, name in sorted(saved_names.items())
                if live.get(int(k)) == name]
    else:
        irqs = _irq.find_queue_irqs(ifname)
    result["irqs"] = irqs
    current = {d["irq"]: _irq.read_affinity(d["irq"]) for d in irqs}
    irqbalance_running = bool(_irq.irqbalance_pids())
    saved = {int(k): _irq.parse_cpulist(v) for k, v in (doc["state"]["affinity"] if doc else {}).items()}
    desired = {k: v for k, v in saved.items() if k in current}
    result["vanished_irqs"] = sorted(k for k in saved if k not in current)
    changes = {irq: cpus for irq, cpus in desired.items() if current.get(irq) != cpus}
    result["changes"] = {str(k): _irq.format_cpulist(v) for k, v in changes.items()}
    result["diff"] = {"before": {str(k): _irq.format_cpulist(current[k]) for k in changes},
                      "after": result["changes"]}
    result["changed"] = bool(changes) or doc is not None
    if check_mode or doc is None:
        return result
    for irq, cpus in changes.items():
        _irq.write_affinity(irq, cpus)
    if doc["state"].get("irqbalance_running") and not irqbalance_running:
        systemctl(runner, "start")
    back = {irq: _irq.read_affinity(irq) for irq in desired}
    result["differs"] = sorted(irq for irq, cpus in desired.items() if back.get(irq) != cpus)
    if result["vanished_irqs"] or result["differs"]:
        result["snapshot_kept"] = True
        runner.warn(f"{ifname}: IRQ affinity not fully restored (vanished IRQs {result['vanished_irqs'] or 'none'}, "
                    f"read back differs for {result['differs'] or 'none'}); snapshot {store.path(key)} kept")
    else:
        store.remove(key)
        result["snapshot_kept"] = False
    return result


# -- host knobs ------------------------------------------------------------------------------------

class HostWriter:
    """The live host's knobs, through argv tools and sysfs. ``netns`` is the namespace whose sysctls
    (net.*) are meant; the other knobs are the host's whatever the namespace."""

    def __init__(self, runner: Runner, state_dir: str, grub_file: str = "/etc/default/grub",
                 netns: str | None = None) -> None:
        self.m = runner
        self.grub_file = grub_file
        self.netns = netns
        self.pidfile = os.path.join(state_dir, "cpu_dma_latency.pid")

    def run(self, argv: list[str]) -> str:
        return _command.run(self.m, argv, what=" ".join(argv))[1]

    def write(self, path: str, value: str) -> None:
        try:
            with open(path, "w", encoding="ascii") as fh:
                fh.write(value)
        except OSError as exc:
            raise th.HostTuningError(f"writing {value!r} to {path} failed: {exc.strerror}") from exc

    # knob setters: value None means "back to off/none" where that exists
    def set_tuned_profile(self, value: str | None) -> None:
        exe = self.m.get_bin_path("tuned-adm", required=True)
        argv = [exe, "profile", value] if value else [exe, "off"]
        rc, out, err = _command.run(self.m, argv, ok=None)
        # tuned-adm can exit 0 without applying anything ("(re)start failed"): check its words too.
        if rc != 0 or "failed" in (out + err).lower() or "Cannot talk to TuneD" in out + err:
            raise CommandError(f"{' '.join(argv)} did not apply the profile", rc, out, err)

    def set_governor(self, value: str | dict[str, str]) -> None:
        for cpu in th._cpus("/"):
            gov = value if isinstance(value, str) else value.get(cpu)
            if gov:
                self.write(f"/sys/devices/system/cpu/{cpu}/cpufreq/scaling_governor", gov)

    def set_turbo(self, value: bool) -> None:
        path, inverted = th.turbo_path("/")  # type: ignore[misc]
        self.write(path, "0" if value == inverted else "1")

    def set_smt(self, value: str) -> None:
        self.write("/sys/devices/system/cpu/smt/control", value)

    def set_cpu_dma_latency(self, value: int | None) -> None:
        th.stop_latency_holder(self.pidfile)
        if value is not None:
            os.makedirs(os.path.dirname(self.pidfile), mode=0o700, exist_ok=True)
            th.start_latency_holder(value, self.pidfile)

    def unload_modules(self, order: list[str]) -> None:
        exe = self.m.get_bin_path("rmmod", required=True)
        for mod in order:
            self.run([exe, mod])

    def load_modules(self, mods: list[str]) -> None:
        exe = self.m.get_bin_path("modprobe", required=True)
        for mod in reversed(mods):
            self.run([exe, mod])

    def grub_target(self, path: str | None) -> str:
        """The grub defaults file to read or write: grub_file, or a *.cfg directly in grub_file.d (the only
        files grub-mkconfig sources); a path from a snapshot naming anything else is refused."""
        if path is None or path == self.grub_file:
            return self.grub_file
        directory = self.grub_file + ".d"
        if not isinstance(path, str) or os.path.dirname(path) != directory or not path.endswith(".cfg") \
                or os.path.islink(path) or os.path.realpath(path) != os.path.join(os.path.realpath(directory),
                                                                                  os.path.basename(path)):
            raise th.HostTuningError(f"kernel_cmdline: {path!r} is not {self.grub_file} or a *.cfg file of "
                                     f"{directory}: refusing to touch it")
        return path

    def read_grub(self, path: str | None = None) -> str:
        with open(self.grub_target(path), encoding="utf-8", newline="") as fh:
            return fh.read()

    def write_grub(self, text: str, path: str | None = None) -> None:
        target = self.grub_target(path)
        tmp = f"{target}.xdplab.tmp"
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        self.m.atomic_move(tmp, target)
        update = self.m.get_bin_path("update-grub")
        if update:
            self.run([update])
        else:
            self.m.warn(f"update-grub not found: {self.grub_file} changed but the bootloader config was not "
                        "regenerated")

    def _in_netns(self, argv: list[str]) -> list[str]:
        return [self.m.get_bin_path("ip", required=True), "netns", "exec", self.netns, *argv]

    def read_sysctl(self, name: str) -> str | None:
        if self.netns is None:
            return th.read_sysctl(name)
        th.read_sysctl(name, root="/nonexistent")  # validates the name
        argv = self._in_netns([self.m.get_bin_path("sysctl", required=True), "-n", name])
        rc, out, _err = _command.run(self.m, argv, ok=None)
        return " ".join(out.split()) if rc == 0 else None

    def write_sysctl(self, name: str, value: str) -> None:
        """The runtime value only (a sysctl file the caller kept is its own)."""
        if self.netns is None:
            th.read_sysctl(name, root="/nonexistent")  # validates the name
            self.write("/proc/sys/" + _validate.sysctl_path(name), value)
        else:
            self.run(self._in_netns([self.m.get_bin_path("sysctl", required=True), "-q", "-w", f"{name}={value}"]))


def restore_knob(host: HostWriter, knob: str, value: Any) -> None:
    if knob in ("netfilter_unload", "netfilter_modules"):
        host.load_modules(value)
    elif knob == "kernel_cmdline":
        path = value.get("file") if isinstance(value, dict) else None
        host.write_grub(th.restore_grub(host.read_grub(path), value), path)
    elif knob == "cpu_dma_latency":
        host.set_cpu_dma_latency(None)
    else:
        getattr(host, f"set_{knob}")(value)


# Restore order: the tuned profile first (a profile rewrites governor, turbo and the rest, so the knobs'
# own originals must be written over it), then the other knobs in the reverse of their apply order,
# then anything else the snapshot holds (sysctls last).
RESTORE_ORDER = ("tuned_profile", "kernel_cmdline", "netfilter_modules", "cpu_dma_latency", "smt", "turbo",
                 "governor")


def restore_order(keys) -> list[str]:
    """Snapshot keys in the order they are restored (RESTORE_ORDER, then the rest sorted)."""
    rank = {k: i for i, k in enumerate(RESTORE_ORDER)}
    return sorted(keys, key=lambda k: (rank.get(k, len(rank)), k))


def grub_now(host: HostWriter, saved: Any) -> tuple[Any, Any, bool]:
    """(current, saved, equal) of the GRUB_CMDLINE_LINUX line, in the shape of the snapshot."""
    if isinstance(saved, dict) and "written" in saved:
        now = th.grub_written_now(host.read_grub(saved.get("file")), saved)
        return now, saved.get("line"), now == saved.get("line")
    text = host.read_grub()
    if isinstance(saved, dict):
        now = th.grub_line(text)
        return now, saved.get("line"), now == saved.get("line")
    now = th.grub_cmdline(text)
    return now, saved, now == saved


def restore_host(runner: Runner, host: HostWriter, store: _tuning.SnapshotStore, key: str,
                 check_mode: bool = False, write_sysctls: bool = False) -> dict[str, Any]:
    """Write the host snapshot back, read it back, and remove the snapshot only when everything reads
    back equal.

    Sysctls: with ``write_sysctls`` their runtime values are written here (the ledger's teardown);
    without, they are handed back in ``sysctl_restore`` for ansible.posix.sysctl (the tuning role),
    and until they read back equal the snapshot stays (the next call removes it)."""
    doc = store.load(key)
    result: dict[str, Any] = {"changed": False, "changes": {}, "skipped_settings": [], "reboot_required": False,
                              "sysctl_restore": {}, "snapshot_kept": False, "differs": []}
    if doc is None:
        return result
    cur = th.read_host()
    state = doc["state"]
    for knob in restore_order(state):
        old = state[knob]
        if knob.startswith("sysctl:"):
            name = knob.split(":", 1)[1]
            now = host.read_sysctl(name)
            if now != old:
                if write_sysctls:
                    result["changes"][knob] = {"before": now, "after": old}
                    if not check_mode:
                        host.write_sysctl(name, old)
                else:
                    result["sysctl_restore"][name] = old
            continue
        if knob == "netfilter_modules":
            loaded = set((th.read_modules() or {}).keys())
            missing = [m for m in old if m not in loaded]
            if missing:
                result["changes"][knob] = {"before": [], "after": missing}
                if not check_mode:
                    host.load_modules(missing)
            continue
        if knob == "kernel_cmdline":
            now, want, equal = grub_now(host, old)
            if not equal:
                result["changes"][knob] = {"before": now, "after": want}
                result["reboot_required"] = True
                if not check_mode:
                    restore_knob(host, knob, old)
            continue
        if knob == "cpu_dma_latency":
            if th.holder_pid(host.pidfile) is not None:
                result["changes"][knob] = {"before": cur.get(knob), "after": "released"}
                if not check_mode:
                    host.set_cpu_dma_latency(None)
            continue
        if old is not None and cur.get(knob) != old:
            result["changes"][knob] = {"before": cur.get(knob), "after": old}
            if not check_mode:
                restore_knob(host, knob, old)
                if knob == "tuned_profile":
                    cur = th.read_host()  # the profile may have moved the knobs restored after it
        elif knob == "tuned_profile" and old is None and cur.get(knob):
            result["changes"][knob] = {"before": cur.get(knob), "after": None}
            if not check_mode:
                host.set_tuned_profile(None)
                cur = th.read_host()
    result["changed"] = bool(result["changes"]) or not check_mode
    if check_mode:
        return result
    result["differs"] = host_read_back_differs(host, state, sysctls=write_sysctls)
    if result["differs"] or result["sysctl_restore"]:
        result["snapshot_kept"] = True  # the original is not back yet: keep it for the next call
        if result["differs"]:
            runner.warn("host_tuning restore: read back differs from the snapshot for "
                        f"{', '.join(result['differs'])}; snapshot {store.path(key)} kept")
    else:
        store.remove(key)
    return result


def host_read_back_differs(host: HostWriter, state: dict[str, Any], sysctls: bool = False) -> list[str]:
    """Snapshot keys whose live value is not the saved one after the restore (sysctls only with
    ``sysctls``: otherwise the caller writes them and checks them on its next call)."""
    cur = th.read_host()
    differs = []
    for knob, old in state.items():
        if knob.startswith("sysctl:"):
            if sysctls and host.read_sysctl(knob.split(":", 1)[1]) != old:
                differs.append(knob)
        elif knob == "cpu_dma_latency":
            if th.holder_pid(host.pidfile) is not None:
                differs.append(knob)
        elif knob == "netfilter_modules":
            loaded = set((th.read_modules() or {}).keys())
            if any(m not in loaded for m in old):
                differs.append(knob)
        elif knob == "kernel_cmdline":
            if not grub_now(host, old)[2]:
                differs.append(knob)
        elif old is not None and cur.get(knob) != old:
            differs.append(knob)
    return differs


# -- any snapshot, as the ledger's teardown meets it -----------------------------------------------

def restore_snapshot(runner: Runner, state_file: str, netns: str | None = None, netns_exists: bool = True,
                     check_mode: bool = False, grub_file: str = "/etc/default/grub") -> dict[str, Any]:
    """Restore one snapshot file, whatever its kind; the snapshot names its kind and subject.

    Returns {"kind", "subject", "done", "reason"}: ``done`` when the snapshot is gone (restored and
    read back equal, or its port went with its namespace), else ``reason`` names what could not be
    undone and the snapshot is kept. A port of a named namespace that is gone, or that is missing
    inside it (a veth whose peer went with another namespace), took its settings with it: the
    snapshot is discarded. A missing port of the initial namespace keeps its snapshot."""
    store, key = split_state_file(state_file)
    doc = store.load(key)
    if doc is None:
        return {"kind": None, "subject": None, "done": True, "reason": "no snapshot (already restored)"}
    kind, subject = doc.get("kind"), doc.get("subject")
    out = {"kind": kind, "subject": subject, "done": False, "reason": None}
    if netns is not None and not netns_exists:
        if not check_mode:
            store.remove(key)
        return dict(out, done=True, reason=f"namespace {netns} is gone, and the settings with it")
    try:
        if kind == "nic":
            res = restore_nic(runner, store, key, subject, netns, on_missing="discard" if netns else "fail",
                              check_mode=check_mode)
            if res["mismatched"]:
                return dict(out, reason=f"read back differs: {res['mismatched']}")
        elif kind == "irq":
            by_names = netns is not None and netns != _tuning.current_netns()
            if by_names and not doc.get("state", {}).get("names"):
                return dict(out, reason=f"IRQ affinity of {subject} inside namespace {netns}: the snapshot has no "
                                        "IRQ names to find them by from here; restore it there with irq_affinity "
                                        "state=restored")
            res = restore_irq(runner, store, key, subject, check_mode=check_mode, by_saved_names=by_names)
            if res.get("snapshot_kept"):
                return dict(out, reason=f"vanished IRQs {res['vanished_irqs']}, read back differs for {res['differs']}")
        elif kind == "host":
            host = HostWriter(runner, store.state_dir, grub_file, netns)
            res = restore_host(runner, host, store, key, check_mode=check_mode, write_sysctls=True)
            if res["snapshot_kept"]:
                return dict(out, reason=f"read back differs for {', '.join(res['differs'])}")
        else:
            return dict(out, reason=f"unknown snapshot kind {kind!r}")
    except RestoreError as exc:
        return dict(out, reason=str(exc))
    return dict(out, done=True)


def snapshot_kind_rank(kind: str | None) -> int:
    return KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER)
