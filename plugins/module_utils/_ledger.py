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
import hashlib
import json
import os
import re
import socket
import tempfile
from dataclasses import dataclass

from ansible_collections.xdplab.testbed.plugins.module_utils._record import write_json_atomic

DEFAULT_DIR = "/var/lib/xdplab/ledger"
DEFAULT_LOCK = "/run/xdplab/run.lock"
KINDS = ("netns", "xdp", "tc", "nft", "tuning", "qemu")
# What each kind's key must hold.
KEY_FIELDS = {
    "netns": ("name",),
    "xdp": ("interface",),
    "tc": ("interface",),
    "nft": ("family", "table"),
    "tuning": ("state_file",),
    "qemu": ("pid",),
}
_NAME_RE = re.compile(r"^[A-Za-z0-9_.:@-]{1,64}\Z")


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
        elif field == "owner_start":
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise LedgerError(f"ledger {kind} owner_start must be a start time in clock ticks, got {value!r}")
        elif field == "state_file":
            if not isinstance(value, str) or not os.path.isabs(value) or ".." in value.split("/"):
                raise LedgerError(f"ledger {kind} state_file must be an absolute path without '..', got {value!r}")
        elif field == "cmdline_sha256":
            if not re.fullmatch(r"[0-9a-f]{64}", str(value)):
                raise LedgerError(f"ledger {kind} cmdline_sha256 must be a sha256 hex digest, got {value!r}")
        elif not isinstance(value, str) or not _NAME_RE.match(value) or value in (".", ".."):
            raise LedgerError(f"ledger {kind} {field} must be a plain name, got {value!r}")
    if netns is not None and (not _NAME_RE.match(netns) or netns in (".", "..")):
        raise LedgerError(f"ledger netns must be a plain name, got {netns!r}")
    return {"kind": kind, "key": dict(sorted(key.items())), "netns": netns}


def entry_id(entry: dict) -> str:
    """Stable file name of an entry: the same object always maps to the same file."""
    ident = json.dumps([entry["kind"], entry["key"], entry.get("netns")], sort_keys=True)
    digest = hashlib.sha256(ident.encode()).hexdigest()[:16]
    return f"{entry['kind']}-{digest}.json"


def ensure_dir(path: str) -> None:
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.stat(path)
    if st.st_mode & 0o022:
        raise LedgerError(f"ledger directory {path!r} is group/world-writable (mode {oct(st.st_mode & 0o777)})")


def record(directory: str, entry: dict, run_id: str | None = None) -> tuple[str, bool]:
    """Write the entry; returns (path, created). Re-recording the same object updates nothing."""
    ensure_dir(directory)
    path = os.path.join(directory, entry_id(entry))
    if os.path.exists(path):
        return path, False
    write_json_atomic(path, dict(entry, run_id=run_id, created=_now()), mode=0o600)
    return path, True


def entries(directory: str) -> list[tuple[str, dict]]:
    """(path, entry) of every valid entry; unreadable files are reported as LedgerError."""
    if not os.path.isdir(directory):
        return []
    out = []
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".json") or name.startswith("."):
            continue
        path = os.path.join(directory, name)
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
            check_entry(data["kind"], data["key"], data.get("netns"))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise LedgerError(f"ledger entry {path} is unreadable: {exc}") from exc
        out.append((path, data))
    return out


# Removal order: processes first, then what lives on interfaces, then tuning, then namespaces
# (deleting a namespace removes its interfaces, and with them their XDP programs and qdiscs).
ORDER = {"qemu": 0, "xdp": 1, "tc": 2, "nft": 3, "tuning": 4, "netns": 5}


def teardown_plan(items: list[tuple[str, dict]]) -> list[tuple[str, dict]]:
    """Entries in removal order; objects inside a namespace that is itself listed are left to the namespace."""
    doomed = {e["key"]["name"] for _dummy, e in items if e["kind"] == "netns"}
    plan = [(p, e) for p, e in items if not (e.get("netns") in doomed and e["kind"] in ("xdp", "tc", "nft"))]
    skipped = [(p, e) for p, e in items if (p, e) not in plan]
    return sorted(plan, key=lambda pe: (ORDER[pe[1]["kind"]], pe[0])) + skipped


# ---- run lock ---------------------------------------------------------------------------------

@dataclass
class Holder:
    pid: int
    pid_start: int | None
    host: str
    run_id: str | None
    since: str

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
    start = pid_start_time(owner, proc)
    if start is not None:
        key["owner_start"] = start
    return check_entry("qemu", key)


def read_lock(path: str) -> Holder | None:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        return Holder(int(data["pid"]), data.get("pid_start"), str(data["host"]), data.get("run_id"),
                      str(data["since"]))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        # A torn or foreign file (a writer killed mid-write): a stale holder on this host, pid 0 never alive.
        return Holder(0, None, socket.gethostname(), None, "?")


def acquire(path: str, pid: int, host: str | None = None, run_id: str | None = None,
            steal: bool = False, proc: str = "/proc") -> tuple[str, Holder | None]:
    """Take the lock for (pid, host). Returns ("acquired"|"held"|"taken-over", previous holder).

    "held": the same holder already has it (re-entrant). Raises LockHeld naming a live holder.
    """
    host = host or socket.gethostname()
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    me = {"pid": pid, "pid_start": pid_start_time(pid, proc) if host == socket.gethostname() else None,
          "host": host, "run_id": run_id, "since": _now()}
    for _dummy in range(3):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            current = read_lock(path)
            if current is None:
                continue  # released between our attempts: try again
            if current.pid == pid and current.host == host:
                return "held", current
            alive = holder_alive(current, socket.gethostname(), proc)
            if alive or (alive is None and not steal):
                raise LockHeld(
                    f"another xdplab run holds the lock {path}: {current.describe()}"
                    + ("" if alive else "; it runs on another host: pass steal=true if it is gone")) from None
            fd2, tmp = tempfile.mkstemp(prefix=".lock-", dir=os.path.dirname(path))
            with os.fdopen(fd2, "w", encoding="utf-8") as fh:
                json.dump(me, fh)
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
            return "taken-over", current
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(me, fh)
        return "acquired", None
    raise LockHeld(f"could not take the lock {path}: it keeps changing hands")


def release(path: str, pid: int, host: str | None = None) -> bool:
    """Remove the lock if (pid, host) holds it. Returns whether it was removed."""
    host = host or socket.gethostname()
    current = read_lock(path)
    if current is None or current.pid != pid or current.host != host:
        return False
    os.unlink(path)
    return True
