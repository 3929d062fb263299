# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""No option injection into QEMU: every user-controlled value that reaches QEMU's argv - qemu_exec's run
directory, disks, shares, host_dirs and chdir; a vmlab guest's image and run directory - is fed commas,
'=', spaces and option names, and what QEMU received is read back from QEMU itself.

QEMU (the one the collection runs) is started with the planned argv, frozen before the guest runs
(``-S``), with a QMP monitor on stdio: ``query-block`` gives the drive's file name as QEMU parsed it,
and /proc/PID/fd the files and directories QEMU opened (the 9p shares' roots, the console log, the
pidfile). A split value would make QEMU refuse an unknown parameter, or open another path. -kernel,
-initrd and -append are dropped from the argv (verbatim options: QEMU does not split them; there is no
kernel to load without the kernel role's build). Newlines and other control characters are refused
before QEMU, naming the value."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.kernel import _qemu_guest as _qemu
from ansible_collections.xdplab.testbed.plugins.module_utils.testbed import _vmlab_guests as _vmlab

HOSTILE = "a,b=c d,id=x,path=y"
VERBATIM = {"-kernel", "-initrd", "-append"}


def _fake_bzimage(path: Path) -> str:
    data = bytearray(0x400)
    data[0x202:0x206] = b"HdrS"
    path.write_bytes(bytes(data))
    return str(path)


def _without_verbatim(argv: list[str]) -> list[str]:
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in VERBATIM:
            skip = True
        else:
            out.append(arg)
    return out


def _qemu_view(argv: list[str]) -> tuple[list[dict], set[str]]:
    """Start QEMU frozen with argv plus a QMP monitor; return (query-block, paths of its open fds)."""
    proc = subprocess.Popen([*argv, "-S", "-qmp", "stdio"], stdin=subprocess.PIPE,  # noqa: S603 - argv list
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        def ask(cmd: dict) -> dict:
            proc.stdin.write(json.dumps(cmd) + "\n")
            proc.stdin.flush()
            while True:
                line = proc.stdout.readline()
                if not line:
                    raise AssertionError(f"QEMU ended: rc={proc.wait(10)} {proc.stderr.read()[-2000:]}\nargv={argv}")
                reply = json.loads(line)
                if "return" in reply or "error" in reply:
                    return reply

        greeting = proc.stdout.readline()
        assert "QMP" in greeting, (greeting, proc.stderr.read() if proc.poll() is not None else "")
        ask({"execute": "qmp_capabilities"})
        blocks = ask({"execute": "query-block"})["return"]
        fds = set()
        for fd in os.listdir(f"/proc/{proc.pid}/fd"):
            try:
                fds.add(os.readlink(f"/proc/{proc.pid}/fd/{fd}"))
            except OSError:
                continue
        ask({"execute": "quit"})
        proc.wait(10)
        return blocks, fds
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_qemu_exec_values_reach_qemu_whole(tmp_path):
    odd = tmp_path / HOSTILE
    for sub in ("host dir,x=1", "cwd,readonly=off", "share,security_model=passthrough"):
        (odd / sub).mkdir(parents=True)
    disk = odd / "disk,format=qcow2,file=shadow"
    disk.write_bytes(b"\0" * 65536)
    share = _qemu.Share(str(odd / "share,security_model=passthrough"), "t1", "/mnt/t1")
    spec = _qemu.GuestSpec(kernel=_fake_bzimage(tmp_path / "bzImage"), command="true", rundir=str(odd / "run,x=y"),
                           disks=[str(disk)], host_dirs=[str(odd / "host dir,x=1")],
                           chdir=str(odd / "cwd,readonly=off"), shares=[share])
    argv, console_log = _qemu.prepare(spec)
    blocks, fds = _qemu_view(_without_verbatim(argv))
    assert [b["inserted"]["file"] for b in blocks if b.get("inserted")] == [str(disk)], blocks
    for path in (odd / "host dir,x=1", odd / "cwd,readonly=off", odd / "share,security_model=passthrough",
                 odd / "run,x=y" / "out", Path(console_log)):
        assert str(path) in fds, (path, sorted(fds))
    assert Path(console_log).is_file() and console_log.startswith(str(odd / "run,x=y"))
    assert not list(odd.glob("run,,*")), "a doubled comma reached a file name"
    for field, bad in (("rundir", str(odd / "run\n-x")), ("disks", [str(odd / "d\nx")]),
                       ("host_dirs", [str(odd / "h\nx")]), ("chdir", str(odd / "c\nx"))):
        with pytest.raises(_qemu.QemuError, match="control character|not an existing"):
            _qemu.validate_spec(_qemu.GuestSpec(**dict(spec.__dict__, **{field: bad})))


def test_vmlab_guest_values_reach_qemu_whole(tmp_path):
    odd = tmp_path / HOSTILE
    rundir = odd / "run,readonly=off"
    (rundir / "share").mkdir(parents=True)
    image = odd / "root,snapshot=off,file=shadow.img"
    image.write_bytes(b"\0" * 65536)
    guest = _vmlab.Guest(name="vmodd", index=1, kernel=_fake_bzimage(tmp_path / "bzImage"), image=str(image),
                         rundir=str(rundir), ssh_port=_free_port())
    _vmlab.validate(guest)
    blocks, fds = _qemu_view(_without_verbatim(_vmlab.plan_argv(guest, {})))
    # snapshot=on: QEMU writes to a temporary overlay whose backing file is the image
    files = [(b["inserted"]["file"], b["inserted"].get("backing_file")) for b in blocks if b.get("inserted")]
    assert len(files) == 1 and str(image) in files[0], blocks
    for path in (rundir / "share", rundir / "console.log", rundir / "qemu.pid"):  # the pidfile: held open, locked
        assert str(path) in fds, (path, sorted(fds))
    assert not list(odd.glob("run,,*"))
    guest.boot = "disk"
    (rundir / _vmlab.DISK_FILE).write_bytes(b"\0" * 65536)
    blocks, _fds = _qemu_view(_without_verbatim(_vmlab.plan_argv(guest, {})))
    assert [b["inserted"]["file"] for b in blocks if b.get("inserted")] == [str(rundir / _vmlab.DISK_FILE)]
