# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Atomic file writes: records, ledger entries, snapshots and reports all go through here.

PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.
A reader sees either the old file or the whole new one, never a truncated file.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Callable
from typing import Any


class AtomicWriteError(ValueError):
    """The destination cannot be written; the message names it."""


class PrivateDirError(ValueError):
    """A directory root acts on that another user could have planted files in; the message names it."""


def atomic_write(dest: str, writer: Callable[[str], None], mode: int = 0o644) -> str:
    """Call writer(temp_path) on a temp file beside dest, then rename it over dest.

    On any error the temp file is removed and dest is left as it was.
    """
    directory = os.path.dirname(os.path.abspath(dest)) or "."
    if not os.path.isdir(directory):
        raise AtomicWriteError(f"{dest}: directory {directory} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=os.path.splitext(dest)[1], dir=directory)
    os.close(fd)
    try:
        writer(tmp)
        os.chmod(tmp, mode)
        os.replace(tmp, dest)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return dest


def write_json_atomic(path: str, data: Any, mode: int = 0o600) -> str:
    """Write JSON to a temp file in the same directory, fsync, then rename over ``path``.

    Records hold the host's /proc/cmdline and environment: 0600 in a 0700 directory by default.
    """
    os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o700, exist_ok=True)

    def writer(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, sort_keys=False)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())

    return atomic_write(path, writer, mode)


def check_private_dir(path: str, what: str = "ledger directory", create: bool = True) -> None:
    """A directory whose files root acts on: created 0700 when absent; refused when it is a symlink, is
    not owned by this (root) user, or is group/world-writable - another local user could then plant
    entries, snapshots or symlinks there."""
    if create:
        os.makedirs(path, mode=0o700, exist_ok=True)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        raise PrivateDirError(f"{what} {path!r} is a symlink: refusing it")
    if not stat.S_ISDIR(st.st_mode):
        raise PrivateDirError(f"{what} {path!r} is not a directory")
    if st.st_uid != os.geteuid():
        raise PrivateDirError(f"{what} {path!r} is owned by uid {st.st_uid}, not {os.geteuid()}: refusing it")
    if st.st_mode & 0o022:
        raise PrivateDirError(f"{what} {path!r} is group/world-writable (mode {oct(st.st_mode & 0o777)})")
    check_ancestors(path, what)


def check_ancestors(path: str, what: str = "state directory") -> None:
    """The directories above ``path``: another user who can write one of them (without the sticky bit,
    as /tmp has) or owns one could rename ``path`` away and put their own in its place. Refused, naming it."""
    here = os.path.dirname(os.path.realpath(path))
    while True:
        try:
            st = os.stat(here)
        except FileNotFoundError:  # made later (by us, 0700)
            here = os.path.dirname(here)
            continue
        if st.st_uid not in (0, os.geteuid()):
            raise PrivateDirError(f"{what} {path!r}: the directory above it, {here!r}, is owned by uid "
                                  f"{st.st_uid}: refusing it")
        if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
            raise PrivateDirError(f"{what} {path!r}: the directory above it, {here!r}, is group/world-writable "
                                  f"without the sticky bit (mode {oct(st.st_mode & 0o7777)}): refusing it")
        if here == "/":
            return
        here = os.path.dirname(here)
