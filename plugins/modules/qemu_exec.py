#!/usr/bin/python
# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
---
module: qemu_exec
short_description: Boot a kernel under QEMU, run one command inside, return its output
description:
  - Boots an x86 bzImage (for example one the M(xdplab.testbed.kernel_patch)/C(kernel) role built) under QEMU,
    with either the host's root file system shared read-only over virtio-9p or a generated busybox initramfs,
    runs O(command) with C(/bin/sh) inside the guest and returns its stdout, stderr and exit status.
  - The serial console is captured to a log file whose path is returned.
  - KVM is used when O(accel=auto) and a short probe of C(/dev/kvm) succeeds (the probe runs in a child process
    with a deadline, because /dev/kvm can hang on nested setups); otherwise TCG.
  - The guest is killed at O(timeout); no QEMU process outlives the task.
  - This is the test host for features the controller's kernel lacks (pktgen, netdevsim).
version_added: "0.1.0"
author:
  - xdplab.testbed contributors (!UNKNOWN)
options:
  kernel:
    description: Path of the bzImage to boot.
    type: path
    required: true
  command:
    description: Shell command (C(/bin/sh) syntax) run inside the guest as root.
    type: str
    required: true
  rootfs:
    description:
      - V(host9p) runs the host's userland (bash, python3, ethtool from C(/usr), shared read-only over 9p)
        on a root built for the run (busybox-static, the init script, a copy of the few C(/etc) files
        programs read). The guest sees no other host file, not the host's C(/etc), C(/root), C(/home) or
        C(/var), except O(chdir), O(shares) and O(host_dirs); and, when the Python that runs this module is
        installed outside C(/usr) (a pyenv build and a venv made from it), that installation, read-only.
      - V(initramfs) boots a generated busybox-static initramfs; the host's C(/usr) is mounted read-only
        at C(/host/usr).
    type: str
    choices: [host9p, initramfs]
    default: host9p
  accel:
    description: V(auto) probes KVM and falls back to TCG.
    type: str
    choices: [auto, kvm, tcg]
    default: auto
  kvm_probe_timeout:
    description: Seconds the KVM probe may take before KVM is declared unusable.
    type: float
    default: 3.0
  kvm_boot_timeout:
    description:
      - Seconds a KVM guest may take to reach its init. With O(accel=auto), a KVM guest that does not (QEMU
        refusing the CPU model, a hang in the firmware) is killed and the run is repeated under TCG.
    type: float
    default: 30.0
  tcg_boot_timeout:
    description:
      - Seconds a TCG guest may take to reach its init (it takes 10 to 20 on an idle host). A guest that does
        not is killed and booted once more, and the result says so in RV(boot_retried); a second stall fails
        the task. Under host load an emulated boot can stall for good early on (RCU stalls on a vCPU whose
        timer interrupts stop), and the command has not started then, so booting again repeats nothing.
      - V(0) waits for the whole O(timeout) instead.
    type: float
    default: 180.0
    version_added: "0.3.0"
  memory:
    description: Guest memory in MiB.
    type: int
    default: 1024
  cpus:
    description: Guest vCPUs.
    type: int
    default: 2
  append:
    description: Extra kernel command line.
    type: str
    default: ""
  environment:
    description: Environment variables exported before O(command) runs.
    type: dict
    default: {}
  chdir:
    description:
      - Directory the command runs in. With O(rootfs=host9p), the host directory of that path is shared
        read-only at the same path (unless a share or C(/usr) shows it); C(/etc) and what is under it are
        refused, as for O(host_dirs).
    type: str
    default: /
  host_dirs:
    description:
      - With O(rootfs=host9p), host directories the command reads, shared read-only at the same path
        (a kernel variant's state directory, say). Not C(/), C(/etc) or under C(/etc).
    type: list
    elements: path
    default: []
  disks:
    description:
      - Raw disk images attached read-write on virtio-blk, in order C(/dev/vda), C(/dev/vdb)... (the guest kernel
        needs virtio-blk). The command may write them (a disk image being built, say).
    type: list
    elements: path
    default: []
  shares:
    description: Extra host directories shared over virtio-9p.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Host directory.
        type: path
        required: true
      tag:
        description: 9p mount tag (at most 31 characters).
        type: str
        required: true
      mount:
        description: Mount point in the guest (created on tmpfs paths such as C(/run/...) or C(/tmp/...)).
        type: str
        required: true
      readonly:
        description:
          - Share read-only. The guest caches a read-only share (9p C(cache=loose)), so what the host
            changes in it while the guest runs may not be seen there.
        type: bool
        default: true
  timeout:
    description: Seconds before the guest is killed and the task fails with RV(timed_out=true).
    type: int
    default: 600
  rundir:
    description:
      - Directory for the init script, the output share and the console log. Must not be under C(/tmp) or
        C(/run) or C(/var/tmp) (the guest mounts tmpfs there). A fresh directory under C(/var/lib/xdplab/qemu)
        when omitted.
    type: path
  fail_on_rc:
    description: Fail the task when the command's exit status is not 0.
    type: bool
    default: true
  ledger_dir:
    description:
      - State ledger the QEMU process is recorded in while it runs (pid, a hash of its command line,
        and this module's pid). If the module is killed, C(playbooks/teardown.yml) or the next bench run
        (M(xdplab.testbed.ledger) with O(xdplab.testbed.ledger#module:state=cleaned)) kills the orphaned
        guest; a live guest is left alone.
    type: path
    default: /var/lib/xdplab/ledger
extends_documentation_fragment:
  - xdplab.testbed.attributes
attributes:
  check_mode:
    support: none
    details: Running a command in a guest cannot be predicted; the module always runs.
  diff_mode:
    support: none
requirements:
  - qemu-system-x86 (Debian package)
  - busybox-static (Debian package)
notes:
  - The guest kernel needs virtio-pci, 9p over virtio, a serial console and ACPI (the C(vm.config) fragment in
    files/kconfig).
"""

EXAMPLES = r"""
- name: Run pktgen inside the guest kernel
  xdplab.testbed.qemu_exec:
    kernel: /var/lib/xdplab/kernel/patched/bzImage
    command: cat /proc/net/pktgen/pgctrl
  register: guest

- name: Run tests inside the guest from the checkout
  xdplab.testbed.qemu_exec:
    kernel: "{{ guest_kernel }}"
    chdir: /srv/xdplab-testbed
    command: .venv/bin/pytest -q tests/qemu
    timeout: 900
"""

RETURN = r"""
rc:
  description: Exit status of the command inside the guest; null when it never finished.
  returned: always
  type: int
  sample: 0
stdout:
  description: Standard output of the command.
  returned: always
  type: str
  sample: "6.1.192-xdplab\n"
stderr:
  description: Standard error of the command.
  returned: always
  type: str
  sample: ""
console_log:
  description: Path of the serial console log on the host.
  returned: always
  type: str
  sample: /var/lib/xdplab/qemu/run-x1y2/console.log
accel:
  description: Accelerator used (kvm or tcg), and why when KVM was not used.
  returned: always
  type: str
  sample: tcg
accel_reason:
  description: Result of the KVM probe.
  returned: always
  type: str
  sample: KVM probe did not answer within 3.0s (hung /dev/kvm)
boot_retried:
  description: The first TCG boot did not reach its init within O(tcg_boot_timeout) and was booted once more.
  returned: always
  type: bool
timed_out:
  description: The guest was killed at the deadline.
  returned: always
  type: bool
  sample: false
duration_s:
  description: Wall-clock seconds from QEMU start to exit.
  returned: always
  type: float
  sample: 21.4
qemu_argv:
  description: The QEMU command line used.
  returned: always
  type: list
  elements: str
  sample: [qemu-system-x86_64, -machine, pc]
"""

import os
import sys
import tempfile
import traceback

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils.kernel import _qemu_guest as _qemu
from ansible_collections.xdplab.testbed.plugins.module_utils.state import _ledger


def python_dirs() -> list[str]:
    """The prefixes of this module's interpreter (its venv and the installation under it), resolved; the
    guest is given those outside /usr, so that the same interpreter runs there."""
    out: list[str] = []
    for prefix in (sys.prefix, sys.base_prefix):
        real = os.path.realpath(prefix)
        if real not in out and real != "/usr" and not real.startswith("/usr/"):
            out.append(real)
    return out


def ledger_tracker(ledger_dir: str):
    """Record a running QEMU in the state ledger (its pid, the sha256 of its argv, and this module's
    own pid and start time as owner), and drop the entry once the guest is reaped."""
    def track(pid: int, argv: list[str]):
        entry_path, _created = _ledger.record(ledger_dir, _ledger.qemu_entry(pid, argv))

        def untrack() -> None:
            if os.path.exists(entry_path):
                os.unlink(entry_path)
        return untrack
    return track


def killed_at_boot(res: _qemu.GuestResult, boot_timeout: float | None) -> bool:
    """The guest was killed by the boot watchdog: it had not reached its init when the time ran out (a
    guest that ended by itself before its init - a kernel panic - was not, and is not booted again)."""
    return bool(boot_timeout) and res.boot_stalled and res.duration_s >= boot_timeout


ARGUMENT_SPEC = dict(
    kernel=dict(type="path", required=True),
    command=dict(type="str", required=True),
    rootfs=dict(type="str", choices=["host9p", "initramfs"], default="host9p"),
    accel=dict(type="str", choices=["auto", "kvm", "tcg"], default="auto"),
    kvm_probe_timeout=dict(type="float", default=3.0),
    kvm_boot_timeout=dict(type="float", default=30.0),
    tcg_boot_timeout=dict(type="float", default=180.0),
    memory=dict(type="int", default=1024),
    cpus=dict(type="int", default=2),
    append=dict(type="str", default=""),
    environment=dict(type="dict", default={}),
    chdir=dict(type="str", default="/"),
    host_dirs=dict(type="list", elements="path", default=[]),
    shares=dict(
        type="list",
        elements="dict",
        default=[],
        options=dict(
            path=dict(type="path", required=True),
            tag=dict(type="str", required=True),
            mount=dict(type="str", required=True),
            readonly=dict(type="bool", default=True),
        ),
    ),
    disks=dict(type="list", elements="path", default=[]),
    timeout=dict(type="int", default=600),
    rundir=dict(type="path"),
    fail_on_rc=dict(type="bool", default=True),
    ledger_dir=dict(type="path", default=_ledger.DEFAULT_DIR),
)


def _rundir(module: AnsibleModule, rundir: str | None) -> str:
    """The run directory asked for (never under what the guest mounts tmpfs over), or a new one."""
    if rundir:
        real = os.path.realpath(rundir)
        if real in _qemu.GUEST_TMPFS or real.startswith(tuple(d + "/" for d in _qemu.GUEST_TMPFS)):
            module.fail_json(msg=f"rundir {rundir!r} is under {', '.join(_qemu.GUEST_TMPFS)}, "
                             "which the guest mounts tmpfs over")
        os.makedirs(rundir, exist_ok=True)
        return rundir
    os.makedirs("/var/lib/xdplab/qemu", exist_ok=True)
    return tempfile.mkdtemp(prefix="run-", dir="/var/lib/xdplab/qemu")


def _guest_spec(p: dict, rundir: str, accel: str, qemu: str, busybox: str) -> _qemu.GuestSpec:
    return _qemu.GuestSpec(
        kernel=p["kernel"],
        command=p["command"],
        rundir=rundir,
        rootfs=p["rootfs"],
        accel=accel,
        memory_mb=p["memory"],
        cpus=p["cpus"],
        append=p["append"],
        env={str(k): str(v) for k, v in p["environment"].items()},
        shares=[_qemu.Share(**s) for s in p["shares"]],
        host_dirs=p["host_dirs"],
        disks=p["disks"],
        python_dirs=python_dirs(),
        chdir=p["chdir"],
        qemu=qemu,
        busybox=busybox,
    )


def _boot(module: AnsibleModule, p: dict, spec: _qemu.GuestSpec, reason: str):
    """Run the guest: a KVM guest that never reaches its init falls back to TCG (accel auto), a TCG
    guest stalled at boot is booted once more. Returns (result, accelerator, why, boot retried)."""
    tcg_boot = p["tcg_boot_timeout"] or None
    boot_retried = False
    accel = spec.accel
    if accel == "kvm":
        res = _qemu.run(spec, timeout=p["timeout"], boot_timeout=p["kvm_boot_timeout"],
                        track=ledger_tracker(p["ledger_dir"]))
        if res.boot_stalled and p["accel"] == "auto":
            reason += ("; but the KVM guest did not reach its init "
                       f"({(res.qemu_output.strip().splitlines() or ['no qemu output'])[-1]}): "
                       "fell back to TCG")
            accel = spec.accel = "tcg"
            res = _qemu.run(spec, timeout=p["timeout"], boot_timeout=tcg_boot,
                            track=ledger_tracker(p["ledger_dir"]))
    else:
        res = _qemu.run(spec, timeout=p["timeout"], boot_timeout=tcg_boot,
                        track=ledger_tracker(p["ledger_dir"]))
    if accel == "tcg" and killed_at_boot(res, tcg_boot):
        boot_retried = True
        last = (_qemu.console_tail(res.console_log, 1).strip() or "an empty console")[:200]
        module.warn(f"the TCG guest did not reach its init within {tcg_boot:g}s (last: {last}); "
                    "booted it once more")
        res = _qemu.run(spec, timeout=p["timeout"], boot_timeout=tcg_boot,
                        track=ledger_tracker(p["ledger_dir"]))
    return res, accel, reason, boot_retried


def _exit(module: AnsibleModule, p: dict, res: _qemu.GuestResult, accel: str, reason: str,
          boot_retried: bool) -> None:
    """Exit with the guest's result, or fail naming a timeout, a stalled boot, a missing or bad status."""
    tcg_boot = p["tcg_boot_timeout"] or None
    result = dict(
        changed=True,
        rc=res.rc,
        stdout=res.stdout,
        stderr=res.stderr,
        stdout_lines=res.stdout.splitlines(),
        console_log=res.console_log,
        accel=accel,
        accel_reason=reason,
        timed_out=res.timed_out,
        duration_s=res.duration_s,
        qemu_argv=res.argv,
        qemu_rc=res.qemu_rc,
        boot_retried=boot_retried,
    )
    if res.timed_out:
        module.fail_json(msg=f"guest did not finish within {p['timeout']}s; killed. Console tail:\n"
                         + _qemu.console_tail(res.console_log), **result)
    if accel == "tcg" and killed_at_boot(res, tcg_boot):
        module.fail_json(msg=f"the TCG guest did not reach its init within {tcg_boot:g}s"
                         + (", twice" if boot_retried else "") + "; killed. Console tail:\n"
                         + _qemu.console_tail(res.console_log), **result)
    if res.rc is None:
        module.fail_json(msg="guest exited without running the command to completion (no exit status). "
                         "QEMU: " + res.qemu_output.strip()[-2000:] + "\nConsole tail:\n"
                         + _qemu.console_tail(res.console_log), **result)
    if res.rc != 0 and p["fail_on_rc"]:
        module.fail_json(msg=f"command exited with status {res.rc} inside the guest", **result)
    module.exit_json(**result)


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=False)
    p = module.params
    try:
        qemu = module.get_bin_path("qemu-system-x86_64", required=True)
        busybox = next((b for b in _qemu.BUSYBOX_CANDIDATES if os.path.isfile(b)), None)
        if busybox is None:
            module.fail_json(msg="busybox not found (install busybox-static): the guest init uses it to power off")
        rundir = _rundir(module, p["rundir"])
        if p["accel"] == "auto":
            ok, reason = _qemu.probe_kvm(p["kvm_probe_timeout"])
            accel = "kvm" if ok else "tcg"
        else:
            accel, reason = p["accel"], "requested"
        spec = _guest_spec(p, rundir, accel, qemu, busybox)
        try:
            res, accel, reason, boot_retried = _boot(module, p, spec, reason)
        except _qemu.QemuError as exc:
            module.fail_json(msg=str(exc))
        _exit(module, p, res, accel, reason, boot_retried)
    except Exception as exc:  # noqa: BLE001 - one top-level handler, as the collection's modules do
        module.fail_json(msg=f"qemu_exec failed: {exc}", exception=traceback.format_exc())


if __name__ == "__main__":
    main()
