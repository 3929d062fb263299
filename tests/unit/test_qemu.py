# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the private _qemu helpers (argv, init script, initramfs, validation)."""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path
from unittest import mock

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
    argv = _qemu.qemu_argv(spec, "/x/console.log", initrd="/x/initramfs.cpio")
    assert argv[argv.index("-accel") + 1] == "tcg"
    assert argv[argv.index("-m") + 1] == "512"
    assert argv[argv.index("-serial") + 1] == "file:/x/console.log"
    assert argv[argv.index("-initrd") + 1] == "/x/initramfs.cpio"
    append = argv[argv.index("-append") + 1]
    assert "rdinit=/init" in append and "root=" not in append
    fsdev = [argv[i + 1] for i, a in enumerate(argv) if a == "-fsdev"]
    device = [argv[i + 1] for i, a in enumerate(argv) if a == "-device"]
    # the host's /usr, read-only, never its /: no /etc (shadow, keys), /root or /home in the guest
    assert fsdev[0].startswith("local,id=fs0,path=/usr,") and fsdev[0].endswith("readonly=on")
    assert device[0] == "virtio-9p-pci,fsdev=fs0,mount_tag=usr"
    assert not any(f.startswith(("local,id=fs1,path=/,", "local,id=fs0,path=/,")) for f in fsdev)
    assert not any(",path=/etc" in f or ",path=/root" in f or ",path=/home" in f for f in fsdev)
    out = [f for f in fsdev if f",path={spec.rundir}/out," in f]
    assert out and "readonly" not in out[0]
    assert f"mount_tag={_qemu.OUT_TAG}" in " ".join(device)
    assert "-no-reboot" in argv


def test_host9p_initramfs_carries_etc_without_secrets(tmp_path):
    etc = tmp_path / "etc"
    (etc / "alternatives").mkdir(parents=True)
    (etc / "alternatives" / "awk").symlink_to("/usr/bin/mawk")
    (etc / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (etc / "shadow").write_text("root:$6$secret:19000:0:99999:7:::\n")
    (etc / "ssh").mkdir()
    (etc / "ssh" / "ssh_host_ed25519_key").write_text("PRIVATE")
    (etc / "hosts").symlink_to("/etc/shadow")  # a link is kept as a link, never followed
    bb = tmp_path / "busybox"
    bb.write_bytes(b"\x7fELF-fake-busybox")
    entries = _parse_newc(_qemu.build_initramfs(str(bb), "#!/xdplab/busybox sh\n", host_root=True, etc=str(etc)))
    assert entries["etc/passwd"][1].startswith(b"root:x:0:0")
    assert stat.S_ISLNK(entries["etc/alternatives/awk"][0]) and entries["etc/alternatives/awk"][1] == b"/usr/bin/mawk"
    assert stat.S_ISLNK(entries["etc/hosts"][0]) and entries["etc/hosts"][1] == b"/etc/shadow"
    assert not any(name.startswith(("etc/shadow", "etc/ssh")) for name in entries)
    assert b"secret" not in b"".join(data for _mode, data in entries.values())
    assert entries["xdplab/busybox"][1] == b"\x7fELF-fake-busybox"
    for name in ("bin", "sbin", "lib"):  # as the host has them: links into /usr on merged /usr
        if os.path.islink("/" + name):
            assert stat.S_ISLNK(entries[name][0]) and entries[name][1] == os.fsencode(os.readlink("/" + name))


def test_host_dirs_are_checked_and_shared_read_only(tmp_path):
    spec = _spec(tmp_path, host_dirs=[str(tmp_path)])
    _qemu.validate_spec(spec)
    argv = _qemu.qemu_argv(spec, "/c.log")
    assert any(a.endswith(f",path={tmp_path},security_model=none,multidevs=remap,readonly=on") for a in argv)
    script = _qemu.init_script(spec)  # mounted after the guest's tmpfs on /tmp, which would hide it
    assert script.index("tmpfs -o mode=1777 tmp /tmp") < script.index(f"xdplab_h0 {tmp_path}")
    for bad in ("/", "/etc", "relative", str(tmp_path / ".." / "x"), "/nonexistent-h16"):
        with pytest.raises(_qemu.QemuError, match="host_dirs entry"):
            _qemu.validate_spec(_spec(tmp_path, host_dirs=[bad]))


def test_the_modules_interpreter_outside_usr_is_shared_read_only_and_nothing_else(tmp_path):
    """A pyenv build (and the venv made from it) is what runs the guest's Python: shared read-only at its
    path, after the guest's tmpfs; a prefix already shown by another share, or missing, adds nothing."""
    base, venv = tmp_path / "pyenv" / "3.11", tmp_path / "work" / ".venv"
    base.mkdir(parents=True)
    venv.mkdir(parents=True)
    spec = _spec(tmp_path, python_dirs=[str(base), str(venv), str(tmp_path / "gone")],
                 shares=[_qemu.Share(path=str(tmp_path / "work"), tag="work", mount=str(tmp_path / "work"))])
    extra = [sh for sh in _qemu.all_shares(spec) if sh.tag.startswith("xdplab_py")]
    assert [(sh.path, sh.mount, sh.readonly) for sh in extra] == [(str(base), str(base), True)]
    script = _qemu.init_script(spec)
    assert script.index("tmpfs -o mode=1777 tmp /tmp") < script.index(f"{extra[0].tag} {base}")
    assert not [sh for sh in _qemu.all_shares(_spec(tmp_path, rootfs="initramfs", python_dirs=[str(base)]))
                if sh.tag.startswith("xdplab_py")]


def test_qemu_exec_names_only_interpreter_prefixes_outside_usr(monkeypatch):
    from ansible_collections.xdplab.testbed.plugins.modules import qemu_exec

    monkeypatch.setattr(qemu_exec.sys, "prefix", "/usr")
    monkeypatch.setattr(qemu_exec.sys, "base_prefix", "/usr")
    assert qemu_exec.python_dirs() == []
    monkeypatch.setattr(qemu_exec.sys, "prefix", "/srv/venv")
    monkeypatch.setattr(qemu_exec.sys, "base_prefix", "/opt/py/3.11")
    assert qemu_exec.python_dirs() == ["/srv/venv", "/opt/py/3.11"]


def test_argv_kvm_initramfs_and_shares(tmp_path):
    share = tmp_path / "share"
    share.mkdir()
    spec = _spec(tmp_path, accel="kvm", rootfs="initramfs",
                 shares=[_qemu.Share(path=str(share), tag="data", mount="/run/data", readonly=False)])
    argv = _qemu.qemu_argv(spec, "/c.log", initrd="/r/initramfs.cpio")
    assert argv[argv.index("-accel") + 1] == "kvm" and argv[argv.index("-cpu") + 1] == "host"
    assert argv[argv.index("-initrd") + 1] == "/r/initramfs.cpio"
    assert "rdinit=/init" in argv[argv.index("-append") + 1]
    assert f"local,id=fs2,path={share},security_model=none,multidevs=remap" in argv
    assert "virtio-9p-pci,fsdev=fs2,mount_tag=data" in argv
    assert "virtio-9p-pci,fsdev=fs0,mount_tag=hostusr" in argv and "local,id=fs0,path=/usr," in " ".join(argv)


def test_init_script_quotes_and_mounts(tmp_path):
    spec = _spec(tmp_path, env={"FOO": "a b'c"}, chdir="/work/my dir",
                 shares=[_qemu.Share(path=str(tmp_path), tag="t1", mount="/run/t 1")])
    text = _qemu.init_script(spec)
    assert text.startswith("#!/xdplab/busybox sh\n")
    assert text.index("usr /usr") < text.index("command.sh")
    assert "export FOO='a b'\"'\"'c'" in text
    assert "cd '/work/my dir'" in text
    # a read-only share is cached in the guest; the output share, written by the guest, is not
    assert "mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,ro,cache=loose t1 '/run/t 1'" in text
    assert "mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 xdplab_out " in text
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
    init = (tmp_path / "run" / "init.sh").read_bytes()
    entries = _parse_newc((tmp_path / "run" / "initramfs.cpio").read_bytes())
    assert entries["init"][1] == init and entries["init"][0] & 0o111  # PID 1 runs from the initramfs
    assert argv[argv.index("-initrd") + 1] == str(tmp_path / "run" / "initramfs.cpio")


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
    # a checkout anywhere else is shared the same way (the guest sees only /usr of the host's root);
    # a directory under /usr needs nothing extra; an initramfs guest shares no checkout
    (work,) = all_shares(GuestSpec(kernel="/x", command="true", rundir="/r", chdir=str(Path(__file__).parent)))
    assert work.mount == str(Path(__file__).parent) and work.readonly
    assert all_shares(GuestSpec(kernel="/x", command="true", rundir="/r", chdir="/usr/share")) == []
    assert all_shares(GuestSpec(kernel="/x", command="true", rundir="/r", chdir=str(tmp_path),
                                rootfs="initramfs")) == []


@pytest.mark.parametrize(("modules", "vendor", "probed"), [
    (["kvm", "kvm_pvm"], "kvm_pvm", False),      # a nested cloud host: refused before any probe guest runs
    (["kvm", "kvm_intel"], "kvm_intel", True),
    (["kvm", "kvm_amd"], "kvm_amd", True),
    (["kvm", "kvm_intel", "kvm_pvm"], "kvm_intel", True),
    ([], None, True),
])
def test_kvm_pvm_alone_is_not_kvm_for_ordinary_guests(tmp_path, modules, vendor, probed):
    for name in modules:
        (tmp_path / name).mkdir()
    assert _qemu.kvm_vendor(str(tmp_path)) == vendor
    with mock.patch.object(_qemu.os.path, "exists", return_value=True), \
            mock.patch.object(_qemu.subprocess, "Popen", side_effect=OSError("probe started")) as popen:
        ok, reason = _qemu.probe_kvm(1.0, sys_module=str(tmp_path))
    assert not ok
    assert popen.called == probed
    if not probed:
        assert "kvm_pvm" in reason


@pytest.mark.parametrize("chdir", ["/etc", "/etc/", "/etc/ssh", "link-to-etc"])
def test_chdir_under_etc_is_refused_like_host_dirs(tmp_path, chdir):
    """chdir is exported to the guest by itself: /etc (by name, below it, or through a link) never is."""
    if chdir == "link-to-etc":
        (tmp_path / "l").symlink_to("/etc")
        chdir = str(tmp_path / "l")
    with pytest.raises(_qemu.QemuError, match=f"chdir {chdir!r}"):
        _qemu.validate_spec(_spec(tmp_path, chdir=chdir))
    with pytest.raises(_qemu.QemuError, match="host_dirs entry"):
        _qemu.validate_spec(_spec(tmp_path, host_dirs=[chdir]))
    _qemu.validate_spec(_spec(tmp_path, chdir="/"))  # / is the default: nothing exported for it
    _qemu.validate_spec(_spec(tmp_path, chdir=str(tmp_path)))


def test_option_values_are_escaped_where_qemu_splits_and_verbatim_where_it_does_not(tmp_path):
    """'-serial file:' and -kernel/-initrd take the rest of the argument whole: a doubled comma would
    reach the file name (the console log lost, a boot reported stalled). -fsdev/-drive split on ','."""
    odd = tmp_path / "a,b=c d,path=x"
    odd.mkdir()
    disk = odd / "disk,format=qcow2"
    disk.write_bytes(b"\0" * 512)
    spec = _spec(tmp_path, rundir=str(odd / "run"), disks=[str(disk)], host_dirs=[str(odd)], chdir=str(odd))
    _qemu.validate_spec(spec)
    argv = _qemu.qemu_argv(spec, f"{odd}/run/console.log", initrd=f"{odd}/run/initramfs.cpio")
    assert argv[argv.index("-serial") + 1] == f"file:{odd}/run/console.log"
    assert argv[argv.index("-initrd") + 1] == f"{odd}/run/initramfs.cpio"
    esc = str(odd).replace(",", ",,")
    assert argv[argv.index("-drive") + 1] == f"file={esc}/disk,,format=qcow2,if=virtio,format=raw"
    fsdev = [argv[i + 1] for i, a in enumerate(argv) if a == "-fsdev"]
    assert f"local,id=fs1,path={esc}/run/out,security_model=none,multidevs=remap" in fsdev
    assert any(f.endswith(f",path={esc},security_model=none,multidevs=remap,readonly=on") for f in fsdev)
    for bad in ("a\nb", "a\0b", "a\x1bb"):
        with pytest.raises(_qemu.QemuError, match="control character"):
            _qemu.validate_spec(_spec(tmp_path, rundir=str(tmp_path / bad)))
