# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The ledger's kinds, one row each: what identifies the object, what its entry holds for undoing it,
when it is undone, how to check it is still ours, how to undo it and how to verify the undo. Private to
the xdplab.testbed collection.

A row (``Kind``) is everything the ledger knows about a kind:

- ``key``: the fields that identify the object, each with its check (``None``: the check its field
  name has in ``KEY_CHECKS``, else a plain name);
- ``undo``: the other fields an entry may hold for undoing it (what was found, what was made), each
  with its check. ``check_fields`` runs them on every entry read from the ledger, so an entry with a
  wrongly typed or incomplete field is set aside and named by the ledger module, never acted on;
- ``order``: when ``ledger state=cleaned`` undoes it (processes first, then what lives on interfaces,
  then tuning, then namespaces);
- ``in_netns``: the object lives in the entry's namespace and goes with it: nothing to undo once the
  namespace is gone, its entry dropped when the namespace is deleted, and the namespace defaults to
  the one the module runs in; ``after_netns``: undone after a namespace the ledger deletes (default:
  ``in_netns``);
- ``check``: before undoing, a reason to leave the object alone (what has its name now is not ours),
  or None;
- ``remove``: the undo itself, through a ``Cleaner`` (the calling module's commands); raises naming
  what it could not undo;
- ``verify``: after the undo, a reason it did not take, or None. Without one, the undo's own result
  is the check (the tool's exit status, with the messages that mean "already gone"; a tuning restore
  reads every setting back itself).

Adding a kind is a row here and its test (CONTRIBUTING.md, "Recipe 4").
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.xdplab.testbed.plugins.module_utils.common import _command, _netns_switch, _validate
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _process_identity as _proc
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning._napi_threads import restore_affinity
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning._plan_and_snapshots import current_netns_name
from ansible_collections.xdplab.testbed.plugins.module_utils.xdp._program_objects import MODES as XDP_MODES
from ansible_collections.xdplab.testbed.plugins.module_utils.xdp._program_objects import in_bpffs

NETNS_DIR = "/run/netns"
# Where bench_server keeps its servers' logs, and pktgen's control files: the only places a process
# entry's undo removes or writes anything.
SERVER_LOG_DIR = "/run/xdplab"
PKTGEN_DIR = "/proc/net/pktgen"
# The tc filter kinds an entry may name: packet_hook's cls_bpf hook and vmlab_link's u32 wire.
TC_FILTERS = ("bpf", "u32")
# Neighbour states a user (or a tool) sets and that do not come back by themselves: put back exactly.
# A learned entry (reachable, stale, ...) is learned again once ours is gone.
NUD_SET_BY_HAND = ("permanent", "noarp")


class LedgerError(ValueError):
    """A bad ledger entry or an unusable ledger directory."""


# ---- field checks: each raises LedgerError naming the field and the value --------------------------

Check = Callable[[Any, str], None]  # (value, "ledger <kind> <field>")


def _validated(fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except _validate.ValidationError as exc:
        raise LedgerError(str(exc)) from None


def _pid(value: Any, where: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 1:
        raise LedgerError(f"{where} must be a pid > 1, got {value!r}")


def _ticks(value: Any, where: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise LedgerError(f"{where} must be a start time in clock ticks, got {value!r}")


def _boot_id(value: Any, where: str) -> None:
    if not isinstance(value, str) or not re.fullmatch(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", value):
        raise LedgerError(f"{where} must be a boot id (uuid), got {value!r}")


def _abs_path(value: Any, where: str) -> None:
    if not isinstance(value, str) or not os.path.isabs(value) or ".." in value.split("/"):
        raise LedgerError(f"{where} must be an absolute path without '..', got {value!r}")


def _sha256(value: Any, where: str) -> None:
    if not re.fullmatch(r"[0-9a-f]{64}", str(value)):
        raise LedgerError(f"{where} must be a sha256 hex digest, got {value!r}")


def _plain_name(value: Any, where: str) -> None:
    kind_where, _sep, what = where.rpartition(" ")
    _validated(_validate.ledger_name, value, what, kind_where)


def _typed(types: type | tuple[type, ...], what: str) -> Check:
    """A check that the value has one of ``types`` (bool is never taken for int)."""
    def check(value: Any, where: str) -> None:
        if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
            raise LedgerError(f"{where} must be {what}, got {value!r}")
        if not isinstance(value, types):
            raise LedgerError(f"{where} must be {what}, got {value!r}")
    return check


_BOOL = _typed(bool, "true or false")
_STR = _typed(str, "a string")
_INT = _typed(int, "an integer")
_OPT_STR = _typed((str, type(None)), "a string or null")
_OPT_INT = _typed((int, type(None)), "an integer or null")
_OPT_BOOL = _typed((bool, type(None)), "true, false or null")


def _one_of(choices: tuple[str, ...]) -> Check:
    def check(value: Any, where: str) -> None:
        if value not in choices:
            raise LedgerError(f"{where} must be one of {', '.join(choices)}, got {value!r}")
    return check


def _list_of(item: Check) -> Check:
    def check(value: Any, where: str) -> None:
        if not isinstance(value, list):
            raise LedgerError(f"{where} must be a list, got {value!r}")
        for i, x in enumerate(value):
            item(x, f"{where}[{i}]")
    return check


def _dict_of(value_check: Check, key_check: Check = _STR) -> Check:
    def check(value: Any, where: str) -> None:
        if not isinstance(value, dict):
            raise LedgerError(f"{where} must be a mapping, got {value!r}")
        for k, v in value.items():
            key_check(k, f"{where} key")
            value_check(v, f"{where}[{k!r}]")
    return check


def _record(fields: dict[str, Check], required: tuple[str, ...] = ()) -> Check:
    """A mapping with these optional fields (and ``required`` ones), each with its check."""
    def check(value: Any, where: str) -> None:
        if not isinstance(value, dict):
            raise LedgerError(f"{where} must be a mapping, got {value!r}")
        for name in required:
            if name not in value:
                raise LedgerError(f"{where} needs {name!r}, got {value!r}")
        for name, check_ in fields.items():
            if name in value:
                check_(value[name], f"{where}.{name}")
    return check


# Key fields checked by their name, whatever the kind (a row may override one).
KEY_CHECKS: dict[str, Check] = {
    "pid": _pid, "owner": _pid, "boot_id": _boot_id, "start": _ticks, "owner_start": _ticks,
    "state_file": _abs_path, "cmdline_sha256": _sha256,
}
# Fields every entry holds besides its key (ledger.record writes them).
COMMON_FIELDS: dict[str, Check] = {"run_id": _OPT_STR, "created": _STR}


# ---- the undo side: the calling module's commands, and the rows' functions -------------------------

class Cleaner:
    """Removes one ledger object on this host, tolerating that it is already gone. ``module`` is the
    calling AnsibleModule (its run_command, through common._command: the C locale; get_bin_path)."""

    def __init__(self, module: Any):
        self.module = module
        self.ip = module.get_bin_path("ip", required=True)

    def in_netns(self, netns: str | None, argv: list[str]) -> list[str]:
        return [self.ip, "netns", "exec", netns, *argv] if netns else argv

    def run(self, argv: list[str], gone: tuple[str, ...]) -> None:
        """Run argv; a failure whose stderr says one of ``gone`` (already gone) is not one."""
        _command.run(self.module, argv, what=" ".join(argv), gone=gone)

    def read(self, argv: list[str]) -> tuple[int, str, str]:
        """Run argv that only reads, whatever its exit status."""
        return _command.run(self.module, argv, ok=None)

    def netns_exists(self, name: str) -> bool:
        return os.path.exists(os.path.join(NETNS_DIR, name))

    @staticmethod
    def netns_inode(name: str) -> int | None:
        try:
            return os.stat(os.path.join(NETNS_DIR, name)).st_ino
        except FileNotFoundError:
            return None

    def remove(self, entry: dict) -> str | None:
        """Undo one entry by its kind's row; a reason when what is there now is not ours and was left
        alone. Raises naming what could not be undone."""
        row = TABLE[entry["kind"]]
        netns = entry.get("netns")
        if netns and row.in_netns and not self.netns_exists(netns):
            return None  # its namespace, and the object with it, is already gone
        if row.check is not None:
            reason = row.check(self, entry)
            if reason:
                return None if reason is GONE else reason
        row.remove(self, entry)
        if row.verify is not None:
            failed = row.verify(self, entry)
            if failed:
                raise RuntimeError(failed)
        return None


class _Gone(str):
    """A check's answer: the object is gone already, nothing to undo and nothing to report."""


GONE = _Gone("gone")


# netns ----------------------------------------------------------------------------------------------

def _netns_check(c: Cleaner, entry: dict) -> str | None:
    name = entry["key"]["name"]
    if not c.netns_exists(name):
        return GONE  # gone (and what we changed in a namespace found in place, with it)
    if entry.get("inode") not in (None, c.netns_inode(name)):
        if entry.get("found"):
            return f"namespace {name} is not the one found in place (other inode): left alone"
        # Ours went away and another namespace took the name: not ours to delete.
        return f"namespace {name} is not the one this collection created (other inode)"
    return None


def _netns_remove(c: Cleaner, entry: dict) -> None:
    name = entry["key"]["name"]
    if entry.get("found"):
        _undo_found(c, name, entry.get("undo_found") or {})
        return
    rc, out, _dummy = c.read([c.ip, "netns", "pids", name])
    for pid in out.split() if rc == 0 else []:
        _kill_in_netns(int(pid), name)
    c.run([c.ip, "netns", "delete", name], ("No such file",))


def _netns_verify(c: Cleaner, entry: dict) -> str | None:
    name = entry["key"]["name"]
    if not entry.get("found") and c.netns_exists(name):
        return f"namespace {name} is still there after it was deleted"
    return None


def _kill_in_netns(pid: int, name: str) -> None:
    """SIGKILL a process of the namespace we are removing: identity taken, then checked to be still
    in that namespace, then signalled through _proc (pid 1 and this process never)."""
    if pid <= 1 or pid == os.getpid():
        return
    ident = _proc.identity(pid)
    if ident is None:
        return
    try:
        ns = os.stat(f"/proc/{pid}/ns/net")
        ours = os.stat(os.path.join(NETNS_DIR, name))
    except OSError:
        return
    if (ns.st_dev, ns.st_ino) == (ours.st_dev, ours.st_ino):
        _proc.send(ident, signal.SIGKILL)


def _undo_found(c: Cleaner, ns: str, undo: dict) -> None:
    """Put a namespace found in place back as it was (netns_topology recorded each change before it
    made it): the interfaces made in it go, the settings changed on its own interfaces come back, its
    sysctls are written back. The namespace and its processes stay."""
    ip = [c.ip, "-n", ns]
    gone = ("Cannot find device", "does not exist")
    for ifname in undo.get("links_created", []):
        c.run([*ip, "link", "del", "dev", ifname], gone)
    # pyroute2 only for namespaces found in place
    from pyroute2 import IPRoute  # pylint: disable=import-outside-toplevel
    with IPRoute(netns=ns) as ipr:  # only to ask which interfaces are there: no change through it
        present = {msg.get("ifname") for msg in ipr.link("dump")}
    for ifname, was in sorted((undo.get("links") or {}).items()):
        if ifname not in present:
            continue  # went away with its peer or its driver: nothing of ours left on it
        for cidr in was.get("addresses_added", []):
            c.run([*ip, "addr", "del", cidr, "dev", ifname], ("Cannot assign",))
        for cidr in was.get("addresses_removed", []):
            c.run([*ip, "addr", "add", cidr, "dev", ifname], ("File exists",))
        if was.get("mtu") is not None:
            c.run([*ip, "link", "set", "dev", ifname, "mtu", str(was["mtu"])], ())
        if was.get("mac"):
            c.run([*ip, "link", "set", "dev", ifname, "address", was["mac"]], ())
        if was.get("gro") is not None:
            # imported where used: every module that records an entry imports this table, and pyroute2
            # with the tuning package costs seconds per module run on an emulated guest
            from ansible_collections.xdplab.testbed.plugins.module_utils.tuning._ethtool_netlink import (
                EthtoolNetlink,
            )

            with EthtoolNetlink(netns=ns) as eth:
                eth.set_features(ifname, {"rx-gro": bool(was["gro"])})
        if was.get("up") is False:
            c.run([*ip, "link", "set", "dev", ifname, "down"], ())
    sysctl = c.module.get_bin_path("sysctl", required=bool(undo.get("sysctls")))
    for name, value in sorted((undo.get("sysctls") or {}).items()):
        if value is not None:
            c.run([c.ip, "netns", "exec", ns, sysctl, "-q", "-w", f"{name}={value}"], ())
    if undo.get("lo_was_down"):
        c.run([*ip, "link", "set", "dev", "lo", "down"], ())


# xdp, tc, nft, ovs, neigh, addr ---------------------------------------------------------------------

def _xdp_remove(c: Cleaner, entry: dict) -> None:
    key, netns = entry["key"], entry.get("netns")
    base = [c.ip, *(["-n", netns] if netns else []), "link", "set", "dev", key["interface"]]
    for mode in ("xdpgeneric", "xdpdrv"):
        c.run([*base, mode, "off"], ("Cannot find device", "does not exist"))
    # xdp_prog's entry names the programs found on the interface before the run, pinned:
    # attach them again, then drop the pins.
    bpftool = c.module.get_bin_path("bpftool", required=bool(entry.get("previous")))
    for prev in entry.get("previous", []):
        if not os.path.exists(prev["pin"]):
            raise RuntimeError(f"the {prev['mode']} program {prev['name']} found on {key['interface']} "
                               f"before the run is no longer pinned at {prev['pin']}: it cannot be put back")
        if not in_bpffs(prev["pin"]) or os.path.isdir(prev["pin"]):
            # only a pin is ours to attach from and unlink: an entry naming any other file is left alone
            raise RuntimeError(f"the {prev['mode']} program {prev['name']} of {key['interface']}: {prev['pin']} "
                               "is not a pin in a bpffs, left alone (neither attached nor unlinked)")
        c.run(c.in_netns(netns, [bpftool, "net", "attach", XDP_MODES[prev["mode"]], "pinned",
                                 prev["pin"], "dev", key["interface"]]), ())
        os.unlink(prev["pin"])


def _tc_remove(c: Cleaner, entry: dict) -> None:
    key, netns = entry["key"], entry.get("netns")
    tc = [c.module.get_bin_path("tc", required=True), *(["-n", netns] if netns else [])]
    gone = ("Cannot find", "No such file", "Invalid handle")
    if "pref" not in entry:  # an entry of an older run: the clsact qdisc was all it recorded
        c.run([*tc, "qdisc", "del", "dev", key["interface"], "clsact"], gone)
        return
    # packet_hook's entry (a cls_bpf filter) or vmlab_link's (a u32 wire): our filter, and the
    # clsact qdisc only if we created it and no one else's filter is left on it.
    kind = entry.get("filter", "bpf")
    handle = ["handle", str(entry["handle"])] if "handle" in entry else []  # vmlab_link owns its pref
    c.run([*tc, "filter", "del", "dev", key["interface"], "ingress", "pref", str(entry["pref"]),
           *handle, kind], (*gone, "Filter with specified priority"))
    if entry.get("created_clsact"):
        rc, out, _err = c.read([*tc, "-j", "filter", "show", "dev", key["interface"], "ingress"])
        if rc == 0 and not json.loads(out or "[]"):
            c.run([*tc, "qdisc", "del", "dev", key["interface"], "clsact"], gone)


def _nft_remove(c: Cleaner, entry: dict) -> None:
    nft = c.module.get_bin_path("nft", required=True)
    c.run(c.in_netns(entry.get("netns"), [nft, "delete", "table", entry["key"]["family"], entry["key"]["table"]]),
          ("No such file",))


def _ovs_remove(c: Cleaner, entry: dict) -> None:
    # packet_hook's Open vSwitch datapath: deleting it removes its ports and flows with it
    dpctl = c.module.get_bin_path("ovs-dpctl", required=True)
    c.run(c.in_netns(entry.get("netns"), [dpctl, "del-dp", entry["key"]["datapath"]]),
          ("No such device", "does not exist", "No such file"))


def restorable_neighbour(previous: Any) -> dict | None:
    """The neighbour entry to put back from a recorded ``previous``: one set by hand (permanent, noarp)
    with a checked MAC address, else None (delete ours; a learned entry is learned again)."""
    if not isinstance(previous, dict) or previous.get("state") not in NUD_SET_BY_HAND:
        return None
    lladdr = _validated(_validate.lladdr, previous.get("lladdr"), "recorded neighbour lladdr")
    return {"lladdr": lladdr, "state": previous["state"]}


def _neigh_remove(c: Cleaner, entry: dict) -> None:
    # the neighbour module's entry: the entry found in place, if it was set by hand, comes back;
    # else ours goes (a learned one is learned again)
    key, netns = entry["key"], entry.get("netns")
    ip = [c.ip, *(["-n", netns] if netns else []), "neigh"]
    previous = restorable_neighbour(entry.get("previous"))
    if previous:
        c.run([*ip, "replace", key["address"], "lladdr", previous["lladdr"], "nud", previous["state"],
               "dev", key["interface"]], ())
    else:
        c.run([*ip, "del", key["address"], "dev", key["interface"]],
              ("Cannot find device", "No such file", "does not exist"))


def _addr_remove(c: Cleaner, entry: dict) -> None:
    # the interface_address module's entry: its address goes (one already gone is fine: an IPv6
    # address leaves with the link when a test takes the port down), and the interface goes
    # down again if the module brought it up
    key, netns = entry["key"], entry.get("netns")
    ip = [c.ip, *(["-n", netns] if netns else [])]
    gone = ("Cannot find device", "does not exist", "Cannot assign requested address", "address not found")
    c.run([*ip, "addr", "del", key["address"], "dev", key["interface"]], gone)
    if entry.get("set_up"):
        c.run([*ip, "link", "set", "dev", key["interface"], "down"], gone)


# tuning ---------------------------------------------------------------------------------------------

def _tuning_remove(c: Cleaner, entry: dict) -> None:
    """Restore a tuning snapshot (raises naming what could not be undone; the snapshot stays). The
    restore reads every setting back: that is its verification."""
    # imported where used, as EthtoolNetlink in _undo_found: the restore pulls in pyroute2
    from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _restore

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
        out = _restore.restore_snapshot(c.module, path, ns, ns is None or c.netns_exists(ns), grub_file=grub)
        if not out["done"]:
            reasons.append(f"{out['kind']} snapshot of {out['subject']} ({path}): {out['reason']}")
    if reasons:
        raise RuntimeError("; ".join(reasons))


# napi -----------------------------------------------------------------------------------------------

def _napi_remove(c: Cleaner, entry: dict) -> None:
    """napi_threads' entry: the kthreads' CPUs and the port's threaded value found come back (the port's
    sysfs is its namespace's: written through ip netns exec, which mounts it)."""
    key, netns = entry["key"], entry.get("netns")
    restore_affinity(key["interface"], entry.get("affinity") or {})
    path = f"/sys/class/net/{key['interface']}/threaded"
    tee = c.module.get_bin_path("tee", required=True)
    _command.run(c.module, c.in_netns(netns, [tee, path]), what=f"writing {path} back to {entry.get('found', '0')!r}",
                 gone=("No such file",), data=str(entry.get("found", "0")))


# processes ------------------------------------------------------------------------------------------

def _qemu_identity(key: dict) -> dict | None:
    pid = int(key["pid"])
    return ({"pid": pid, "start": key["start"], "boot_id": key["boot_id"]} if "start" in key
            else _proc.identity(pid))  # older entries: the start time seen now, before the checks


def _qemu_remove(_c: Cleaner, entry: dict) -> None:
    key = entry["key"]
    ident = _qemu_identity(key)
    if ident is None or not _proc.same(ident):
        return  # gone, or the pid is another process now
    try:
        with open(f"/proc/{ident['pid']}/cmdline", "rb") as fh:
            cmdline = fh.read()
    except FileNotFoundError:
        return
    if hashlib.sha256(cmdline).hexdigest() == key.get("cmdline_sha256"):
        _proc.send(ident, signal.SIGKILL)


def _process_remove(c: Cleaner, entry: dict) -> None:
    """A background process of ours (bench_server, pktgen's starter): stopped only while its pid still
    has the recorded start time and boot id; then what it leaves: its log, pktgen's devices."""
    key = entry["key"]
    _proc.stop({"pid": key["pid"], "start": key["start"], "boot_id": key["boot_id"]}, signal.SIGTERM, timeout=5.0)
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
            if not c.netns_exists(netns):
                return  # its namespace, and pktgen's devices in it, are gone
            _netns_switch.call_in_netns(netns, reset)
        else:
            reset()


# ---- the table --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Kind:
    """One ledger kind (see the module docstring for each field)."""
    name: str
    key: dict[str, Check | None]
    remove: Callable[[Cleaner, dict], None]
    order: int
    undo: dict[str, Check] = field(default_factory=dict)
    in_netns: bool = False
    after_netns: bool | None = None
    check: Callable[[Cleaner, dict], str | None] | None = None
    verify: Callable[[Cleaner, dict], str | None] | None = None

    @property
    def goes_after_netns(self) -> bool:
        return self.in_netns if self.after_netns is None else self.after_netns


_IFNAME: dict[str, Check | None] = {"interface": None}


def _ifname(value: Any, where: str) -> None:
    _validated(_validate.ifname, value, where)


def _canonical(validator: Callable[[Any, str], str]) -> Check:
    def check(value: Any, where: str) -> None:
        if _validated(validator, value, where) != value:
            raise LedgerError(f"{where} must be written canonically, got {value!r}")
    return check


def _nft_family(value: Any, where: str) -> None:
    _validated(_validate.nft_family, value, where.rpartition(" ")[0])


def _nft_table(value: Any, where: str) -> None:
    _validated(_validate.nft_name, value, "table", where.rpartition(" ")[0])


_FOUND_LINK = _record({"addresses_added": _list_of(_STR), "addresses_removed": _list_of(_STR), "mtu": _OPT_INT,
                       "mac": _OPT_STR, "gro": _OPT_BOOL, "up": _BOOL})
_UNDO_FOUND = _record({"links_created": _list_of(_ifname), "links": _dict_of(_FOUND_LINK, _ifname),
                       "sysctls": _dict_of(_OPT_STR), "lo_was_down": _BOOL})
_XDP_PREVIOUS = _record({"mode": _one_of(tuple(XDP_MODES)), "prog_id": _INT, "tag": _STR, "name": _STR,
                         "pin": _abs_path}, required=("mode", "name", "pin"))
_NEIGH_PREVIOUS = _typed((dict, type(None)), "a neighbour entry or null")
_NEIGH_ENTRY = _record({"lladdr": _STR, "state": _STR})


def _neigh_previous(value: Any, where: str) -> None:
    _NEIGH_PREVIOUS(value, where)
    if value is not None:
        _NEIGH_ENTRY(value, where)


_ROWS = (
    Kind("netns", {"name": None}, _netns_remove, order=5, check=_netns_check, verify=_netns_verify,
         undo={"found": _BOOL, "inode": _OPT_INT, "undo_found": _UNDO_FOUND}),
    Kind("xdp", _IFNAME, _xdp_remove, order=1, in_netns=True, undo={"previous": _list_of(_XDP_PREVIOUS)}),
    Kind("tc", _IFNAME, _tc_remove, order=2, in_netns=True,
         undo={"pref": _INT, "handle": _INT, "filter": _one_of(TC_FILTERS), "created_clsact": _BOOL}),
    Kind("nft", {"family": _nft_family, "table": _nft_table}, _nft_remove, order=3, in_netns=True),
    Kind("ovs", {"datapath": _ifname}, _ovs_remove, order=3, in_netns=True),
    Kind("neigh", {"interface": None, "address": _canonical(_validate.ip_address)}, _neigh_remove, order=3,
         in_netns=True, undo={"previous": _neigh_previous}),
    Kind("addr", {"interface": None, "address": _canonical(_validate.ip_interface)}, _addr_remove, order=3,
         in_netns=True, undo={"set_up": _BOOL}),
    # A snapshot of a port in a namespace the ledger deletes is dropped, not restored: after it.
    Kind("tuning", {"state_file": None}, _tuning_remove, order=4, after_netns=True,
         undo={"snapshot_kind": _STR, "subject": _STR, "grub_file": _abs_path}),
    # The threaded value and kthread CPUs found on a port (napi_threads).
    Kind("napi", _IFNAME, _napi_remove, order=3, in_netns=True,
         undo={"found": _STR, "affinity": _dict_of(_list_of(_INT))}),
    Kind("qemu", {"pid": None}, _qemu_remove, order=0),
    Kind("process", {"pid": None, "start": None, "boot_id": None}, _process_remove, order=0,
         undo={"tool": _STR, "log": _STR, "pktgen": _STR}),
)
TABLE: dict[str, Kind] = {row.name: row for row in _ROWS}
KINDS: tuple[str, ...] = tuple(TABLE)


def row(kind: Any) -> Kind:
    """The row of a kind; LedgerError naming it when there is none."""
    if not isinstance(kind, str) or kind not in TABLE:
        raise LedgerError(f"ledger kind must be one of {', '.join(KINDS)}, got {kind!r}")
    return TABLE[kind]


def check_key(kind: str, key: Any) -> None:
    """The key of an entry of this kind, field by field; LedgerError naming the bad value."""
    r = row(kind)
    if not isinstance(key, dict):
        raise LedgerError(f"ledger key for {kind} must be a dict, got {key!r}")
    for name in r.key:
        if name not in key:
            raise LedgerError(f"ledger key for {kind} needs {name!r}, got {key!r}")
    for name, value in key.items():
        check = r.key.get(name) or KEY_CHECKS.get(name) or _plain_name
        check(value, f"ledger {kind} {name}")


def check_fields(entry: dict) -> None:
    """The fields an entry holds besides kind, key and netns (run_id, created, and what undoing it
    needs), each by its row; LedgerError naming the field and the value. Fields no row names are left
    alone: undo never reads them."""
    r = row(entry.get("kind"))
    for name, check in {**COMMON_FIELDS, **r.undo}.items():
        if name in entry:
            check(entry[name], f"ledger {r.name} {name}")
