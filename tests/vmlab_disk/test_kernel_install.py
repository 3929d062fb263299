# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The kernel role's real install path on a DUT that boots from a disk with GRUB (the lab's DUT with
vmlab_dut_boot=disk): playbooks/kernel_install.yml installs a kernel built on the controller, boots it
once with grub-reboot and verifies it; a kernel that panics at boot brings the DUT back on its default
entry by itself and the play fails naming it and the console's panic; the default entry changes only
when asked; nothing else on the disk changes; the A/B loop (playbooks/ab.yml -e ab_dut=vmdut) boots the
DUT into each kernel in turn and finds the known effect.

Needs the lab up with a disk-booted DUT (`make vmlab-disk-test` brings it up, runs this and takes it
down). Builds two kernels on the controller (ccache makes the second one quick).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import playbook_run
import pytest
import yaml
from scipy import stats

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK = ROOT / ".venv" / "bin" / "ansible-playbook"
KEY = "/var/lib/xdplab/vmlab/id_ed25519"
PORT = 10123
DISK = Path("/var/lib/xdplab/vmlab/guests/vmdut/disk.img")
PANIC_PATCH = ROOT / "files" / "patches" / "boot-panic" / "0001-pktgen-panic-at-boot-boot-panic-test-series.patch"
VARIANTS = [{"name": "vmlab-next", "patches": []},
            {"name": "vmlab-panic", "patches": [{"path": str(PANIC_PATCH)}]}]
# What a boot of the lab's guest writes by itself, whatever is installed: the init's host name and key
# (from the lab share), sshd's login records, the ssh sessions' Ansible temporary directories.
BOOT_NOISE = re.compile(r"^/(etc/hostname|etc/hosts|home/xdplab/\.ssh(/.*)?|var/log/(wtmp|btmp|lastlog)"
                        r"|home/xdplab/\.ansible(/.*)?|root/\.ansible(/.*)?|home/xdplab|root|var/log)$")


def ssh(script: str, timeout: float = 120) -> str:
    argv = ["ssh", "-i", KEY, "-p", str(PORT), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
            "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=20",
            "xdplab@127.0.0.1", "sudo sh -c " + shlex.quote("LC_ALL=C; " + script)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False,  # noqa: S603
                          env=dict(os.environ, LC_ALL="C"))
    assert proc.returncode == 0, f"vmdut: {script!r} failed (rc={proc.returncode}): {proc.stderr.strip()}"
    return proc.stdout


def install(variant: str, log: Path, **extra) -> subprocess.CompletedProcess:
    evars = {"kernel_variants": VARIANTS, "kernel_install_variant": variant, "kernel_reboot_ok": True,
             "kernel_qemu_verify_enabled": False, **extra}
    argv = [str(PLAYBOOK), "-i", "inventories/vmlab", "playbooks/kernel_install.yml", "-e", json.dumps(evars)]
    proc = playbook_run.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=3600, check=False,  # noqa: S603
                            env=dict(os.environ, ANSIBLE_NOCOLOR="1", PATH=f"{PLAYBOOK.parent}:{os.environ['PATH']}"))
    log.write_text(proc.stdout + proc.stderr, encoding="utf-8")
    return proc


def kernel_version(release: str) -> str:
    """The version of a release <version>-<variant> (6.12.118 of 6.12.118-lab-stock): the DUT may run a
    kernel an earlier loop booted it into, whose variant name has dashes of its own."""
    return re.match(r"\d+\.\d+(\.\d+)?", release).group(0)


def saved_entry() -> str:
    return re.search(r"(?m)^saved_entry=(.*)$", ssh("grub-editenv /boot/grub/grubenv list")).group(1)


def manifest(top: str) -> dict[str, str]:
    """sha256 of every file under top in the guest."""
    out = ssh(f"find {top} -xdev -type f -print0 | xargs -0 -r sha256sum", timeout=300)
    return {line[66:]: line[:64] for line in out.splitlines() if line}


def boot_area() -> str:
    """The MBR and GRUB's core image in the gap before the first partition (host side, the guest's disk)."""
    with open(DISK, "rb") as fh:
        return hashlib.sha256(fh.read(1 << 20)).hexdigest()


@pytest.fixture(scope="module")
def dut():
    assert DISK.is_file(), f"{DISK} is missing: bring the lab up with -e vmlab_dut_boot=disk"
    cmdline = ssh("cat /proc/cmdline")
    release = ssh("uname -r").strip()
    # booted by GRUB from the disk: GRUB names the image, the root is the disk's first partition
    assert f"BOOT_IMAGE=/boot/vmlinuz-{release}" in cmdline and "root=/dev/vda1" in cmdline, cmdline
    since = ssh("date +%s").strip()
    return {"release": release, "entry": saved_entry(), "since": since, "boot_area": boot_area(),
            "boot": manifest("/boot"), "etc": manifest("/etc"), "lib": ssh("ls -A /lib/modules 2>/dev/null || true")}


def test_a_kernel_is_installed_booted_once_and_verified_the_default_unchanged(dut, tmp_path):
    base = dut["release"]
    assert dut["entry"] == f"gnulinux-{base}-advanced-" + dut["entry"].rsplit("-advanced-", 1)[1]
    proc = install("vmlab-next", tmp_path / "next.log")
    assert proc.returncode == 0, (tmp_path / "next.log").read_text()[-4000:]
    new = base + "-next"
    assert ssh("uname -r").strip() == new
    assert f"BOOT_IMAGE=/boot/vmlinuz-{new}" in ssh("cat /proc/cmdline")
    series = json.loads(ssh("cat /etc/xdplab/kernel-series.json"))
    assert series["release"] == new and series["variant"] == "vmlab-next"
    # booted once: GRUB spent the one-shot entry, the default entry is still the kernel the disk came with
    assert re.search(r"(?m)^next_entry=$", ssh("grub-editenv /boot/grub/grubenv list"))
    assert saved_entry() == dut["entry"]


def test_a_kernel_that_panics_comes_back_on_the_default_and_the_play_names_it(dut, tmp_path):
    log = tmp_path / "panic.log"
    proc = install("vmlab-panic", log)
    out = log.read_text()
    assert proc.returncode != 0, out[-4000:]
    base = dut["release"]
    panic = base + "-panic"
    msg = re.sub(r"\s+", " ", out)
    assert f"kernel {panic} (variant vmlab-panic) did not come up: the host came back on {base}" in msg, out[-4000:]
    assert "Kernel panic - not syncing: xdplab.testbed boot-panic test series: this kernel panics at boot" in msg
    assert f"GRUB's default entry is unchanged: saved_entry={dut['entry']}" in msg
    # back by itself on the default entry (not on vmlab-next, which it ran before: that was booted once)
    assert ssh("uname -r").strip() == base
    assert saved_entry() == dut["entry"]


def test_the_default_changes_only_when_asked(dut, tmp_path):
    proc = install("vmlab-next", tmp_path / "default.log", kernel_make_default=True)
    assert proc.returncode == 0, (tmp_path / "default.log").read_text()[-4000:]
    new = dut["release"] + "-next"
    assert ssh("uname -r").strip() == new
    assert saved_entry() == f"gnulinux-{new}-advanced-" + dut["entry"].rsplit("-advanced-", 1)[1]


def test_nothing_else_on_the_disk_changed(dut):
    base = dut["release"]
    ours = {f"/boot/{kind}-{base}-{suffix}" for kind in ("vmlinuz", "System.map", "config")
            for suffix in ("next", "panic")}
    ours |= {"/boot/grub/grub.cfg", "/boot/grub/grubenv"}
    boot = manifest("/boot")
    assert set(boot) - set(dut["boot"]) == ours - {"/boot/grub/grub.cfg", "/boot/grub/grubenv"}
    changed = {p for p in dut["boot"] if boot.get(p) != dut["boot"][p]}
    assert changed <= {"/boot/grub/grub.cfg", "/boot/grub/grubenv"}, changed
    etc = manifest("/etc")
    changed = {p for p in set(etc) | set(dut["etc"]) if etc.get(p) != dut["etc"].get(p)}
    assert changed <= {"/etc/xdplab/kernel-series.json", "/etc/hostname", "/etc/hosts"}, changed
    assert ssh("ls -A /lib/modules 2>/dev/null || true") == dut["lib"]
    # GRUB itself (boot sector and core image) was not reinstalled
    assert boot_area() == dut["boot_area"]
    # and nowhere else on the root file system was anything written since the first test began
    newer = ssh(f"find / -xdev -newermt @{dut['since']} ! -type d -print 2>/dev/null; "
                f"find / -xdev -newermt @{dut['since']} -type d -print 2>/dev/null", timeout=300).split()
    # the init mounts its file systems over these directories at every boot
    mounts = {"/dev", "/proc", "/sys", "/run", "/tmp"}
    # /etc/xdplab (the series record) is new on this disk: /etc gains an entry
    parents = {"/etc"} if not any(p.startswith("/etc/xdplab/") for p in dut["etc"]) else set()
    stray = sorted(p for p in newer if p not in ours | mounts | parents and not p.startswith("/etc/xdplab")
                   and not p.startswith("/boot/grub") and p != "/boot" and not BOOT_NOISE.match(p))
    assert stray == [], stray
    # and the install itself was seen: the kernels and the record are among what changed
    assert ours <= set(newer) and "/etc/xdplab/kernel-series.json" in newer


def test_the_loop_on_the_dut_finds_the_known_effect_and_leaves_the_default(dut, tmp_path):
    """playbooks/ab.yml with ab_dut: each boot installs its kernel and reboots the DUT into it with
    grub-reboot; the known-effect series (a 4000 ns busy-wait per pktgen transmit) comes out slower by
    about 4000 ns/packet. Runs last: it adds kernels to /boot."""
    known = ROOT / "files" / "patches" / "known-effect"
    evars = {"ab_dut": "vmdut", "kernel_reboot_ok": True, "kernel_qemu_verify_enabled": False,
             "ab_baseline_name": "lab-control", "ab_candidate_name": "lab-effect", "ab_boots": 2,
             "ab_repetitions": 2, "ab_duration": 2, "xdplab_results_root": str(tmp_path / "results"),
             "ab_baseline_series": [{"path": str(p)} for p in sorted((known / "control").glob("*.patch"))],
             "ab_series": [{"path": str(p)} for p in sorted((known / "effect").glob("*.patch"))]}
    default = saved_entry()  # the disk's own kernel, or the one an earlier test made the default
    argv = [str(PLAYBOOK), "-i", "inventories/vmlab", "playbooks/ab.yml", "-e", json.dumps(evars)]
    proc = playbook_run.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=3600, check=False,  # noqa: S603
                            env=dict(os.environ, ANSIBLE_NOCOLOR="1", PATH=f"{PLAYBOOK.parent}:{os.environ['PATH']}"))
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    (run,) = [d for d in (tmp_path / "results").iterdir() if d.is_dir()]
    boots = sorted(d.name for d in run.iterdir() if d.is_dir())
    assert boots == ["boot-01-lab-control", "boot-02-lab-effect", "boot-03-lab-effect", "boot-04-lab-control"]
    version = kernel_version(dut["release"])
    for boot in boots:
        (rec,) = [json.loads(p.read_text()) for p in (run / boot).glob("*.json")]
        # booted on the DUT (a QEMU machine with firmware), into the kernel of the boot's variant
        assert rec["environment"]["kernel"] == f"{version}-{rec['variant']}" and rec["summary"]["n"] == 2
        assert rec["replicate"] == {"level": "boot", "id": boot[5:]} and rec["environment"]["qemu_guest"] is True
    analysis = yaml.safe_load((run / "ab-analysis.yml").read_text())
    (row,) = analysis["rows"]
    a, b = (row["boot_ns_per_packet"][side] for side in ("baseline", "candidate"))
    assert row["delta_ns_per_packet"] > 0 and row["direction"] == "slower", row
    ci = stats.ttest_ind(b, a, equal_var=False).confidence_interval(0.999)
    assert ci.low <= 4000 <= ci.high, f"4000 ns outside the 99.9% interval [{ci.low:.0f}, {ci.high:.0f}]: {row}"
    # every boot was booted once: the DUT's default entry is what it was; nothing of the runner is left
    assert saved_entry() == default
    assert ssh("ls -d /tmp/xdplab-ab.* /sys/class/net/pg0 2>/dev/null || true").strip() == ""


def test_the_loop_runs_the_sweeps_between_the_hosts_after_every_boot(dut, tmp_path):
    """playbooks/ab.yml with ab_sweeps: after every boot of the DUT, the xdp_flow sweep runs from the
    generator over the lab's igb link, over the datapaths the lab's inventory asks for (Open vSwitch's
    kernel datapath among them); each record names its boot and, in its environment, the kernel it ran
    on (its variant is the datapath), and each datapath is a row of the cover letter with n = 2 boots
    per kernel. The kernels are the previous test's (cached: nothing compiles). Nothing of the sweep is
    left on the DUT, no Open vSwitch datapath either."""
    known = ROOT / "files" / "patches" / "known-effect"
    inventory = yaml.safe_load((ROOT / "inventories" / "vmlab" / "group_vars" / "all.yml").read_text())
    datapaths = set(inventory["scenarios_xdp_flow_variants"])
    assert {"xdp_flow", "ovs"} <= datapaths, datapaths
    evars = {"ab_dut": "vmdut", "kernel_reboot_ok": True, "kernel_qemu_verify_enabled": False,
             "ab_baseline_name": "lab-control", "ab_candidate_name": "lab-effect", "ab_boots": 2,
             # 5 s bursts, as molecule/vmlab's: a 2 s burst sampled inside the emulated DUT sometimes has
             # no steady interval, and the sampler refuses it rather than record it
             "ab_repetitions": 1, "ab_duration": 5, "xdplab_results_root": str(tmp_path / "results"),
             "ab_scenarios": [], "ab_sweeps": ["xdp_flow"],
             "ab_baseline_series": [{"path": str(p)} for p in sorted((known / "control").glob("*.patch"))],
             "ab_series": [{"path": str(p)} for p in sorted((known / "effect").glob("*.patch"))]}
    argv = [str(PLAYBOOK), "-i", "inventories/vmlab", "playbooks/ab.yml", "-e", json.dumps(evars)]
    proc = playbook_run.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=3600, check=False,  # noqa: S603
                            env=dict(os.environ, ANSIBLE_NOCOLOR="1", PATH=f"{PLAYBOOK.parent}:{os.environ['PATH']}"))
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "cached, nothing compiled" in proc.stdout
    (run,) = [d for d in (tmp_path / "results").iterdir() if d.is_dir()]
    boots = sorted(d.name for d in run.iterdir() if d.is_dir())
    assert boots == ["boot-01-lab-control", "boot-02-lab-effect", "boot-03-lab-effect", "boot-04-lab-control"]
    version = kernel_version(dut["release"])
    for boot in boots:
        kernel = boot.split("-", 2)[2]
        recs = {r["variant"]: r for r in (json.loads(p.read_text()) for p in (run / boot).glob("*.json"))}
        assert set(recs) == datapaths, sorted(recs)
        for rec in recs.values():
            assert rec["scenario"] == "xdp_flow" and rec["replicate"] == {"level": "boot", "id": boot[5:]}
            assert rec["environment"]["kernel_variant"] == kernel
            assert rec["environment"]["kernel"] == f"{version}-{kernel}", rec["environment"]["kernel"]
            assert rec["environment"]["nic"]["igb0"]["driver"] == "igb" and rec["samples"][0] > 0
        assert not (run / boot / "INCOMPLETE").exists() and not (run / boot / "report.txt").exists()
    analysis = yaml.safe_load((run / "ab-analysis.yml").read_text())
    rows = {r["params"]["variant"]: r for r in analysis["rows"]}
    assert set(rows) == datapaths
    for row in rows.values():
        assert (row["baseline"]["n"], row["candidate"]["n"]) == (2, 2), row
        assert row["boots"] == {"baseline": ["01-lab-control", "04-lab-control"],
                                "candidate": ["02-lab-effect", "03-lab-effect"]}
    letter = (run / "cover-letter.txt").read_text()
    # a datapath's row is named scenario/variant (the renderer's names for rows of one scenario)
    assert all(f"xdp_flow/{v}" in letter for v in rows), letter
    # the sweep's hooks, XDP program and addresses are gone from the DUT's port
    left = ssh("ip -j addr show dev igb0; ip -j link show dev igb0; nft list tables; tc filter show dev igb0 ingress")
    assert "198.18.0.2" not in left and '"xdp"' not in left and "xdplab_scenarios" not in left, left
    assert ssh("ovs-dpctl dump-dps").strip() == "", "an Open vSwitch datapath is left on the DUT"
