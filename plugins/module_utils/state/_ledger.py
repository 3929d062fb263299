# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""State ledger and run lock. Private to the xdplab.testbed collection.

Ledger: everything the collection creates on a host (namespaces, XDP attachments, tc qdiscs, nftables
tables, tuning snapshots, QEMU processes) is recorded *before* it is created, as one small JSON file per
object in the ledger directory. Teardown removes what the entries name, if it still exists, and then
the entries: an interrupted run leaves entries, never unrecorded state, and teardown touches only what
we recorded.

Lock: one run at a time per host. The lock file names its holder by machine id, boot id, pid and the
pid's start time (so neither a clone with the same hostname nor a reused pid is mistaken for it), with
host, run id and since when for people. A holder provably gone - it ran on this boot of this machine
and that process is gone - is stale and taken over; any other makes the second run fail at once,
naming it and how to take it over by name.
"""

from __future__ import annotations

import datetime as _dt
import fcntl
import hashlib
import json
import os
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
from ansible_collections.xdplab.testbed.plugins.module_utils.common._testbed_facts import LEDGER_DIR
from ansible_collections.xdplab.testbed.plugins.module_utils.state import _kinds

DEFAULT_DIR = LEDGER_DIR
DEFAULT_LOCK = "/run/xdplab/run.lock"
# The kinds, what each key and each entry's undo fields hold, and how each is undone: one row per kind.
KINDS = _kinds.KINDS
LedgerError = _kinds.LedgerError


def _checked(fn, *args):
    try:
        return fn(*args)
    except _validate.ValidationError as exc:
        raise LedgerError(str(exc)) from None


class LockHeld(RuntimeError):
    """The run lock is held by a live process."""


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def check_entry(kind: str, key: dict, netns: str | None = None) -> dict:
    """Validate an entry's kind, key (by the kind's row) and namespace; raise LedgerError naming the bad
    value."""
    _kinds.check_key(kind, key)
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
    data = dict(undo, **entry, run_id=run_id, created=_now())
    _kinds.check_fields(data)
    write_json_atomic(path, data, mode=0o600)
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
    _kinds.check_fields(data)
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
        if entry.get("netns") == netns and _kinds.TABLE[entry["kind"]].in_netns:
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
    _kinds.check_fields(data)  # what undoing it reads: an entry with a bad one is set aside, never acted on
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


def teardown_plan(items: list[tuple[str, dict]], keep: Iterable[str] = (),
                  subrank: dict[str, Callable[[dict], int]] | None = None) -> list[tuple[str, dict]]:
    """Entries in removal order (each kind's row's ``order``: processes first, then what lives on
    interfaces, then tuning, then namespaces; then ``subrank[kind](entry)``, then path). Objects inside a
    namespace that is itself listed go last: deleting the namespace took them (and a tuning snapshot
    of a port in it is then dropped, not restored). With ``keep`` holding "netns", namespaces stay and
    what is inside them is undone in its own turn."""
    # A namespace found in place (``found``) is put back, not deleted: what is inside it is undone too.
    created = {e["key"]["name"] for _dummy, e in items if e["kind"] == "netns" and not e.get("found")}
    doomed = set() if "netns" in keep else created
    plan = [(p, e) for p, e in items if not (e.get("netns") in doomed and _kinds.TABLE[e["kind"]].goes_after_netns)]
    skipped = [(p, e) for p, e in items if (p, e) not in plan]
    subrank = subrank or {}

    def rank(pe: tuple[str, dict]) -> tuple[int, int, str]:
        sub = subrank.get(pe[1]["kind"])
        return _kinds.TABLE[pe[1]["kind"]].order, sub(pe[1]) if sub else 0, pe[0]
    return sorted(plan, key=rank) + skipped


# ---- run lock ---------------------------------------------------------------------------------

@dataclass
class Holder:
    """Who holds the run lock: a process named by machine id, boot id, pid and start time (the
    hostname is for people: cloned lab machines share it). ``unreadable`` is set for a lock file that
    is not a lock (garbage, a symlink): the sha256 of its first bytes, which an override must name."""
    pid: int
    pid_start: int | None
    host: str
    run_id: str | None
    since: str
    boot_id: str | None = None
    machine_id: str | None = None
    unreadable: str | None = None

    def token(self) -> str:
        """The name an explicit take-over must give (``steal``): it matches this holder and no other."""
        if self.unreadable:
            return f"unreadable:{self.unreadable}"
        return f"{self.pid}:{self.pid_start}@{self.machine_id}/{self.boot_id}"

    def identity(self) -> tuple:
        return (self.pid, self.pid_start, self.boot_id, self.machine_id, self.unreadable)

    def describe(self) -> str:
        if self.unreadable:
            return f"a lock file that is not a readable xdplab lock (sha256 of its start {self.unreadable})"
        return (f"pid {self.pid} (start {self.pid_start}) on {self.host} (machine-id {self.machine_id}, "
                f"boot {self.boot_id}) since {self.since}" + (f" (run {self.run_id})" if self.run_id else ""))


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


def holder_alive(holder: Holder, proc: str = "/proc", machine: str | None = None,
                 boot: str | None = None) -> bool | None:
    """Whether the holder still runs: True/False only when it can be told here, that is when the holder
    ran on this very boot of this very machine (machine id and boot id both ours); None otherwise (another
    machine, a clone with our hostname or machine id, another boot, a lock without identity, garbage)."""
    machine = machine if machine is not None else _proc.machine_id()
    boot = boot if boot is not None else _proc.boot_id(proc)
    if holder.unreadable or not machine or holder.machine_id != machine or holder.boot_id != boot:
        return None
    if holder.pid <= 1:
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
    """The lock's holder, None when there is no lock. A file that is not a lock (garbage, a symlink, a
    lock without pid/host) is a holder nobody can judge (``unreadable``): never taken over silently."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:  # a symlink (ELOOP), or worse
        return Holder(0, None, "?", None, "?", unreadable=hashlib.sha256(str(exc).encode()).hexdigest()[:16])
    with os.fdopen(fd, "rb") as fh:
        raw = fh.read(1 << 16) if stat.S_ISREG(os.fstat(fh.fileno()).st_mode) else b"not a regular file"
    try:
        data = json.loads(raw)
        pid_start = data.get("pid_start")
        holder = Holder(int(data["pid"]), None if pid_start is None else int(pid_start), str(data["host"]),
                        data.get("run_id"), str(data["since"]), data.get("boot_id"), data.get("machine_id"))
        if isinstance(data["pid"], bool) or holder.pid < 0:
            raise ValueError("pid")
        return holder
    except (ValueError, KeyError, TypeError, AttributeError):
        # The lock is published whole with link/rename, so a run never sees it half written: this is
        # someone else's file.
        return Holder(0, None, "?", None, "?", unreadable=hashlib.sha256(raw).hexdigest()[:16])


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
    return a.identity() == b.identity() and (a.host, a.since) == (b.host, b.since)


def holder_identity(pid: int, host: str | None = None, pid_start: int | None = None, boot_id: str | None = None,
                    machine_id: str | None = None, proc: str = "/proc") -> dict:
    """The identity a lock records for ``pid``. Without ``host`` the pid is a process of this machine and
    its start time, boot id and machine id are read here; a holder on another machine brings its own
    (the run_lock action plugin reads them on the controller), and what it does not bring stays unknown:
    such a lock can then be taken over only by naming it."""
    if host is None:
        host = socket.gethostname()
        pid_start = pid_start if pid_start is not None else pid_start_time(pid, proc)
        boot_id = boot_id or _proc.boot_id(proc)
        machine_id = machine_id or _proc.machine_id()
    return {"pid": pid, "pid_start": pid_start, "host": host, "boot_id": boot_id, "machine_id": machine_id}


def held_message(path: str, current: Holder, alive: bool | None) -> str:
    if alive:
        return f"another xdplab run holds the lock {path}: {current.describe()}; it is running"
    why = ("this host cannot tell whether it still runs (it ran on another machine or another boot, or the "
           "lock names no full identity)") if not current.unreadable else "it was not written by a run of ours"
    return (f"another xdplab run holds the lock {path}: {current.describe()}; {why}. If that run is over, "
            f"take the lock over by naming it: -e run_lock_takeover={current.token()} (run_lock "
            f"steal), or remove {path} on this host")


def acquire(path: str, pid: int, host: str | None = None, run_id: str | None = None,
            steal: str | None = None, proc: str = "/proc", pid_start: int | None = None,
            boot_id: str | None = None, stale: Holder | None = None,
            machine_id: str | None = None) -> tuple[str, Holder | None]:
    """Take the lock for the process ``pid`` (see holder_identity). Returns ("acquired"|"held"|"taken-over",
    previous holder).

    "held": the same holder - pid, start time, boot id and machine id - already has it (re-entrant).
    A holder that provably gone (it ran on this boot of this machine and its pid is gone or has another
    start time) is taken over. Any other holder raises LockHeld naming it and how to release it, unless
    it is exactly ``stale`` (a holder its own machine found dead: the controller's action plugin checks
    its own pids) or ``steal`` is its token (Holder.token(): an override that names the holder)."""
    _lock_dir(path)
    me = dict(holder_identity(pid, host, pid_start, boot_id, machine_id, proc), run_id=run_id, since=_now())
    mine = Holder(me["pid"], me["pid_start"], me["host"], run_id, me["since"], me["boot_id"], me["machine_id"])
    with _Guard(path):
        current = read_lock(path)
        if current is None:
            _publish(path, me, replace=False)
            return "acquired", None
        if current.identity() == mine.identity() and current.host == mine.host:
            return "held", current
        alive = holder_alive(current, proc)
        if alive is None and ((stale is not None and same_holder(current, stale))
                              or (steal is not None and steal == current.token())):
            alive = False
        if alive is not False:
            raise LockHeld(held_message(path, current, alive))
        _publish(path, me, replace=True)
        return "taken-over", current


def release(path: str, pid: int, host: str | None = None, pid_start: int | None = None,
            boot_id: str | None = None, machine_id: str | None = None, proc: str = "/proc") -> bool:
    """Remove the lock if this very holder (full identity, as acquire) has it. Returns whether it was removed."""
    me = holder_identity(pid, host, pid_start, boot_id, machine_id, proc)
    if not os.path.lexists(path):
        return False
    with _Guard(path):
        current = read_lock(path)
        mine = (me["pid"], me["pid_start"], me["boot_id"], me["machine_id"], None)
        if current is None or current.identity() != mine or current.host != me["host"]:
            return False
        os.unlink(path)
    return True
