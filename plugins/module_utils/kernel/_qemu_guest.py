# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Boot a kernel under QEMU, run one command inside, bring back its output.

PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.

Two guest root file systems:

* ``host9p``: the guest runs the host's own userland - bash, python3, ethtool - from the host's
  ``/usr`` shared read-only over virtio-9p, on a root built per run in an initramfs: busybox-static
  (PID 1's shell), the init script, ``/bin``, ``/sbin``, ``/lib*`` as the host has them (links into
  /usr on a merged-/usr host, else shared read-only too), and a copy of the few /etc files programs
  read (``ETC_COPIED``: passwd, hosts, ld.so.cache, alternatives, ...). Writable tmpfs on /tmp, /run,
  /var/tmp. The guest sees no other host file: not the host's /etc (shadow, ssh host keys), /root,
  /home or /var - only the command's directory (``chdir``), the output share and what ``shares`` and
  ``host_dirs`` name.
* ``initramfs``: a generated initramfs (busybox-static plus the init script); the
  host's /usr is mounted read-only at /host/usr for tools.

In both, a per-run host directory is shared read-write (tag ``xdplab_out``) and
the guest writes the command's stdout, stderr and exit status there; the serial
console goes to a log file. The guest powers itself off (busybox ``poweroff -f``);
the host kills QEMU at the deadline, so no qemu process outlives a run.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import stat
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ansible_collections.xdplab.testbed.plugins.module_utils.common import _process_identity as _proc
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _validate
from ansible_collections.xdplab.testbed.plugins.module_utils.common._atomic_files import (
    PrivateDirError,
    check_private_dir,
)

OUT_TAG = "xdplab_out"
GUEST_TMPFS = ("/tmp", "/run", "/var/tmp")  # noqa: S108 - mount points in the guest, not used on the host
GUEST_OUT = "/run/xdplab-out"
BUSYBOX_CANDIDATES = ("/bin/busybox", "/usr/bin/busybox")
GUEST_BUSYBOX = "/xdplab/busybox"  # in a host9p guest's initramfs; /bin may be a link into the 9p /usr
# The only /etc entries a host9p guest gets, copied into its initramfs (never shared): what libc, the
# shell, Python and the networking tools read. Secrets (shadow, ssh, ssl/private, sudoers) never go.
ETC_COPIED = ("passwd", "group", "hosts", "hostname", "nsswitch.conf", "host.conf", "gai.conf", "protocols",
              "services", "networks", "ethertypes", "rpc", "ld.so.conf", "ld.so.conf.d", "ld.so.cache",
              "alternatives", "localtime", "timezone", "os-release", "debian_version", "iproute2",
              "python3", "python3.11", "python3.12", "python3.13", "mtab", "bash.bashrc", "profile",
              "environment", "inputrc", "mime.types", "magic", "netsniff-ng")
ETC_FILE_MAX = 1 << 20
# Top-level entries of a merged-/usr host that are links into /usr; a host where one is a directory has
# it shared read-only as well.
ROOT_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
START_MARK = "xdplab: guest command starting"


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
    host_dirs: list[str] = field(default_factory=list)  # host9p: host directories the guest also sees (ro)
    python_dirs: list[str] = field(default_factory=list)  # host9p: the interpreter's prefixes outside /usr (ro)
    disks: list[str] = field(default_factory=list)  # raw images attached read-write as /dev/vda, /dev/vdb, ...
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
    boot_stalled: bool = False
    qemu_output: str = ""


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def root_shares(spec: GuestSpec) -> list[Share]:
    """The host's userland a guest runs: /usr and the top-level directories a non-merged-/usr host
    keeps outside it, read-only at the same paths (mounted first: /bin/sh lives there)."""
    if spec.rootfs != "host9p":
        return [Share(path="/usr", tag="hostusr", mount="/host/usr", readonly=True)]
    shares = [Share(path="/usr", tag="usr", mount="/usr", readonly=True)]
    for name in ROOT_LINKS:
        path = "/" + name
        if os.path.isdir(path) and not os.path.islink(path):
            shares.append(Share(path=path, tag=f"root_{name}", mount=path, readonly=True))
    return shares


def all_shares(spec: GuestSpec) -> list[Share]:
    """The spec's shares and host_dirs, plus O(chdir) (read-only at the same path) when no other share
    shows it; mounted after the guest's tmpfs (/tmp, /run), so that a path under them stays visible.

    A host9p guest sees only /usr of the host's root (root_shares): the directory the command runs
    in, a checkout say, is shared by itself, and so are ``python_dirs`` (the prefixes of the interpreter
    that runs the module, when it is installed outside /usr: a pyenv build and the venv made from it).
    """
    shares = list(spec.shares)
    if spec.rootfs == "host9p":
        shares += [Share(path=d, tag=f"xdplab_h{i}", mount=d, readonly=True) for i, d in enumerate(spec.host_dirs)]
        for i, prefix in enumerate(spec.python_dirs):
            prefix = os.path.normpath(prefix)
            seen = [sh.mount for sh in shares] + [sh.mount for sh in root_shares(spec)]
            if not any(_under(prefix, m) for m in seen) and os.path.isdir(prefix):
                shares.append(Share(path=prefix, tag=f"xdplab_py{i}", mount=prefix, readonly=True))
    chdir = os.path.normpath(spec.chdir)
    seen = [sh.mount for sh in shares] + [sh.mount for sh in root_shares(spec)]
    covered = any(_under(chdir, m) for m in seen)
    if spec.rootfs == "host9p" and chdir != "/" and not covered and os.path.isdir(chdir):
        shares.append(Share(path=chdir, tag="xdplab_cwd", mount=chdir, readonly=True))
    return shares


def _never_exported(path: str) -> bool:
    """The host's / and /etc (and what is under /etc) are never exported to a guest, by name or
    through a symlink."""
    return any(p == "/" or p == "/etc" or p.startswith("/etc/")
               for p in (os.path.normpath(path), os.path.realpath(path)))


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
    # Values that end up inside QEMU option strings ('k=v,k=v'): ids refused unless plain, paths have
    # their commas doubled (QEMU's escape) in qemu_argv; control characters are refused everywhere.
    try:
        for what, value in (("rundir", spec.rundir), ("kernel", spec.kernel), ("busybox", spec.busybox)):
            _validate.qemu_value(value, what)
        for share in spec.shares:
            _validate.qemu_value(share.path, "share path")
            _validate.qemu_id(share.tag, "share tag")
        for disk in spec.disks:
            _validate.qemu_value(disk, "disk")
    except _validate.ValidationError as exc:
        raise QemuError(str(exc)) from None
    for disk in spec.disks:
        if not os.path.isfile(disk):
            raise QemuError(f"disk {disk!r} is not a file (a raw image)")
    for host_dir in spec.host_dirs:
        if not isinstance(host_dir, str) or not os.path.isabs(host_dir) or ".." in host_dir.split("/") \
                or _never_exported(host_dir) or not os.path.isdir(host_dir):
            raise QemuError(f"host_dirs entry {host_dir!r} is not an existing absolute directory without '..' "
                            "(and not /, nor /etc or under it: the guest gets only the directories it needs)")
        try:
            _validate.qemu_value(host_dir, "host_dirs entry")
        except _validate.ValidationError as exc:
            raise QemuError(str(exc)) from None
    # chdir is exported by itself (all_shares) when no other share shows it: the same rule as host_dirs.
    if not isinstance(spec.chdir, str) or not os.path.isabs(spec.chdir) or \
            (os.path.normpath(spec.chdir) != "/" and _never_exported(spec.chdir)):
        raise QemuError(f"chdir {spec.chdir!r} is not an absolute directory, or is /etc or under it (the guest "
                        "never gets the host's /etc: run the command from another directory)")
    try:
        _validate.qemu_value(spec.chdir, "chdir")
    except _validate.ValidationError as exc:
        raise QemuError(str(exc)) from None
    tags = {OUT_TAG, "usr", "hostusr", *(f"root_{n}" for n in ROOT_LINKS)}
    for share in spec.shares:
        if not os.path.isdir(share.path):
            raise QemuError(f"share path {share.path!r} is not a directory")
        if share.tag in tags or not share.tag or len(share.tag) > 31:
            raise QemuError(f"share tag {share.tag!r} is reserved, duplicated, empty or longer than 31 characters")
        if not share.mount.startswith("/"):
            raise QemuError(f"share mount point {share.mount!r} is not absolute")
        tags.add(share.tag)
    if not os.path.isfile(spec.busybox):
        raise QemuError(f"busybox {spec.busybox!r} not found: install busybox-static (the guest's PID 1 shell)")


def kernel_cmdline(spec: GuestSpec) -> str:
    """The guest kernel command line (pure)."""
    parts = ["console=ttyS0", "panic=-1", "oops=panic", "quiet", "loglevel=4", "rdinit=/init"]
    if spec.append:
        parts.append(spec.append)
    return " ".join(parts)


def qemu_argv(spec: GuestSpec, console_log: str, initrd: str | None = None) -> list[str]:
    """The qemu-system argv for this spec (pure)."""
    argv = [
        spec.qemu,
        "-machine", "q35" if spec.accel == "kvm" else "pc",
        "-accel", "kvm" if spec.accel == "kvm" else "tcg",
        "-cpu", "host" if spec.accel == "kvm" else "max",
        "-m", str(spec.memory_mb),
        "-smp", str(spec.cpus),
        "-nographic", "-nodefaults", "-no-reboot", "-no-user-config",
        # '-serial file:' takes the rest verbatim (a doubled comma would be in the file name); so do
        # -kernel and -initrd. Inside 'k=v,k=v' option strings commas are doubled (qemu_value).
        "-serial", f"file:{_validate.qemu_verbatim(console_log, 'console log')}",
        "-monitor", "none",
        "-kernel", _validate.qemu_verbatim(spec.kernel, "kernel"),
        "-append", kernel_cmdline(spec),
    ]
    if initrd:
        argv += ["-initrd", _validate.qemu_verbatim(initrd, "initrd")]
    for disk in spec.disks:
        # absolute: 'file=nbd:...' or 'file=http:...' would be a protocol, '/...' is always a file
        argv += ["-drive", f"file={_validate.qemu_value(os.path.abspath(disk), 'disk')},if=virtio,format=raw"]
    shares = [(sh.tag, sh.path, sh.readonly) for sh in root_shares(spec)]
    shares += [(OUT_TAG, f"{spec.rundir}/out", False)]
    shares += [(sh.tag, sh.path, sh.readonly) for sh in all_shares(spec)]
    for i, (tag, path, readonly) in enumerate(shares):
        ro = ",readonly=on" if readonly else ""
        path = _validate.qemu_value(path, "share path")  # ',' doubled: QEMU reads it as one ','
        tag = _validate.qemu_id(tag, "share tag")
        argv += ["-fsdev", f"local,id=fs{i},path={path},security_model=none,multidevs=remap{ro}",
                 "-device", f"virtio-9p-pci,fsdev=fs{i},mount_tag={tag}"]
    return argv


def init_script(spec: GuestSpec) -> str:
    """The guest's PID 1 shell script (pure).

    It mounts the pseudo file systems and the output share, runs the command with
    stdout/stderr/rc going to the share, then powers off. Every mount uses busybox
    so the script does not depend on the guest root's util-linux.
    """
    bb = "/bin/busybox" if spec.rootfs == "initramfs" else GUEST_BUSYBOX
    opts9p = "trans=virtio,version=9p2000.L,msize=262144"
    # A read-only share is an input made before the boot: the guest caches it (cache=loose), so the
    # host's userland over 9p stops paying a host round trip per stat and read (importing
    # ansible.module_utils.basic under TCG: 7.8 s uncached, 3.6 s cached; pyroute2: 13.3 s, 3.8 s).
    # The output share is written by the guest and read after it: never cached.
    ro_opts = ",ro,cache=loose"
    lines = [
        f"#!{bb} sh",
        "# generated by xdplab.testbed _qemu.init_script: PID 1 of a one-command guest",
        f"BB={bb}",
        "$BB mount -t proc proc /proc",
        "$BB mount -t sysfs sys /sys",
        "$BB mount -t devtmpfs dev /dev 2>/dev/null",
    ]
    for share in root_shares(spec):  # the host's /usr (and /bin... where they are not links into it)
        lines += [f"$BB mkdir -p {shlex.quote(share.mount)}",
                  f"$BB mount -t 9p -o {opts9p}{ro_opts} {shlex.quote(share.tag)} {shlex.quote(share.mount)} || "
                  f"{{ echo 'xdplab: cannot mount {share.tag}'; $BB poweroff -f; }}"]
    lines += [
        "$BB mount -t tmpfs -o mode=1777 tmp /tmp",
        "$BB mount -t tmpfs -o mode=755 run /run",
        "$BB mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null",
        "$BB mount -t bpf bpf /sys/fs/bpf 2>/dev/null",
        "[ -d /var/tmp ] && $BB mount -t tmpfs tmp /var/tmp 2>/dev/null",
        f"$BB mkdir -p {GUEST_OUT}",
        f"$BB mount -t 9p -o {opts9p} {OUT_TAG} {GUEST_OUT} || {{ echo 'xdplab: cannot mount output share'; "
        "$BB poweroff -f; }",
    ]
    for share in all_shares(spec):
        ro = ro_opts if share.readonly else ""
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
        f"echo '{START_MARK}' > /dev/ttyS0",
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


def _etc_entries(etc: str) -> list[tuple[str, int, bytes]]:
    """The ETC_COPIED entries of the host's /etc as cpio entries: regular files (at most ETC_FILE_MAX
    bytes), directories and symlinks (kept as links: /etc/alternatives points into /usr), nothing else."""
    out: list[tuple[str, int, bytes]] = [("etc", stat.S_IFDIR | 0o755, b"")]

    def add(path: str, name: str) -> None:
        try:
            st = os.lstat(path)
        except OSError:
            return
        if stat.S_ISLNK(st.st_mode):
            out.append((name, stat.S_IFLNK | 0o777, os.fsencode(os.readlink(path))))
        elif stat.S_ISDIR(st.st_mode):
            out.append((name, stat.S_IFDIR | 0o755, b""))
            for child in sorted(os.listdir(path)):
                add(os.path.join(path, child), f"{name}/{child}")
        elif stat.S_ISREG(st.st_mode) and st.st_size <= ETC_FILE_MAX:
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                return
            with os.fdopen(fd, "rb") as fh:
                out.append((name, stat.S_IFREG | 0o644, fh.read(ETC_FILE_MAX)))

    for item in ETC_COPIED:
        add(os.path.join(etc, item), f"etc/{item}")
    return out


def build_initramfs(busybox: str, init: str, host_root: bool = False, etc: str = "/etc") -> bytes:
    """A newc cpio archive: busybox, /init, mount points; with ``host_root`` (the host9p guest) also
    /bin, /sbin, /lib* as links into the 9p /usr like the host's, and the ETC_COPIED part of ``etc``
    (pure but for reading busybox and those files)."""
    with open(busybox, "rb") as fh:
        bb = fh.read()
    entries: list[tuple[str, int, bytes]] = []
    for d in ("dev", "proc", "sys", "tmp", "run", "host", "var", "var/tmp", "sys/kernel", "sys/fs", "usr"):
        entries.append((d, stat.S_IFDIR | 0o755, b""))
    if host_root:
        entries.append(("xdplab", stat.S_IFDIR | 0o755, b""))
        entries.append((GUEST_BUSYBOX.lstrip("/"), stat.S_IFREG | 0o755, bb))
        for name in ROOT_LINKS:
            if os.path.islink("/" + name):
                entries.append((name, stat.S_IFLNK | 0o777, os.fsencode(os.readlink("/" + name))))
        entries += _etc_entries(etc)
    else:
        entries.append(("bin", stat.S_IFDIR | 0o755, b""))
        entries.append(("etc", stat.S_IFDIR | 0o755, b""))
        entries.append(("bin/busybox", stat.S_IFREG | 0o755, bb))
        entries.append(("bin/sh", stat.S_IFLNK | 0o777, b"busybox"))
    entries.append(("init", stat.S_IFREG | 0o755, init.encode()))
    out = b"".join(_cpio_entry(n, m, d, i + 1) for i, (n, m, d) in enumerate(entries))
    out += _cpio_entry("TRAILER!!!", 0, b"", 0)
    return out


# A 5-byte real-mode guest (mov al,0x42; out 0x10,al; hlt) run through the raw KVM API: KVM is usable
# only if KVM_RUN comes back with an I/O exit and then a HLT exit.
_KVM_PROBE = """
import ctypes, fcntl, mmap, os, struct
kvm = os.open('/dev/kvm', os.O_RDWR | os.O_CLOEXEC)
if fcntl.ioctl(kvm, 0xAE00) != 12:
    raise SystemExit('KVM API version is not 12')
vm = fcntl.ioctl(kvm, 0xAE01, 0)
mem = mmap.mmap(-1, 0x1000)
mem.write(bytes([0xB0, 0x42, 0xE6, 0x10, 0xF4]))
addr = ctypes.addressof(ctypes.c_char.from_buffer(mem))
fcntl.ioctl(vm, 0x4020AE46, struct.pack('<IIQQQ', 0, 0, 0x1000, 0x1000, addr))
vcpu = fcntl.ioctl(vm, 0xAE41, 0)
run = mmap.mmap(vcpu, fcntl.ioctl(kvm, 0xAE04), mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
sregs = bytearray(312)
fcntl.ioctl(vcpu, 0x8138AE83, sregs, True)
sregs[0:8] = bytes(8); sregs[12:14] = bytes(2)
fcntl.ioctl(vcpu, 0x4138AE84, bytes(sregs))
regs = bytearray(144)
struct.pack_into('<QQ', regs, 128, 0x1000, 0x2)
fcntl.ioctl(vcpu, 0x4090AE82, bytes(regs))
seen = []
for _ in range(4):
    fcntl.ioctl(vcpu, 0xAE80, 0)
    seen.append(struct.unpack_from('<I', run, 8)[0])
    if seen[-1] == 5:
        break
if seen[-1] != 5 or 2 not in seen:
    raise SystemExit(f'unexpected KVM exits {seen}')
"""


# KVM vendor modules that run ordinary guests. kvm_pvm (the pagetable-based VM of nested cloud hosts)
# runs only PVM-enabled guest kernels: the probe's real-mode guest runs on it, a Linux guest hangs.
KVM_ORDINARY_MODULES = ("kvm_intel", "kvm_amd")


def kvm_vendor(sys_module: str = "/sys/module") -> str | None:
    """The loaded KVM vendor module (kvm_intel, kvm_amd, kvm_pvm), or None when none is loaded."""
    for name in (*KVM_ORDINARY_MODULES, "kvm_pvm"):
        if os.path.isdir(os.path.join(sys_module, name)):
            return name
    return None


def probe_kvm(timeout: float = 3.0, sys_module: str = "/sys/module") -> tuple[bool, str]:
    """Can this host run a KVM guest? Not when its KVM is kvm_pvm alone. Otherwise a tiny guest
    runs in a child process with a deadline, because opening /dev/kvm or KVM_RUN can hang on nested
    setups."""
    if not os.path.exists("/dev/kvm"):
        return False, "/dev/kvm does not exist"
    if kvm_vendor(sys_module) == "kvm_pvm":
        return False, ("KVM here is kvm_pvm, which runs only PVM guest kernels (an ordinary guest hangs "
                       "on it)")
    try:
        proc = subprocess.Popen(  # noqa: S603 - fixed argv, our own interpreter
            [_python(), "-c", _KVM_PROBE], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            start_new_session=True
        )
    except OSError as exc:
        return False, f"cannot start KVM probe: {exc}"
    try:
        _dummy, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return False, f"KVM probe did not answer within {timeout}s (hung /dev/kvm)"
    if proc.returncode != 0:
        last = err.decode(errors="replace").strip().splitlines()[-1:] or ["?"]
        return False, f"KVM probe failed: {last[0]}"
    return True, "a probe guest ran under KVM"


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
    try:  # owner and mode (and the directories above it) before anything in it is trusted
        check_private_dir(spec.rundir, "QEMU run directory")
    except PrivateDirError as exc:
        raise QemuError(str(exc)) from None
    os.chmod(spec.rundir, 0o700)
    # The output share is the guest's to write: whatever a previous guest left there (symlinks
    # included) goes, the directory is made afresh, and the host opens files in it only with O_NOFOLLOW.
    out = os.path.join(spec.rundir, "out")
    if os.path.lexists(out):
        if os.path.islink(out) or not os.path.isdir(out):
            os.unlink(out)
        else:
            shutil.rmtree(out)
    os.mkdir(out, 0o700)
    init_text = init_script(spec)
    _write_new(os.path.join(spec.rundir, "init.sh"), init_text.encode(), 0o600)  # to read; it runs from the initramfs
    _write_new(os.path.join(out, "command.sh"), (spec.command + "\n").encode(), 0o600)
    initrd = os.path.join(spec.rundir, "initramfs.cpio")
    _write_new(initrd, build_initramfs(spec.busybox, init_text, host_root=spec.rootfs == "host9p"), 0o600)
    console_log = os.path.join(spec.rundir, "console.log")
    return qemu_argv(spec, console_log, initrd), console_log


def _write_new(path: str, data: bytes, mode: int) -> None:
    """Replace ``path`` with a new file (never following a symlink planted where it was)."""
    if os.path.lexists(path):
        os.unlink(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


OUT_MAX = 64 << 20  # what the host reads of a guest-written file


def read_guest_file(path: str, limit: int = OUT_MAX) -> str | None:
    """A file the guest wrote: None when absent; a symlink, FIFO or device is never opened as it points
    (O_NOFOLLOW, O_NONBLOCK, regular files only) and at most ``limit`` bytes are read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:  # ELOOP: a symlink planted by the guest
        raise QemuError(f"guest output {path!r} is not a regular file: {exc}") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise QemuError(f"guest output {path!r} is not a regular file")
        return fh.read(limit).decode(errors="replace")


def _seen(path: str, mark: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return mark.encode() in fh.read()
    except FileNotFoundError:
        return False


def run(spec: GuestSpec, timeout: float, boot_timeout: float | None = None,
        track: Callable[[int, list[str]], Callable[[], None]] | None = None) -> GuestResult:
    """Boot, run, collect. QEMU is killed at the deadline and always reaped.

    With ``boot_timeout``, a guest whose init has not announced itself on the console by then is
    killed and the result says ``boot_stalled`` (used to fall back from a KVM that hangs to TCG).
    With ``track``, ``track(pid, argv)`` is called once QEMU's pid exists, before QEMU runs, and the
    function it returns when QEMU is gone: qemu_exec records the process in the state ledger that way, so that if this
    process is killed, teardown (ledger ``cleaned``) kills the orphaned guest."""
    argv, console_log = prepare(spec)
    qemu_log = os.path.join(spec.rundir, "qemu.log")
    for path in (console_log, qemu_log):
        if os.path.exists(path):
            os.unlink(path)
    start = time.monotonic()
    timed_out = stalled = False
    untracks: list[Callable[[], None]] = []
    with open(qemu_log, "wb") as qlog:
        # Recorded (track) after its pid exists and before QEMU itself runs: see _proc.spawn_recorded.
        proc = _proc.spawn_recorded(argv, lambda pid: untracks.append(track(pid, argv)) if track else None,
                                    stdin=subprocess.DEVNULL, stdout=qlog, stderr=subprocess.STDOUT,
                                    start_new_session=True)
    untrack = untracks[0] if untracks else None
    try:
        booted = boot_timeout is None
        while proc.poll() is None:
            elapsed = time.monotonic() - start
            if not booted:
                booted = _seen(console_log, START_MARK)
                if not booted and elapsed > boot_timeout:
                    stalled = True
                    break
            if elapsed > timeout:
                timed_out = True
                break
            time.sleep(0.2)
        if not booted and proc.returncode is not None and not _seen(console_log, START_MARK):
            stalled = True
    finally:
        if proc.poll() is None:
            _kill_group(proc)
        if untrack is not None:
            untrack()
    duration = time.monotonic() - start
    out = os.path.join(spec.rundir, "out")

    def _read(name: str) -> str | None:
        return read_guest_file(os.path.join(out, name))

    rc_text = _read("rc")
    rc = int(rc_text.strip()) if rc_text and rc_text.strip().lstrip("-").isdigit() else None
    with open(qemu_log, errors="replace") as fh:
        qemu_out = fh.read()
    return GuestResult(
        rc=rc,
        stdout=_read("stdout") or "",
        stderr=_read("stderr") or "",
        console_log=console_log,
        timed_out=timed_out,
        qemu_rc=proc.returncode,
        duration_s=round(duration, 3),
        argv=argv,
        boot_stalled=stalled,
        qemu_output=qemu_out,
    )


def console_tail(path: str, lines: int = 40) -> str:
    try:
        with open(path, errors="replace") as fh:
            return "".join(fh.readlines()[-lines:])
    except FileNotFoundError:
        return ""
