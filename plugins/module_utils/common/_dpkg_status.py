# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which of a list of Debian packages are not installed, from one dpkg-query call. Private to the
xdplab.testbed collection.

ansible.builtin.apt answers the same question but opens the whole apt cache first (about 3 s on a
host, far longer in an emulated guest) on every run of every role, even when everything is there.
dpkg-query reads only the status database. The roles ask here first and hand ansible.builtin.apt only
what is missing, so apt still does all the installing, pinning and cache updating.

A name is what ansible.builtin.apt takes: ``pkg``, ``pkg:arch``, ``pkg=version`` or ``pkg/suite``.
A name of any other shape (a version wildcard or comparison, a .deb path) is reported missing, so
that apt, which understands it, decides.
"""

from __future__ import annotations

import re

# dpkg's package name syntax (lower case, digits, + - .), an optional architecture.
_NAME_RE = re.compile(r"^([a-z0-9][a-z0-9+.-]+)(?::([a-z0-9-]+))?(?:=([A-Za-z0-9.+:~-]+)|/([A-Za-z0-9.-]+))?\Z")
FORMAT = "${Package}\t${Architecture}\t${db:Status-Abbrev}\t${Version}\n"


def parse_name(name: str) -> tuple[str, str, str] | None:
    """(package, architecture or '', version or '') of an apt name; None for a shape not handled here."""
    m = _NAME_RE.match(name)
    if not m:
        return None
    return m.group(1), m.group(2) or "", m.group(3) or ""


def query_argv(names: list[str]) -> list[str]:
    """The dpkg-query argv for the names this module understands (one call for all of them)."""
    queries = []
    for name in names:
        parsed = parse_name(name)
        if parsed and parsed[0] not in queries:
            queries.append(parsed[0])
    return ["dpkg-query", "--show", f"--showformat={FORMAT}", *queries] if queries else []


def installed_versions(stdout: str) -> dict[tuple[str, str], str]:
    """(package, architecture) -> version of every line whose status says installed.

    Status-Abbrev is three characters: the wanted state, the current state and an error flag. What
    counts is the current state 'i' (installed) with no error ('reinst-required' makes it 'R')."""
    out = {}
    for line in stdout.splitlines():
        fields = line.split("\t")
        if len(fields) != 4:
            continue
        package, arch, status, version = fields
        if len(status) >= 2 and status[1] == "i" and status[2:3] in ("", " "):
            out[(package, arch)] = version
    return out


def missing(names: list[str], stdout: str) -> list[str]:
    """The names (as given, in order) that dpkg-query's output does not show installed as asked."""
    have = installed_versions(stdout)
    out = []
    for name in names:
        parsed = parse_name(name)
        if parsed is None:
            out.append(name)
            continue
        package, arch, version = parsed
        versions = [v for (p, a), v in have.items() if p == package and (not arch or a in (arch, "all"))]
        if not versions or (version and version not in versions):
            out.append(name)
    return out
