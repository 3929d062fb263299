#!/usr/bin/python
# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ledger
short_description: Record what the collection creates on a host, and remove exactly that
version_added: 0.1.0
description:
  - Keeps a ledger of the objects the collection creates on the host it runs on, one small JSON file per
    object under O(dir) - network namespaces, XDP attachments, tc clsact qdiscs, nftables tables, tuning
    snapshots, QEMU processes and background processes (servers, pktgen), and what a run changed in a
    namespace it found in place. Modules record an object B(before) creating or changing it, so an
    interrupted run leaves ledger entries, never unrecorded state.
  - A namespace found in place is never deleted; O(state=cleaned) deletes the interfaces the run made in
    it and puts back the settings it changed (addresses, MTU, MAC, GRO, link state, sysctls).
  - O(state=cleaned) removes every object the ledger lists, if it still exists, in a safe order
    (processes, XDP, tc, nftables, then namespaces; objects inside a listed namespace go with it), then
    the entries. Only what the ledger names is touched.
  - Tuning entries (written by C(nic_tuning), C(irq_affinity) and C(host_tuning) before they change
    anything) are restored from their snapshots, with the restore those modules use for
    C(state=restored) - host knobs and sysctls first (the tuned profile before the governor), then IRQ
    affinity, then NIC settings - and read back; a snapshot that does not read back equal is kept with
    its entry and named in RV(failed_entries). A port of a named namespace that is gone took its
    settings with it, so its snapshot is dropped.
author:
  - xdplab.testbed developers (!UNKNOWN)
options:
  state:
    description:
      - C(recorded) adds the entry (nothing changes when it is already there); C(absent) removes the
        entry once the object is gone; C(cleaned) removes every listed object and its entry;
        C(listed) only returns the entries.
    type: str
    choices: [recorded, absent, cleaned, listed]
    default: recorded
  dir:
    description: Ledger directory on the host.
    type: path
    default: /var/lib/xdplab/ledger
  kind:
    description: Kind of object, with O(state=recorded) or O(state=absent).
    type: str
    choices: [netns, xdp, tc, nft, ovs, neigh, addr, tuning, qemu, process, napi]
  key:
    description:
      - What identifies the object. C(netns) C(name); C(xdp) and C(tc) C(interface); C(nft) C(family) and
        C(table); C(ovs) C(datapath) (packet_hook's Open vSwitch datapath, deleted with its ports and flows);
        C(neigh) C(interface) and C(address) (the neighbour module's, with the entry found in place as
        C(previous)); C(addr) C(interface) and C(address) (the interface_address module's, an
        address with its prefix length, with C(set_up) if the module brought the interface up); C(tuning)
        C(state_file); C(qemu) C(pid) and C(cmdline_sha256) (sha256 of its
        NUL-separated C(/proc/PID/cmdline), so a reused pid is never killed), optionally C(owner) and
        C(owner_start) (pid and start time of the process running it; while it lives the entry is kept);
        C(process) C(pid), C(start) and C(boot_id) (a background process of C(bench_server) or C(pktgen),
        stopped only while that pid still has that start time in that boot); C(napi) C(interface) (the
        napi_threads module's, with the C(threaded) value and kthread affinities it found).
    type: dict
  netns:
    description:
      - Namespace the object lives in (C(xdp), C(tc), C(nft), C(ovs), C(neigh), C(addr)). Default the named
        namespace the module runs in (with the C(xdplab.testbed.netns) connection), or none for the initial namespace.
    type: str
  run_id:
    description: Run id stored in the entry.
    type: str
  keep:
    description:
      - With O(state=cleaned), kinds of objects to leave in place with their entries (C(netns) keeps the
        virtual test bed's namespaces for a later run); what lives inside a kept namespace is still undone.
    type: list
    elements: str
    choices: [netns, xdp, tc, nft, ovs, neigh, addr, tuning, qemu, process, napi]
    default: []
attributes:
  check_mode:
    support: full
    description: Can run in check_mode and return changed status prediction without modifying target.
  diff_mode:
    support: none
    description: Returns no diff.
"""

EXAMPLES = r"""
- name: Record the namespace before creating it
  xdplab.testbed.ledger:
    kind: netns
    key: {name: xdplab-dut}
    run_id: "{{ run_id }}"

- name: Remove whatever an interrupted run left
  xdplab.testbed.ledger:
    state: cleaned
"""

RETURN = r"""
entries:
  description: The ledger's entries after the call.
  returned: always
  type: list
  elements: dict
removed:
  description: With O(state=cleaned), each object removed (or found already gone), as C(kind key netns).
  returned: always
  type: list
  elements: str
failed_entries:
  description:
    - With O(state=cleaned), when the call fails, each entry that could not be undone with the reason
      (a snapshot that reads back different, a port missing from the initial namespace). They stay in the
      ledger; every other entry was undone.
  returned: failure
  type: list
  elements: str
  sample: ["tuning state_file=/var/lib/xdplab/tuning/nic-host-ens1f0.json: read back differs: ..."]
set_aside:
  description:
    - With O(state=cleaned), ledger files that could not be read (truncated, not an entry, a symlink) -
      each renamed to C(<name>.unreadable-<time>) and never acted on; the other entries are still cleaned.
  returned: always
  type: list
  elements: dict
  sample:
    - path: /var/lib/xdplab/ledger/netns-0a1b.json
      moved_to: /var/lib/xdplab/ledger/netns-0a1b.json.unreadable-20261201T010000Z
      reason: "JSONDecodeError: Expecting value"
kept:
  description:
    - With O(state=cleaned), QEMU entries kept because the process that runs the guest still lives, and
      objects left alone because what now has their name is not what the collection created (a namespace
      with another inode), with the reason.
  returned: always
  type: list
  elements: str
path:
  description: The entry file, with O(state=recorded) or O(state=absent).
  returned: when kind is given
  type: str
"""

import hashlib
import json
import os
import signal
import traceback

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _netns_switch
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _process_identity as _proc
from ansible_collections.xdplab.testbed.plugins.module_utils.state._ledger import (
    KINDS,
    LedgerError,
    check_entry,
    entries,
    entry_id,
    owner_alive,
    record,
    restorable_neighbour,
    scan,
    set_aside,
    teardown_plan,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._napi_threads import restore_affinity
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _restore
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning._ethtool_netlink import EthtoolNetlink
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning._plan_and_snapshots import current_netns_name
from ansible_collections.xdplab.testbed.plugins.module_utils.xdp._program_objects import MODES as XDP_MODES

# Where bench_server keeps its servers' logs, and pktgen's control files: the only places a process
# entry's undo removes or writes anything.
SERVER_LOG_DIR = "/run/xdplab"
PKTGEN_DIR = "/proc/net/pktgen"
# The tc filter kinds an entry may name: packet_hook's cls_bpf hook and vmlab_link's u32 wire.
TC_FILTERS = ("bpf", "u32")


def describe(entry: dict) -> str:
    key = " ".join(f"{k}={v}" for k, v in entry["key"].items())
    return f"{entry['kind']} {key}" + (f" in {entry['netns']}" if entry.get("netns") else "")


class Cleaner:
    """Removes one ledger object on this host, tolerating that it is already gone."""

    def __init__(self, module: AnsibleModule):
        self.module = module
        self.ip = module.get_bin_path("ip", required=True)

    def _in_netns(self, netns: str | None, argv: list[str]) -> list[str]:
        return [self.ip, "netns", "exec", netns, *argv] if netns else argv

    def _run(self, argv: list[str], gone: tuple[str, ...]) -> None:
        rc, out, err = self.module.run_command(argv)
        if rc != 0 and not any(g in err for g in gone):
            raise RuntimeError(f"{' '.join(argv)} failed (rc={rc}): {err.strip() or out.strip()}")

    def netns_exists(self, name: str) -> bool:
        return os.path.exists(os.path.join("/run/netns", name))

    @staticmethod
    def netns_inode(name: str) -> int | None:
        try:
            return os.stat(os.path.join("/run/netns", name)).st_ino
        except FileNotFoundError:
            return None

    def remove(self, entry: dict) -> str | None:
        """Undo one entry; a reason when what is there now is not ours and was left alone."""
        kind, key, netns = entry["kind"], entry["key"], entry.get("netns")
        if netns and kind in ("xdp", "tc", "nft", "ovs", "neigh", "addr", "napi") and not self.netns_exists(netns):
            return None  # its namespace, and the object with it, is already gone
        if kind == "netns" and entry.get("found"):
            if not self.netns_exists(key["name"]):
                return None  # gone, and what we changed in it with it
            if entry.get("inode") not in (None, self.netns_inode(key["name"])):
                return f"namespace {key['name']} is not the one found in place (other inode): left alone"
            self.undo_found(key["name"], entry.get("undo_found") or {})
            return None
        if kind == "netns":
            if self.netns_exists(key["name"]) and entry.get("inode") not in (None, self.netns_inode(key["name"])):
                # Ours went away and another namespace took the name: not ours to delete.
                return f"namespace {key['name']} is not the one this collection created (other inode)"
            if self.netns_exists(key["name"]):
                rc, out, _dummy = self.module.run_command([self.ip, "netns", "pids", key["name"]])
                for pid in out.split() if rc == 0 else []:
                    self._kill_in_netns(int(pid), key["name"])
                self._run([self.ip, "netns", "delete", key["name"]], ("No such file",))
        elif kind == "xdp":
            base = [self.ip, *(["-n", netns] if netns else []), "link", "set", "dev", key["interface"]]
            for mode in ("xdpgeneric", "xdpdrv"):
                self._run([*base, mode, "off"], ("Cannot find device", "does not exist"))
            # xdp_prog's entry names the programs found on the interface before the run, pinned:
            # attach them again, then drop the pins.
            bpftool = self.module.get_bin_path("bpftool", required=bool(entry.get("previous")))
            for prev in entry.get("previous", []):
                if not os.path.exists(prev["pin"]):
                    raise RuntimeError(f"the {prev['mode']} program {prev['name']} found on {key['interface']} "
                                       f"before the run is no longer pinned at {prev['pin']}: it cannot be put back")
                self._run(self._in_netns(netns, [bpftool, "net", "attach", XDP_MODES[prev["mode"]], "pinned",
                                                 prev["pin"], "dev", key["interface"]]), ())
                os.unlink(prev["pin"])
        elif kind == "tc":
            tc = [self.module.get_bin_path("tc", required=True), *(["-n", netns] if netns else [])]
            gone = ("Cannot find", "No such file", "Invalid handle")
            if "pref" not in entry:  # an entry of an older run: the clsact qdisc was all it recorded
                self._run([*tc, "qdisc", "del", "dev", key["interface"], "clsact"], gone)
                return None
            # packet_hook's entry (a cls_bpf filter) or vmlab_link's (a u32 wire): our filter, and the
            # clsact qdisc only if we created it and no one else's filter is left on it.
            kind = entry.get("filter", "bpf")
            if kind not in TC_FILTERS:
                raise RuntimeError(f"tc filter kind must be one of {', '.join(TC_FILTERS)}, got {kind!r}")
            handle = ["handle", str(entry["handle"])] if "handle" in entry else []  # vmlab_link owns its pref
            self._run([*tc, "filter", "del", "dev", key["interface"], "ingress", "pref", str(entry["pref"]),
                       *handle, kind], (*gone, "Filter with specified priority"))
            if entry.get("created_clsact"):
                rc, out, _err = self.module.run_command([*tc, "-j", "filter", "show", "dev", key["interface"],
                                                         "ingress"])
                if rc == 0 and not json.loads(out or "[]"):
                    self._run([*tc, "qdisc", "del", "dev", key["interface"], "clsact"], gone)
        elif kind == "nft":
            nft = self.module.get_bin_path("nft", required=True)
            self._run(self._in_netns(netns, [nft, "delete", "table", key["family"], key["table"]]),
                      ("No such file",))
        elif kind == "ovs":
            # packet_hook's Open vSwitch datapath: deleting it removes its ports and flows with it
            dpctl = self.module.get_bin_path("ovs-dpctl", required=True)
            self._run(self._in_netns(netns, [dpctl, "del-dp", key["datapath"]]),
                      ("No such device", "does not exist", "No such file"))
        elif kind == "neigh":
            # the neighbour module's entry: the entry found in place, if it was set by hand, comes back;
            # else ours goes (a learned one is learned again)
            ip = [self.ip, *(["-n", netns] if netns else []), "neigh"]
            previous = restorable_neighbour(entry.get("previous"))
            if previous:
                self._run([*ip, "replace", key["address"], "lladdr", previous["lladdr"], "nud", previous["state"],
                           "dev", key["interface"]], ())
            else:
                self._run([*ip, "del", key["address"], "dev", key["interface"]],
                          ("Cannot find device", "No such file", "does not exist"))
        elif kind == "addr":
            # the interface_address module's entry: its address goes (one already gone is fine: an IPv6
            # address leaves with the link when a test takes the port down), and the interface goes
            # down again if the module brought it up
            ip = [self.ip, *(["-n", netns] if netns else [])]
            gone = ("Cannot find device", "does not exist", "Cannot assign requested address", "address not found")
            self._run([*ip, "addr", "del", key["address"], "dev", key["interface"]], gone)
            if entry.get("set_up"):
                self._run([*ip, "link", "set", "dev", key["interface"], "down"], gone)
        elif kind == "napi":
            # napi_threads' entry: the kthreads' CPUs and the port's threaded value found (its sysfs is the
            # namespace's: written through ip netns exec, which mounts it)
            restore_affinity(key["interface"], entry.get("affinity") or {})
            path = f"/sys/class/net/{key['interface']}/threaded"
            rc, out, err = self.module.run_command(self._in_netns(netns, [self.module.get_bin_path("tee", True), path]),
                                                   data=str(entry.get("found", "0")))
            if rc != 0 and "No such file" not in err:
                raise RuntimeError(f"writing {path} back to {entry.get('found')!r} failed (rc={rc}): {err.strip()}")
        elif kind == "tuning":
            self.restore_tuning(entry)
        elif kind == "process":
            self.stop_process(entry)
        elif kind == "qemu":
            pid = int(key["pid"])
            ident = ({"pid": pid, "start": key["start"], "boot_id": key["boot_id"]} if "start" in key
                     else _proc.identity(pid))  # older entries: the start time seen now, before the checks
            if ident is None or not _proc.same(ident):
                return  # gone, or the pid is another process now
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    cmdline = fh.read()
            except FileNotFoundError:
                return
            if hashlib.sha256(cmdline).hexdigest() == key.get("cmdline_sha256"):
                _proc.send(ident, signal.SIGKILL)

    def undo_found(self, ns: str, undo: dict) -> None:
        """Put a namespace found in place back as it was (netns_topology recorded each change before it
        made it): the interfaces made in it go, the settings changed on its own interfaces come back, its
        sysctls are written back. The namespace and its processes stay."""
        ip = [self.ip, "-n", ns]
        gone = ("Cannot find device", "does not exist")
        for ifname in undo.get("links_created", []):
            self._run([*ip, "link", "del", "dev", ifname], gone)
        # pyroute2 only for namespaces found in place
        from pyroute2 import IPRoute  # pylint: disable=import-outside-toplevel
        with IPRoute(netns=ns) as ipr:  # only to ask which interfaces are there: no change through it
            present = {msg.get("ifname") for msg in ipr.link("dump")}
        for ifname, was in sorted((undo.get("links") or {}).items()):
            if ifname not in present:
                continue  # went away with its peer or its driver: nothing of ours left on it
            for cidr in was.get("addresses_added", []):
                self._run([*ip, "addr", "del", cidr, "dev", ifname], ("Cannot assign",))
            for cidr in was.get("addresses_removed", []):
                self._run([*ip, "addr", "add", cidr, "dev", ifname], ("File exists",))
            if was.get("mtu") is not None:
                self._run([*ip, "link", "set", "dev", ifname, "mtu", str(was["mtu"])], ())
            if was.get("mac"):
                self._run([*ip, "link", "set", "dev", ifname, "address", was["mac"]], ())
            if was.get("gro") is not None:
                with EthtoolNetlink(netns=ns) as eth:
                    eth.set_features(ifname, {"rx-gro": bool(was["gro"])})
            if was.get("up") is False:
                self._run([*ip, "link", "set", "dev", ifname, "down"], ())
        sysctl = self.module.get_bin_path("sysctl", required=bool(undo.get("sysctls")))
        for name, value in sorted((undo.get("sysctls") or {}).items()):
            if value is not None:
                self._run([self.ip, "netns", "exec", ns, sysctl, "-q", "-w", f"{name}={value}"], ())
        if undo.get("lo_was_down"):
            self._run([*ip, "link", "set", "dev", "lo", "down"], ())

    def stop_process(self, entry: dict) -> None:
        """A background process of ours (bench_server, pktgen's starter): stopped only while its pid still
        has the recorded start time and boot id; then what it leaves: its log, pktgen's devices."""
        key = entry["key"]
        _proc.stop({"pid": key["pid"], "start": key["start"], "boot_id": key["boot_id"]}, signal.SIGTERM,
                   timeout=5.0)
        log = entry.get("log")
        if isinstance(log, str) and os.path.dirname(log) == SERVER_LOG_DIR \
                and os.path.basename(log).startswith("bench-server-"):
            for path in (log, log + ".json"):
                if os.path.lexists(path):
                    os.unlink(path)  # unlink never follows a symlink
        pktgen = entry.get("pktgen")
        if pktgen is not None:
            if pktgen != PKTGEN_DIR:
                raise RuntimeError(f"pktgen directory {pktgen!r} is not {PKTGEN_DIR}: not reset")

            def reset() -> None:
                if os.path.exists(os.path.join(PKTGEN_DIR, "pgctrl")):
                    with open(os.path.join(PKTGEN_DIR, "pgctrl"), "w", encoding="ascii") as fh:
                        fh.write("reset\n")
            netns = entry.get("netns")
            if netns and netns != current_netns_name():
                if not self.netns_exists(netns):
                    return  # its namespace, and pktgen's devices in it, are gone
                _netns_switch.call_in_netns(netns, reset)
            else:
                reset()

    def restore_tuning(self, entry: dict) -> None:
        """Restore a tuning snapshot (raises naming what could not be undone; the snapshot stays)."""
        netns, state_file = entry.get("netns"), entry["key"]["state_file"]
        grub = entry.get("grub_file", "/etc/default/grub")
        if os.path.isdir(state_file):
            # An older run's entry named the whole snapshot directory: every snapshot in it, each in the
            # namespace its key names (<kind>-<netns>-<subject>).
            todo = []
            for name in sorted(os.listdir(state_file)):
                if name.endswith(".json") and not name.startswith("."):
                    path = os.path.join(state_file, name)
                    store, key = _restore.split_state_file(path)
                    doc = store.load(key) or {}
                    prefix, suffix = f"{doc.get('kind')}-", f"-{doc.get('subject')}"
                    ns = key[len(prefix):-len(suffix)] if key.startswith(prefix) and key.endswith(suffix) else "host"
                    todo.append((_restore.snapshot_kind_rank(doc.get("kind")), path, None if ns == "host" else ns))
        else:
            todo = [(0, state_file, netns)]
        reasons = []
        for _rank, path, ns in sorted(todo):
            out = _restore.restore_snapshot(self.module, path, ns, ns is None or self.netns_exists(ns),
                                            grub_file=grub)
            if not out["done"]:
                reasons.append(f"{out['kind']} snapshot of {out['subject']} ({path}): {out['reason']}")
        if reasons:
            raise RuntimeError("; ".join(reasons))

    def _kill_in_netns(self, pid: int, name: str) -> None:
        """SIGKILL a process of the namespace we are removing: identity taken, then checked to be still
        in that namespace, then signalled through _proc (pid 1 and this process never)."""
        if pid <= 1 or pid == os.getpid():
            return
        ident = _proc.identity(pid)
        if ident is None:
            return
        try:
            ns = os.stat(f"/proc/{pid}/ns/net")
            ours = os.stat(os.path.join("/run/netns", name))
        except OSError:
            return
        if (ns.st_dev, ns.st_ino) == (ours.st_dev, ours.st_ino):
            _proc.send(ident, signal.SIGKILL)


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["recorded", "absent", "cleaned", "listed"], default="recorded"),
            dir=dict(type="path", default="/var/lib/xdplab/ledger"),
            kind=dict(type="str", choices=list(KINDS)),
            key=dict(type="dict", no_log=False),
            netns=dict(type="str"),
            run_id=dict(type="str"),
            keep=dict(type="list", elements="str", default=[],
                      choices=list(KINDS)),
        ),
        required_if=[("state", "recorded", ("kind", "key")), ("state", "absent", ("kind", "key"))],
        supports_check_mode=True,
    )
    p = module.params
    module.run_command_environ_update = {"LC_ALL": "C"}
    changed, removed, kept, result, set_aside_list = False, [], [], {}, []
    failed: list[str] = []
    try:
        if p["state"] in ("recorded", "absent"):
            netns = p["netns"]
            if netns is None and p["kind"] in ("xdp", "tc", "nft", "ovs"):
                here = current_netns_name()
                netns = None if here == "host" else here
            entry = check_entry(p["kind"], p["key"], netns)
            path = os.path.join(p["dir"], entry_id(entry))
            result["path"] = path
            if p["state"] == "recorded":
                changed = not os.path.exists(path)
                if changed and not module.check_mode:
                    record(p["dir"], entry, p["run_id"])
            elif os.path.exists(path):
                changed = True
                if not module.check_mode:
                    os.unlink(path)
        elif p["state"] == "cleaned":
            cleaner = Cleaner(module)
            good, bad = scan(p["dir"])
            for path, reason in bad:
                # Unreadable (truncated, foreign, a symlink): never acted on, moved out of the way and
                # named, so it does not stop the rest from being cleaned.
                changed = True
                new = path if module.check_mode else set_aside(path)
                set_aside_list.append({"path": path, "moved_to": new, "reason": reason})
                module.warn(f"ledger entry {path} is unreadable ({reason}): set aside as {new}")
            subrank = {"tuning": lambda e: _restore.snapshot_kind_rank(e.get("snapshot_kind"))}
            for path, entry in teardown_plan(good, keep=p["keep"], subrank=subrank):
                if entry["kind"] in p["keep"]:
                    continue
                if entry["kind"] == "qemu" and owner_alive(entry["key"]):
                    kept.append(describe(entry))
                    continue
                changed = True
                if not module.check_mode:
                    try:
                        reason = cleaner.remove(entry)
                    except Exception as exc:  # noqa: BLE001 - named below; the entry stays for a later try
                        failed.append(f"{describe(entry)}: {exc}")
                        continue
                    os.unlink(path)
                    if reason:
                        kept.append(f"{describe(entry)}: {reason}")
                        continue
                removed.append(describe(entry))
    except LedgerError as exc:
        module.fail_json(msg=str(exc))
    except Exception as exc:  # noqa: BLE001 - one top-level handler, reported with traceback
        module.fail_json(msg=f"ledger {p['state']}: {exc}", exception=traceback.format_exc(), removed=removed)
    try:
        current = [e for _dummy, e in entries(p["dir"])]
    except LedgerError as exc:
        module.fail_json(msg=str(exc))
    if failed:
        # Every other entry was undone; these stay in the ledger for the next cleanup.
        module.fail_json(msg=f"ledger cleaned: could not undo {len(failed)} entr{'y' if len(failed) == 1 else 'ies'}: "
                             + "; ".join(failed), failed_entries=failed, entries=current, removed=removed,
                         kept=kept, set_aside=set_aside_list, changed=changed)
    module.exit_json(changed=changed, entries=current, removed=removed, kept=kept,
                     set_aside=set_aside_list, **result)


if __name__ == "__main__":
    main()
