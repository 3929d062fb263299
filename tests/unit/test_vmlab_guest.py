# SPDX-License-Identifier: GPL-3.0-or-later
"""vmlab_guest module: bad input fails naming the guest before anything is made; a guest that never
answers ssh is killed and leaves no run directory or ledger entry (QEMU start mocked)."""

from __future__ import annotations

import json
import os
from unittest import mock

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.xdplab.testbed.plugins.module_utils.testbed import _vmlab_guests as _vmlab
from ansible_collections.xdplab.testbed.plugins.modules import vmlab_guest

HELP_10 = 'name "igb", bus PCI\nname "virtio-net-pci", bus PCI\nname "e1000e", bus PCI\n'
HELP_72 = 'name "virtio-net-pci", bus PCI\nname "e1000e", bus PCI\n'


def _args(tmp_path, **kw):
    kernel, image = tmp_path / "bzImage", tmp_path / "rootfs.img"
    kernel.write_bytes(b"k")
    image.write_bytes(b"i")
    base = {"name": "vmdut", "index": 1, "kernel": str(kernel), "image": str(image),
            "rundir": str(tmp_path / "guests" / "vmdut"), "ssh_port": 10123, "accel": "tcg",
            "ledger_dir": str(tmp_path / "ledger"), "boot_timeout": 2,
            "nics": [{"model": "igb", "name": "igb0", "link": "igb0"}]}
    base.update(kw)
    return base


def _run(args, help_text=HELP_10, start=None, ready=("ready", "SSH-2.0-OpenSSH_9.2p1"), run_command=None):
    started = start or mock.Mock(side_effect=AssertionError("QEMU must not start"))
    commands = {"side_effect": run_command} if run_command else {"return_value": (0, help_text, "")}
    with patch_module_args(args), \
            mock.patch("ansible.module_utils.basic.AnsibleModule.get_bin_path", return_value="/usr/bin/qemu"), \
            mock.patch("ansible.module_utils.basic.AnsibleModule.run_command", **commands), \
            mock.patch.object(_vmlab, "ssh_banner", return_value=None), \
            mock.patch.object(_vmlab, "open_taps", side_effect=lambda ns, taps: {t: [90] for t in taps}), \
            mock.patch.object(_vmlab, "start", started), \
            mock.patch.object(_vmlab, "wait_ready", return_value=ready), \
            mock.patch.object(vmlab_guest, "_kill") as kill, \
            mock.patch("os.close"), \
            mock.patch("os.path.exists", side_effect=lambda p: p.startswith("/run/netns/") or os.path.lexists(p)), \
            pytest.raises(SystemExit), \
            mock.patch("sys.stdout.write") as out:
        vmlab_guest.main()
    return json.loads("".join(c.args[0] for c in out.call_args_list)), kill


def test_a_nic_model_the_qemu_lacks_fails_naming_the_guest_and_makes_nothing(tmp_path):
    res, _dummy = _run(_args(tmp_path, netns="xdplab-vmlab"), help_text=HELP_72)
    assert res["failed"] and "guest 'vmdut'" in res["msg"] and "no device 'igb'" in res["msg"]
    assert not (tmp_path / "guests").exists() and not (tmp_path / "ledger").exists()


def test_test_nics_without_a_namespace_fail(tmp_path):
    res, _dummy = _run(_args(tmp_path))
    assert res["failed"] and "guest 'vmdut': test NICs need netns" in res["msg"]


def test_a_guest_whose_sshd_never_answers_is_killed_and_leaves_nothing(tmp_path):
    entry = tmp_path / "ledger" / "qemu-x.json"

    def fake_start(argv, fds, log, ledger_dir):
        entry.parent.mkdir()
        entry.write_text("{}")
        assert fds == [90]
        return 4242, str(entry)

    res, kill = _run(_args(tmp_path, netns="xdplab-vmlab"), start=mock.Mock(side_effect=fake_start),
                     ready=("timeout", None))
    assert res["failed"] and res["msg"].startswith("guest 'vmdut': its sshd did not answer on 127.0.0.1:10123")
    kill.assert_called_once_with(4242, grace=1.0)
    assert not entry.exists() and not (tmp_path / "guests" / "vmdut").exists()


def test_a_guest_that_answers_is_reported_with_its_drivers(tmp_path):
    start = mock.Mock(return_value=(4242, str(tmp_path / "e.json")))
    res, kill = _run(_args(tmp_path, netns="xdplab-vmlab"), start=start)
    assert not res.get("failed") and res["changed"] and res["pid"] == 4242
    assert res["drivers"] == {"igb0": "igb"} and res["taps"] == {"igb0": "vl1g1n1"}
    assert "igb,netdev=n1,mac=52:54:01:00:01:01" in res["qemu_argv"]
    kill.assert_not_called()
    share = tmp_path / "guests" / "vmdut" / "share"
    assert (share / "nics").read_text().splitlines()[1] == "52:54:01:00:01:01 igb0"


@pytest.mark.parametrize("rundir", ["/", "/var", "relative/dir", "/var/lib/../lib/x"])
def test_a_rundir_that_is_not_its_own_is_refused(tmp_path, rundir):
    res, _dummy = _run(_args(tmp_path, rundir=rundir, state="stopped"))
    assert res["failed"] and "guest 'vmdut': rundir" in res["msg"]


def test_a_rundir_holding_foreign_files_is_never_removed(tmp_path):
    rundir = tmp_path / "guests" / "vmdut"
    rundir.mkdir(parents=True)
    (rundir / "precious.txt").write_text("keep me")
    res, _dummy = _run(_args(tmp_path, state="stopped"))
    assert res["failed"] and "precious.txt" in res["msg"] and (rundir / "precious.txt").exists()


def test_a_kvm_guest_that_exits_at_once_is_started_again_under_tcg(tmp_path):
    # kvm_pvm passes the probe, then QEMU -cpu host exits: "failed to set MSR 0x10a".
    argvs = []

    def fake_start(argv, fds, log, ledger_dir):
        argvs.append(argv)
        with open(log, "w") as fh:
            fh.write("qemu-system-x86_64: error: failed to set MSR 0x10a to 0xc000069\n")
        return 100 + len(argvs), str(tmp_path / "ledger" / f"e{len(argvs)}.json")

    with mock.patch("ansible_collections.xdplab.testbed.plugins.module_utils.kernel._qemu_guest.probe_kvm",
                    return_value=(True, "a probe guest ran under KVM")), \
            mock.patch.object(_vmlab, "alive", side_effect=lambda pid: pid != 101):
        res, _dummy = _run(_args(tmp_path, netns="xdplab-vmlab", accel="auto", kvm_grace=0.5),
                           start=mock.Mock(side_effect=fake_start))
    assert not res.get("failed") and res["accel"] == "tcg" and res["pid"] == 102
    assert "failed to set MSR 0x10a" in res["accel_reason"] and "fell back to TCG" in res["accel_reason"]
    assert argvs[0][argvs[0].index("-accel") + 1] == "kvm" and argvs[1][argvs[1].index("-accel") + 1] == "tcg"


def test_stopping_needs_only_the_name_and_run_directory_and_removes_the_disk_copy(tmp_path):
    # as the lab's teardown calls it: no kernel, image or port
    rundir = tmp_path / "guests" / "vmdut"
    (rundir / "share").mkdir(parents=True)
    (rundir / _vmlab.DISK_FILE).write_bytes(b"disk")
    res, _dummy = _run({"name": "vmdut", "state": "stopped", "rundir": str(rundir),
                        "ledger_dir": str(tmp_path / "ledger")})
    assert not res.get("failed") and res["changed"] and not rundir.exists()


def test_a_disk_booted_guest_boots_its_own_copy_of_the_image(tmp_path):
    disk = tmp_path / "disk-abc.img"
    disk.write_bytes(b"MBR+GRUB+root")
    copies = []

    def run_command(argv, **_kw):
        if argv[0] == "cp":
            copies.append(argv)
            with open(argv[-1], "wb") as fh:
                fh.write(open(argv[-2], "rb").read())  # noqa: SIM115
            return 0, "", ""
        return 0, HELP_10, ""

    start = mock.Mock(return_value=(4242, str(tmp_path / "e.json")))
    res, _dummy = _run(_args(tmp_path, netns="xdplab-vmlab", boot="disk", image=str(disk), kernel=None),
                       start=start, run_command=run_command)
    assert not res.get("failed"), res
    copy = tmp_path / "guests" / "vmdut" / _vmlab.DISK_FILE
    assert copies and copies[0][-2:] == [str(disk), str(copy)] and copy.read_bytes() == b"MBR+GRUB+root"
    argv = start.call_args.args[0]
    assert f"file={copy},if=virtio,format=raw,cache=unsafe" in argv and "-kernel" not in argv
    assert disk.read_bytes() == b"MBR+GRUB+root"


def _stop_with(tmp_path, state: dict, mode: int = 0o700):
    """vmlab_guest state=stopped on a run directory holding ``state`` as guest.json, nothing mocked."""
    rundir = tmp_path / "guests" / "vmdut"
    (rundir / "share").mkdir(parents=True, exist_ok=True)
    (rundir / "guest.json").write_text(json.dumps(state))
    os.chmod(rundir / "guest.json", 0o600)
    os.chmod(rundir, mode)
    args = {"name": "vmdut", "state": "stopped", "rundir": str(rundir), "ledger_dir": str(tmp_path / "ledger")}
    with patch_module_args(args), pytest.raises(SystemExit), mock.patch("sys.stdout.write") as out:
        vmlab_guest.main()
    return json.loads("".join(c.args[0] for c in out.call_args_list)), rundir


@pytest.fixture
def victim():
    import subprocess

    proc = subprocess.Popen(["sleep", "60"])  # noqa: S607 - a stand-in for someone else's process
    yield proc
    proc.kill()
    proc.wait()


def _planted(pid: int, argv: list[str], entry: str = "") -> dict:
    import hashlib

    from ansible_collections.xdplab.testbed.plugins.module_utils.common import _process_identity as _proc

    ident = _proc.identity(pid) if pid > 1 else {"start": 1, "boot_id": _proc.boot_id()}
    return {"pid": pid, "start": ident["start"], "boot_id": ident["boot_id"], "argv": argv, "ledger_entry": entry,
            "cmdline_sha256": hashlib.sha256(b"\0".join(a.encode() for a in argv) + b"\0").hexdigest()}


def test_a_group_writable_run_directory_is_refused_naming_it_and_nothing_signalled(tmp_path, victim):
    res, rundir = _stop_with(tmp_path, _planted(victim.pid, ["sleep", "60"]), mode=0o770)
    assert res["failed"] and f"vmlab run directory {str(rundir)!r} is group/world-writable" in res["msg"], res
    assert victim.poll() is None and (rundir / "guest.json").exists()


@pytest.mark.parametrize("who", ["not-our-qemu", "pid1", "parent"])
def test_a_planted_guest_json_gets_no_process_signalled(tmp_path, victim, who):
    """A guest.json that names a process whose command line matches but carries no marker of ours, pid 1,
    or the caller's parent (with our marker forged in): nothing gets a signal."""
    marker = ["-name", "xdplab-vmlab-vmdut,process=xdplab-vmlab-vmdut"]
    if who == "not-our-qemu":
        state, target = _planted(victim.pid, ["sleep", "60"]), victim.pid
    elif who == "pid1":
        state, target = _planted(1, ["/sbin/init", *marker]), 1
    else:
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as fh:
            argv = [a.decode() for a in fh.read().split(b"\0")[:-1]]
        state, target = _planted(os.getppid(), [*argv, *marker]), os.getppid()
    with mock.patch("os.kill") as kill, mock.patch("signal.pidfd_send_signal") as pidfd_kill:
        res, _rundir = _stop_with(tmp_path, state)
    assert not kill.called and not pidfd_kill.called, (who, target, res)
    assert victim.poll() is None


def test_a_ledger_entry_outside_the_ledger_is_never_unlinked(tmp_path):
    precious = tmp_path / "precious.json"
    precious.write_text("{}")
    res, _rundir = _stop_with(tmp_path, {"ledger_entry": str(precious)})
    assert res["failed"] and f"ledger entry {str(precious)!r} is not a file of the ledger directory" in res["msg"]
    assert precious.exists()
    (tmp_path / "ledger").mkdir(mode=0o700)
    ours = tmp_path / "ledger" / "qemu-1.json"
    ours.write_text("{}")
    res, _rundir = _stop_with(tmp_path, {"ledger_entry": str(tmp_path / "ledger" / ".." / "precious.json")})
    assert res["failed"] and precious.exists()
    res, rundir = _stop_with(tmp_path, {"ledger_entry": str(ours)})
    assert not res.get("failed") and not ours.exists() and not rundir.exists()
