# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which packages the roles hand to ansible.builtin.apt: the dpkg-query reading, on a captured output
and on this host's own status database."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _dpkg_status

# dpkg-query --show with the module's format; 'ghost' was removed but its config files stay ('rc'),
# 'broken' needs reinstalling ('iHR'-style error flag), libbpf-dev is Multi-Arch: same.
CAPTURE = (
    "clang\tamd64\tii \t1:14.0-55.7~deb12u1\n"
    "libbpf-dev\tamd64\tii \t1:1.1.0-1\n"
    "ghost\tamd64\trc \t1.0-1\n"
    "broken\tamd64\tiHR\t2.0-1\n"
    "fonts-foo\tall\tii \t3-1\n"
    "halfway\tamd64\tiU \t4-1\n"
)


def test_installed_ones_are_not_missing_and_the_others_are_in_their_order():
    names = ["netsniff-ng", "clang", "ghost", "libbpf-dev", "broken", "halfway", "fonts-foo"]
    assert _dpkg_status.missing(names, CAPTURE) == ["netsniff-ng", "ghost", "broken", "halfway"]


@pytest.mark.parametrize(("name", "is_missing"), [
    ("clang=1:14.0-55.7~deb12u1", False), ("clang=1:15.0-1", True),
    ("libbpf-dev:amd64", False), ("libbpf-dev:arm64", True), ("fonts-foo:amd64", False),
    ("clang/bookworm-backports", False), ("qemu-system-x86/bookworm-backports", True),
    ("clang=1:14*", True), ("clang>=1:14", True), ("./local.deb", True), ("", True), ("Clang", True),
])
def test_each_name_shape(name, is_missing):
    assert _dpkg_status.missing([name], CAPTURE) == ([name] if is_missing else [])


def test_one_query_for_every_name_it_understands():
    argv = _dpkg_status.query_argv(["clang", "clang=1:14", "libbpf-dev:amd64", "qemu-system-x86/bookworm-backports",
                                    "x>=1", "./a.deb"])
    assert argv[:2] == ["dpkg-query", "--show"] and argv[2].startswith("--showformat=")
    assert argv[3:] == ["clang", "libbpf-dev", "qemu-system-x86"]
    assert _dpkg_status.query_argv(["x>=1"]) == []


@pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="not a Debian host")
def test_on_this_hosts_status_database():
    names = ["dpkg", "xdplab-no-such-package", "coreutils"]
    proc = subprocess.run(_dpkg_status.query_argv(names), capture_output=True, text=True, check=False,
                          env={"LC_ALL": "C", "PATH": "/usr/bin:/bin:/usr/sbin:/sbin"})
    assert proc.returncode == 1 and "xdplab-no-such-package" in proc.stderr
    assert _dpkg_status.missing(names, proc.stdout) == ["xdplab-no-such-package"]
