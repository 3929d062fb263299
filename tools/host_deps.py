# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What `make` adds to the host, and `make uninstall` taking it away again.

`make bench` and `make test` install Debian packages with this tool (it runs before the virtualenv
exists, so it uses the standard library only):

    host_deps.py install [--dry-run] [--sources files/apt] requirements-apt.txt ...
    host_deps.py uninstall [--dry-run] [--keep WHAT ...]
    host_deps.py leftovers [--keep WHAT ...]

`install` adds the project's apt sources (files/apt) only after checking that the host runs the
distribution they are made for, and names what it found either way. It installs only the packages
that are missing and records in MANIFEST the packages the transaction added (those named and their
dependencies), so `uninstall` purges exactly those and nothing the host had before.

`uninstall` removes, unless kept: the recorded packages (`--keep packages`, or `--keep <package>`;
kept packages become the user's, their record goes with the state directory),
the apt sources and pins, the collection's state (`state`: /var/lib/xdplab, built kernels and the
lab's images among it), its caches (`cache`: /var/cache/xdplab), the run lock directory and the
kernel build user. It refuses while the run ledger holds entries (a run is on or was killed: run
playbooks/teardown.yml first). `leftovers` lists what of the above is still on the host (exit 1 if
anything): the check that follows an uninstall.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

ROOT_DIR = pathlib.Path(__file__).resolve().parents[1]
# What the collection's runs create on the host (the roles' defaults), by the name --keep takes.
STATE_DIR = "var/lib/xdplab"
CACHE_DIR = "var/cache/xdplab"
RUN_DIR = "run/xdplab"
LEDGER_DIR = "var/lib/xdplab/ledger"
BUILD_USER = "xdplab-build"
# The packages `install` added, one per line (under the state directory: kept with it).
MANIFEST = "var/lib/xdplab/host/packages"
APT_SOURCES_D = "etc/apt/sources.list.d"
APT_PREFS_D = "etc/apt/preferences.d"
KEEP_WORDS = ("packages", "state", "cache")

Runner = Callable[[list[str]], subprocess.CompletedProcess]


def run(argv: list[str]) -> subprocess.CompletedProcess:
    env = dict(os.environ, LC_ALL="C", DEBIAN_FRONTEND="noninteractive")
    return subprocess.run(argv, capture_output=True, text=True, env=env, check=False)  # noqa: S603


class HostError(Exception):
    pass


def package_items(path: pathlib.Path) -> list[str]:
    """The items of a requirements-apt list: one per line, `#` comments and blank lines ignored."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.split("#")[0].strip() for line in lines if line.split("#")[0].strip()]


def package_name(item: str) -> str:
    """`pkg`, `pkg/suite` or `pkg=version` -> pkg."""
    return item.split("/")[0].split("=")[0]


def os_release(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            out[key.strip()] = value.strip().strip('"')
    return out


def source_suites(sources: Iterable[pathlib.Path]) -> list[tuple[str, str]]:
    """(suite, the Debian release it is made for) of each suite of the .sources files. A stanza's
    `X-Xdplab-Host-Release` names that release (trixie-backports for one package on bookworm); without
    it a `<codename>-backports` suite is for Debian <codename>."""
    suites = []
    for path in sources:
        for stanza in path.read_text(encoding="utf-8").split("\n\n"):
            fields = dict(line.split(":", 1) for line in stanza.splitlines()
                          if ":" in line and not line.startswith("#"))
            host = fields.get("X-Xdplab-Host-Release", "").strip()
            suites += [(suite, host or suite.split("-")[0]) for suite in fields.get("Suites", "").split()]
    return suites


def check_distribution(release: dict[str, str], suites: list[tuple[str, str]]) -> str:
    """Each (suite, release it is for) of the project's apt sources is for that Debian release only. Returns
    the line that names what was found; raises HostError naming it when the host is another distribution or
    release."""
    found = (f"{release.get('PRETTY_NAME', 'an unnamed distribution')} "
             f"(ID={release.get('ID', '?')}, VERSION_CODENAME={release.get('VERSION_CODENAME', '?')})")
    ids = {release.get("ID", "")} | set(release.get("ID_LIKE", "").split())
    for suite, codename in suites:
        if release.get("ID") != "debian" or release.get("VERSION_CODENAME") != codename:
            raise HostError(f"the apt source for {suite} is made for Debian {codename}; this host is {found}"
                            + ("" if "debian" in ids else ", not Debian")
                            + ": not adding it. Install the packages of the lists by hand, or run on Debian "
                            + codename)
    return f"distribution: {found}"


def installed_packages(runner: Runner) -> set[str]:
    proc = runner(["dpkg-query", "-W", "-f", "${Package}\t${db:Status-Abbrev}\n"])
    if proc.returncode != 0:
        raise HostError(f"dpkg-query failed (rc={proc.returncode}): {proc.stderr.strip()}")
    return {name for name, _tab, status in (line.partition("\t") for line in proc.stdout.splitlines())
            if status.startswith("ii")}


def _apt(runner: Runner, args: list[str]) -> None:
    argv = ["apt-get", "-y", "-qq", "-o", "DPkg::Lock::Timeout=600", *args]
    proc = runner(argv)
    if proc.returncode != 0:
        raise HostError(f"{' '.join(argv)} failed (rc={proc.returncode}): {proc.stderr.strip() or proc.stdout}")


@dataclass
class Host:
    root: pathlib.Path = pathlib.Path("/")
    runner: Runner = run
    say: Callable[[str], None] = print
    log: list[str] = field(default_factory=list)

    def path(self, rel: str) -> pathlib.Path:
        return self.root / rel

    def manifest(self) -> list[str]:
        path = self.path(MANIFEST)
        return path.read_text(encoding="utf-8").split() if path.exists() else []

    def our_apt_files(self) -> list[pathlib.Path]:
        return sorted([*self.path(APT_SOURCES_D).glob("xdplab-*.sources"),
                       *self.path(APT_PREFS_D).glob("xdplab-*.pref")])


def install(host: Host, lists: list[pathlib.Path], sources_dir: pathlib.Path | None, dry_run: bool) -> list[str]:
    """Install the missing packages of the lists; return the packages the transaction added."""
    items = [item for path in lists for item in package_items(path)]
    sources = sorted(sources_dir.glob("*.sources")) if sources_dir else []
    prefs = sorted(sources_dir.glob("*.pref")) if sources_dir else []
    release_file = host.path("etc/os-release")
    release = os_release(release_file.read_text(encoding="utf-8") if release_file.exists() else "")
    host.say(check_distribution(release, source_suites(sources)))
    before = installed_packages(host.runner)
    missing = [item for item in items if package_name(item) not in before]
    new_files = [(src, host.path(APT_SOURCES_D if src.suffix == ".sources" else APT_PREFS_D) / src.name)
                 for src in sources + prefs]
    new_files = [(src, dst) for src, dst in new_files if not dst.exists() or dst.read_bytes() != src.read_bytes()]
    if dry_run:
        for _src, dst in new_files:
            host.say(f"would add {dst}")
        host.say(f"would install {len(missing)} packages (and their dependencies): {' '.join(missing) or 'none'}")
        return []
    for src, dst in new_files:
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        dst.chmod(0o644)
        host.say(f"added {dst}")
    if not missing:
        host.say("all packages already installed")
        return []
    _apt(host.runner, ["update"])
    _apt(host.runner, ["install", "--no-install-recommends", *missing])
    added = sorted(installed_packages(host.runner) - before)
    manifest = host.path(MANIFEST)
    manifest.parent.mkdir(parents=True, exist_ok=True)
    recorded = sorted(set(host.manifest()) | set(added))
    manifest.write_text("".join(f"{name}\n" for name in recorded), encoding="utf-8")
    host.say(f"installed {len(added)} packages, recorded in {manifest}: {' '.join(added)}")
    return added


def _user_exists(host: Host, name: str) -> bool:
    passwd = host.path("etc/passwd")
    return passwd.exists() and any(line.split(":")[0] == name
                                   for line in passwd.read_text(encoding="utf-8").splitlines())


def leftovers(host: Host, keep: set[str]) -> list[str]:
    """What of ours is still on the host, beside what the user chose to keep."""
    out = []
    if "packages" not in keep:
        present = installed_packages(host.runner)
        out += [f"package {name}" for name in host.manifest() if name in present and name not in keep]
    out += [f"file {path}" for path in host.our_apt_files()]
    for word, rel in (("state", STATE_DIR), ("cache", CACHE_DIR), ("", RUN_DIR)):
        if word not in keep and host.path(rel).exists():
            out.append(f"directory {host.path(rel)}")
    if _user_exists(host, BUILD_USER):
        out.append(f"user {BUILD_USER}")
    return out


def uninstall(host: Host, keep: set[str], dry_run: bool) -> list[str]:
    """Remove what `make` and the collection's runs added; return what was (or would be) removed."""
    ledger = host.path(LEDGER_DIR)
    pending = sorted(p.name for p in ledger.glob("*.json")) if ledger.is_dir() else []
    if pending:
        raise HostError(f"the run ledger {ledger} holds {len(pending)} entries ({', '.join(pending[:3])}...): a run "
                        "is on or was killed; run playbooks/teardown.yml first, then uninstall")
    todo = leftovers(host, keep)
    verb = "would remove" if dry_run else "removing"
    for item in todo:
        host.say(f"{verb} {item}")
    if dry_run:
        return todo
    packages = [item.split(" ", 1)[1] for item in todo if item.startswith("package ")]
    if packages:
        _apt(host.runner, ["purge", *packages])
    for path in host.our_apt_files():
        path.unlink()
    if _user_exists(host, BUILD_USER):
        proc = host.runner(["userdel", *(["--root", str(host.root)] if host.root != pathlib.Path("/") else []),
                            BUILD_USER])
        if proc.returncode != 0:
            raise HostError(f"userdel {BUILD_USER} failed (rc={proc.returncode}): {proc.stderr.strip()}")
    for word, rel in (("cache", CACHE_DIR), ("", RUN_DIR), ("state", STATE_DIR)):
        if word not in keep and host.path(rel).exists():
            shutil.rmtree(host.path(rel))
    left = leftovers(host, keep)
    if left:
        raise HostError(f"left after uninstall: {', '.join(left)}")
    return todo


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--root", type=pathlib.Path, default=pathlib.Path("/"),
                        help="the host's root directory (a test's fake root)")
    sub = parser.add_subparsers(dest="command", required=True)
    p_install = sub.add_parser("install")
    p_install.add_argument("lists", nargs="+", type=pathlib.Path)
    p_install.add_argument("--sources", type=pathlib.Path, help="directory of apt .sources/.pref to add")
    p_install.add_argument("--dry-run", action="store_true")
    for name in ("uninstall", "leftovers"):
        p = sub.add_parser(name)
        p.add_argument("--keep", nargs="*", default=[],
                       help=f"keep these: {', '.join(KEEP_WORDS)} or a package name")
        if name == "uninstall":
            p.add_argument("--dry-run", action="store_true")
    args = parser.parse_args(argv)
    host = Host(root=args.root)
    try:
        if args.command == "install":
            install(host, args.lists, args.sources, args.dry_run)
        elif args.command == "uninstall":
            uninstall(host, {k for word in args.keep for k in word.replace(",", " ").split()}, args.dry_run)
        else:
            left = leftovers(host, {k for word in args.keep for k in word.replace(",", " ").split()})
            for item in left:
                print(item)
            return 1 if left else 0
    except HostError as exc:
        print(f"{parser.prog}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
