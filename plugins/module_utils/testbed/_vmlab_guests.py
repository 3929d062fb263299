# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The lab in a box: plan and run long-lived QEMU guests with emulated real NICs.

PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.

A guest boots in one of two ways (:data:`BOOTS`):

* ``kernel``: QEMU loads a kernel the kernel role built, with a raw Debian root image on virtio-blk
  opened with ``snapshot=on`` (writes go to a temporary file QEMU deletes: no overlay outlives the
  guest); a panic or a reboot ends QEMU.
* ``disk``: the firmware boots GRUB from a partitioned disk (the same root, with GRUB and a kernel in
  /boot), the guest's own copy of it in its run directory, kept across the guest's reboots. This is a
  DUT that installs kernels, ``grub-reboot`` into them and falls back by itself like a real host.

Either way the guest has:

* a management NIC on QEMU user networking, its sshd forwarded to a loopback port of the host;
* test NICs (:data:`NIC_MODELS`), each backed by taps that this process opens inside the lab's
  network namespace and hands to QEMU as file descriptors. The taps are not persistent: they
  vanish with the QEMU that holds them. Two guests' taps are joined in that namespace.

The planner (:func:`plan_argv` and friends) is pure. :func:`start` records the QEMU process in the
ledger between fork and exec, so no QEMU ever runs unrecorded.
"""

from __future__ import annotations

import fcntl
import os
import re
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ansible_collections.xdplab.testbed.plugins.module_utils.common import _netns_switch, _validate
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _process_identity as _proc

# One row per emulated NIC model: the guest driver it binds, whether it can use several backend
# queues (multiqueue virtio needs one tap queue per queue pair) and the most queues it takes.
NIC_MODELS = {
    "igb": {"driver": "igb", "multiqueue_backend": False, "max_queues": 8},
    "virtio-net-pci": {"driver": "virtio_net", "multiqueue_backend": True, "max_queues": 16},
    "e1000e": {"driver": "e1000e", "multiqueue_backend": False, "max_queues": 2},
}
_GUEST_RE = re.compile(r"^[a-z][a-z0-9-]{0,30}\Z")
_IFNAME_RE = re.compile(r"^[a-z][a-z0-9]{0,9}\Z")
MGMT_IFNAME = "mgmt0"
BOOTS = ("kernel", "disk")
DISK_FILE = "disk.img"


class VmlabError(Exception):
    """Bad input or a guest that could not be brought up; the message names the guest."""


@dataclass
class Nic:
    """A test NIC of a guest: ``name`` is its interface name in the guest, ``link`` joins it to the
    NIC of another guest with the same link name."""

    model: str
    name: str
    link: str
    queues: int = 1


@dataclass
class Guest:
    name: str
    index: int
    kernel: str
    image: str
    rundir: str
    ssh_port: int
    memory_mb: int = 768
    cpus: int = 2
    accel: str = "tcg"
    lab_id: int = 1
    nics: list[Nic] = field(default_factory=list)
    qemu: str = "qemu-system-x86_64"
    append: str = ""
    boot: str = "kernel"


def validate(guest: Guest, device_names: set[str] | None = None) -> None:
    """Raise VmlabError naming the guest and the bad value; nothing is created before this passes."""
    who = f"guest {guest.name!r}"
    if not _GUEST_RE.match(guest.name):
        raise VmlabError(f"{who}: the name must be lowercase letters, digits and '-' (at most 31)")
    if not 0 <= guest.index <= 63 or not 0 <= guest.lab_id <= 255:
        raise VmlabError(f"{who}: index {guest.index} must be 0..63 and lab id {guest.lab_id} 0..255")
    if guest.boot not in BOOTS:
        raise VmlabError(f"{who}: boot {guest.boot!r} is not one of {', '.join(BOOTS)}")
    needs = ((guest.kernel, "kernel"), (guest.image, "root image")) if guest.boot == "kernel" else \
        ((guest.image, "disk image"),)
    for value, what in ((guest.image, "image"), (guest.rundir, "rundir"), (guest.kernel, "kernel")):
        if what == "kernel" and guest.boot != "kernel":
            continue
        try:
            _validate.qemu_value(value, what)  # no control characters; commas are escaped in plan_argv
        except _validate.ValidationError as exc:
            raise VmlabError(f"{who}: {exc}") from None
    for path, what in needs:
        if not path or not os.path.isfile(path):
            raise VmlabError(f"{who}: {what} {path!r} does not exist; build it first (vmlab_up builds both)")
    if not 1024 <= guest.ssh_port <= 65535:
        raise VmlabError(f"{who}: ssh_port {guest.ssh_port} is not a port in 1024..65535")
    if not 256 <= guest.memory_mb <= 16384 or not 1 <= guest.cpus <= 8:
        raise VmlabError(f"{who}: memory {guest.memory_mb} MiB (256..16384) or cpus {guest.cpus} (1..8) out of range")
    if guest.accel not in ("kvm", "tcg"):
        raise VmlabError(f"{who}: accel {guest.accel!r} is not kvm or tcg")
    names = {MGMT_IFNAME}
    for nic in guest.nics:
        if nic.model not in NIC_MODELS:
            raise VmlabError(f"{who}: NIC model {nic.model!r} is not one of {', '.join(sorted(NIC_MODELS))} "
                             "(add a row to NIC_MODELS)")
        if device_names is not None and nic.model not in device_names:
            raise VmlabError(f"{who}: this QEMU ({guest.qemu}) has no device {nic.model!r} "
                             "(qemu-system-x86 from bookworm-backports has igb; bookworm's 7.2 does not)")
        if not _IFNAME_RE.match(nic.name) or nic.name in names:
            raise VmlabError(f"{who}: NIC name {nic.name!r} is not a short lowercase name or is used twice")
        names.add(nic.name)
        if not _IFNAME_RE.match(nic.link):
            raise VmlabError(f"{who}: link {nic.link!r} is not a short lowercase name")
        top = NIC_MODELS[nic.model]["max_queues"]
        if not 1 <= nic.queues <= top:
            raise VmlabError(f"{who}: {nic.model} {nic.name} queues={nic.queues} is out of 1..{top}")


def parse_device_names(help_text: str) -> set[str]:
    """Device names from ``qemu-system-x86_64 -device help`` (lines ``name "igb", bus PCI, ...``)."""
    return set(re.findall(r'^name "([^"]+)"', help_text, re.M))


def mac(guest: Guest, slot: int) -> str:
    """A locally administered MAC: lab, guest, slot (0 = management)."""
    return f"52:54:{guest.lab_id:02x}:00:{guest.index:02x}:{slot:02x}"


def tap_name(guest: Guest, slot: int) -> str:
    """The host-side tap of a guest's NIC slot (1..), inside the lab namespace (<= 15 characters)."""
    return f"vl{guest.lab_id}g{guest.index}n{slot}"


def backend_queues(nic: Nic) -> int:
    return nic.queues if NIC_MODELS[nic.model]["multiqueue_backend"] else 1


def kernel_cmdline(guest: Guest) -> str:
    parts = ["console=ttyS0", "root=/dev/vda", "rw", "rootfstype=ext4", "init=/usr/local/sbin/xdplab-init",
             "panic=-1", "quiet", "loglevel=4", f"xdplab.hostname={guest.name}"]
    if guest.append:
        parts.append(guest.append)
    return " ".join(parts)


def plan_argv(guest: Guest, tap_fds: dict[int, list[int]]) -> list[str]:
    """The QEMU argv of a guest (pure). ``tap_fds`` maps NIC slot (1..) to the tap queue fds."""
    kvm = guest.accel == "kvm"
    argv = [
        guest.qemu,
        "-name", f"xdplab-vmlab-{guest.name},process=xdplab-vmlab-{guest.name}",
        "-machine", "q35",
        "-accel", "kvm" if kvm else "tcg",
        "-cpu", "host" if kvm else "max",
        "-m", str(guest.memory_mb),
        "-smp", str(guest.cpus),
        "-nographic", "-nodefaults", "-no-user-config",
        # '-serial file:' and -pidfile take the rest verbatim; inside 'k=v,k=v' commas are doubled.
        "-serial", f"file:{_validate.qemu_verbatim(guest.rundir + '/console.log', 'rundir')}",
        "-monitor", "none",
        "-pidfile", _validate.qemu_verbatim(f"{guest.rundir}/qemu.pid", "rundir"),
    ]
    if guest.boot == "kernel":
        # A panic (panic=-1) or a reboot ends QEMU: the guest never outlives its kernel.
        image = _validate.qemu_value(os.path.abspath(guest.image), "image")
        argv += ["-no-reboot", "-kernel", _validate.qemu_verbatim(guest.kernel, "kernel"),
                 "-append", kernel_cmdline(guest),
                 "-drive", f"file={image},if=virtio,format=raw,snapshot=on,cache=unsafe"]
    else:
        # The firmware boots GRUB from the guest's own disk; a reboot resets the machine, as on a host.
        disk = _validate.qemu_value(os.path.abspath(f"{guest.rundir}/{DISK_FILE}"), "rundir")
        argv += ["-drive", f"file={disk},if=virtio,format=raw,cache=unsafe"]
    argv += [
        "-fsdev", f"local,id=labfs,path={_validate.qemu_value(guest.rundir + '/share', 'rundir')},"
                  "security_model=none,readonly=on",
        "-device", "virtio-9p-pci,fsdev=labfs,mount_tag=xdplab_lab",
        "-device", "virtio-rng-pci",
        "-netdev", f"user,id=mgmt,net=10.0.2.0/24,hostfwd=tcp:127.0.0.1:{guest.ssh_port}-:22",
        "-device", f"virtio-net-pci,netdev=mgmt,mac={mac(guest, 0)}",
    ]
    for slot, nic in enumerate(guest.nics, start=1):
        fds = tap_fds[slot]
        if len(fds) != backend_queues(nic):
            raise VmlabError(f"guest {guest.name!r}: NIC {nic.name} needs {backend_queues(nic)} tap fds, "
                             f"got {len(fds)}")
        nid = f"n{slot}"
        argv += ["-netdev", f"tap,id={nid},fds={':'.join(str(fd) for fd in fds)},vhost=off"]
        dev = f"{nic.model},netdev={nid},mac={mac(guest, slot)}"
        if nic.model == "virtio-net-pci":
            # A modern device that negotiates VIRTIO_F_ACCESS_PLATFORM: the guest's virtio_net then
            # maps its rings through the DMA API, and AF_XDP zero copy needs that (virtnet_xsk_pool_enable
            # refuses a queue without a DMA device).
            dev += ",disable-legacy=on,iommu_platform=on"
            if nic.queues > 1:
                dev += f",mq=on,vectors={2 * nic.queues + 2}"
        argv += ["-device", dev]
    return argv


def share_files(guest: Guest, authorized_key: str) -> dict[str, str]:
    """The files of the guest's read-only lab share, read by the image's init (pure)."""
    nics = [f"{mac(guest, 0)} {MGMT_IFNAME}"]
    nics += [f"{mac(guest, slot)} {nic.name}" for slot, nic in enumerate(guest.nics, start=1)]
    return {
        "hostname": guest.name + "\n",
        "authorized_keys": authorized_key.strip() + "\n",
        "nics": "\n".join(nics) + "\n",
    }


def link_pairs(guests: list[Guest]) -> list[tuple[str, str]]:
    """Tap pairs to join: each link name must be on exactly two guests' NICs (pure)."""
    ends: dict[str, list[tuple[Guest, int, Nic]]] = {}
    for guest in guests:
        for slot, nic in enumerate(guest.nics, start=1):
            ends.setdefault(nic.link, []).append((guest, slot, nic))
    pairs = []
    for link, members in sorted(ends.items()):
        if len(members) != 2:
            raise VmlabError(f"link {link!r} must join two guests, it is on "
                             f"{[f'{g.name}/{n.name}' for g, _dummy, n in members]}")
        (ga, sa, na), (gb, sb, nb) = members
        if ga.name == gb.name:
            raise VmlabError(f"guest {ga.name!r}: link {link!r} joins the guest to itself")
        if na.model != nb.model or backend_queues(na) != backend_queues(nb):
            raise VmlabError(f"link {link!r}: {ga.name}/{na.name} ({na.model}, {na.queues} queues) and "
                             f"{gb.name}/{nb.name} ({nb.model}, {nb.queues} queues) differ")
        pairs.append((tap_name(ga, sa), tap_name(gb, sb)))
    return pairs


# --- impure: taps, process start, readiness -------------------------------------------------------

_TUNSETIFF = 0x400454CA
_IFF_TAP, _IFF_NO_PI, _IFF_VNET_HDR, _IFF_MULTI_QUEUE = 0x0002, 0x1000, 0x4000, 0x0100


def open_taps(netns: str, names_queues: dict[str, int]) -> dict[str, list[int]]:
    """Open tap queues inside the named namespace; returns name -> fds (the taps live while they do)."""
    out: dict[str, list[int]] = {}

    def open_all() -> None:
        for name, queues in names_queues.items():
            flags = _IFF_TAP | _IFF_NO_PI | _IFF_VNET_HDR | (_IFF_MULTI_QUEUE if queues > 1 else 0)
            fds = out.setdefault(name, [])
            for _dummy in range(queues):
                fd = os.open("/dev/net/tun", os.O_RDWR)
                fds.append(fd)
                fcntl.ioctl(fd, _TUNSETIFF, struct.pack("16sH22x", name.encode(), flags))

    try:
        _netns_switch.call_in_netns(netns, open_all)
    except OSError:
        for fds in out.values():
            for fd in fds:
                os.close(fd)
        raise
    return out


def start(argv: list[str], pass_fds: list[int], log_path: str, record: Callable[[int], str]) -> tuple[int, str]:
    """Start QEMU in its own session with ``pass_fds`` (taps, sockets) open, its output in log_path,
    recorded first: ``record(pid)`` (the caller's ledger entry, its path returned) runs once the pid
    exists and before QEMU does (common._process_identity.spawn_recorded: a child that cannot be
    recorded runs nothing). Returns (pid, ledger entry path)."""
    paths: list[str] = []
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        with open(os.devnull, "rb") as null:
            proc = _proc.spawn_recorded(argv, lambda pid: paths.append(record(pid)), pass_fds=list(pass_fds),
                                        stdin=null, stdout=log, stderr=log, start_new_session=True)
    finally:
        os.close(log)
    return proc.pid, paths[0]


def ssh_banner(port: int, timeout: float = 3.0) -> str | None:
    """The SSH banner on 127.0.0.1:port, or None (user networking accepts before the guest listens)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            data = sock.recv(64)
    except OSError:
        return None
    text = data.decode(errors="replace")
    return text.strip() if text.startswith("SSH-") else None


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def wait_ready(pid: int, port: int, deadline: float, poll: float = 1.0) -> tuple[str, str | None]:
    """Wait for sshd's banner: ("ready", banner), ("exited", None) or ("timeout", None)."""
    while True:
        if not alive(pid):
            return "exited", None
        banner = ssh_banner(port)
        if banner:
            return "ready", banner
        if time.monotonic() > deadline:
            return "timeout", None
        time.sleep(poll)
