# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Boot the guest kernel with the collection's own runner, the xdplab.testbed.qemu_exec module (run as
Ansible runs it: an args file, JSON back; KVM when it works, TCG otherwise), and run
tests/qemu/test_netdevsim_tuning.py inside it, the host root shared read-only over 9p.

The guest kernel comes from XDPLAB_GUEST_KERNEL, else the path in /work/notes/guest-kernel.txt (written
by the kernel role's builder). No kernel is a failure, not a skip: these tests are the only place
where coalesce, ring and pause are applied for real.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.qemu, pytest.mark.root]

ROOT = Path(__file__).resolve().parents[2]
NOTE = Path("/work/notes/guest-kernel.txt")
QEMU_EXEC = ROOT / "plugins" / "modules" / "qemu_exec.py"


def guest_kernel() -> str:
    path = os.environ.get("XDPLAB_GUEST_KERNEL") or (NOTE.read_text().strip() if NOTE.exists() else "")
    if not path or not os.path.isfile(path):
        pytest.fail(f"no guest kernel: set XDPLAB_GUEST_KERNEL or build one with the kernel role (got {path!r})")
    return path


@pytest.mark.skipif(os.uname().nodename == "xdplab-guest", reason="already inside the guest: no nested QEMU")
def test_netdevsim_tuning_inside_guest():
    args = {
        "kernel": guest_kernel(),
        "command": (f"{ROOT}/.venv/bin/python -m pytest -q -p no:cacheprovider -o addopts='' "
                    f"--basetemp=/tmp/pytest {ROOT}/tests/qemu/test_netdevsim_tuning.py"),
        "cpus": 1,
        "memory": 1024,
        "timeout": 900,
        "chdir": str(ROOT),
        "environment": {"XDPLAB_IN_GUEST": "1", "PYTHONPATH": f"{ROOT}/.collections"},
    }
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump({"ANSIBLE_MODULE_ARGS": args}, handle)
    try:
        proc = subprocess.run([sys.executable, str(QEMU_EXEC), handle.name], capture_output=True, text=True,
                              env=dict(os.environ, PYTHONPATH=str(ROOT / ".collections")), timeout=1000,
                              check=False)
    finally:
        os.unlink(handle.name)
    try:
        res = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise AssertionError(f"qemu_exec printed no JSON: {proc.stdout[-2000:]!r} {proc.stderr[-2000:]!r}") from None
    detail = (f"rc={res.get('rc')} accel={res.get('accel')} ({res.get('accel_reason')}) "
              f"timed_out={res.get('timed_out')} after {res.get('duration_s')}s msg={res.get('msg')}\n"
              f"stdout:\n{str(res.get('stdout'))[-4000:]}\nstderr:\n{str(res.get('stderr'))[-2000:]}\n"
              f"console: {res.get('console_log')}")
    assert not res.get("failed") and res.get("rc") == 0 and not res.get("timed_out"), detail
    m = re.search(r"(\d+) passed", res["stdout"])
    assert m and int(m.group(1)) >= 6, detail
    assert not re.search(r"\d+ (failed|error|skipped)", res["stdout"]), detail
