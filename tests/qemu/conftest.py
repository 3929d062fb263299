# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Helpers of the host-side runners (tests/qemu/test_*_runner.py): find the guest kernel, boot it with
the collection's own xdplab.testbed.qemu_exec module (run as Ansible runs it: an args file, JSON back;
KVM when it works, TCG otherwise) and run one of the in-guest test files there, the host root shared
read-only over 9p. Loaded inside the guest too, where it only defines functions."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import playbook_run
import pytest

ROOT = Path(__file__).resolve().parents[2]
QEMU_EXEC = ROOT / "plugins" / "modules" / "qemu_exec.py"
VENV_BIN = ROOT / ".venv" / "bin"
# What molecule/kernel builds (make test runs it before these tests); XDPLAB_GUEST_KERNEL overrides.
DEFAULT_GUEST_KERNEL = "/var/lib/xdplab/kernel/baseline/bzImage"
IN_GUEST = os.uname().nodename == "xdplab-guest"


def guest_kernel() -> str:
    """The bzImage to boot. No kernel is a failure, not a skip."""
    path = os.environ.get("XDPLAB_GUEST_KERNEL") or DEFAULT_GUEST_KERNEL
    if not os.path.isfile(path):
        pytest.fail(f"no guest kernel at {path!r}: set XDPLAB_GUEST_KERNEL or build one with the kernel role "
                    "(molecule/kernel)")
    return path


def run_module_file(path: Path, args: dict, timeout: int = 120) -> dict:
    """Run a module file as Ansible runs it (an args file, JSON back) with this interpreter; the JSON
    result plus the process's exit status as ``rc`` unless the module set one."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, dir="/tmp") as handle:  # noqa: S108
        json.dump({"ANSIBLE_MODULE_ARGS": args}, handle)
    try:
        proc = subprocess.run([sys.executable, str(path), handle.name], capture_output=True, text=True,  # noqa: S603
                              env=dict(os.environ, PYTHONPATH=str(ROOT / ".collections")), timeout=timeout,
                              check=False)
    finally:
        os.unlink(handle.name)
    try:
        out = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise AssertionError(f"{path.name} printed no JSON: rc={proc.returncode} {proc.stdout[-2000:]!r} "
                             f"{proc.stderr[-2000:]!r}") from None
    out.setdefault("rc", proc.returncode)
    return out


def run_guest_tests(test_file: str, min_passed: int, cpus: int, timeout: int) -> dict:
    """Run tests/qemu/<test_file> with pytest inside a fresh guest; assert it ran at least min_passed
    tests with none failed, errored or skipped; return qemu_exec's result."""
    args = {
        "kernel": guest_kernel(),
        "command": (f"{VENV_BIN}/python -m pytest -q -p no:cacheprovider -o addopts='' "
                    f"--basetemp=/tmp/pytest {ROOT}/tests/qemu/{test_file}"),
        "cpus": cpus,
        "memory": 1024,
        "timeout": timeout,
        "chdir": str(ROOT),
        # no plugin autoload: the in-guest tests use none, and hypothesis's plugin alone takes 1.8 s to
        # import on the host, ten times that under emulation
        "environment": {"XDPLAB_IN_GUEST": "1", "PYTHONPATH": f"{ROOT}/.collections",
                        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
    }
    res = run_module_file(QEMU_EXEC, args, timeout=timeout + 100)
    detail = (f"rc={res.get('rc')} accel={res.get('accel')} ({res.get('accel_reason')}) "
              f"timed_out={res.get('timed_out')} after {res.get('duration_s')}s msg={res.get('msg')}\n"
              f"stdout:\n{str(res.get('stdout'))[-4000:]}\nstderr:\n{str(res.get('stderr'))[-2000:]}\n"
              f"console: {res.get('console_log')}")
    assert not res.get("failed") and res.get("rc") == 0 and not res.get("timed_out"), detail
    m = re.search(r"(\d+) passed", res["stdout"])
    assert m and int(m.group(1)) >= min_passed, detail
    assert not re.search(r"\d+ (failed|error|skipped)", res["stdout"]), detail
    return res


def ansible_playbook(playbook: str, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    """Run one of the collection's playbooks from the checkout with the venv's ansible-playbook, no colour."""
    argv = [str(VENV_BIN / "ansible-playbook"), playbook, *args]
    return playbook_run.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False,  # noqa: S603
                            env=dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0"))


def only_run_dir(results_root: Path) -> Path:
    """The one run directory a playbook made under results_root."""
    dirs = [d for d in results_root.iterdir() if d.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]
