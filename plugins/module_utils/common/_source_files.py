# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Source files for a build directory on a target, all in one module call. Private to the
xdplab.testbed collection.

The xdp, generator and scenarios roles copy a handful of sources to each remote host and run make
there. ansible.builtin.copy makes one or two remote calls per file (a stat, then the copy); on a host
reached over ssh each call starts a Python interpreter there, a second or more in an emulated guest,
so the copies cost more than the builds. The xdplab.testbed.source_files action sends every file's
content in one call and the module writes only the files whose content or mode differ, which keeps
copy's meaning for make: an unchanged file keeps its mtime, a changed one gets a new one.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re

MAX_TOTAL_BYTES = 4 * 1024 * 1024  # sources, not data: everything travels in the module's arguments


class SourceFilesError(ValueError):
    """A bad file name, mode or size; the message names it."""


def check_name(name: str) -> str:
    """A file name in the build directory: a plain name, no directories."""
    if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\0" in name:
        raise SourceFilesError(f"source file name {name!r} is not a plain file name (no '/', not '.' or '..')")
    return name


def decode(name: str, data: object) -> bytes:
    """One file's contents as the action sends them: a base64 string, checked strictly."""
    if not isinstance(data, str):
        raise SourceFilesError(f"contents of {name!r} is a {type(data).__name__}, not a base64 string")
    try:
        return base64.b64decode(data, validate=True)
    except ValueError as exc:  # binascii.Error is one
        raise SourceFilesError(f"contents of {name!r} is not valid base64: {exc}") from None


def parse_mode(mode: str) -> int:
    """An octal mode string ("0644") as an int; no set-id or sticky bits."""
    if not isinstance(mode, str) or not re.fullmatch(r"0?[0-7]{3}", mode):
        raise SourceFilesError(f"mode {mode!r} is not an octal file mode such as '0644' (no set-id or sticky bits)")
    value = int(mode, 8)
    return value


def check_sizes(files: dict[str, bytes]) -> None:
    total = sum(len(data) for data in files.values())
    if total > MAX_TOTAL_BYTES:
        raise SourceFilesError(f"{total} bytes of sources is more than the {MAX_TOTAL_BYTES} this module carries")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def current(dest: str, names: list[str]) -> dict[str, tuple[str, int] | None]:
    """name -> (sha256, permission bits) of the regular file there now, or None when there is none.
    A directory or a link in a source's place is an error: it is not ours to replace."""
    out: dict[str, tuple[str, int] | None] = {}
    for name in names:
        path = os.path.join(dest, name)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            out[name] = None
            continue
        if not os.path.isfile(path) or os.path.islink(path):
            raise SourceFilesError(f"{path} exists and is not a regular file: refusing to replace it")
        with open(path, "rb") as fh:
            out[name] = (sha256(fh.read()), st.st_mode & 0o777)
    return out


def plan(files: dict[str, bytes], now: dict[str, tuple[str, int] | None], mode: int) -> dict[str, list[str]]:
    """What to do per file: ``write`` (missing or other content), ``chmod`` (same content, other mode)
    and ``unchanged``, each sorted."""
    out: dict[str, list[str]] = {"write": [], "chmod": [], "unchanged": []}
    for name in sorted(files):
        have = now.get(name)
        if have is None or have[0] != sha256(files[name]):
            out["write"].append(name)
        elif have[1] != mode:
            out["chmod"].append(name)
        else:
            out["unchanged"].append(name)
    return out


def describe(now: dict[str, tuple[str, int] | None], files: dict[str, bytes], mode: int) -> tuple[str, str]:
    """The diff's two sides: one line per file, its sha256 and mode (or 'absent')."""
    before = "".join(f"{name} absent\n" if now.get(name) is None
                     else f"{name} sha256:{now[name][0]} mode {now[name][1]:04o}\n" for name in sorted(files))
    after = "".join(f"{name} sha256:{sha256(files[name])} mode {mode:04o}\n" for name in sorted(files))
    return before, after
