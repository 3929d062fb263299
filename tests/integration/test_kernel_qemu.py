# SPDX-License-Identifier: GPL-3.0-or-later
"""qemu_exec against a real guest kernel built by the kernel role: command output and exit status,
serial console log, initramfs mode, kill at the deadline (no qemu process left), bad input. The
in-guest tests (tests/qemu/test_guest_kernel.py: patch effect, pktgen, netdevsim, BPF JIT + native XDP
on veth) run in molecule/kernel's verify, on both variants.

The guest kernel: $XDPLAB_GUEST_KERNEL, else the newest /var/lib/xdplab/kernel/<variant>/bzImage the
role (or molecule/kernel) built. Booting is TCG here: ~10-20 s per guest.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ANSIBLE = REPO / ".venv" / "bin" / "ansible"
STATEDIR = Path("/var/lib/xdplab/kernel")


def _find_kernel() -> tuple[str, Path | None]:
    env = os.environ.get("XDPLAB_GUEST_KERNEL")
    if env:
        return env, None
    # The kernel role's one-command guests boot from the host's root over 9p: the molecule/kernel
    # variants have it; the vmlab variant (a disk-booting guest) does not, and is never chosen.
    links = sorted((p for p in STATEDIR.glob("*/bzImage") if p.parent.name != "vmlab"),
                   key=lambda p: p.stat().st_mtime if p.exists() else 0)
    links = [p for p in links if p.exists()]
    if links:
        return str(links[-1]), links[-1].parent
    return "", None


KERNEL, _VARIANT_DIR = _find_kernel()
pytestmark = [
    pytest.mark.root,
    pytest.mark.qemu,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (9p shares of /)"),
]


def test_a_guest_kernel_was_built():
    """make test runs molecule/kernel first, which builds it: its absence is a failure, not a skip."""
    assert KERNEL, "no guest kernel: run the kernel role (molecule/kernel) or set XDPLAB_GUEST_KERNEL"


def bzimage_release(path: str) -> str:
    """The release a bzImage carries in its setup header (x86 boot protocol: "HdrS" at 0x202, at 0x20e the
    offset of the version string from 0x200), the string ``uname -r`` prints in that kernel."""
    data = Path(path).read_bytes()[:0x10000]
    assert data[0x202:0x206] == b"HdrS", f"{path} is not a bzImage"
    start = 0x200 + int.from_bytes(data[0x20E:0x210], "little")
    return data[start:data.index(b"\0", start)].decode().split(" ", 1)[0]


def qemu_exec(**args) -> dict:
    args.setdefault("kernel", KERNEL)
    argv = [str(ANSIBLE), "localhost", "-m", "xdplab.testbed.qemu_exec", "-a", json.dumps(args)]
    cp = subprocess.run(argv, capture_output=True, text=True, cwd=REPO,
                        env={**os.environ, "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
                             "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1", "ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.json"},
                        check=False)
    return json.loads(cp.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]


@pytest.fixture
def rundir():
    path = f"/var/lib/xdplab/qemu/h5-test-{os.getpid()}-{os.urandom(3).hex()}"
    yield path
    shutil.rmtree(path, ignore_errors=True)


def qemu_pids_for(path: str) -> list[int]:
    pids = []
    for d in glob.glob("/proc/[0-9]*"):
        try:
            cmd = Path(d, "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "qemu-system" in cmd and path in cmd:
            pids.append(int(os.path.basename(d)))
    return pids


def test_command_output_rc_and_console(rundir):
    res = qemu_exec(command="uname -r; echo h5-to-stderr >&2; exit 3", fail_on_rc=False, rundir=rundir,
                    timeout=300)
    assert res["rc"] == 3, res.get("msg")
    assert res["stderr"].strip() == "h5-to-stderr"
    release = res["stdout"].strip()
    assert release == bzimage_release(KERNEL), "the guest did not run the kernel it was given"
    console = Path(res["console_log"]).read_text(errors="replace")
    assert f"Linux version {release}" in console or "xdplab: guest command finished" in console
    assert "xdplab: guest command finished" in console
    assert res["accel"] in ("kvm", "tcg") and res["accel_reason"]
    assert not qemu_pids_for(rundir)


def test_the_guest_sees_the_hosts_usr_and_what_it_is_given_but_no_secrets(rundir, tmp_path):
    # The host's /etc/shadow, root's home and /var are not exported; /usr (python3, ip) is, and so are
    # host_dirs and the command's directory, read-only. The copied /etc resolves users and alternatives.
    given = tmp_path / "given"
    given.mkdir()
    (given / "note").write_text("h16-given\n")
    Path("/root/.h16-secret").write_text("secret\n")
    try:
        res = qemu_exec(command="for p in /etc/shadow /root/.h16-secret /var/lib/xdplab /etc/ssh; do "
                                "test -e $p && echo LEAK $p; done; cat " + str(given / "note") + "; "
                                "touch " + str(given / "x") + " 2>/dev/null || echo given-ro; "
                                "python3 -c 'import pwd; print(pwd.getpwuid(0).pw_name)'; ip -V | head -c 2; echo; "
                                "readlink -f /etc/alternatives/awk | cut -c1-9",
                        host_dirs=[str(given)], rundir=rundir, timeout=300)
    finally:
        Path("/root/.h16-secret").unlink()
    assert res.get("failed") is not True, res.get("msg")
    assert "LEAK" not in res["stdout"], res["stdout"]
    assert res["stdout"].split() == ["h16-given", "given-ro", "root", "ip", "/usr/bin/"], res["stdout"]


def test_nonzero_rc_fails_the_task_by_default(rundir):
    res = qemu_exec(command="false", rundir=rundir, timeout=300)
    assert res.get("failed") is True and res["rc"] == 1 and "status 1" in res["msg"]


def test_initramfs_rootfs(rundir):
    res = qemu_exec(rootfs="initramfs", command="busybox uname -n; test -x /host/usr/bin/python3 && echo host-ok",
                    rundir=rundir, timeout=300)
    assert res.get("failed") is not True, res.get("msg")
    assert res["stdout"].split() == ["xdplab-guest", "host-ok"]


def test_timeout_kills_guest(rundir):
    res = qemu_exec(command="sleep 1000", timeout=8, rundir=rundir)
    assert res.get("failed") is True and res["timed_out"] is True
    assert "did not finish within 8s" in res["msg"]
    assert res["rc"] is None
    assert not qemu_pids_for(rundir), "a qemu process outlived the timeout"


def test_bad_input_names_the_value(tmp_path):
    res = qemu_exec(kernel=str(tmp_path / "nope"), command="true")
    assert res.get("failed") and str(tmp_path / "nope") in res["msg"]
    notimg = tmp_path / "notimg"
    notimg.write_bytes(b"\0" * 4096)
    res = qemu_exec(kernel=str(notimg), command="true")
    assert res.get("failed") and "not an x86 bzImage" in res["msg"]
    res = qemu_exec(command="true", rundir="/tmp/h5-bad-rundir")
    assert res.get("failed") and "/tmp/h5-bad-rundir" in res["msg"]
