# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure logic of the kernel role: patch series, Kconfig checks, build keys.

PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.
No I/O here except reading Kconfig files in :func:`kconfig_reasons`; the modules run the tools.
"""

from __future__ import annotations

import email.errors
import email.header
import hashlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from ansible_collections.xdplab.testbed.plugins.module_utils.kernel import _mailsplit

SERIES_SCHEMA = "xdplab.kernel-series/v1"
_SUBJECT_PREFIX = re.compile(r"^\s*(\[[^\]]*\]\s*)+")
_PATCH_NUMBER = re.compile(r"\b(\d+)/(\d+)\s*\]")
_REPLY = re.compile(r"^\s*re\s*:", re.I)
_CONFIG_SET = re.compile(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$")
_CONFIG_UNSET = re.compile(r"^# (CONFIG_[A-Za-z0-9_]+) is not set$")
# git patch-id prints "<patch-id> <commit-id>" per patch; sha1 repositories 40 hex digits, sha256 ones 64.
_PATCH_ID_LINE = re.compile(r"^([0-9a-f]{40}|[0-9a-f]{64}) ([0-9a-f]{40}|[0-9a-f]{64})$")
_PATCH_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


class KernelError(Exception):
    """Bad input or state; the message names the offending value."""


@dataclass
class PatchInfo:
    index: int
    name: str
    subject: str
    files: list[str]
    patch_id: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


# --------------------------------------------------------------------------- patches


def subject_header(text: str) -> str:
    """The Subject: of a mail-formatted patch as written (folded lines joined, RFC 2047 decoded,
    ``[PATCH n/m]`` kept), "" when the text has no Subject: header before its diff."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line == "" or line.startswith("diff --git") or line.startswith("--- "):
            break
        if line.lower().startswith("subject:"):
            subject = line.split(":", 1)[1]
            for cont in lines[i + 1:]:
                if cont.startswith((" ", "\t")):
                    subject += " " + cont.strip()
                else:
                    break
            return _decode_header(subject).strip()
    return ""


def patch_subject(text: str, fallback: str) -> str:
    """The Subject: of a mail-formatted patch (folded lines joined, [PATCH n/m] dropped), else fallback."""
    return _SUBJECT_PREFIX.sub("", subject_header(text)).strip() or fallback


def series_mails(name: str, mails: list[str]) -> list[tuple[str, str]]:
    """The patches among the mails of one file, in series order, as (name, text): what ``git am``
    would apply from a ``b4 am`` mbox or a thread saved from lore (``b4 mbox``).

    Left out: the cover letter (``[PATCH 0/N]``) and replies (``Re:``), as b4 leaves them out. Any
    other mail without a diff is an error naming it. When every patch of an mbox of several is
    numbered ``[PATCH k/N]``, they are put in the order of k, and a number given twice (two revisions
    in one mbox) or missing (a mail lost) is an error naming it. A mail of an mbox of several is
    named ``name#k``, k its place in the file."""
    kept: list[tuple[str, str, tuple[int, int] | None]] = []
    for k, mail in enumerate(mails, start=1):
        mname = name if len(mails) == 1 else f"{name}#{k}"
        subject = subject_header(mail)
        number = _patch_number(subject)
        if _REPLY.match(subject) or (number is not None and number[0] == 0):
            continue
        if not has_diff(mail):
            raise KernelError(f"patch {mname!r} contains no diff")
        kept.append((mname, mail, number))
    if not kept:
        raise KernelError(f"{name!r} holds no patch (only a cover letter or replies)" if mails
                          else f"{name!r} is empty: no patch in it")
    numbers = [n for _m, _t, n in kept]
    if len(kept) > 1 and all(numbers):
        totals = sorted({n[1] for n in numbers})
        if len(totals) > 1:
            raise KernelError(f"{name!r} mixes series of {' and '.join(map(str, totals))} patches: "
                              "give one series per file")
        seen: dict[int, str] = {}
        for mname, _t, (k, _n) in kept:
            if k in seen:
                raise KernelError(f"{name!r} holds two patches numbered {k}/{totals[0]} ({seen[k]} and "
                                  f"{mname}): give one revision of the series")
            seen[k] = mname
        missing = [k for k in range(1, totals[0] + 1) if k not in seen]
        if missing:
            raise KernelError(f"{name!r} lacks patch {', '.join(f'{k}/{totals[0]}' for k in missing)} of the "
                              "series: a mail is missing")
        kept.sort(key=lambda item: item[2][0])
    return [(mname, mail) for mname, mail, _n in kept]


def _patch_number(subject: str) -> tuple[int, int] | None:
    """(k, N) of a subject's ``[PATCH ... k/N]`` prefix, None when it has none."""
    prefix = _SUBJECT_PREFIX.match(subject)
    m = _PATCH_NUMBER.search(prefix.group(0)) if prefix else None
    return (int(m.group(1)), int(m.group(2))) if m else None


def _decode_header(value: str) -> str:
    """A header value with RFC 2047 encoded words (=?UTF-8?q?...?=, as git send-email writes
    non-ASCII subjects) decoded; whitespace runs folded to one space. Undecodable text is kept as is."""
    value = " ".join(value.split())
    if "=?" not in value:
        return value
    try:
        return " ".join(str(email.header.make_header(email.header.decode_header(value))).split())
    except (LookupError, ValueError, UnicodeDecodeError, email.errors.HeaderParseError):
        return value


def patch_files(text: str) -> list[str]:
    """Files a patch touches (from the +++/--- headers, -p1 stripped), in order, no duplicates."""
    files: list[str] = []
    for line in text.splitlines():
        if line.startswith(("+++ ", "--- ")):
            path = line[4:].split("\t")[0].strip()
            if path == "/dev/null":
                continue
            if path.startswith(("a/", "b/")):
                path = path[2:]
            if path not in files:
                files.append(path)
    if not files:
        raise KernelError("no diff found in patch (no '+++ ' header)")
    return files


def has_diff(text: str) -> bool:
    return any(line.startswith("+++ ") for line in text.splitlines())


def parse_patch_ids(output: str) -> list[str]:
    """The patch-ids in the output of ``git patch-id --stable`` (one "<patch-id> <commit-id>" line per
    patch that has a diff; nothing for a patch without one). Any other line is an error: it would be
    a foreign tool's output taken for a patch-id."""
    ids = []
    for n, line in enumerate(output.splitlines(), start=1):
        if not line.strip():
            continue
        m = _PATCH_ID_LINE.match(line.strip())
        if not m:
            raise KernelError(f"git patch-id output line {n} is not '<patch-id> <commit-id>': {line[:100]!r}")
        ids.append(m.group(1))
    return ids


def read_series(name: str, text: str, patch_id: Callable[[str], str], start: int = 1,
                split: Callable[[str], list[str]] | None = None) -> list[tuple[PatchInfo, str]]:
    """The patches of one file (a single patch, a git format-patch mbox, a ``b4 am`` mbox or a thread
    saved from lore): (PatchInfo, text) each, with subject, files and the patch-id ``patch_id(text)``
    returns (the caller runs ``git patch-id --stable`` and parses it with :func:`parse_patch_ids`).
    The file is cut into mails by ``split`` (default ``git mailsplit``, as ``git am`` does:
    :func:`_mailsplit.mailsplit`), and :func:`series_mails` keeps the patches. Indexes count
    from ``start``; a mail of an mbox of several is named ``name#k``."""
    try:
        mails = (split or _mailsplit.mailsplit)(text)
    except _mailsplit.MailsplitError as exc:
        raise KernelError(f"{name!r}: {exc}") from exc
    out = []
    for pname, part in series_mails(name, mails):
        info = PatchInfo(index=start + len(out), name=pname, subject=patch_subject(part, pname),
                         files=patch_files(part))
        info.patch_id = patch_id(part)
        if not info.patch_id:
            raise KernelError(f"git patch-id found no diff in patch {pname!r}")
        if not _PATCH_ID.fullmatch(info.patch_id):
            raise KernelError(f"patch {pname!r}: {info.patch_id!r} is not a git patch-id")
        out.append((info, part))
    return out


def series_patches(series: dict | list) -> list[dict]:
    """The patches of a series as [{"subject", "patch_id"}], from a series record (schema
    xdplab.kernel-series/v1, as kernel_patch returns and the kernel role installs), a dict with
    ``patches``, or a list of {subject, patch_id} (a record's ``environment.kernel_patches``).
    Patch-ids are lower-cased; a patch without a subject or a patch-id is an error naming it."""
    if isinstance(series, dict):
        if "schema" in series and series["schema"] != SERIES_SCHEMA:
            raise KernelError(f"series record schema is {series['schema']!r}, expected {SERIES_SCHEMA!r}")
        patches = series.get("patches")
    else:
        patches = series
    if not isinstance(patches, list):
        raise KernelError(f"a series is a list of patches or a record with 'patches', got {type(patches).__name__}")
    out = []
    for i, p in enumerate(patches):
        if not isinstance(p, dict):
            raise KernelError(f"series patch {i} must be a dict with subject and patch_id, got {p!r}")
        pid = str(p.get("patch_id") or "").strip().lower()
        if not _PATCH_ID.fullmatch(pid):
            raise KernelError(f"series patch {i} ({p.get('subject')!r}): patch_id {p.get('patch_id')!r} is not a "
                              "git patch-id (40 or 64 hex digits)")
        subject = _decode_header(str(p.get("subject") or ""))
        if not subject:
            raise KernelError(f"series patch {i} (patch-id {pid}) has no subject")
        out.append({"subject": subject, "patch_id": pid})
    return out


def series_id(patch_ids: list[str]) -> str:
    return hashlib.sha256("\n".join(patch_ids).encode()).hexdigest()


def series_record(source: dict, patches: list[PatchInfo], base: str = "") -> dict:
    """The JSON an env fingerprint reads as ``kernel_patches``."""
    return {
        "schema": SERIES_SCHEMA,
        "source": source,
        "base": base,
        "series_id": series_id([p.patch_id for p in patches]),
        "patches": [{"subject": p.subject, "patch_id": p.patch_id, "name": p.name, "files": p.files}
                    for p in patches],
    }


def plan_series(applied: list[str], wanted: list[str]) -> tuple[str, list[int]]:
    """Compare recorded patch-ids with the wanted series.

    Returns (action, indexes to apply): ``noop`` when equal, ``extend`` when the applied
    series is a prefix of the wanted one, ``reset`` otherwise (revert all, apply all)."""
    if applied == wanted:
        return "noop", []
    if len(applied) < len(wanted) and wanted[: len(applied)] == applied:
        return "extend", list(range(len(applied), len(wanted)))
    return "reset", list(range(len(wanted)))


_PATCH_FAIL_FILE = re.compile(r"^patching file '?([^'\n]+?)'?$", re.M)
_GIT_FAIL = re.compile(r"(?:error: patch failed: ([^:\s]+):\d+|CONFLICT \([^)]*\): Merge conflict in (\S+)"
                       r"|error: ([^:\s]+): does not exist in index|error: ([^:\s]+): No such file)")


def failed_files_patch(output: str) -> list[str]:
    """Files GNU patch could not patch, from its (dry-run) output."""
    failed: list[str] = []
    current = None
    for line in output.splitlines():
        m = _PATCH_FAIL_FILE.match(line)
        if m:
            current = m.group(1)
            continue
        if current and ("FAILED" in line or "saving rejects" in line or "Reversed (or previously applied)" in line):
            if current not in failed:
                failed.append(current)
        m2 = re.match(r"^can't find file to patch|^No file to patch", line)
        if m2 and "(missing)" not in failed:
            failed.append("(missing file)")
    for m in re.finditer(r"\|--- a/(\S+)", output):
        if "(missing file)" in failed:
            failed[failed.index("(missing file)")] = m.group(1)
    return failed


def failed_files_git(output: str) -> list[str]:
    files: list[str] = []
    for m in _GIT_FAIL.finditer(output):
        f = next(g for g in m.groups() if g)
        if f not in files:
            files.append(f)
    return files


# --------------------------------------------------------------------------- kconfig


def parse_config(text: str) -> dict[str, str]:
    """A .config or fragment as {CONFIG_X: value}; '# CONFIG_X is not set' -> 'n'."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        m = _CONFIG_SET.match(line)
        if m:
            out[m.group(1)] = m.group(2)
            continue
        m = _CONFIG_UNSET.match(line)
        if m:
            out[m.group(1)] = "n"
    return out


def config_diff(baseline: str, candidate: str) -> list[dict]:
    """Options whose values differ between two .config texts: [{"option", "baseline", "candidate"}]
    in option order. An option missing from one side is "(absent)" there, except that absent and
    "is not set" ("n") are the same to Kconfig and not listed."""
    a, b = parse_config(baseline), parse_config(candidate)
    out = []
    for name in sorted(set(a) | set(b)):
        va, vb = a.get(name), b.get(name)
        if (va or "n") == (vb or "n"):
            continue
        out.append({"option": name, "baseline": "(absent)" if va is None else va,
                    "candidate": "(absent)" if vb is None else vb})
    return out


def normalize_options(options: dict) -> dict[str, str]:
    """User-given options ({'BPF_JIT': True, 'CONFIG_NR_CPUS': 4, 'X': 'm'}) as .config values."""
    out: dict[str, str] = {}
    for key, value in options.items():
        name = str(key)
        if not name.startswith("CONFIG_"):
            name = "CONFIG_" + name
        if not re.fullmatch(r"CONFIG_[A-Za-z0-9_]+", name):
            raise KernelError(f"config option name {key!r} is not a Kconfig symbol")
        if value is True:
            val = "y"
        elif value is False or value is None:
            val = "n"
        elif isinstance(value, int):
            val = str(value)
        else:
            val = str(value)
            if val not in ("y", "m", "n") and not re.fullmatch(r"-?\d+|0x[0-9a-fA-F]+|\".*\"", val):
                val = json.dumps(val)
        out[name] = val
    return out


def fragment_text(options: dict[str, str]) -> str:
    return "".join(f"# {k} is not set\n" if v == "n" else f"{k}={v}\n" for k, v in options.items())


def dropped_options(requested: dict[str, str], final: dict[str, str]) -> list[dict]:
    """Requested options that do not stand in the final config as asked."""
    dropped = []
    for name, want in requested.items():
        got = final.get(name, "n")
        if want == got:
            continue
        dropped.append({"option": name, "requested": want, "final": got if name in final else "absent"})
    return dropped


# Options upstream renamed, old name -> new name. The fragments name an option as the oldest source the
# collection builds knows it (linux-source-6.12); on a tree whose Kconfig no longer defines the old name but
# defines the new one, the new one is requested with the same value. PROC_SYSCTL (/proc/sys) became SYSCTL,
# with PROC_SYSCTL's prompt, after 6.12 (7.3 has SYSCTL only).
RENAMED = {"CONFIG_PROC_SYSCTL": "CONFIG_SYSCTL"}


def follow_renames(requested: dict[str, str], defined: set[str]) -> tuple[dict[str, str], list[dict]]:
    """(the options to request on a tree whose Kconfig defines the symbols `defined` (without CONFIG_), the
    renames followed as {option, as}). An option asked for under both names keeps the new name's value."""
    out: dict[str, str] = {}
    renamed = []
    for name, value in requested.items():
        new = RENAMED.get(name)
        if new and name[len("CONFIG_"):] not in defined and new[len("CONFIG_"):] in defined:
            out.setdefault(new, requested.get(new, value))
            renamed.append({"option": name, "as": new})
        else:
            out[name] = value
    return out, renamed


def kconfig_symbols(srctree: str) -> set[str]:
    """Every symbol a Kconfig file of the tree defines (without CONFIG_)."""
    return set(_kconfig_index(srctree))


def _kconfig_index(srctree: str) -> dict[str, list[str]]:
    """{SYMBOL: [block text, ...]} for every 'config SYMBOL' in the tree's Kconfig files."""
    index: dict[str, list[str]] = {}
    for root, dirs, files in os.walk(srctree):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("Documentation", "tools", "samples")]
        for fname in files:
            if not fname.startswith("Kconfig"):
                continue
            try:
                with open(os.path.join(root, fname), errors="replace") as fh:
                    text = fh.read()
            except OSError:
                continue
            for m in re.finditer(r"^(?:menu)?config\s+(\w+)\s*\n(.*?)(?=^\S|\Z)", text, re.M | re.S):
                index.setdefault(m.group(1), []).append(m.group(2))
    return index


def _unmet(expr: str, final: dict[str, str]) -> list[str]:
    """Symbols in a depends-on expression that are off in the final config (a heuristic, not a Kconfig solver)."""
    unmet = []
    for alt in expr.split("||"):
        syms = re.findall(r"!?\b([A-Z][A-Z0-9_]+)\b", alt)
        negs = set(re.findall(r"!\s*([A-Z][A-Z0-9_]+)", alt))
        bad = []
        for s in syms:
            on = final.get("CONFIG_" + s, "n") not in ("n", "")
            if (s in negs and on) or (s not in negs and not on):
                bad.append(("!" if s in negs else "") + s + ("=y" if on else "=n"))
        if not bad:
            return []
        unmet.extend(b for b in bad if b not in unmet)
    return unmet


def kconfig_reasons(srctree: str, dropped: list[dict], final: dict[str, str]) -> list[dict]:
    """Annotate dropped options with why Kconfig dropped them, when the tree can tell."""
    index = _kconfig_index(srctree) if dropped else {}
    out = []
    for item in dropped:
        sym = item["option"][len("CONFIG_"):]
        blocks = index.get(sym)
        reason = ""
        if not blocks:
            reason = f"no 'config {sym}' in any Kconfig of this tree (misspelt or not in this version)"
        else:
            deps = []
            for block in blocks:
                deps += [d.strip() for d in re.findall(r"^\s*depends on\s+(.+)$", block, re.M)]
            unmet = []
            for dep in deps:
                unmet += [u for u in _unmet(dep, final) if u not in unmet]
            prompt = any(re.search(r"^\s*(bool|tristate|string|int|hex)\s+\"", b, re.M) or
                         re.search(r"^\s*prompt\s", b, re.M) for b in blocks)
            if unmet:
                reason = "unmet dependencies: " + ", ".join(unmet) + " (depends on: " + "; ".join(deps) + ")"
            elif not prompt:
                reason = "no prompt: the symbol is only set by 'select' from other options"
            elif item["requested"] == "m" and final.get("CONFIG_MODULES", "n") != "y":
                reason = "requested as module but CONFIG_MODULES is off"
            else:
                reason = "Kconfig chose another value (range, choice group or a select)"
        out.append({**item, "reason": reason})
    return out


# --------------------------------------------------------------------------- build


def build_key(source_id: str, patch_ids: list[str], config_text: str, variant: str, targets: list[str]) -> str:
    """sha256 of everything that decides the build output."""
    h = hashlib.sha256()
    for part in (source_id, "\n".join(patch_ids), config_text, variant, " ".join(sorted(targets))):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def localversion(variant: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,31}", variant):
        raise KernelError(f"variant name {variant!r} must be 1-32 characters of [A-Za-z0-9_.+-]")
    return "-" + variant


def build_identity(user: str, getpwnam: Callable[[str], Any] | None = None) -> tuple[int, int]:
    """The build user's (uid, gid); KernelError naming the user when it does not exist or is root."""
    import pwd  # pylint: disable=import-outside-toplevel

    try:
        entry = (getpwnam or pwd.getpwnam)(user)
    except KeyError:
        raise KernelError(f"build user {user!r} does not exist") from None
    if entry.pw_uid == 0:
        raise KernelError(f"build user {user!r} is root (uid 0): name an unprivileged user, or none")
    return entry.pw_uid, entry.pw_gid


def drop_privileges_argv(user: str | None, setpriv: str = "setpriv",
                         getpwnam: Callable[[str], Any] | None = None) -> list[str]:
    """The argv prefix that runs a command of the fetched source (make, merge_config.sh, patch) as the
    unprivileged build user instead of root: util-linux setpriv with the user's numeric uid, gid and
    groups, and no_new_privs (no setuid binary regains root). The caller's TMPDIR stays behind (env -u):
    it is the caller's own, often private to root, and patch and gcc as the build user would fail to
    create their temporary files there; they take /tmp. Empty for no user (build as the caller).
    KernelError naming the user when it does not exist or is root."""
    if not user:
        return []
    uid, gid = build_identity(user, getpwnam)
    return setpriv_argv(str(uid), str(gid), setpriv)


def setpriv_argv(reuid: str, regid: str, setpriv: str = "setpriv") -> list[str]:
    """The one spelling of the build user's argv prefix (see drop_privileges_argv), for a uid and gid
    given as numbers or names: the modules resolve the user on the host they run on and pass numbers;
    the kernel role (the as_build_user filter, evaluated on the controller) passes the name, which
    setpriv resolves on the build host. Empty for an empty user."""
    if not reuid:
        return []
    return [setpriv, f"--reuid={reuid}", f"--regid={regid}", "--init-groups", "--no-new-privs", "env", "-u", "TMPDIR"]
