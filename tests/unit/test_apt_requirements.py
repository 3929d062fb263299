# SPDX-License-Identifier: GPL-3.0-or-later
"""Every program the collection and its tests run comes from the base image or the apt lists.

A fresh Debian 12 machine has the base image's packages and what `make` installs from
requirements-apt.txt (`make bench`) and requirements-apt-test.txt (`make test`), nothing else.
This test finds the programs that tests/, roles/, plugins/, molecule/ and the playbooks run (argv
lists, get_bin_path, `argv:` in YAML) and fails when one is missing from the table below, or when
its package is in neither list. Where the program is
installed, `dpkg -S` checks that the table names the package that really ships it.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
# The project's copy of the base image's package list (what a fresh machine has before `make`).
BASE_IMAGE = ROOT / "tests" / "unit" / "fixtures" / "debian12-base-image-apt.txt"

# program -> Debian package. One row per program, whoever runs it.
PACKAGES = {
    "bpftool": "bpftool", "ccache": "ccache", "clang": "clang", "llvm-strip": "llvm", "setpriv": "util-linux",
    "dpdk-testpmd": "dpdk-dev", "ethtool": "ethtool", "git": "git", "ip": "iproute2", "tc": "iproute2",
    "iperf3": "iperf3", "sockperf": "sockperf", "make": "make", "gcc": "gcc", "modprobe": "kmod",
    "rmmod": "kmod", "depmod": "kmod", "mount": "mount", "umount": "mount", "nft": "nftables",
    "nice": "coreutils", "nproc": "coreutils", "tail": "coreutils", "df": "coreutils", "sleep": "coreutils",
    "true": "coreutils", "timeout": "coreutils", "uname": "coreutils", "install": "coreutils",
    "patch": "patch", "qemu-system-x86_64": "qemu-system-x86", "systemctl": "systemd",
    "tar": "tar", "trafgen": "netsniff-ng", "dpkg-query": "dpkg",
    "flex": "flex", "bison": "bison", "bc": "bc", "cpio": "cpio", "busybox": "busybox-static",
    "pkg-config": "pkgconf", "xz": "xz-utils", "chromium": "chromium", "mmdebstrap": "mmdebstrap",
    "mke2fs": "e2fsprogs", "mv": "coreutils", "ssh-keygen": "openssh-client", "ssh": "openssh-client",
    "pgrep": "procps", "sysctl": "procps", "grep": "grep", "cp": "coreutils", "dd": "coreutils",
    "truncate": "coreutils", "tee": "coreutils", "sfdisk": "fdisk", "apt-get": "apt", "userdel": "passwd",
    "taskset": "util-linux",
}
# Run by `make` on the kernel tree and by the kernel role's QEMU initramfs, not named in argv.
INDIRECT = ("depmod", "flex", "bison", "bc", "cpio", "busybox", "pkg-config", "llvm-strip", "xz")
# Run only on a target, never on the controller: the bootloader of a real host the kernel role installs a
# kernel on (kernel_reboot_ok), tuned-adm for a real host's tuned profile (host knobs; Debian's tuned
# enables its service when installed, so no list installs it: the host that asks for a profile has it),
# and ovs-dpctl on a DUT whose kernel has openvswitch (xdp_flow's ovs
# variant; the lab in a box's guest image carries it, the controller's kernel has no openvswitch).
TARGET_ONLY = {"grub-reboot": "grub2-common", "grub-set-default": "grub2-common",
               "update-grub": "grub2-common", "update-initramfs": "initramfs-tools", "grub-editenv": "grub-common",
               "ovs-dpctl": "openvswitch-switch", "tuned-adm": "tuned"}
# Built by the collection itself (files/xdpgen, files/xsk).
BUILT = {"xdpgen", "xskgen", "xsksink", "udpgen", "udpsink", "flowins"}
# Shell builtins and words the patterns below catch that are not programs.
NOT_PROGRAMS = {"set", "qemu", "hw", "active"}

_PY = [
    r"""(?:run_command|get_bin_path|which|Popen|check_output|check_call|subprocess\.run)\(\s*\[?\s*["']([A-Za-z0-9_.+-]+)["']""",
    r"""argv\s*=\s*\[\s*["']([A-Za-z0-9_.+-]+)["']""",
    r"""\[\s*["']([A-Za-z0-9_.+-]+)["']\s*,\s*["']-""",
]
_YAML = [r"argv:\s*\[\s*['\"]?([A-Za-z0-9_.+-]+)", r"argv:\s*\n\s*-\s*['\"]?([A-Za-z0-9_.+-]+)",
         r"\bcmd:\s*['\"]?([A-Za-z0-9_.+-]+)"]


def _files(patterns: list[str]) -> list[pathlib.Path]:
    out = []
    for pattern in patterns:
        out += [p for p in ROOT.glob(pattern) if ".venv" not in p.parts and ".collections" not in p.parts]
    return out


def programs_named() -> dict[str, set[str]]:
    """program -> files that run it."""
    found: dict[str, set[str]] = {}
    sources = [(p, _PY) for p in _files(["plugins/**/*.py", "tests/**/*.py", "files/**/*.py", "roles/**/*.py",
                                         "tools/*.py"])]
    sources += [(p, _YAML) for p in _files(["roles/**/*.yml", "playbooks/*.yml", "molecule/**/*.yml", "*.yml"])]
    for path, patterns in sources:
        if path.resolve() == pathlib.Path(__file__).resolve():
            continue
        text = path.read_text(encoding="utf-8")
        for pattern in patterns:
            for match in re.finditer(pattern, text):
                name = match.group(1)
                if name.startswith("-") or name[0].isdigit() or name in NOT_PROGRAMS:
                    continue
                found.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    return found


# apt-get's own forms: `pkg`, `pkg/suite` (that suite's version), `pkg=version`.
_APT_ITEM = re.compile(r"^([a-z0-9][a-z0-9+.-]+)(?:/([a-z0-9.-]+)|=([A-Za-z0-9.+:~-]+))?$")
# Suites the project's own apt sources (files/apt) set up, beside the base image's bookworm.
APT_SOURCES = ROOT / "files" / "apt"


def _parse_apt_item(item: str) -> tuple[str, str | None]:
    """`pkg/suite` -> (pkg, suite); `pkg` and `pkg=version` -> (pkg, None). Anything else is an error."""
    match = _APT_ITEM.match(item)
    if not match:
        raise ValueError(f"{item!r} is not a Debian package name, pkg/suite or pkg=version")
    return match.group(1), match.group(2)


def _project_suites() -> set[str]:
    suites = set()
    for path in APT_SOURCES.glob("*.sources"):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("Suites:"):
                suites.update(line.split(":", 1)[1].split())
    return suites


def _package_items(path: pathlib.Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.split("#")[0].strip() for line in lines if line.split("#")[0].strip()]


def _package_list(path: pathlib.Path) -> set[str]:
    return {_parse_apt_item(item)[0] for item in _package_items(path)}


BENCH_LIST = ROOT / "requirements-apt.txt"
TEST_LIST = ROOT / "requirements-apt-test.txt"
# What bench.yml runs on the embedded test bed (the roles it includes and the modules they call): its
# packages must be in the bench list, so `make bench` alone has them.
BENCH_PROGRAMS = ("ip", "tc", "ethtool", "nft", "bpftool", "clang", "llvm-strip", "gcc", "make", "trafgen",
                  "pkg-config")
# Only `make test` (and the lab in a box) needs these: they must stay out of the bench list.
TEST_ONLY_PACKAGES = ("chromium", "dpdk", "dpdk-dev", "qemu-system-x86", "linux-source-6.12", "linux-source-7.3",
                      "mmdebstrap",
                      "shellcheck", "libxdp-dev", "sockperf", "iperf3")


def installed_packages() -> set[str]:
    return _package_list(BASE_IMAGE) | _package_list(BENCH_LIST) | _package_list(TEST_LIST)


def test_bench_list_has_what_bench_runs():
    bench = _package_list(BASE_IMAGE) | _package_list(BENCH_LIST)
    missing = {program: PACKAGES[program] for program in BENCH_PROGRAMS if PACKAGES[program] not in bench}
    assert not missing, f"bench.yml runs these, but `make bench` does not install their packages: {missing}"


def test_bench_list_leaves_the_test_only_packages_to_make_test():
    heavy = _package_list(BENCH_LIST) & set(TEST_ONLY_PACKAGES)
    assert not heavy, f"test-only packages in requirements-apt.txt (make bench installs them): {sorted(heavy)}"
    assert set(TEST_ONLY_PACKAGES) <= _package_list(TEST_LIST) | _package_list(BASE_IMAGE)


def test_no_list_installs_a_service_the_run_did_not_ask_for():
    # tuned starts and enables its daemon on install, which retunes the host behind the run's back.
    assert "tuned" not in _package_list(BENCH_LIST) | _package_list(TEST_LIST)


def test_the_lists_name_each_package_once():
    both = _package_list(BENCH_LIST) & _package_list(TEST_LIST)
    assert not both, f"in both apt lists (one list per fact): {sorted(both)}"


def test_the_scan_finds_the_programs_it_must():
    # A pattern that stopped matching would make the checks below vacuous.
    found = programs_named()
    for name in ("sockperf", "iperf3", "trafgen", "dpdk-testpmd", "nft", "bpftool", "qemu-system-x86_64"):
        assert name in found, f"the scan no longer sees {name}"


def test_every_program_named_is_in_the_table():
    unknown = {name: sorted(files) for name, files in programs_named().items()
               if name not in PACKAGES and name not in TARGET_ONLY and name not in BUILT}
    assert not unknown, ("programs run by the collection or its tests with no Debian package in "
                         f"tests/unit/test_apt_requirements.py PACKAGES: {unknown}")


@pytest.mark.parametrize("program", sorted(set(PACKAGES)))
def test_package_is_in_the_base_image_or_requirements(program):
    package = PACKAGES[program]
    assert package in installed_packages(), (
        f"{program!r} comes from the Debian package {package!r}, which is neither in the base image "
        "nor in requirements-apt.txt or requirements-apt-test.txt: a fresh machine does not have it")


def test_indirect_programs_are_in_the_table():
    assert set(INDIRECT) <= set(PACKAGES)


def test_the_check_fails_for_a_missing_package(monkeypatch):
    # The same rule, fed a requirements file without sockperf: it must go red.
    monkeypatch.setitem(PACKAGES, "sockperf", "sockperf-not-in-any-list")
    with pytest.raises(AssertionError, match="sockperf-not-in-any-list"):
        test_package_is_in_the_base_image_or_requirements("sockperf")


def _dpkg_owner(path: str) -> str | None:
    # The name on PATH first: dpkg knows a symlink by the package that ships the link.
    for candidate in (path, re.sub(r"^/usr(?=/s?bin/)", "", path), os.path.realpath(path)):
        proc = subprocess.run(["dpkg-query", "-S", candidate], capture_output=True, text=True,  # noqa: S603, S607
                              env=dict(os.environ, LC_ALL="C"), check=False)
        if proc.returncode == 0:
            return proc.stdout.split(":")[0].strip()
    return None


@pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="not a Debian system: no dpkg-query")
@pytest.mark.parametrize("program", sorted(set(PACKAGES) | set(TARGET_ONLY)))
def test_table_matches_dpkg(program):
    path = shutil.which(program)
    if path is None:
        # Not installed here: the requirement test above covers controller programs.
        assert program in TARGET_ONLY, f"{program!r} is not installed although its package is required"
        return
    owner = _dpkg_owner(path)
    expected = PACKAGES.get(program) or TARGET_ONLY[program]
    assert owner is not None and owner.split(",")[0].split(":")[0] == expected, (
        f"{program} ({path}) is shipped by {owner!r}, the table says {expected!r}")


@pytest.mark.parametrize(("item", "expected"), [
    ("qemu-system-x86/bookworm-backports", ("qemu-system-x86", "bookworm-backports")),
    ("linux-source-7.3/trixie-backports", ("linux-source-7.3", "trixie-backports")),
    ("linux-source-6.12", ("linux-source-6.12", None)),
    ("libstdc++6", ("libstdc++6", None)),
    ("dpdk=22.11.4-1~deb12u1", ("dpdk", None)),
])
def test_the_list_parser_reads_apt_forms(item, expected):
    assert _parse_apt_item(item) == expected


@pytest.mark.parametrize("item", ["qemu system", "qemu/", "/bookworm", "Qemu"])
def test_the_list_parser_refuses_what_apt_would_not_take(item):
    with pytest.raises(ValueError, match="not a Debian package name"):
        _parse_apt_item(item)


def test_a_pinned_suite_is_set_up_by_the_project():
    # `pkg/suite` needs that suite in apt's sources on a fresh machine: files/apt must provide it.
    pinned = {suite for item in _package_items(TEST_LIST) for suite in [_parse_apt_item(item)[1]] if suite}
    assert pinned, "requirements-apt-test.txt pins nothing to a suite (qemu-system-x86 must come from backports)"
    assert pinned <= _project_suites() | {"bookworm"}, (
        f"suites pinned in requirements-apt-test.txt without a source in files/apt: "
        f"{sorted(pinned - _project_suites())}")
    # `make bench` adds no apt source: its list takes everything from the host's own suites.
    assert not any(_parse_apt_item(item)[1] for item in _package_items(BENCH_LIST))


def test_qemu_comes_from_a_suite_with_igb():
    # bookworm's QEMU 7.2 has no emulated igb; the vmlab guests need it.
    items = {_parse_apt_item(item)[0]: _parse_apt_item(item)[1]
             for item in _package_items(TEST_LIST)}
    assert items.get("qemu-system-x86") == "bookworm-backports"


def _pin_stanzas() -> list[tuple[str, str, int]]:
    """files/apt/*.pref: (`Package:` item, suite of `Pin: release n=...`, Pin-Priority) of every stanza."""
    out = []
    for path in APT_SOURCES.glob("*.pref"):
        for stanza in path.read_text(encoding="utf-8").split("\n\n"):
            fields = dict(line.split(":", 1) for line in stanza.splitlines()
                          if line and not line.startswith("#") and ":" in line)
            suite = re.fullmatch(r"\s*release n=([a-z0-9.-]+)\s*", fields.get("Pin", ""))
            assert suite, f"{path.name}: a stanza without `Pin: release n=<suite>`: {stanza!r}"
            out += [(item, suite.group(1), int(fields["Pin-Priority"])) for item in fields.get("Package", "").split()]
    return out


def _pins() -> dict[str, str]:
    """Each `Package:` item the project's pins let in -> its suite. A pin that lets a package in must at least
    match the default suite's priority (500); the only other priority is -1, a suite's "never"."""
    pins: dict[str, str] = {}
    for item, suite, priority in _pin_stanzas():
        assert priority >= 500 or priority == -1, f"{item} from {suite}: priority {priority}, neither >= 500 nor -1"
        if priority >= 500:
            pins[item] = suite
    return pins


def _suite_items(suite: str) -> set[str]:
    return {name for item in _package_items(TEST_LIST) for name, pinned in [_parse_apt_item(item)] if pinned == suite}


def test_qemu_dependencies_follow_it_to_backports():
    # apt-get takes only the named package from `pkg/suite`: its dependencies come from the default
    # suite, and qemu-system-x86 10.0 with bookworm's qemu-system-common 7.2 and seabios 1.16.2 is
    # "held broken packages" on a fresh machine. The pin moves the whole source package set.
    pins = _pins()
    assert pins.get("src:qemu") == "bookworm-backports", pins
    assert pins.get("src:seabios") == "bookworm-backports", pins
    assert set(pins.values()) <= _project_suites(), f"pins to suites files/apt does not set up: {pins}"
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "--sources files/apt" in makefile and "files/apt/*.pref" in makefile


def test_the_lab_kernel_source_comes_from_trixie_backports():
    # bookworm and bookworm-backports stop at 6.12 (no AF_XDP zero copy in virtio_net, none in igb before 6.14).
    assert _suite_items("trixie-backports") == {"linux-source-7.3"}
    assert "trixie-backports" in _project_suites()


def test_nothing_else_comes_from_trixie():
    # On a bookworm host, trixie-backports gives linux-source-7.3 and nothing else: every other package of
    # the suite is pinned to -1 (never installed, never an upgrade), and that package alone is let in.
    stanzas = [(item, priority) for item, suite, priority in _pin_stanzas() if suite.startswith("trixie")]
    assert ("*", -1) in stanzas, f"trixie-backports is not closed to every package: {stanzas}"
    let_in = {item for item, priority in stanzas if priority > 0}
    listed = _suite_items("trixie-backports")
    assert let_in == listed, f"pins let in {sorted(let_in)} from trixie-backports, the list takes {sorted(listed)}"
    # The specific stanza after the `*` one: apt takes a package's own stanza over the suite-wide one.
    assert all(not item.startswith("src:") and "*" not in item for item in let_in)
    # No suite of the project but backports: trixie itself is never added.
    assert _project_suites() == {"bookworm-backports", "trixie-backports"}


def test_the_trixie_pin_check_fails_when_the_suite_is_left_open(monkeypatch):
    # The same rule on a pin file without the `*` stanza: it must go red.
    stanzas = [row for row in _pin_stanzas() if row[0] != "*"]
    monkeypatch.setattr(sys.modules[__name__], "_pin_stanzas", lambda: stanzas)
    with pytest.raises(AssertionError, match="not closed to every package"):
        test_nothing_else_comes_from_trixie()
