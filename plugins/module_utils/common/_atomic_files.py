# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Atomic file writes: records, ledger entries, snapshots and reports all go through here.

PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.
A reader sees either the old file or the whole new one, never a truncated file.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from typing import Any


class AtomicWriteError(ValueError):
    """The destination cannot be written; the message names it."""


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


def write_json_atomic(path: str, data: Any, mode: int = 0o644) -> str:
    """Write JSON to a temp file in the same directory, fsync, then rename over ``path``."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o755, exist_ok=True)

    def writer(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, sort_keys=False)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())

    return atomic_write(path, writer, mode)
