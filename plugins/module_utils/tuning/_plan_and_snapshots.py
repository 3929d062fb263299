# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tuning planners and the snapshot store (private to xdplab.testbed).

This module is private to the xdplab.testbed collection: its API may change
without notice.

Pure logic only: no netlink, no subprocesses.  ``nic_tuning``,
``irq_affinity`` and ``host_tuning`` read live state, hand it here with what
the user asked for, and get back a plan (what changes, from what to what),
the settings the device cannot take, and the bad-input errors.  Nothing is
applied unless the whole plan is clean, so a bad value never leaves a
half-applied call behind.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.xdplab.testbed.plugins.module_utils.common._atomic_files import (
    PrivateDirError,
    check_private_dir,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.common._testbed_facts import TUNING_DIR
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning._nic_knobs import (
    BOOL_KEYS,
    FEATURE_ALIASES,
    KEY_ALIASES,
    MAXIMA,
    SCALAR_KEYS,
)

SNAPSHOT_SCHEMA = "xdplab.tuning-snapshot/v1"
DEFAULT_STATE_DIR = TUNING_DIR

ON_UNSUPPORTED = ("fail", "warn", "skip")


class TuningInputError(ValueError):
    """Bad input: names the bad value.  Nothing may be applied when raised."""


@dataclass
class Unsupported:
    group: str
    key: str
    message: str


@dataclass
class NicPlan:
    interface: str
    changes: dict[str, dict[str, Any]] = field(default_factory=dict)
    before: dict[str, dict[str, Any]] = field(default_factory=dict)
    unsupported: list[Unsupported] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any(self.changes.values())

    def add(self, group: str, key: str, old: Any, new: Any) -> None:
        self.changes.setdefault(group, {})[key] = new
        self.before.setdefault(group, {})[key] = old


def _norm_key(key: str) -> str:
    return str(key).strip().lower().replace("-", "_")


def normalize_request(params: dict[str, Any]) -> dict[str, Any]:
    """Canonicalize a nic_tuning request; raise TuningInputError naming the first unknown key/bad value.

    ``params`` has the module's option names: coalesce, ring, channels, pause
    (dicts), features, private_flags ({name: bool}), mtu (int or None).
    """
    out: dict[str, Any] = {}
    for group, keys in SCALAR_KEYS.items():
        given = params.get(group) or {}
        if not isinstance(given, dict):
            raise TuningInputError(f"{group} must be a dict of settings, got {given!r}")
        canon: dict[str, int | bool] = {}
        for raw_key, value in given.items():
            key = _norm_key(raw_key)
            key = KEY_ALIASES.get(group, {}).get(key, key)
            if key not in keys:
                raise TuningInputError(
                    f"unknown {group} setting {raw_key!r} (known: {', '.join(keys)})"
                )
            canon[key] = _coerce(group, key, raw_key, value)
        if canon:
            out[group] = canon
    for group in ("features", "private_flags"):
        given = params.get(group) or {}
        if not isinstance(given, dict):
            raise TuningInputError(f"{group} must be a dict of name: true/false, got {given!r}")
        canon_b = {str(k).strip(): _as_bool(group, k, v) for k, v in given.items()}
        if canon_b:
            out[group] = canon_b
    mtu = params.get("mtu")
    if mtu is not None:
        if isinstance(mtu, bool) or not isinstance(mtu, int) or mtu <= 0:
            raise TuningInputError(f"mtu must be a positive integer, got {mtu!r}")
        out["mtu"] = mtu
    return out


_TRUE = {"on", "true", "yes", "1", "enable", "enabled"}
_FALSE = {"off", "false", "no", "0", "disable", "disabled"}


def _as_bool(group: str, key: Any, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise TuningInputError(f"{group} {key}: expected on/off (a boolean), got {value!r}")


def _coerce(group: str, key: str, raw_key: Any, value: Any) -> int | bool | str:
    if key in BOOL_KEYS[group]:
        return _as_bool(group, raw_key, value)
    if key in MAXIMA.get(group, {}) and isinstance(value, str) and value.strip().lower() == "max":
        return "max"  # type: ignore[return-value]  # resolved against the device maximum by plan_nic
    if isinstance(value, bool):
        raise TuningInputError(f"{group} {raw_key}: expected a non-negative integer, got {value!r}")
    try:
        num = int(str(value).strip(), 0) if isinstance(value, str) else int(value)
    except (TypeError, ValueError):
        raise TuningInputError(f"{group} {raw_key}: expected a non-negative integer, got {value!r}") from None
    if num < 0 or num > 0xFFFFFFFF:
        raise TuningInputError(f"{group} {raw_key}: {num} is outside 0..4294967295")
    return num


def resolve_feature(name: str, known: list[str]) -> list[str]:
    """Kernel feature names for a short or kernel name; [] when it names nothing on this kernel."""
    if name in known:
        return [name]
    pattern = FEATURE_ALIASES.get(name.lower())
    if pattern is None:
        return []
    rx = re.compile(rf"^(?:{pattern})\Z")
    return [k for k in known if rx.match(k)]


def plan_nic(
    interface: str,
    current: dict[str, Any],
    unsupported_groups: dict[str, str],
    desired: dict[str, Any],
    mtu_info: dict[str, int] | None = None,
) -> NicPlan:
    """Compare a canonical request with a raw read (see _ethtool.read_nic_raw) and plan the change.

    ``mtu_info`` is {"mtu", "min_mtu", "max_mtu"} from rtnetlink.  A ring or
    channel value ``"max"`` means the device maximum.
    Out-of-range values, unknown feature and private-flag names are errors
    (bad input, always fatal); settings the device lacks are ``unsupported``
    (fatal, a warning or skipped per on_unsupported, decided by the caller).
    """
    plan = NicPlan(interface)
    for group in SCALAR_KEYS:
        want = desired.get(group)
        if not want:
            continue
        if group not in current:
            reason = unsupported_groups.get(group, "not supported")
            for key in want:
                plan.unsupported.append(Unsupported(
                    group, key, f"{interface}: {group} setting {key} is not supported by the device ({reason})"))
            continue
        have = current[group]
        for key, value in want.items():
            if key not in have:
                plan.unsupported.append(Unsupported(
                    group, key, f"{interface}: {group} setting {key} is not supported by the device"))
                continue
            max_key = MAXIMA.get(group, {}).get(key)
            if max_key is not None:
                maximum = have.get(max_key, 0)
                if value == "max":
                    value = maximum
                if maximum == 0 and value != 0:
                    plan.unsupported.append(Unsupported(
                        group, key, f"{interface}: {group} {key} is not supported by the device (maximum 0)"))
                    continue
                if value > maximum:
                    plan.errors.append(
                        f"{interface}: {group} {key}={value} exceeds the device maximum {maximum}")
                    continue
            if have[key] != value:
                plan.add(group, key, have[key], value)
    if desired.get("features"):
        _plan_features(plan, current, unsupported_groups, desired["features"])
    if desired.get("private_flags"):
        _plan_private_flags(plan, current, unsupported_groups, desired["private_flags"])
    if "mtu" in desired:
        _plan_mtu(plan, desired["mtu"], mtu_info)
    return plan


def _plan_features(plan: NicPlan, current: dict[str, Any], unsupported_groups: dict[str, str],
                   want: dict[str, bool]) -> None:
    iface = plan.interface
    if "features" not in current:
        reason = unsupported_groups.get("features", "not supported")
        for name in want:
            plan.unsupported.append(Unsupported("features", name, f"{iface}: cannot read features ({reason})"))
        return
    feats = current["features"]
    known = sorted(feats["hw"])
    for name, value in want.items():
        members = resolve_feature(name, known)
        if not members:
            plan.errors.append(
                f"{iface}: unknown feature name {name!r} (short names: {', '.join(sorted(FEATURE_ALIASES))};"
                f" or a kernel feature name such as rx-gro)")
            continue
        changeable = [m for m in members if feats["hw"].get(m) and not feats["nochange"].get(m)]
        if not changeable and all(bool(feats["wanted"].get(m)) == value for m in members):
            continue  # fixed, but already what was asked (lro: false on a device without LRO)
        if not changeable:
            plan.unsupported.append(Unsupported(
                "features", name, f"{iface}: feature {name} ({', '.join(members)}) is fixed on this device"))
            continue
        for member in changeable:
            if bool(feats["wanted"].get(member)) != value:
                plan.add("features", member, bool(feats["wanted"].get(member)), value)


def _plan_private_flags(plan: NicPlan, current: dict[str, Any], unsupported_groups: dict[str, str],
                        want: dict[str, bool]) -> None:
    iface = plan.interface
    if "private_flags" not in current:
        reason = unsupported_groups.get("private_flags", "not supported")
        for name in want:
            plan.unsupported.append(Unsupported(
                "private_flags", name, f"{iface}: private flag {name} is not supported by the device ({reason})"))
        return
    have = current["private_flags"]
    for name, value in want.items():
        if name not in have:
            plan.errors.append(
                f"{iface}: unknown private flag {name!r} (the device has: {', '.join(sorted(have))})")
        elif have[name] != value:
            plan.add("private_flags", name, have[name], value)


def _plan_mtu(plan: NicPlan, mtu: int, info: dict[str, int] | None) -> None:
    if not info:
        plan.errors.append(f"{plan.interface}: cannot read the current MTU")
        return
    lo, hi = info.get("min_mtu"), info.get("max_mtu")
    if lo is not None and mtu < lo or hi and mtu > hi:
        plan.errors.append(f"{plan.interface}: mtu {mtu} is outside the device range {lo}..{hi}")
        return
    if info["mtu"] != mtu:
        plan.add("mtu", "mtu", info["mtu"], mtu)


def snapshot_from_raw(current: dict[str, Any], mtu_info: dict[str, int] | None) -> dict[str, Any]:
    """The restorable part of a raw read, in the same canonical shape as a request."""
    snap: dict[str, Any] = {}
    for group, keys in SCALAR_KEYS.items():
        if group not in current:
            continue
        have = current[group]
        vals = {}
        for key in keys:
            if key not in have:
                continue
            max_key = MAXIMA.get(group, {}).get(key)
            if max_key is not None and not have.get(max_key):
                continue
            vals[key] = have[key]
        if vals:
            snap[group] = vals
    if "features" in current:
        feats = current["features"]
        changeable = [n for n in sorted(feats["hw"]) if feats["hw"][n] and not feats["nochange"].get(n)]
        snap["features"] = {n: bool(feats["wanted"].get(n)) for n in changeable}
    if "private_flags" in current:
        snap["private_flags"] = dict(current["private_flags"])
    if mtu_info and "mtu" in mtu_info:
        snap["mtu"] = mtu_info["mtu"]
    return snap


def apply_order(changes: dict[str, dict[str, Any]]) -> list[str]:
    """Groups in the order they are applied (MTU and queue counts before the rest)."""
    order = ("mtu", "channels", "ring", "features", "private_flags", "coalesce", "pause")
    return [g for g in order if changes.get(g)]


# Groups whose change makes most drivers reset the device and bring the link up again.
RESETTING_GROUPS = ("mtu", "channels", "ring")


def wait_for_carrier(ifname: str, timeout: float = 15.0, sys_root: str = "/sys", sleep=None, clock=None) -> bool:
    """Wait until the interface has carrier again; False when it does not within `timeout` seconds.

    A driver resets the device for new rings, channels or MTU and brings the link up again later,
    asynchronously. At that link-up some drivers resolve flow control again from the PHY's
    autonegotiation (igb on copper does, in igb_config_fc_after_link_up), undoing a forced pause
    setting applied in between. Settings after a reset are therefore applied only once the link is
    back, as it was before.
    """
    import time

    sleep = sleep or time.sleep
    clock = clock or time.monotonic
    path = os.path.join(sys_root, "class", "net", ifname, "carrier")
    deadline = clock() + timeout
    while True:
        try:
            with open(path, encoding="ascii") as fh:
                if fh.read().strip() == "1":
                    return True
        except OSError:
            pass  # no carrier file while the device is down (EINVAL), or between re-registrations
        if clock() >= deadline:
            return False
        sleep(0.2)


def split_unsupported(plan: NicPlan, on_unsupported: str) -> tuple[list[str], list[str]]:
    """(fatal messages, messages to warn/skip) according to on_unsupported."""
    if on_unsupported not in ON_UNSUPPORTED:
        raise TuningInputError(f"on_unsupported must be one of {', '.join(ON_UNSUPPORTED)}, got {on_unsupported!r}")
    msgs = [u.message for u in plan.unsupported]
    if on_unsupported == "fail":
        return msgs, []
    return [], msgs


# -- snapshot store ----------------------------------------------------------

_KEY_RE = re.compile(r"^[A-Za-z0-9_.@+-]{1,200}\Z")


def safe_key(key: str) -> str:
    """Validate a snapshot key (it becomes a file name)."""
    if not _KEY_RE.match(key) or key.startswith("."):
        raise TuningInputError(f"snapshot key {key!r} must match {_KEY_RE.pattern} and not start with a dot")
    return key


def _check_state_dir(path: str, create: bool = True) -> None:
    """The snapshot directory: root's, not group/world-writable, not a symlink (as the ledger's)."""
    try:
        check_private_dir(path, "snapshot directory", create=create)
    except PrivateDirError as exc:
        raise TuningInputError(str(exc)) from None


class SnapshotStore:
    """Snapshots as JSON files ``<state_dir>/<key>.json``.

    ``save`` never replaces an existing snapshot: the first one stays until
    ``remove`` (after a successful restore).  Writes go to a temp file in the
    same directory and are moved into place by ``mover`` (module.atomic_move).
    """

    def __init__(self, state_dir: str = DEFAULT_STATE_DIR) -> None:
        self.state_dir = state_dir

    def path(self, key: str) -> str:
        return os.path.join(self.state_dir, safe_key(key) + ".json")

    def exists(self, key: str) -> bool:
        return os.path.exists(self.path(key))

    def load(self, key: str) -> dict[str, Any] | None:
        path = self.path(key)
        if os.path.isdir(self.state_dir):
            _check_state_dir(self.state_dir, create=False)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, encoding="utf-8") as fh:
                data = json.load(fh)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise TuningInputError(f"snapshot {path} is unreadable: {exc}") from exc
        if not isinstance(data, dict) or data.get("schema") != SNAPSHOT_SCHEMA:
            raise TuningInputError(f"snapshot {path} is not a {SNAPSHOT_SCHEMA} document")
        return data

    def save(self, key: str, kind: str, subject: str, state: dict[str, Any],
             mover: Callable[[str, str], Any] | None = None) -> tuple[bool, dict[str, Any]]:
        """Record ``state`` unless recorded already; return (written, document in effect).

        A key of ``state`` already in the snapshot keeps its first value (a
        second snapshot never overwrites the first); keys seen for the first
        time are added, so a later call that touches more settings can still
        be restored exactly.
        """
        existing = self.load(key)
        if existing is not None:
            new = {k: v for k, v in state.items() if k not in existing["state"]}
            if not new:
                return False, existing
            doc = dict(existing)
            doc["state"] = {**existing["state"], **new}
        else:
            doc = {
                "schema": SNAPSHOT_SCHEMA,
                "kind": kind,
                "subject": subject,
                "created": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "state": state,
            }
        _check_state_dir(self.state_dir)
        fd, tmp = tempfile.mkstemp(prefix=f".{key}.", suffix=".tmp", dir=self.state_dir)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(doc, fh, indent=2, sort_keys=True)
                fh.write("\n")
                fh.flush()
                os.fsync(fh.fileno())
            (mover or os.replace)(tmp, self.path(key))
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return True, doc

    def remove(self, key: str) -> bool:
        try:
            os.unlink(self.path(key))
        except FileNotFoundError:
            return False
        return True


def current_netns_name(proc_root: str = "/proc", netns_dir: str = "/run/netns") -> str:
    """Name of the network namespace this process is in ('host' for the initial one or an unnamed one)."""
    try:
        mine = os.stat(os.path.join(proc_root, "self/ns/net"))
    except OSError:
        return "host"
    try:
        names = sorted(os.listdir(netns_dir))
    except OSError:
        return "host"
    for name in names:
        try:
            st = os.stat(os.path.join(netns_dir, name))
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino):
            return name
    return "host"


def current_netns(proc_root: str = "/proc", netns_dir: str = "/run/netns") -> str | None:
    """Name of the named network namespace this process is in; None in the initial (or an unnamed) one."""
    name = current_netns_name(proc_root, netns_dir)
    return None if name == "host" else name


def default_key(kind: str, subject: str) -> str:
    """Snapshot key for a subject in the current namespace, e.g. nic-dut-eth0."""
    return safe_key(f"{kind}-{current_netns_name()}-{subject}")
