#!/usr/bin/python
# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
---
module: vmlab_guest
short_description: Start or stop one long-lived QEMU guest of the lab in a box
description:
  - Starts a QEMU guest that boots O(kernel) (built by the C(kernel) role) from the raw root image O(image)
    (opened with C(snapshot=on), so the guest's writes go to a temporary file QEMU deletes), with a management NIC
    whose sshd is forwarded to C(127.0.0.1:)O(ssh_port), and test NICs O(nics) backed by taps opened inside the
    network namespace O(netns). The taps are not persistent; they vanish with the QEMU process.
  - The QEMU process is recorded in the state ledger O(ledger_dir) before it execs, and the task waits until the
    guest's sshd answers. A guest whose sshd does not answer within O(boot_timeout), or whose QEMU exits, is
    killed and its ledger entry removed; the task fails naming the guest, with the console's last lines.
  - With O(boot=disk) the guest instead boots GRUB from its own copy of the partitioned disk image O(image)
    (C(disk.img) in O(rundir), kept across the guest's reboots), a DUT whose kernel is installed and booted as on a
    host. A reboot of such a guest resets the machine; QEMU keeps running.
  - O(state=stopped) kills the guest recorded in O(rundir) (only if its command line is the one recorded) and
    removes its run directory and ledger entry.
version_added: "0.2.0"
author:
  - xdplab.testbed contributors (!UNKNOWN)
options:
  name:
    description: Guest name (also its host name).
    type: str
    required: true
  state:
    description: V(started) or V(stopped).
    type: str
    choices: [started, stopped]
    default: started
  index:
    description: Guest number in the lab (0..63), part of its MAC addresses and tap names.
    type: int
    default: 0
  lab_id:
    description: Lab number (0..255), part of MAC addresses and tap names.
    type: int
    default: 1
  kernel:
    description: bzImage to boot. Required with O(state=started) and O(boot=kernel).
    type: path
  image:
    description:
      - With O(boot=kernel), the raw ext4 root image (never written); with O(boot=disk), the partitioned disk
        image with GRUB that the guest's own disk is copied from (never written). Required with O(state=started).
    type: path
  boot:
    description:
      - V(kernel) boots O(kernel) directly (a panic or a reboot ends QEMU); V(disk) boots GRUB from the guest's
        copy of O(image).
    type: str
    choices: [kernel, disk]
    default: kernel
  rundir:
    description: Per-guest run directory (console log, pid file, the read-only lab share).
    type: path
    required: true
  ssh_port:
    description: Loopback port forwarded to the guest's sshd. Required with O(state=started).
    type: int
  authorized_key:
    description: Public key put in the guest user's authorized_keys (through the lab share).
    type: str
    default: ""
  memory:
    description: Guest memory in MiB.
    type: int
    default: 768
  cpus:
    description: Guest vCPUs.
    type: int
    default: 2
  accel:
    description: V(auto) uses KVM when a probe guest runs under it, else TCG.
    type: str
    choices: [auto, kvm, tcg]
    default: auto
  netns:
    description: Namespace the test NICs' taps are created in. Required when O(nics) is not empty.
    type: str
  nics:
    description: Test NICs, in PCI order after the management NIC.
    type: list
    elements: dict
    default: []
    suboptions:
      model:
        description: QEMU device model (a row of the collection's NIC model table).
        type: str
        required: true
      name:
        description: Interface name inside the guest.
        type: str
        required: true
      link:
        description: Link name; the NIC of the other guest with the same link is its peer.
        type: str
        required: true
      queues:
        description: Queue pairs (virtio-net-pci gets one tap queue per pair).
        type: int
        default: 1
  append:
    description: Extra kernel command line.
    type: str
    default: ""
  boot_timeout:
    description: Seconds from QEMU start until sshd must answer.
    type: float
    default: 300
  kvm_grace:
    description:
      - With O(accel=auto) and a KVM that passed the probe, seconds QEMU must stay alive; a KVM guest that
        exits sooner (a nested hypervisor refusing the CPU's MSRs) is started again under TCG.
    type: float
    default: 5.0
  wait:
    description:
      - Wait until the guest's sshd answers (also for a guest that already runs). V(false) returns once QEMU
        runs, so several guests boot at once; a second task with V(true) then waits for each.
    type: bool
    default: true
  ledger_dir:
    description: State ledger the QEMU process is recorded in.
    type: path
    default: /var/lib/xdplab/vmlab/ledger
extends_documentation_fragment:
  - xdplab.testbed.attributes
attributes:
  check_mode:
    support: full
    details: Reads what is there and reports what it would start, link or remove; changes nothing.
  diff_mode:
    support: none
    details: No diff; the result names what changed.
requirements:
  - qemu-system-x86 >= 8 (igb), from bookworm-backports on Debian 12
"""

EXAMPLES = r"""
- name: Start the DUT guest
  xdplab.testbed.vmlab_guest:
    name: vmdut
    index: 1
    kernel: /var/lib/xdplab/kernel/vmlab/bzImage
    image: /var/cache/xdplab/vmlab/rootfs.img
    rundir: /var/lib/xdplab/vmlab/guests/vmdut
    ssh_port: 10022
    netns: xdplab-vmlab
    authorized_key: "{{ lookup('ansible.builtin.file', '/var/lib/xdplab/vmlab/id_ed25519.pub') }}"
    nics:
      - {model: igb, name: igb0, link: igb0}
      - {model: virtio-net-pci, name: vnet0, link: vnet0, queues: 2}
"""

RETURN = r"""
pid:
  description: QEMU's pid.
  returned: state=started
  type: int
  sample: 4242
accel:
  description: Accelerator used.
  returned: state=started
  type: str
  sample: tcg
boot_seconds:
  description: Seconds from QEMU start until sshd answered (null when the guest already ran).
  returned: state=started
  type: float
  sample: 41.2
ssh_banner:
  description: What the guest's sshd said.
  returned: state=started
  type: str
  sample: SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u6
taps:
  description: Host-side tap of each test NIC (namespace O(netns)).
  returned: state=started
  type: dict
  sample: {igb0: vl1g1n1}
drivers:
  description: The guest driver each test NIC binds (from the collection's NIC model table).
  returned: state=started
  type: dict
  sample: {igb0: igb, vnet0: virtio_net}
qemu_argv:
  description: The QEMU command line.
  returned: state=started
  type: list
  elements: str
console_log:
  description: The guest's serial console log.
  returned: always
  type: str
  sample: /var/lib/xdplab/vmlab/guests/vmdut/console.log
"""

import hashlib
import json
import os
import shutil
import signal
import stat
import time
import traceback

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _process_identity as _proc
from ansible_collections.xdplab.testbed.plugins.module_utils.common._atomic_files import (
    PrivateDirError,
    check_ancestors,
    check_private_dir,
    write_json_atomic,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.kernel import _qemu_guest as _qemu
from ansible_collections.xdplab.testbed.plugins.module_utils.state import _ledger
from ansible_collections.xdplab.testbed.plugins.module_utils.testbed import _vmlab_guests as _vmlab

STATE_MAX = 1 << 20


def _state(rundir: str) -> dict | None:
    """guest.json of a run directory already checked (_check_rundir): a regular file of ours, opened
    without following a link, bounded. Anything else is no state (and so nothing to signal)."""
    try:
        fd = os.open(os.path.join(rundir, "guest.json"), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
            return None
        try:
            state = json.loads(fh.read(STATE_MAX))
        except ValueError:
            return None
    return state if isinstance(state, dict) else None


def _argv_sha256(argv: list[str]) -> str:
    """The hash of a command line as /proc/PID/cmdline holds it (each argument NUL-terminated)."""
    return hashlib.sha256(b"\0".join(os.fsencode(a) for a in argv) + b"\0").hexdigest()


def _identity(state: dict | None, name: str) -> dict | None:
    """The QEMU's identity (pid, start time, boot id) when the state names one of ours for this guest:
    its recorded argv carries our marker (``-name xdplab-vmlab-NAME``) and hashes to the recorded
    command line. None otherwise: nothing is signalled on the word of a file alone."""
    if not state:
        return None
    argv = state.get("argv")
    marker = f"xdplab-vmlab-{name},process=xdplab-vmlab-{name}"
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv) or marker not in argv:
        return None
    if _argv_sha256(argv) != state.get("cmdline_sha256"):
        return None
    try:
        return _proc.check_identity({"pid": state.get("pid"), "start": state.get("start"),
                                     "boot_id": state.get("boot_id")}, f"guest {name!r} QEMU")
    except _proc.ProcessIdentityError:
        return None


def _running(state: dict | None, name: str) -> bool:
    """The recorded QEMU still runs: same pid, start time and boot, and the recorded command line."""
    ident = _identity(state, name)
    if ident is None or not _proc.same(ident):
        return False
    try:
        with open(f"/proc/{ident['pid']}/cmdline", "rb") as fh:
            cmdline = fh.read()
    except OSError:
        return False
    return hashlib.sha256(cmdline).hexdigest() == state["cmdline_sha256"]


def _kill(pid: int, grace: float = 5.0, ident: dict | None = None) -> None:
    """SIGTERM, then SIGKILL, to exactly that process (pidfd, identity checked; never pid 1, this
    process or its ancestors). Without ``ident``, ``pid`` is a child this task started and has not
    reaped: its pid cannot have been reused, and its identity is read now."""
    ident = ident or _proc.identity(pid)
    if ident is not None:
        _proc.stop(ident, signal.SIGTERM, grace)


def _drop_entry(entry, ledger_dir: str) -> None:
    """Remove a ledger entry file named by state, only when it lies directly in the ledger directory
    (a path from a state file is never unlinked elsewhere)."""
    if not isinstance(entry, str) or not entry:
        return
    real, top = os.path.realpath(entry), os.path.realpath(ledger_dir)
    if os.path.dirname(real) != top or not real.endswith(".json"):
        raise _ledger.LedgerError(f"ledger entry {entry!r} is not a file of the ledger directory {ledger_dir!r}: "
                                  "refusing to remove it")
    try:
        os.unlink(real)
    except FileNotFoundError:
        pass


_OURS = ("guest.json", "share", "console.log", "qemu.log", "qemu.pid", _vmlab.DISK_FILE)


def _check_rundir(module: AnsibleModule, name: str, rundir: str) -> None:
    """Refuse a run directory that is not a plain absolute path of its own, or that holds anything
    but what this module puts there: it is removed on stop and on restart."""
    norm = os.path.normpath(rundir)
    if not os.path.isabs(rundir) or ".." in rundir.split("/") or norm.count("/") < 2:
        module.fail_json(msg=f"guest {name!r}: rundir {rundir!r} must be an absolute path at least two levels deep")
    try:
        if os.path.lexists(norm):  # owner and mode before anything in it is trusted (guest.json)
            check_private_dir(norm, "vmlab run directory", create=False)
        else:
            check_ancestors(norm, "vmlab run directory")
    except PrivateDirError as exc:
        module.fail_json(msg=f"guest {name!r}: {exc}")
    if os.path.isdir(norm):
        foreign = sorted(set(os.listdir(norm)) - set(_OURS))
        if foreign:
            module.fail_json(msg=f"guest {name!r}: rundir {rundir!r} holds files this module did not make "
                             f"({', '.join(foreign[:5])}); refusing to remove it")


def _stop(module: AnsibleModule, rundir: str, ledger_dir: str) -> bool:
    state = _state(rundir)
    changed = os.path.isdir(rundir)
    if module.check_mode:
        module.exit_json(changed=changed, console_log=os.path.join(rundir, "console.log"))
    if _running(state, module.params["name"]):
        ident = _identity(state, module.params["name"])
        _kill(ident["pid"], ident=ident)
    if state:
        _drop_entry(state.get("ledger_entry"), ledger_dir)
    if os.path.isdir(rundir):
        shutil.rmtree(rundir)
    return changed


def _tail(path: str, lines: int) -> str:
    try:
        with open(path, errors="replace") as fh:
            return " | ".join(fh.read().strip().splitlines()[-lines:])
    except FileNotFoundError:
        return ""


def _launch(p: dict, guest: _vmlab.Guest, launched: list) -> tuple[int, str, list[str], float]:
    """Open the guest's taps in the lab namespace, start QEMU with them (recorded in the ledger first),
    close this process's copies of the tap fds. Returns (pid, ledger entry, argv, monotonic start)."""
    taps = {_vmlab.tap_name(guest, slot): _vmlab.backend_queues(nic) for slot, nic in enumerate(guest.nics, start=1)}
    fds_by_tap = _vmlab.open_taps(p["netns"], taps) if taps else {}
    all_fds = [fd for fds in fds_by_tap.values() for fd in fds]
    try:
        tap_fds = {slot: fds_by_tap[_vmlab.tap_name(guest, slot)] for slot in range(1, len(guest.nics) + 1)}
        argv = _vmlab.plan_argv(guest, tap_fds)
        started = time.monotonic()
        pid, entry = _vmlab.start(argv, all_fds, os.path.join(guest.rundir, "qemu.log"),
                                  lambda pid: _ledger.record(p["ledger_dir"], _ledger.qemu_entry(pid, argv))[0])
        launched.append((pid, entry))
    finally:
        for fd in all_fds:
            os.close(fd)
    return pid, entry, argv, started


def _fail_boot(module: AnsibleModule, p: dict, rundir: str, pid: int, entry: str, status: str,
               argv: list[str]) -> None:
    """Kill a guest that never answered, remove its ledger entry and run directory, fail naming it."""
    _kill(pid, grace=1.0)
    try:
        with open(os.path.join(rundir, "qemu.log"), errors="replace") as fh:
            qemu_out = fh.read().strip()[-2000:]
    except FileNotFoundError:
        qemu_out = ""
    tail = _qemu.console_tail(os.path.join(rundir, "console.log"), 30)
    _drop_entry(entry, p["ledger_dir"])
    shutil.rmtree(rundir, ignore_errors=True)
    why = ("QEMU exited" if status == "exited"
           else f"its sshd did not answer on 127.0.0.1:{p['ssh_port']} within {p['boot_timeout']:.0f}s")
    module.fail_json(msg=f"guest {p['name']!r}: {why}; the guest was killed and its run directory removed. "
                     f"QEMU said: {qemu_out or '(nothing)'}\nConsole tail:\n{tail}", qemu_argv=argv)


ARGUMENT_SPEC = dict(
    name=dict(type="str", required=True),
    state=dict(type="str", choices=["started", "stopped"], default="started"),
    index=dict(type="int", default=0),
    lab_id=dict(type="int", default=1),
    kernel=dict(type="path"),
    image=dict(type="path"),
    rundir=dict(type="path", required=True),
    ssh_port=dict(type="int"),
    authorized_key=dict(type="str", default="", no_log=False),
    memory=dict(type="int", default=768),
    cpus=dict(type="int", default=2),
    accel=dict(type="str", choices=["auto", "kvm", "tcg"], default="auto"),
    netns=dict(type="str"),
    nics=dict(type="list", elements="dict", default=[], options=dict(
        model=dict(type="str", required=True),
        name=dict(type="str", required=True),
        link=dict(type="str", required=True),
        queues=dict(type="int", default=1),
    )),
    append=dict(type="str", default=""),
    boot=dict(type="str", choices=list(_vmlab.BOOTS), default="kernel"),
    boot_timeout=dict(type="float", default=300),
    ledger_dir=dict(type="path", default="/var/lib/xdplab/vmlab/ledger"),
    wait=dict(type="bool", default=True),
    kvm_grace=dict(type="float", default=5.0),
)


def _exit_running(module: AnsibleModule, p: dict, state: dict, console: str) -> None:
    """The recorded QEMU still runs: wait for its sshd if asked, and report it unchanged."""
    banner = _vmlab.ssh_banner(p["ssh_port"])
    if p["wait"] and banner is None:
        deadline = time.monotonic() + p["boot_timeout"] - (time.time() - state["started"])
        status, banner = _vmlab.wait_ready(state["pid"], p["ssh_port"], deadline)
        if status != "ready":
            _fail_boot(module, p, p["rundir"], state["pid"], state["ledger_entry"], status, state["argv"])
    module.exit_json(changed=False, pid=state["pid"], accel=state["accel"],
                     boot_seconds=round(time.time() - state["started"], 1) if banner else None,
                     ssh_banner=banner, taps=state["taps"], qemu_argv=state["argv"], console_log=console,
                     drivers={n["name"]: _vmlab.NIC_MODELS.get(n["model"], {}).get("driver")
                              for n in p["nics"]})


def _checked_guest(module: AnsibleModule, p: dict) -> _vmlab.Guest:
    """The guest asked for, checked against this QEMU's devices, its namespace and its SSH port."""
    qemu = module.get_bin_path("qemu-system-x86_64", required=True)
    guest = _vmlab.Guest(
        name=p["name"], index=p["index"], lab_id=p["lab_id"], kernel=p["kernel"], image=p["image"],
        rundir=p["rundir"], ssh_port=p["ssh_port"], memory_mb=p["memory"], cpus=p["cpus"], qemu=qemu,
        append=p["append"], nics=[_vmlab.Nic(**n) for n in p["nics"]], boot=p["boot"],
    )
    rc, out, err = module.run_command([qemu, "-device", "help"])
    if rc != 0:
        module.fail_json(msg=f"guest {p['name']!r}: {qemu} -device help failed", rc=rc, stdout=out, stderr=err)
    _vmlab.validate(guest, _vmlab.parse_device_names(out + err))
    if guest.nics and not p["netns"]:
        module.fail_json(msg=f"guest {p['name']!r}: test NICs need netns (the namespace their taps live in)")
    if guest.nics and not os.path.exists(f"/run/netns/{p['netns']}"):
        module.fail_json(msg=f"guest {p['name']!r}: namespace {p['netns']!r} does not exist")
    if _vmlab.ssh_banner(p["ssh_port"], timeout=1.0) is not None:
        module.fail_json(msg=f"guest {p['name']!r}: port 127.0.0.1:{p['ssh_port']} already answers SSH "
                         "(another guest or host service): choose another vmlab ssh port")
    return guest


def _fill_rundir(module: AnsibleModule, p: dict, guest: _vmlab.Guest) -> None:
    """A fresh run directory: the share the guest mounts and, for a disk boot, its own copy of the disk."""
    rundir = p["rundir"]
    if os.path.isdir(rundir):
        shutil.rmtree(rundir)
    os.makedirs(os.path.join(rundir, "share"), mode=0o700)
    for fname, text in _vmlab.share_files(guest, p["authorized_key"]).items():
        with open(os.path.join(rundir, "share", fname), "w", encoding="utf-8") as fh:
            fh.write(text)
    if guest.boot == "disk":
        # The guest's own copy of the disk: it installs kernels and reboots on it; the image stays as built.
        rc, out, err = module.run_command(["cp", "--sparse=always", "--reflink=auto", guest.image,
                                           os.path.join(rundir, _vmlab.DISK_FILE)])
        if rc != 0:
            module.fail_json(msg=f"guest {p['name']!r}: cannot copy the disk image {guest.image}",
                             rc=rc, stdout=out, stderr=err)


def _launch_or_fall_back(p: dict, guest: _vmlab.Guest, launched: list, reason: str):
    """Start QEMU; a KVM guest that exits at once is started again under TCG.
    Returns (pid, ledger entry, argv, monotonic start, why this accelerator)."""
    pid, entry, argv, started = _launch(p, guest, launched)
    if guest.accel == "kvm" and p["accel"] == "auto":
        # A KVM that passes the probe can still refuse a real guest (QEMU exits at once, e.g. "failed
        # to set MSR" on a nested hypervisor): give it a moment, and fall back to TCG if it died.
        end = time.monotonic() + p["kvm_grace"]
        while time.monotonic() < end and _vmlab.alive(pid):
            time.sleep(0.2)
        if not _vmlab.alive(pid):
            # Reap it: its leader can be a zombie while a vCPU thread still dumps core holding the tap
            # fds; the taps can only be opened again once every thread has gone.
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
            said = _tail(os.path.join(p["rundir"], "qemu.log"), 1) or "no output"
            reason += f"; but the KVM guest exited at once ({said}): fell back to TCG"
            _drop_entry(entry, p["ledger_dir"])
            launched.clear()
            guest.accel = "tcg"
            pid, entry, argv, started = _launch(p, guest, launched)
    return pid, entry, argv, started, reason


def _write_state(guest: _vmlab.Guest, pid: int, entry: str, argv: list[str], started: float) -> dict:
    """guest.json: what a later task needs to know this QEMU is ours (identity, argv hash), and its taps."""
    ident = _proc.identity(pid) or {}
    record = {"pid": pid, "start": ident.get("start"), "boot_id": ident.get("boot_id"),
              "argv": argv, "started": time.time() - (time.monotonic() - started),
              "accel": guest.accel, "ledger_entry": entry,
              "cmdline_sha256": _argv_sha256(argv),
              "taps": {nic.name: _vmlab.tap_name(guest, slot) for slot, nic in enumerate(guest.nics, start=1)}}
    write_json_atomic(os.path.join(guest.rundir, "guest.json"), record, mode=0o600)
    return record


def _start(module: AnsibleModule, p: dict, console: str, launched: list) -> None:
    """state=started: report a running guest, or boot a new one and wait for its sshd."""
    state = _state(p["rundir"])
    if _running(state, p["name"]):
        _exit_running(module, p, state, console)
    guest = _checked_guest(module, p)
    if module.check_mode:
        module.exit_json(changed=True, console_log=console)
    if p["accel"] == "auto":
        ok, reason = _qemu.probe_kvm(3.0)
        guest.accel = "kvm" if ok else "tcg"
    else:
        guest.accel, reason = p["accel"], "requested"
    _fill_rundir(module, p, guest)
    pid, entry, argv, started, reason = _launch_or_fall_back(p, guest, launched, reason)
    record = _write_state(guest, pid, entry, argv, started)
    banner = None
    if p["wait"]:
        status, banner = _vmlab.wait_ready(pid, p["ssh_port"], started + p["boot_timeout"])
        if status != "ready":
            _fail_boot(module, p, p["rundir"], pid, entry, status, argv)
    module.exit_json(changed=True, pid=pid, accel=guest.accel, accel_reason=reason,
                     boot_seconds=round(time.monotonic() - started, 1) if banner else None, ssh_banner=banner,
                     taps=record["taps"], qemu_argv=argv, console_log=console,
                     drivers={nic.name: _vmlab.NIC_MODELS[nic.model]["driver"] for nic in guest.nics})


def main() -> None:
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        required_if=[("state", "started", ("image", "ssh_port"))],
        supports_check_mode=True,
    )
    p = module.params
    module.run_command_environ_update = {"LC_ALL": "C"}
    rundir = p["rundir"]
    console = os.path.join(rundir, "console.log")
    launched: list[tuple[int, str]] = []
    try:
        _check_rundir(module, p["name"], rundir)
        if p["state"] == "stopped":
            module.exit_json(changed=_stop(module, rundir, p["ledger_dir"]), console_log=console)
        _start(module, p, console, launched)
    except _vmlab.VmlabError as exc:
        module.fail_json(msg=str(exc))
    except (_ledger.LedgerError, _proc.ProcessIdentityError) as exc:
        module.fail_json(msg=f"guest {p['name']!r}: {exc}")
    except Exception as exc:  # noqa: BLE001 - one top-level handler, as the collection's modules do
        for pid, entry in launched:  # a guest this task started is not left behind
            _kill(pid, grace=1.0)
            _drop_entry(entry, p["ledger_dir"])
        module.fail_json(msg=f"vmlab_guest {p['name']!r} failed: {exc}", exception=traceback.format_exc())


if __name__ == "__main__":
    main()
