# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the private _qemu helpers (argv, init script, initramfs, validation)."""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.kernel import _qemu_guest as _qemu


def _bzimage(tmp_path, good=True):
    img = tmp_path / "bzImage"
    data = bytearray(0x400)
    if good:
        data[0x202:0x206] = b"HdrS"
    img.write_bytes(bytes(data))
    return str(img)


def _spec(tmp_path, **kw):
    base = dict(kernel=_bzimage(tmp_path), command="uname -r", rundir=str(tmp_path / "run"))
    base.update(kw)
    return _qemu.GuestSpec(**base)


def test_argv_tcg_host9p(tmp_path):
    spec = _spec(tmp_path, memory_mb=512, cpus=2)
    argv = _qemu.qemu_argv(spec, "/x/init.sh", "/x/console.log")
    assert argv[argv.index("-accel") + 1] == "tcg"
    assert argv[argv.index("-m") + 1] == "512"
    assert argv[argv.index("-serial") + 1] == "file:/x/console.log"
    append = argv[argv.index("-append") + 1]
    assert "init=/x/init.sh" in append and "rootfstype=9p" in append and " ro " in append
    fsdev = [argv[i + 1] for i, a in enumerate(argv) if a == "-fsdev"]
    device = [argv[i + 1] for i, a in enumerate(argv) if a == "-device"]
    assert fsdev[0].startswith("local,id=fs0,path=/,") and fsdev[0].endswith("readonly=on")
    assert device[0] == "virtio-9p-pci,fsdev=fs0,mount_tag=root"
    assert fsdev[1].startswith(f"local,id=fs1,path={spec.rundir}/out,") and "readonly" not in fsdev[1]
    assert device[1] == f"virtio-9p-pci,fsdev=fs1,mount_tag={_qemu.OUT_TAG}"
    assert "-no-reboot" in argv and "-initrd" not in argv


def test_argv_kvm_initramfs_and_shares(tmp_path):
    share = tmp_path / "share"
    share.mkdir()
    spec = _spec(tmp_path, accel="kvm", rootfs="initramfs",
                 shares=[_qemu.Share(path=str(share), tag="data", mount="/run/data", readonly=False)])
    argv = _qemu.qemu_argv(spec, "/init", "/c.log", initrd="/r/initramfs.cpio")
    assert argv[argv.index("-accel") + 1] == "kvm" and argv[argv.index("-cpu") + 1] == "host"
    assert argv[argv.index("-initrd") + 1] == "/r/initramfs.cpio"
    assert "rdinit=/init" in argv[argv.index("-append") + 1]
    assert f"local,id=fs2,path={share},security_model=none,multidevs=remap" in argv
    assert "virtio-9p-pci,fsdev=fs2,mount_tag=data" in argv
    assert "virtio-9p-pci,fsdev=fs0,mount_tag=hostroot" in argv


def test_init_script_quotes_and_mounts(tmp_path):
    spec = _spec(tmp_path, env={"FOO": "a b'c"}, chdir="/work/my dir",
                 shares=[_qemu.Share(path=str(tmp_path), tag="t1", mount="/run/t 1")])
    text = _qemu.init_script(spec)
    assert text.startswith("#!/bin/sh\n")
    assert "export FOO='a b'\"'\"'c'" in text
    assert "cd '/work/my dir'" in text
    assert "mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,ro t1 '/run/t 1'" in text
    assert text.index("command.sh") < text.index("poweroff -f\n")
    assert text.rstrip().endswith("$BB poweroff -f")


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("rootfs", "nfs", "'nfs'"),
        ("accel", "hvf", "'hvf'"),
        ("memory_mb", 16, "16"),
        ("cpus", 0, "0"),
        ("command", "  ", "empty"),
        ("env", {"1BAD": "x"}, "'1BAD'"),
        ("shares", [_qemu.Share(path="/", tag=_qemu.OUT_TAG, mount="/x")], _qemu.OUT_TAG),
        ("shares", [_qemu.Share(path="/", tag="ok", mount="rel")], "'rel'"),
        ("shares", [_qemu.Share(path="/nonexistent-h5", tag="ok", mount="/x")], "/nonexistent-h5"),
    ],
)
def test_validate_names_bad_value(tmp_path, field, value, needle):
    spec = _spec(tmp_path, **{field: value})
    with pytest.raises(_qemu.QemuError, match=needle.replace("'", "'")):
        _qemu.validate_spec(spec)


def test_validate_rejects_non_bzimage(tmp_path):
    spec = _spec(tmp_path)
    spec.kernel = _bzimage(tmp_path, good=False)
    with pytest.raises(_qemu.QemuError, match="not an x86 bzImage"):
        _qemu.validate_spec(spec)
    spec.kernel = str(tmp_path / "missing")
    with pytest.raises(_qemu.QemuError, match="does not exist"):
        _qemu.validate_spec(spec)


def _parse_newc(blob: bytes) -> dict[str, tuple[int, bytes]]:
    out = {}
    f = io.BytesIO(blob)
    while True:
        hdr = f.read(110)
        assert hdr[:6] == b"070701"
        fields = [int(hdr[6 + 8 * i: 14 + 8 * i], 16) for i in range(13)]
        mode, filesize, namesize = fields[1], fields[6], fields[11]
        name = f.read(namesize)[:-1].decode()
        f.read(-(110 + namesize) % 4)
        data = f.read(filesize)
        f.read(-filesize % 4)
        if name == "TRAILER!!!":
            return out
        out[name] = (mode, data)


def test_initramfs_is_valid_newc(tmp_path):
    bb = tmp_path / "busybox"
    bb.write_bytes(b"\x7fELF-fake-busybox")
    blob = _qemu.build_initramfs(str(bb), "#!/bin/busybox sh\necho hi\n")
    assert len(blob) % 4 == 0
    entries = _parse_newc(blob)
    assert entries["init"][1].startswith(b"#!/bin/busybox sh")
    assert stat.S_ISREG(entries["init"][0]) and entries["init"][0] & 0o111
    assert entries["bin/busybox"][1] == b"\x7fELF-fake-busybox"
    assert stat.S_ISLNK(entries["bin/sh"][0]) and entries["bin/sh"][1] == b"busybox"
    assert stat.S_ISDIR(entries["proc"][0])


def test_prepare_writes_rundir(tmp_path):
    spec = _spec(tmp_path, command="echo hello")
    os.makedirs(os.path.join(spec.rundir, "out"))
    (tmp_path / "run" / "out" / "rc").write_text("7\n")  # stale result from an earlier run
    argv, log = _qemu.prepare(spec)
    assert log == os.path.join(spec.rundir, "console.log")
    assert (tmp_path / "run" / "out" / "command.sh").read_text() == "echo hello\n"
    assert not (tmp_path / "run" / "out" / "rc").exists()
    assert os.access(tmp_path / "run" / "init.sh", os.X_OK)


def test_console_tail(tmp_path):
    log = tmp_path / "c.log"
    log.write_text("".join(f"line{i}\n" for i in range(100)))
    assert _qemu.console_tail(str(log), 3) == "line97\nline98\nline99\n"
    assert _qemu.console_tail(str(tmp_path / "none")) == ""


FAKE_QEMU = r"""#!/bin/sh
# stand-in for qemu-system-x86_64: finds the console file and the output share in its argv
mode=__MODE__
log=""; out=""
for a in "$@"; do
  case "$a" in
    file:*) log="${a#file:}" ;;
    local,id=fs1,path=*) out="${a#local,id=fs1,path=}"; out="${out%%,*}" ;;
  esac
done
echo $$ > "$out/../fake.pid"
case "$mode" in
  ok) echo "xdplab: guest command starting" > "$log"; echo hi > "$out/stdout"; echo 4 > "$out/rc" ;;
  hang) echo "SeaBIOS" > "$log"; exec sleep 300 ;;
  slow) echo "xdplab: guest command starting" > "$log"; exec sleep 300 ;;
esac
"""


def _fake(tmp_path, mode):
    path = tmp_path / f"fake-qemu-{mode}"
    path.write_text(FAKE_QEMU.replace("__MODE__", mode))
    path.chmod(0o700)
    return str(path)


def _alive(pidfile) -> bool:
    pid = int(pidfile.read_text())
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_run_collects_output_and_rc(tmp_path):
    spec = _spec(tmp_path, qemu=_fake(tmp_path, "ok"))
    res = _qemu.run(spec, timeout=20, boot_timeout=10)
    assert (res.rc, res.stdout, res.timed_out, res.boot_stalled) == (4, "hi\n", False, False)


def test_run_kills_at_deadline(tmp_path):
    spec = _spec(tmp_path, qemu=_fake(tmp_path, "slow"))
    res = _qemu.run(spec, timeout=1.5)
    assert res.timed_out and res.rc is None and not res.boot_stalled
    assert not _alive(tmp_path / "run" / "fake.pid")


def test_run_reports_a_stalled_boot(tmp_path):
    spec = _spec(tmp_path, qemu=_fake(tmp_path, "hang"))
    res = _qemu.run(spec, timeout=60, boot_timeout=1.0)
    assert res.boot_stalled and not res.timed_out and res.duration_s < 10
    assert not _alive(tmp_path / "run" / "fake.pid")


def test_a_checkout_under_a_guest_tmpfs_is_shared_at_the_same_path(tmp_path):
    """Found by a CI run from a clone in /tmp: the guest mounts a fresh tmpfs on /tmp, hiding it."""
    from ansible_collections.xdplab.testbed.plugins.module_utils.kernel._qemu_guest import (
        GuestSpec,
        all_shares,
        init_script,
    )

    spec = GuestSpec(kernel="/nonexistent", command="true", rundir=str(tmp_path), chdir=str(tmp_path))
    assert str(tmp_path).startswith("/tmp/")
    (share,) = all_shares(spec)
    assert (share.path, share.mount, share.readonly) == (str(tmp_path), str(tmp_path), True)
    script = init_script(spec)
    assert script.index("mount -t tmpfs -o mode=1777 tmp /tmp") < script.index(f"xdplab_cwd {tmp_path}")
    # a checkout on the root file system needs nothing extra; nor does an initramfs guest
    assert all_shares(GuestSpec(kernel="/x", command="true", rundir="/r", chdir="/work/main")) == []
    assert all_shares(GuestSpec(kernel="/x", command="true", rundir="/r", chdir=str(tmp_path),
                                rootfs="initramfs")) == []
