# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Boot the guest kernel under QEMU with the collection's runner (_qemu.run, what the qemu_exec module
uses) and run tests/qemu/test_netdevsim_tuning.py inside it, the host root shared read-only over 9p.

The guest kernel comes from XDPLAB_GUEST_KERNEL, else the path in /work/notes/guest-kernel.txt (written
by the kernel role's builder). No kernel is a failure, not a skip: these tests are the only place
where coalesce, ring and pause are applied for real.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils import _qemu

pytestmark = [pytest.mark.qemu, pytest.mark.root]

ROOT = Path(__file__).resolve().parents[2]
NOTE = Path("/work/notes/guest-kernel.txt")


def guest_kernel() -> str:
    path = os.environ.get("XDPLAB_GUEST_KERNEL") or (NOTE.read_text().strip() if NOTE.exists() else "")
    if not path or not os.path.isfile(path):
        pytest.fail(f"no guest kernel: set XDPLAB_GUEST_KERNEL or build one with the kernel role (got {path!r})")
    return path


@pytest.mark.skipif(os.uname().nodename == "xdplab-guest", reason="already inside the guest: no nested QEMU")
def test_netdevsim_tuning_inside_guest():
    kvm_ok, _why = _qemu.probe_kvm(timeout=3.0)
    with tempfile.TemporaryDirectory(prefix="h6-qemu-") as rundir:
        spec = _qemu.GuestSpec(
            kernel=guest_kernel(),
            command=(f"{ROOT}/.venv/bin/python -m pytest -q -p no:cacheprovider -o addopts='' "
                     f"--basetemp=/tmp/pytest {ROOT}/tests/qemu/test_netdevsim_tuning.py"),
            rundir=rundir,
            accel="kvm" if kvm_ok else "tcg",
            memory_mb=1024,
            cpus=2,
            env={"XDPLAB_IN_GUEST": "1", "PYTHONPATH": f"{ROOT}/.collections"},
            chdir=str(ROOT),
        )
        result = _qemu.run(spec, timeout=900)
        detail = (f"rc={result.rc} timed_out={result.timed_out} after {result.duration_s}s\n"
                  f"stdout:\n{result.stdout[-4000:]}\nstderr:\n{result.stderr[-2000:]}\n"
                  f"console:\n{_qemu.console_tail(result.console_log)}")
    assert not result.timed_out, detail
    assert result.rc == 0, detail
    m = re.search(r"(\d+) passed", result.stdout)
    assert m and int(m.group(1)) >= 6, detail
    assert not re.search(r"\d+ (failed|error|skipped)", result.stdout), detail
