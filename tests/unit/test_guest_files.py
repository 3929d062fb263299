# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Files shared read-write with a QEMU guest are the guest's: the host recreates the directory each
run, writes with O_EXCL|O_NOFOLLOW and reads only regular files with O_NOFOLLOW, so a symlink or FIFO
the guest planted never makes root write or read elsewhere."""

from __future__ import annotations

import os

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.kernel import _qemu_guest as _qemu


def _spec(tmp_path):
    kernel = tmp_path / "bzImage"
    data = bytearray(0x400)
    data[0x202:0x206] = b"HdrS"
    kernel.write_bytes(bytes(data))
    return _qemu.GuestSpec(kernel=str(kernel), command="echo hi", rundir=str(tmp_path / "run"))


@pytest.mark.parametrize("name", ["command.sh", "stdout", "rc", "evil"])
def test_planted_symlinks_in_the_output_share_are_dropped_not_followed(tmp_path, name):
    spec = _spec(tmp_path)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    out = tmp_path / "run" / "out"
    out.mkdir(parents=True)
    (out / name).symlink_to(victim)
    _qemu.prepare(spec)
    assert victim.read_text() == "precious\n"
    assert sorted(os.listdir(out)) == ["command.sh"] and not (out / "command.sh").is_symlink()
    assert (out / "command.sh").read_text() == "echo hi\n"
    assert oct(os.stat(out).st_mode & 0o777) == "0o700"


def test_output_share_that_is_a_symlink_is_replaced(tmp_path):
    spec = _spec(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "out").symlink_to(elsewhere)
    _qemu.prepare(spec)
    assert os.listdir(elsewhere) == [] and not os.path.islink(tmp_path / "run" / "out")


def test_init_script_symlink_is_not_followed(tmp_path):
    spec = _spec(tmp_path)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "init.sh").symlink_to(victim)
    _qemu.prepare(spec)
    assert victim.read_text() == "precious\n"


def test_host_reads_only_regular_guest_files(tmp_path):
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$hash\n")
    (tmp_path / "stdout").symlink_to(secret)
    with pytest.raises(_qemu.QemuError, match="not a regular file"):
        _qemu.read_guest_file(str(tmp_path / "stdout"))
    os.mkfifo(tmp_path / "rc")
    with pytest.raises(_qemu.QemuError, match="not a regular file"):
        _qemu.read_guest_file(str(tmp_path / "rc"))
    (tmp_path / "big").write_bytes(b"x" * 100)
    assert _qemu.read_guest_file(str(tmp_path / "big"), limit=10) == "x" * 10
    assert _qemu.read_guest_file(str(tmp_path / "absent")) is None


def test_rundir_that_is_a_symlink_is_refused(tmp_path):
    spec = _spec(tmp_path)
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "run").symlink_to(real)
    with pytest.raises(_qemu.QemuError, match="symlink"):
        _qemu.prepare(spec)


@pytest.mark.parametrize("mode, needle", [(0o770, "is group/world-writable"), (0o707, "is group/world-writable")])
def test_a_rundir_another_user_could_write_is_refused_naming_it(tmp_path, mode, needle):
    spec = _spec(tmp_path)
    (tmp_path / "run").mkdir()
    os.chmod(tmp_path / "run", mode)
    with pytest.raises(_qemu.QemuError, match=f"QEMU run directory {str(tmp_path / 'run')!r} {needle}"):
        _qemu.prepare(spec)
    assert os.listdir(tmp_path / "run") == []


def test_a_rundir_under_a_directory_others_can_write_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)  # noqa: S103 - the hostile case: no sticky bit, anyone can rename the run directory
    spec = _spec(tmp_path)
    spec.rundir = str(shared / "run")
    with pytest.raises(_qemu.QemuError, match=f"the directory above it, {str(shared)!r}, is group/world-writable"):
        _qemu.prepare(spec)
    assert not (shared / "run").exists() or os.listdir(shared / "run") == []
