# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""State ledger and run lock. Private to the xdplab.testbed collection.

Ledger: everything the collection creates on a host (namespaces, XDP attachments, tc qdiscs, nftables
tables, tuning snapshots, QEMU processes) is recorded *before* it is created, as one small JSON file per
object in the ledger directory. Teardown removes what the entries name, if it still exists, and then
the entries: an interrupted run leaves entries, never unrecorded state, and teardown touches only what
we recorded.

Lock: one run at a time per host. The lock file names its holder (pid, the pid's start time so a
reused pid is not mistaken for the holder, host, run id, when). A holder whose process is gone is
stale and taken over; a live one makes the second run fail at once, naming it.
"""

from __future__ import annotations

import datetime as _dt
import fcntl
import hashlib
import json
import os
import re
import socket
import stat
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ansible_collections.xdplab.testbed.plugins.module_utils.common import _process_identity as _proc
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _validate
from ansible_collections.xdplab.testbed.plugins.module_utils.common._atomic_files import (
    PrivateDirError,
    write_json_atomic,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.common._atomic_files import (
    check_private_dir as _private_dir,
)

DEFAULT_DIR = "/var/lib/xdplab/ledger"
DEFAULT_LOCK = "/run/xdplab/run.lock"
KINDS = ("netns", "xdp", "tc", "nft", "ovs", "neigh", "addr", "tuning", "qemu", "process", "napi")
# What each kind's key must hold.
KEY_FIELDS = {
    "netns": ("name",),
    "xdp": ("interface",),
    "tc": ("interface",),
    "nft": ("family", "table"),
    "ovs": ("datapath",),
    "neigh": ("interface", "address"),
    "addr": ("interface", "address"),
    "tuning": ("state_file",),
    "qemu": ("pid",),
    "process": ("pid", "start", "boot_id"),
    "napi": ("interface",),
}


def _checked(fn, *args):
    try:
        return fn(*args)
    except _validate.ValidationError as exc:
        raise LedgerError(str(exc)) from None


class LedgerError(ValueError):
    """A bad ledger entry or an unusable ledger directory."""


class LockHeld(RuntimeError):
    """The run lock is held by a live process."""


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def check_entry(kind: str, key: dict, netns: str | None = None) -> dict:
    """Validate an entry; raise LedgerError naming the bad value."""
    if kind not in KINDS:
        raise LedgerError(f"ledger kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if not isinstance(key, dict):
        raise LedgerError(f"ledger key for {kind} must be a dict, got {key!r}")
    for field in KEY_FIELDS[kind]:
        if field not in key:
            raise LedgerError(f"ledger key for {kind} needs {field!r}, got {key!r}")
    for field, value in key.items():
        if field in ("pid", "owner"):
            if not isinstance(value, int) or isinstance(value, bool) or value <= 1:
                raise LedgerError(f"ledger {kind} {field} must be a pid > 1, got {value!r}")
        elif field == "boot_id":
            if not isinstance(value, str) or not re.fullmatch(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", value):
                raise LedgerError(f"ledger {kind} boot_id must be a boot id (uuid), got {value!r}")
        elif field in ("owner_start", "start"):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise LedgerError(f"ledger {kind} {field} must be a start time in clock ticks, got {value!r}")
        elif field == "state_file":
            if not isinstance(value, str) or not os.path.isabs(value) or ".." in value.split("/"):
                raise LedgerError(f"ledger {kind} state_file must be an absolute path without '..', got {value!r}")
        elif field == "cmdline_sha256":
            if not re.fullmatch(r"[0-9a-f]{64}", str(value)):
                raise LedgerError(f"ledger {kind} cmdline_sha256 must be a sha256 hex digest, got {value!r}")
        elif field == "family" and kind == "nft":
            _checked(_validate.nft_family, value, f"ledger {kind}")
        elif field == "table" and kind == "nft":
            _checked(_validate.nft_name, value, "table", f"ledger {kind}")
        elif field == "datapath" and kind == "ovs":
            _checked(_validate.ifname, value, f"ledger {kind} datapath")
        elif field == "address" and kind == "addr":
            if _checked(_validate.ip_interface, value, f"ledger {kind} address") != value:
                raise LedgerError(f"ledger {kind} address must be written canonically, got {value!r}")
        elif field == "address" and kind == "neigh":
            if _checked(_validate.ip_address, value, f"ledger {kind} address") != value:
                raise LedgerError(f"ledger {kind} address must be written canonically, got {value!r}")
        else:
            _checked(_validate.ledger_name, value, field, f"ledger {kind}")
    if netns is not None:
        _checked(_validate.netns_name, netns, "ledger netns")
    return {"kind": kind, "key": dict(sorted(key.items())), "netns": netns}


def entry_id(entry: dict) -> str:
    """Stable file name of an entry: the same object always maps to the same file."""
    ident = json.dumps([entry["kind"], entry["key"], entry.get("netns")], sort_keys=True)
    digest = hashlib.sha256(ident.encode()).hexdigest()[:16]
    return f"{entry['kind']}-{digest}.json"


def check_private_dir(path: str, what: str = "ledger directory", create: bool = True) -> None:
    """common._atomic_files.check_private_dir, failing with LedgerError."""
    try:
        _private_dir(path, what, create)
    except PrivateDirError as exc:
        raise LedgerError(str(exc)) from None


def ensure_dir(path: str) -> None:
    check_private_dir(path)


def record(directory: str, entry: dict, run_id: str | None = None, **undo: Any) -> tuple[str, bool]:
    """Write the entry, with what undoing needs (`undo`: what was found, what will be made);
    returns (path, created). Re-recording the same object updates nothing."""
    ensure_dir(directory)
    path = os.path.join(directory, entry_id(entry))
    if os.path.lexists(path):
        return path, False
    write_json_atomic(path, dict(undo, **entry, run_id=run_id, created=_now()), mode=0o600)
    return path, True


def read(directory: str, entry: dict) -> dict | None:
    """The recorded entry of this object, or None."""
    try:
        return _read_entry(os.path.join(directory, entry_id(entry)))
    except FileNotFoundError:
        return None


def annotate(path: str, **fields: Any) -> None:
    """Add what undoing needs, learnt after acting (a namespace's inode), to a recorded entry."""
    data = _read_entry(path)
    data.update(fields)
    write_json_atomic(path, data, mode=0o600)


def forget(directory: str, entry: dict) -> bool:
    """Drop the entry of an object that is gone; True if there was one."""
    path = os.path.join(directory, entry_id(entry))
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True


def forget_inside(directory: str, netns: str) -> list[str]:
    """Drop the entries of objects inside a namespace that is gone (they went with it)."""
    dropped = []
    for path, entry in entries(directory):
        if entry.get("netns") == netns and entry["kind"] in ("xdp", "tc", "nft", "ovs", "addr"):
            os.unlink(path)
            dropped.append(path)
    return dropped


def tuning_entry(state_file: str, netns: str | None = None) -> dict:
    """The entry of a tuning snapshot file (nic_tuning, irq_affinity, host_tuning), made in ``netns``."""
    return check_entry("tuning", {"state_file": state_file}, netns)


def record_tuning(directory: str | None, state_file: str, netns: str | None, run_id: str | None,
                  snapshot_kind: str, subject: str, **undo: Any) -> str | None:
    """Record a tuning snapshot before the tuning acts (the ledger's cleanup restores from it);
    no ledger directory, no entry."""
    if not directory:
        return None
    return record(directory, tuning_entry(state_file, netns), run_id, snapshot_kind=snapshot_kind,
                  subject=subject, **undo)[0]


def forget_tuning(directory: str | None, state_file: str, netns: str | None) -> bool:
    """Drop the entry of a snapshot that a restore removed."""
    return bool(directory) and forget(directory, tuning_entry(state_file, netns))


def _read_entry(path: str) -> dict:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, encoding="utf-8") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise LedgerError("not a regular file")
        data = json.loads(fh.read(1 << 16))
    check_entry(data["kind"], data["key"], data.get("netns"))
    return data


def scan(directory: str) -> tuple[list[tuple[str, dict]], list[tuple[str, str]]]:
    """((path, entry) of every valid entry, (path, reason) of every unreadable one)."""
    if not os.path.isdir(directory):
        return [], []
    check_private_dir(directory, create=False)
    good, bad = [], []
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".json") or name.startswith("."):
            continue
        path = os.path.join(directory, name)
        try:
            good.append((path, _read_entry(path)))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            bad.append((path, f"{type(exc).__name__}: {exc}"))
    return good, bad


def entries(directory: str) -> list[tuple[str, dict]]:
    """(path, entry) of every valid entry; unreadable ones are left out (see scan, set_aside)."""
    return scan(directory)[0]


def set_aside(path: str) -> str:
    """Rename an unreadable entry out of the ledger's way (<name>.unreadable-<time>); returns the new path.
    It is kept for a human to look at, never acted on."""
    new = f"{path}.unreadable-{_dt.datetime.now(_dt.UTC).strftime('%Y%m%dT%H%M%SZ')}"
    os.rename(path, new)
    return new


# Removal order: processes first, then what lives on interfaces, then tuning, then namespaces
# (deleting a namespace removes its interfaces, and with them their XDP programs and qdiscs).
ORDER = {"qemu": 0, "process": 0, "xdp": 1, "tc": 2, "nft": 3, "ovs": 3, "neigh": 3, "addr": 3, "napi": 3, "tuning": 4,
         "netns": 5}


def teardown_plan(items: list[tuple[str, dict]], keep: Iterable[str] = (),
                  subrank: dict[str, Callable[[dict], int]] | None = None) -> list[tuple[str, dict]]:
    """Entries in removal order (ORDER, then ``subrank[kind](entry)``, then path). Objects inside a
    namespace that is itself listed go last: deleting the namespace took them (and a tuning snapshot
    of a port in it is then dropped, not restored). With ``keep`` holding "netns", namespaces stay and
    what is inside them is undone in its own turn."""
    # A namespace found in place (``found``) is put back, not deleted: what is inside it is undone too.
    created = {e["key"]["name"] for _dummy, e in items if e["kind"] == "netns" and not e.get("found")}
    doomed = set() if "netns" in keep else created
    inside = ("xdp", "tc", "nft", "ovs", "addr", "tuning", "napi")
    plan = [(p, e) for p, e in items if not (e.get("netns") in doomed and e["kind"] in inside)]
    skipped = [(p, e) for p, e in items if (p, e) not in plan]
    subrank = subrank or {}

    def rank(pe: tuple[str, dict]) -> tuple[int, int, str]:
        sub = subrank.get(pe[1]["kind"])
        return ORDER[pe[1]["kind"]], sub(pe[1]) if sub else 0, pe[0]
    return sorted(plan, key=rank) + skipped


# ---- run lock ---------------------------------------------------------------------------------

@dataclass
class Holder:
    pid: int
    pid_start: int | None
    host: str
    run_id: str | None
    since: str
    boot_id: str | None = None

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host} since {self.since}" + (f" (run {self.run_id})" if self.run_id else "")


def pid_start_time(pid: int, proc: str = "/proc") -> int | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat), None if gone."""
    try:
        with open(f"{proc}/{pid}/stat", encoding="ascii", errors="replace") as fh:
            text = fh.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # comm (field 2) may hold spaces and parentheses: split after the last ')'.
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[19])


def holder_alive(holder: Holder, this_host: str, proc: str = "/proc") -> bool | None:
    """True/False when it can be told (same host), None when the holder runs on another host."""
    if holder.host != this_host:
        return None
    start = pid_start_time(holder.pid, proc)
    if start is None:
        return False
    return holder.pid_start is None or start == holder.pid_start


def owner_alive(key: dict, proc: str = "/proc") -> bool:
    """Whether the process that recorded an entry (key ``owner``/``owner_start``) still runs: its
    object is then in use, not left behind."""
    if "owner" not in key:
        return False
    start = pid_start_time(key["owner"], proc)
    return start is not None and start == key.get("owner_start", start)


def qemu_entry(pid: int, argv: list[str], owner: int | None = None, proc: str = "/proc") -> dict:
    """The ledger entry of a QEMU process started with argv by `owner` (default: this process)."""
    owner = os.getpid() if owner is None else owner
    cmdline = b"\0".join(os.fsencode(a) for a in argv) + b"\0"
    key = {"pid": pid, "cmdline_sha256": hashlib.sha256(cmdline).hexdigest(), "owner": owner}
    ident = _proc.identity(pid, proc)
    if ident is not None:  # the QEMU itself: pid + start time + boot id, checked before it is signalled
        key.update(start=ident["start"], boot_id=ident["boot_id"])
    start = pid_start_time(owner, proc)
    if start is not None:
        key["owner_start"] = start
    return check_entry("qemu", key)


def process_entry(pid: int, netns: str | None = None, proc: str = "/proc") -> dict:
    """The ledger entry of a background process of ours (bench_server's servers, pktgen's starter):
    its identity, pid + start time + boot id, so that teardown signals it only while it is still that
    process. Record it through _proc.spawn_recorded, before the program runs."""
    ident = _proc.identity(pid, proc)
    if ident is None:
        raise LedgerError(f"process {pid} is gone before it could be recorded")
    return check_entry("process", ident, netns)


def record_process(directory: str, pid: int, netns: str | None, run_id: str | None, **undo: Any) -> str:
    """Record a process just spawned (see process_entry); ``undo`` says what else stopping it needs
    (``tool``, its ``log`` file, ``pktgen`` proc dir to reset). Returns the entry file."""
    path, _created = record(directory, process_entry(pid, netns), run_id, **undo)
    return path


def read_lock(path: str) -> Holder | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, encoding="utf-8") as fh:
            data = json.loads(fh.read(1 << 16))
        return Holder(int(data["pid"]), data.get("pid_start"), str(data["host"]), data.get("run_id"),
                      str(data["since"]), data.get("boot_id"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        # A foreign file, or a symlink: a stale holder on this host, pid 0 never alive. (The lock is
        # published whole with link/rename, so a run never sees it half written.)
        return Holder(0, None, socket.gethostname(), None, "?")


class _Guard:
    """flock on the lock's directory around check-and-replace: two runs never both take over a stale
    lock. The directory, not a file beside the lock: a guard file would outlive every run (removing a
    flock file races with a waiter that holds it open), and the directory is checked to be ours."""

    def __init__(self, path: str):
        self.path = os.path.dirname(path) or "."

    def __enter__(self):
        self.fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def _publish(path: str, data: dict, replace: bool) -> None:
    """Write the whole lock to a temp file, then link it into place (create: fails if one appeared) or
    rename it over the stale one (take-over): readers see no lock or a complete one, never an empty file."""
    fd, tmp = tempfile.mkstemp(prefix=".lock-", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        if replace:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def _lock_dir(path: str) -> None:
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o755, exist_ok=True)
    st = os.lstat(directory)
    if stat.S_ISLNK(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise LedgerError(f"lock directory {directory!r} is a symlink, not ours, or group/world-writable")


def same_holder(a: Holder, b: Holder) -> bool:
    return (a.pid, a.pid_start, a.host, a.since) == (b.pid, b.pid_start, b.host, b.since)


def acquire(path: str, pid: int, host: str | None = None, run_id: str | None = None,
            steal: bool = False, proc: str = "/proc", pid_start: int | None = None,
            boot_id: str | None = None, stale: Holder | None = None) -> tuple[str, Holder | None]:
    """Take the lock for (pid, host). Returns ("acquired"|"held"|"taken-over", previous holder).

    "held": the same holder already has it (re-entrant). Raises LockHeld naming a live holder. A holder
    on another host is taken over only with ``steal``, or when it is exactly ``stale`` (a holder its own
    host has found dead: the controller's action plugin checks its own pids)."""
    host = host or socket.gethostname()
    _lock_dir(path)
    local = host == socket.gethostname()
    if pid_start is None and local:
        pid_start = pid_start_time(pid, proc)
    me = {"pid": pid, "pid_start": pid_start,
          "host": host, "run_id": run_id, "since": _now(), "boot_id": boot_id}
    with _Guard(path):
        current = read_lock(path)
        if current is None:
            _publish(path, me, replace=False)
            return "acquired", None
        if current.pid == pid and current.host == host:
            return "held", current
        alive = holder_alive(current, socket.gethostname(), proc)
        if alive is None and stale is not None and same_holder(current, stale):
            alive = False
        if alive or (alive is None and not steal):
            raise LockHeld(
                f"another xdplab run holds the lock {path}: {current.describe()}"
                + ("" if alive else "; it runs on another host: pass steal=true if it is gone"))
        _publish(path, me, replace=True)
        return "taken-over", current


def release(path: str, pid: int, host: str | None = None) -> bool:
    """Remove the lock if (pid, host) holds it. Returns whether it was removed."""
    host = host or socket.gethostname()
    if not os.path.lexists(path):
        return False
    with _Guard(path):
        current = read_lock(path)
        if current is None or current.pid != pid or current.host != host:
            return False
        os.unlink(path)
    return True


# --- neighbour entries (the neighbour module's undo) -------------------------------------------------
# NUD states by name (include/uapi/linux/neighbour.h).
NUD = {"incomplete": 0x01, "reachable": 0x02, "stale": 0x04, "delay": 0x08, "probe": 0x10, "failed": 0x20,
       "noarp": 0x40, "permanent": 0x80, "none": 0x00}
# States a user (or a tool) sets and that do not come back by themselves: put back exactly. A learned
# entry (reachable, stale, ...) is learned again once ours is gone.
NUD_SET_BY_HAND = ("permanent", "noarp")
LLADDR_RE = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")


def nud_name(value: int) -> str:
    """The name of a NUD state bit set (the most lasting one when several are set)."""
    for name in ("permanent", "noarp", "reachable", "stale", "delay", "probe", "failed", "incomplete"):
        if value & NUD[name]:
            return name
    return "none"


def nud_value(name: str) -> int:
    if name not in NUD:
        raise LedgerError(f"neighbour state must be one of {', '.join(NUD)}, got {name!r}")
    return NUD[name]


def check_lladdr(value, where: str = "lladdr") -> str:
    """A 6-byte MAC address, lower case; LedgerError naming it otherwise."""
    text = str(value).strip().lower() if isinstance(value, str) else ""
    if not LLADDR_RE.match(text):
        raise LedgerError(f"{where} must be a MAC address like 02:00:00:00:00:01, got {value!r}")
    return text


def restorable_neighbour(previous) -> dict | None:
    """The neighbour entry to put back from a recorded ``previous``: one set by hand (permanent, noarp)
    with a checked MAC address, else None (delete ours; a learned entry is learned again)."""
    if not isinstance(previous, dict) or previous.get("state") not in NUD_SET_BY_HAND:
        return None
    return {"lladdr": check_lladdr(previous.get("lladdr"), "recorded neighbour lladdr"), "state": previous["state"]}
