# SPDX-License-Identifier: GPL-3.0-or-later
"""`make`'s installer and `make uninstall` on this machine's real dpkg and apt, without disturbing it.

tools/host_deps.py installs a probe list (one small package the machine does not have, `sl`, and
the ones it has already), records what the transaction added, then uninstalls with the same record:
afterwards the machine holds none of it, and the packages it had before are all still there. The
files it writes (the record, apt sources) go to a temporary root, so the machine's own record and
apt sources are not touched; only the probe package comes and goes.
"""

from __future__ import annotations

import os
import pathlib
import shutil

import host_deps
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

PROBE = "sl"

pytestmark = [pytest.mark.root,
              pytest.mark.skipif(os.geteuid() != 0 or shutil.which("apt-get") is None, reason="needs root and apt")]


def test_install_then_uninstall_leaves_the_machine_as_it_was(tmp_path):
    before = host_deps.installed_packages(host_deps.run)
    assert PROBE not in before, f"{PROBE} is installed here already: the probe must be a package the machine lacks"
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    shutil.copyfile("/etc/os-release", root / "etc/os-release")
    (root / "etc/passwd").write_text("")
    probe = tmp_path / "probe.txt"
    probe.write_text(f"{PROBE}\niproute2\n")
    host = host_deps.Host(root=root)
    try:
        added = host_deps.install(host, [probe], None, dry_run=False)
        assert PROBE in added and "iproute2" not in added
        assert host.manifest() == added
        assert f"package {PROBE}" in host_deps.leftovers(host, set())
        host_deps.uninstall(host, set(), dry_run=False)
        assert host_deps.leftovers(host, set()) == []
    finally:
        # Whatever failed above, the probe does not stay on the machine.
        if PROBE in host_deps.installed_packages(host_deps.run):
            host_deps.run(["apt-get", "-y", "-qq", "purge", PROBE])
    after = host_deps.installed_packages(host_deps.run)
    assert after == before, f"added: {sorted(after - before)}, removed: {sorted(before - after)}"
