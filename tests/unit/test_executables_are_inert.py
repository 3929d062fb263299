# SPDX-License-Identifier: GPL-3.0-or-later
"""Nothing in the checkout runs by accident.

A CI run once lost /tmp half way: a role test set ANSIBLE_INVENTORY="localhost,". That variable is a
path list, so the empty entry after the comma named the working directory, the checkout. Ansible then
read the checkout as an inventory directory and ran every executable file in it with `--list`: the
vmlab guest's init mounted tmpfs over the host's /tmp, /run and /dev/shm, and .ci/run started the
whole test suite again. So: no test passes a host list through ANSIBLE_INVENTORY, and every executable
file in the repository refuses to act on arguments it was not made for.
"""

from __future__ import annotations

import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCANNED = ("tests", "molecule", "playbooks", "roles", "Makefile", "ansible.cfg", ".ci")


def _texts():
    for entry in SCANNED:
        path = ROOT / entry
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for file in files:
            if file.suffix in {".py", ".yml", ".yaml", ".cfg", ".ini", ""} or file.name == "Makefile":
                try:
                    yield file, file.read_text()
                except UnicodeDecodeError:
                    continue


def test_no_host_list_through_the_inventory_variable():
    offenders = []
    for file, text in _texts():
        if file == pathlib.Path(__file__):
            continue
        for m in re.finditer(r"ANSIBLE_INVENTORY\W{1,6}([^\s\"'}]*)", text):
            if "," in m.group(1):
                offenders.append(f"{file.relative_to(ROOT)}: {m.group(0)}")
    assert not offenders, offenders


def _executables() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [line.split("\t", 1)[1] for line in out.splitlines() if line.startswith("100755 ")]


def test_the_executables_are_the_known_ones():
    # A new executable file must be added to GUARDS below with the guard that keeps it inert.
    assert sorted(_executables()) == sorted(GUARDS)


GUARDS = {
    ".ci/run": 'if [ $# -ne 0 ]; then',
    "files/vmlab/customize.sh": 'if [ $# -ne 1 ] || [ ! -d "$1/etc" ]',
    "files/vmlab/xdplab-init": 'if [ "$$" != 1 ]; then',
}


@pytest.mark.parametrize("path", sorted(GUARDS))
def test_each_executable_guards_before_it_acts(path):
    lines = [ln for ln in (ROOT / path).read_text().splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    guard = next(i for i, ln in enumerate(lines) if GUARDS[path] in ln)
    # Only the shell preamble may come before the guard.
    before = [ln for ln in lines[:guard] if not re.match(r"(set -\w+( pipefail)?|PATH=\S+|export PATH)$", ln.strip())]
    assert before == [], before


@pytest.mark.parametrize("path", [".ci/run", "files/vmlab/customize.sh"])
def test_run_as_an_inventory_script_they_refuse(path):
    r = subprocess.run([str(ROOT / path), "--list"], capture_output=True, text=True, timeout=30, check=False)
    assert r.returncode == 2 and "--list" in r.stderr, (r.returncode, r.stderr)
