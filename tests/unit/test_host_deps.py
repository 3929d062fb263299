# SPDX-License-Identifier: GPL-3.0-or-later
"""tools/host_deps.py: what `make` adds to a host, and `make uninstall` taking it away.

The host is a fake root (a temporary directory with etc/ and var/) and a fake dpkg/apt: the tests
install, then uninstall, then ask what of ours is left, without touching the machine they run on.
"""

from __future__ import annotations

import pathlib
import re
import subprocess

import host_deps
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

BOOKWORM = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_CODENAME=bookworm\n'
TRIXIE = 'PRETTY_NAME="Debian GNU/Linux 13 (trixie)"\nID=debian\nVERSION_CODENAME=trixie\n'
UBUNTU = 'PRETTY_NAME="Ubuntu 24.04 LTS"\nID=ubuntu\nID_LIKE=debian\nVERSION_CODENAME=noble\n'
# What apt pulls in beside the packages named: dependencies it adds to the transaction.
DEPENDENCIES = {"clang": ["clang-14", "libclang-cpp14"], "qemu-system-x86": ["qemu-system-common"]}


class FakeDpkg:
    """dpkg-query -W and apt-get install/purge over a set of installed package names."""

    def __init__(self, installed):
        self.installed = set(installed)
        self.calls: list[list[str]] = []

    def __call__(self, argv):
        self.calls.append(argv)
        if argv[0] == "dpkg-query":
            out = "".join(f"{name}\tii \n" for name in sorted(self.installed)) + "removed\trc \n"
            return subprocess.CompletedProcess(argv, 0, out, "")
        if argv[0] == "apt-get":
            verb = next(a for a in argv if a in ("update", "install", "purge"))
            names = [a.split("/")[0] for a in argv[argv.index(verb) + 1:] if not a.startswith("-")]
            for name in names:
                if verb == "install":
                    self.installed |= {name, *DEPENDENCIES.get(name, [])}
                elif verb == "purge":
                    self.installed.discard(name)
            return subprocess.CompletedProcess(argv, 0, "", "")
        if argv[0] == "userdel":
            passwd = pathlib.Path(argv[argv.index("--root") + 1]) / "etc/passwd"
            passwd.write_text("".join(line + "\n" for line in passwd.read_text().splitlines()
                                      if not line.startswith(argv[-1] + ":")))
            return subprocess.CompletedProcess(argv, 0, "", "")
        raise AssertionError(f"unexpected command {argv}")


@pytest.fixture
def fake(tmp_path):
    root = tmp_path / "root"
    (root / "etc/apt/sources.list.d").mkdir(parents=True)
    (root / "etc/apt/preferences.d").mkdir(parents=True)
    (root / "etc/os-release").write_text(BOOKWORM)
    (root / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    # The user's own apt source and a package the host had before: neither is ours.
    (root / "etc/apt/sources.list.d/debian.sources").write_text("Types: deb\n")
    dpkg = FakeDpkg({"coreutils", "iproute2", "gcc"})
    lines: list[str] = []
    host = host_deps.Host(root=root, runner=dpkg, say=lines.append)
    lists = tmp_path / "lists"
    lists.mkdir()
    (lists / "bench.txt").write_text("# bench\niproute2\nclang\ngcc  # already there\n")
    (lists / "test.txt").write_text("qemu-system-x86/bookworm-backports\n")
    return host, dpkg, lines, lists


def _runs_of_ours(root):
    # What the collection's runs and the kernel role leave: state, cache, the lock directory, the user.
    for rel in ("var/lib/xdplab/kernel/baseline", "var/lib/xdplab/ledger", "var/cache/xdplab/ccache", "run/xdplab"):
        (root / rel).mkdir(parents=True, exist_ok=True)
    (root / "var/lib/xdplab/kernel/baseline/bzImage").write_text("kernel")
    with (root / "etc/passwd").open("a") as passwd:
        passwd.write("xdplab-build:x:999:999::/nonexistent:/usr/sbin/nologin\n")


def test_install_records_what_the_transaction_added(fake):
    host, dpkg, lines, lists = fake
    added = host_deps.install(host, [lists / "bench.txt"], None, dry_run=False)
    assert added == ["clang", "clang-14", "libclang-cpp14"]
    assert host.manifest() == added
    # Only the missing packages are named to apt; gcc and iproute2 were there.
    install = next(c for c in dpkg.calls if "install" in c)
    assert install[-1:] == ["clang"]
    assert lines[0] == "distribution: Debian GNU/Linux 12 (bookworm) (ID=debian, VERSION_CODENAME=bookworm)"
    assert not host.our_apt_files()


def test_dry_run_changes_nothing_and_says_what_it_would(fake):
    host, dpkg, lines, lists = fake
    host_deps.install(host, [lists / "bench.txt", lists / "test.txt"], ROOT / "files/apt", dry_run=True)
    assert not any(c[0] == "apt-get" for c in dpkg.calls)
    assert not host.our_apt_files() and not host.manifest()
    text = "\n".join(lines)
    assert "would add" in text and "xdplab-bookworm-backports.sources" in text
    assert "would install 2 packages (and their dependencies): clang qemu-system-x86/bookworm-backports" in text


@pytest.mark.parametrize(("release", "named"), [
    (TRIXIE, "Debian GNU/Linux 13 (trixie) (ID=debian, VERSION_CODENAME=trixie)"),
    (UBUNTU, "Ubuntu 24.04 LTS (ID=ubuntu, VERSION_CODENAME=noble)"),
    ("", "an unnamed distribution (ID=?, VERSION_CODENAME=?)"),
])
def test_backports_source_only_on_the_release_it_is_for(fake, release, named):
    host, dpkg, _lines, lists = fake
    (host.root / "etc/os-release").write_text(release)
    with pytest.raises(host_deps.HostError, match=re.escape(f"made for Debian bookworm; this host is {named}")):
        host_deps.install(host, [lists / "test.txt"], ROOT / "files/apt", dry_run=False)
    assert not host.our_apt_files() and not dpkg.calls


def test_each_suite_names_the_release_it_is_for():
    # bookworm-backports by its name; trixie-backports on bookworm (linux-source-7.3 alone) by its own field.
    suites = dict(host_deps.source_suites(sorted((ROOT / "files/apt").glob("*.sources"))))
    assert suites == {"bookworm-backports": "bookworm", "trixie-backports": "bookworm"}


@pytest.mark.parametrize(("release", "named"), [
    (TRIXIE, "Debian GNU/Linux 13 (trixie) (ID=debian, VERSION_CODENAME=trixie)"),
    (UBUNTU, "Ubuntu 24.04 LTS (ID=ubuntu, VERSION_CODENAME=noble)"),
])
def test_trixie_backports_source_only_on_bookworm(fake, tmp_path, release, named):
    # Even on trixie itself: the source and its pin are made for a bookworm host taking one package from it.
    host, dpkg, _lines, lists = fake
    only = tmp_path / "apt"
    only.mkdir()
    for name in ("xdplab-trixie-backports.sources", "xdplab-trixie-backports.pref"):
        (only / name).write_bytes((ROOT / "files/apt" / name).read_bytes())
    (host.root / "etc/os-release").write_text(release)
    words = f"apt source for trixie-backports is made for Debian bookworm; this host is {named}"
    with pytest.raises(host_deps.HostError, match=re.escape(words)):
        host_deps.install(host, [lists / "test.txt"], only, dry_run=False)
    assert not host.our_apt_files() and not dpkg.calls


def test_a_source_without_the_field_is_for_its_suites_codename(tmp_path):
    source = tmp_path / "x.sources"
    source.write_text("# comment: X-Xdplab-Host-Release: nothing\nTypes: deb\nSuites: trixie-backports trixie\n\n"
                      "Types: deb\nSuites: sid\nX-Xdplab-Host-Release: bookworm\n")
    assert host_deps.source_suites([source]) == [("trixie-backports", "trixie"), ("trixie", "trixie"),
                                                 ("sid", "bookworm")]


def test_without_sources_any_release_installs(fake):
    # The bench list needs no source of ours: on trixie it installs from the host's own suites.
    host, _dpkg, lines, lists = fake
    (host.root / "etc/os-release").write_text(TRIXIE)
    host_deps.install(host, [lists / "bench.txt"], None, dry_run=False)
    assert "trixie" in lines[0] and host.manifest()


def test_uninstall_leaves_nothing_of_ours_and_everything_else(fake):
    host, dpkg, _lines, lists = fake
    host_deps.install(host, [lists / "bench.txt", lists / "test.txt"], ROOT / "files/apt", dry_run=False)
    _runs_of_ours(host.root)
    assert len(host.our_apt_files()) == 4
    before = host_deps.leftovers(host, set())
    assert "user xdplab-build" in before and f"directory {host.root}/run/xdplab" in before
    assert "package qemu-system-common" in before

    removed = host_deps.uninstall(host, set(), dry_run=False)
    assert removed == before
    assert host_deps.leftovers(host, set()) == []
    # What the host had before stays: its packages, its own apt source, its users.
    assert {"coreutils", "iproute2", "gcc"} <= dpkg.installed
    assert (host.root / "etc/apt/sources.list.d/debian.sources").exists()
    assert "root:x:0:0" in (host.root / "etc/passwd").read_text()


def test_uninstall_keeps_what_the_user_chose(fake):
    host, dpkg, _lines, lists = fake
    host_deps.install(host, [lists / "bench.txt", lists / "test.txt"], ROOT / "files/apt", dry_run=False)
    _runs_of_ours(host.root)
    host_deps.uninstall(host, {"state", "qemu-system-x86"}, dry_run=False)
    assert (host.root / "var/lib/xdplab/kernel/baseline/bzImage").exists()
    assert "qemu-system-x86" in dpkg.installed and "clang" not in dpkg.installed
    assert not (host.root / "var/cache/xdplab").exists()
    assert host_deps.leftovers(host, {"state", "qemu-system-x86"}) == []


def test_uninstall_dry_run_removes_nothing(fake):
    host, dpkg, lines, lists = fake
    host_deps.install(host, [lists / "bench.txt"], None, dry_run=False)
    _runs_of_ours(host.root)
    installed = set(dpkg.installed)
    todo = host_deps.uninstall(host, set(), dry_run=True)
    assert "package clang" in todo and dpkg.installed == installed
    assert (host.root / "var/cache/xdplab").exists() and "would remove user xdplab-build" in lines


def test_uninstall_refuses_while_the_ledger_holds_a_run(fake):
    host, dpkg, _lines, _lists = fake
    _runs_of_ours(host.root)
    (host.root / "var/lib/xdplab/ledger/0001-netns.json").write_text("{}")
    with pytest.raises(host_deps.HostError, match="ledger .* holds 1 entries .*teardown.yml"):
        host_deps.uninstall(host, set(), dry_run=False)
    assert (host.root / "var/cache/xdplab").exists() and not dpkg.calls


def test_leftovers_sees_a_package_uninstall_missed(fake):
    # The check after an uninstall must be able to fail: a recorded package still installed is named.
    host, dpkg, _lines, lists = fake
    host_deps.install(host, [lists / "bench.txt"], None, dry_run=False)
    assert "package clang" in host_deps.leftovers(host, set())
    assert host_deps.leftovers(host, {"packages", "state"}) == []


def test_the_makefile_installs_through_the_tool():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "tools/host_deps.py" in makefile and "apt-get install" not in makefile
    assert "$(HOST_DEPS) install requirements-apt.txt\n" in makefile
    assert "$(HOST_DEPS) install --sources files/apt requirements-apt.txt requirements-apt-test.txt" in makefile
    assert "$(HOST_DEPS) uninstall" in makefile
