# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Boot a kernel under QEMU, run one command inside, bring back its output.

PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.

Two guest root file systems:

* ``host9p``: the host's ``/`` shared read-only over virtio-9p is the guest's root;
  the guest runs the host's own bash/python3/ethtool. Writable tmpfs on /tmp, /run,
  /var/tmp. The generated init script lives in the run directory on the host.
* ``initramfs``: a generated initramfs (busybox-static plus the init script); the
  host root is still mounted read-only at /host for tools.

In both, a per-run host directory is shared read-write (tag ``xdplab_out``) and
the guest writes the command's stdout, stderr and exit status there; the serial
console goes to a log file. The guest powers itself off (busybox ``poweroff -f``);
the host kills QEMU at the deadline, so no qemu process outlives a run.
"""

from __future__ import annotations

import os
import shlex
import signal
import stat
import subprocess
import time
from dataclasses import dataclass, field

OUT_TAG = "xdplab_out"
GUEST_OUT = "/run/xdplab-out"
BUSYBOX_CANDIDATES = ("/bin/busybox", "/usr/bin/busybox")
KVM_GET_API_VERSION = 0xAE00
KVM_CREATE_VM = 0xAE01


class QemuError(Exception):
    """A guest run could not be set up (bad input, missing tools)."""


@dataclass
class Share:
    """A host directory shared into the guest over virtio-9p."""

    path: str
    tag: str
    mount: str
    readonly: bool = True


@dataclass
class GuestSpec:
    """Everything one guest run needs; validated by :func:`validate_spec`."""

    kernel: str
    command: str
    rundir: str
    rootfs: str = "host9p"
    accel: str = "tcg"
    memory_mb: int = 1024
    cpus: int = 2
    append: str = ""
    env: dict[str, str] = field(default_factory=dict)
    shares: list[Share] = field(default_factory=list)
    chdir: str = "/"
    qemu: str = "qemu-system-x86_64"
    busybox: str = "/bin/busybox"


@dataclass
class GuestResult:
    rc: int | None
    stdout: str
    stderr: str
    console_log: str
    timed_out: bool
    qemu_rc: int | None
    duration_s: float
    argv: list[str]


def validate_spec(spec: GuestSpec) -> None:
    """Raise QemuError naming the bad value; nothing is created before this passes."""
    if not os.path.isfile(spec.kernel):
        raise QemuError(f"kernel image {spec.kernel!r} does not exist or is not a file")
    with open(spec.kernel, "rb") as fh:
        fh.seek(0x202)
        if fh.read(4) != b"HdrS":
            raise QemuError(f"kernel image {spec.kernel!r} is not an x86 bzImage (no 'HdrS' boot header)")
    if spec.rootfs not in ("host9p", "initramfs"):
        raise QemuError(f"rootfs {spec.rootfs!r} is not one of host9p, initramfs")
    if spec.accel not in ("kvm", "tcg"):
        raise QemuError(f"accel {spec.accel!r} is not one of kvm, tcg")
    if not 64 <= spec.memory_mb <= 65536:
        raise QemuError(f"memory_mb {spec.memory_mb!r} is out of range 64..65536")
    if not 1 <= spec.cpus <= 64:
        raise QemuError(f"cpus {spec.cpus!r} is out of range 1..64")
    if not spec.command.strip():
        raise QemuError("command is empty")
    for key in spec.env:
        if not key.replace("_", "a").isalnum() or key[0].isdigit():
            raise QemuError(f"environment variable name {key!r} is not a shell identifier")
    tags = {OUT_TAG, "/dev/root", "hostroot"}
    for share in spec.shares:
        if not os.path.isdir(share.path):
            raise QemuError(f"share path {share.path!r} is not a directory")
        if share.tag in tags or not share.tag or len(share.tag) > 31:
            raise QemuError(f"share tag {share.tag!r} is reserved, duplicated, empty or longer than 31 characters")
        if not share.mount.startswith("/"):
            raise QemuError(f"share mount point {share.mount!r} is not absolute")
        tags.add(share.tag)
    if spec.rootfs == "initramfs" and not os.path.isfile(spec.busybox):
        raise QemuError(f"busybox {spec.busybox!r} not found: install busybox-static for rootfs=initramfs")


def kernel_cmdline(spec: GuestSpec, init_path: str) -> str:
    """The guest kernel command line (pure)."""
    parts = ["console=ttyS0", "panic=-1", "oops=panic", "quiet", "loglevel=4"]
    if spec.rootfs == "host9p":
        parts += [
            "root=/dev/root",
            "rootfstype=9p",
            "rootflags=trans=virtio,version=9p2000.L,msize=262144,cache=loose",
            "ro",
            f"init={init_path}",
        ]
    else:
        parts += ["rdinit=/init"]
    if spec.append:
        parts.append(spec.append)
    return " ".join(parts)


def qemu_argv(spec: GuestSpec, init_path: str, console_log: str, initrd: str | None = None) -> list[str]:
    """The qemu-system argv for this spec (pure)."""
    argv = [
        spec.qemu,
        "-machine", "q35" if spec.accel == "kvm" else "pc",
        "-accel", "kvm" if spec.accel == "kvm" else "tcg",
        "-cpu", "host" if spec.accel == "kvm" else "max",
        "-m", str(spec.memory_mb),
        "-smp", str(spec.cpus),
        "-nographic", "-nodefaults", "-no-reboot", "-no-user-config",
        "-serial", f"file:{console_log}",
        "-monitor", "none",
        "-kernel", spec.kernel,
        "-append", kernel_cmdline(spec, init_path),
    ]
    if initrd:
        argv += ["-initrd", initrd]
    if spec.rootfs == "host9p":
        argv += ["-virtfs", "local,path=/,mount_tag=/dev/root,security_model=none,readonly=on,multidevs=remap"]
    else:
        argv += ["-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"]
    argv += ["-virtfs", f"local,path={spec.rundir}/out,mount_tag={OUT_TAG},security_model=none,multidevs=remap"]
    for share in spec.shares:
        ro = ",readonly=on" if share.readonly else ""
        argv += ["-virtfs", f"local,path={share.path},mount_tag={share.tag},security_model=none{ro},multidevs=remap"]
    return argv


def init_script(spec: GuestSpec) -> str:
    """The guest's PID 1 shell script (pure).

    It mounts the pseudo file systems and the output share, runs the command with
    stdout/stderr/rc going to the share, then powers off. Every mount uses busybox
    so the script does not depend on the guest root's util-linux.
    """
    bb = "/bin/busybox" if spec.rootfs == "initramfs" else spec.busybox
    opts9p = "trans=virtio,version=9p2000.L,msize=262144"
    lines = [
        "#!/bin/sh" if spec.rootfs == "host9p" else "#!/bin/busybox sh",
        "# generated by xdplab.testbed _qemu.init_script: PID 1 of a one-command guest",
        f"BB={bb}",
        "$BB mount -t proc proc /proc",
        "$BB mount -t sysfs sys /sys",
        "$BB mount -t devtmpfs dev /dev 2>/dev/null",
        "$BB mount -t tmpfs -o mode=1777 tmp /tmp",
        "$BB mount -t tmpfs -o mode=755 run /run",
        "$BB mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null",
        "$BB mount -t bpf bpf /sys/fs/bpf 2>/dev/null",
        "[ -d /var/tmp ] && $BB mount -t tmpfs tmp /var/tmp 2>/dev/null",
        f"$BB mkdir -p {GUEST_OUT}",
        f"$BB mount -t 9p -o {opts9p} {OUT_TAG} {GUEST_OUT} || {{ echo 'xdplab: cannot mount output share'; "
        "$BB poweroff -f; }",
    ]
    if spec.rootfs == "initramfs":
        lines += ["$BB mkdir -p /host", f"$BB mount -t 9p -o {opts9p},ro hostroot /host"]
    for share in spec.shares:
        ro = ",ro" if share.readonly else ""
        lines += [
            f"$BB mkdir -p {shlex.quote(share.mount)} 2>/dev/null",
            f"$BB mount -t 9p -o {opts9p}{ro} {shlex.quote(share.tag)} {shlex.quote(share.mount)}",
        ]
    lines += [
        "$BB ip link set lo up 2>/dev/null",
        "$BB hostname xdplab-guest",
        "export HOME=/tmp PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C",
        "export PYTHONDONTWRITEBYTECODE=1",
    ]
    for key, value in sorted(spec.env.items()):
        lines.append(f"export {key}={shlex.quote(value)}")
    lines += [
        f"cd {shlex.quote(spec.chdir)} || exit 1",
        "echo 'xdplab: guest command starting' > /dev/ttyS0",
        f"/bin/sh {GUEST_OUT}/command.sh > {GUEST_OUT}/stdout 2> {GUEST_OUT}/stderr < /dev/null",
        f"echo $? > {GUEST_OUT}/rc.tmp && $BB mv {GUEST_OUT}/rc.tmp {GUEST_OUT}/rc",
        "echo 'xdplab: guest command finished' > /dev/ttyS0",
        "$BB sync",
        f"$BB umount {GUEST_OUT} 2>/dev/null",
        "$BB poweroff -f",
        "",
    ]
    return "\n".join(lines)


def _cpio_entry(name: str, mode: int, data: bytes, ino: int) -> bytes:
    header = "070701" + "".join(
        f"{v:08X}"
        for v in (ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name) + 1, 0)
    )
    out = header.encode() + name.encode() + b"\0"
    out += b"\0" * (-len(out) % 4)
    out += data
    out += b"\0" * (-len(out) % 4)
    return out


def build_initramfs(busybox: str, init: str) -> bytes:
    """A newc cpio archive: busybox, its applet links for sh, /init, mount points (pure but for reading busybox)."""
    with open(busybox, "rb") as fh:
        bb = fh.read()
    entries: list[tuple[str, int, bytes]] = []
    for d in ("bin", "dev", "proc", "sys", "tmp", "run", "host", "etc", "var", "var/tmp", "sys/kernel",
              "sys/fs"):
        entries.append((d, stat.S_IFDIR | 0o755, b""))
    entries.append(("bin/busybox", stat.S_IFREG | 0o755, bb))
    entries.append(("bin/sh", stat.S_IFLNK | 0o777, b"busybox"))
    entries.append(("init", stat.S_IFREG | 0o755, init.encode()))
    out = b"".join(_cpio_entry(n, m, d, i + 1) for i, (n, m, d) in enumerate(entries))
    out += _cpio_entry("TRAILER!!!", 0, b"", 0)
    return out


def probe_kvm(timeout: float = 3.0) -> tuple[bool, str]:
    """Can this host run a KVM guest? Probed in a child process with a deadline,
    because opening /dev/kvm or creating a VM can hang on nested setups."""
    if not os.path.exists("/dev/kvm"):
        return False, "/dev/kvm does not exist"
    code = (
        "import fcntl, os\n"
        "fd = os.open('/dev/kvm', os.O_RDWR | os.O_CLOEXEC)\n"
        f"assert fcntl.ioctl(fd, {KVM_GET_API_VERSION}) == 12\n"
        f"vm = fcntl.ioctl(fd, {KVM_CREATE_VM}, 0)\n"
        "os.close(vm)\n"
    )
    try:
        proc = subprocess.Popen(  # noqa: S603 - fixed argv, our own interpreter
            [_python(), "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
        )
    except OSError as exc:
        return False, f"cannot start KVM probe: {exc}"
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return False, f"KVM probe did not answer within {timeout}s (hung /dev/kvm)"
    if proc.returncode != 0:
        return False, f"KVM probe failed: {err.decode(errors='replace').strip().splitlines()[-1:]}"
    return True, "KVM_CREATE_VM succeeded"


def _python() -> str:
    import sys

    return sys.executable or "/usr/bin/python3"


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def prepare(spec: GuestSpec) -> tuple[list[str], str]:
    """Write the run directory (init, command, initramfs) and return (argv, console_log)."""
    validate_spec(spec)
    os.makedirs(os.path.join(spec.rundir, "out"), exist_ok=True)
    os.chmod(spec.rundir, 0o700)
    init_text = init_script(spec)
    init_path = os.path.join(spec.rundir, "init.sh")
    with open(init_path, "w") as fh:
        fh.write(init_text)
    os.chmod(init_path, 0o700)
    with open(os.path.join(spec.rundir, "out", "command.sh"), "w") as fh:
        fh.write(spec.command + "\n")
    for name in ("stdout", "stderr", "rc"):
        try:
            os.unlink(os.path.join(spec.rundir, "out", name))
        except FileNotFoundError:
            pass
    initrd = None
    if spec.rootfs == "initramfs":
        initrd = os.path.join(spec.rundir, "initramfs.cpio")
        with open(initrd, "wb") as fh:
            fh.write(build_initramfs(spec.busybox, init_text))
    console_log = os.path.join(spec.rundir, "console.log")
    return qemu_argv(spec, init_path, console_log, initrd), console_log


def run(spec: GuestSpec, timeout: float) -> GuestResult:
    """Boot, run, collect. QEMU is killed at the deadline and always reaped."""
    argv, console_log = prepare(spec)
    start = time.monotonic()
    timed_out = False
    proc = subprocess.Popen(  # noqa: S603 - argv list, validated spec
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        qemu_out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
        qemu_out = b""
    finally:
        if proc.poll() is None:
            _kill_group(proc)
    duration = time.monotonic() - start
    out = os.path.join(spec.rundir, "out")

    def _read(name: str) -> str | None:
        try:
            with open(os.path.join(out, name), errors="replace") as fh:
                return fh.read()
        except FileNotFoundError:
            return None

    rc_text = _read("rc")
    rc = int(rc_text.strip()) if rc_text and rc_text.strip().lstrip("-").isdigit() else None
    if qemu_out:
        with open(console_log, "a") as fh:
            fh.write("\n--- qemu stdout/stderr ---\n" + qemu_out.decode(errors="replace"))
    return GuestResult(
        rc=rc,
        stdout=_read("stdout") or "",
        stderr=_read("stderr") or "",
        console_log=console_log,
        timed_out=timed_out,
        qemu_rc=proc.returncode,
        duration_s=round(duration, 3),
        argv=argv,
    )


def console_tail(path: str, lines: int = 40) -> str:
    try:
        with open(path, errors="replace") as fh:
            return "".join(fh.readlines()[-lines:])
    except FileNotFoundError:
        return ""
