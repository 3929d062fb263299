# SPDX-License-Identifier: GPL-3.0-or-later
"""The vmlab planner: QEMU argv of a guest, NIC model table, tap names, link pairing, guest share."""

from __future__ import annotations

import os
import pathlib
import re

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.state import _ledger
from ansible_collections.xdplab.testbed.plugins.module_utils.testbed import _vmlab_guests as _vmlab

# Captured from `qemu-system-x86_64 -device help` of QEMU 10.0 (bookworm-backports), network devices.
DEVICE_HELP_10 = """Network devices:
name "e1000", bus PCI, alias "e1000-82540em", desc "Intel Gigabit Ethernet"
name "e1000e", bus PCI, desc "Intel 82574L GbE Controller"
name "igb", bus PCI, desc "Intel 82576 Gigabit Ethernet Controller"
name "virtio-net-pci", bus PCI, alias "virtio-net"
"""
# QEMU 7.2 (bookworm) has no igb.
DEVICE_HELP_72 = DEVICE_HELP_10.replace('name "igb", bus PCI, desc "Intel 82576 Gigabit Ethernet Controller"\n', "")


@pytest.fixture
def guest(tmp_path: pathlib.Path) -> _vmlab.Guest:
    kernel = tmp_path / "bzImage"
    image = tmp_path / "rootfs.img"
    kernel.write_bytes(b"k")
    image.write_bytes(b"i")
    return _vmlab.Guest(
        name="vmdut", index=1, kernel=str(kernel), image=str(image), rundir=str(tmp_path / "run"), ssh_port=10123,
        nics=[_vmlab.Nic("igb", "igb0", "igb0"), _vmlab.Nic("virtio-net-pci", "vnet0", "vnet0", queues=2)],
    )


def _opt(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == flag]


def test_argv_has_the_management_forward_on_loopback_only(guest):
    argv = _vmlab.plan_argv(guest, {1: [7], 2: [8, 9]})
    assert "user,id=mgmt,net=10.0.2.0/24,hostfwd=tcp:127.0.0.1:10123-:22" in _opt(argv, "-netdev")


def test_argv_gives_each_test_nic_its_tap_fds_and_queues(guest):
    argv = _vmlab.plan_argv(guest, {1: [7], 2: [8, 9]})
    assert _opt(argv, "-netdev")[1:] == ["tap,id=n1,fds=7,vhost=off", "tap,id=n2,fds=8:9,vhost=off"]
    devices = _opt(argv, "-device")
    assert "igb,netdev=n1,mac=52:54:01:00:01:01" in devices
    # Multiqueue virtio: mq on, 2 vectors per queue pair + config + control; a modern device on the
    # DMA API (iommu_platform), which virtio_net's AF_XDP zero copy needs.
    assert ("virtio-net-pci,netdev=n2,mac=52:54:01:00:01:02,disable-legacy=on,iommu_platform=on,"
            "mq=on,vectors=6") in devices


def test_argv_never_writes_the_shared_image(guest):
    argv = _vmlab.plan_argv(guest, {1: [7], 2: [8, 9]})
    (drive,) = _opt(argv, "-drive")
    assert "snapshot=on" in drive.split(",") and drive.startswith(f"file={guest.image},")


def test_a_kernel_booted_guest_ends_with_its_kernel(guest):
    argv = _vmlab.plan_argv(guest, {1: [7], 2: [8, 9]})
    assert "-no-reboot" in argv and _opt(argv, "-kernel") == [guest.kernel]


def test_a_disk_booted_guest_boots_its_own_copy_through_the_firmware_and_survives_reboots(guest):
    guest.boot = "disk"
    argv = _vmlab.plan_argv(guest, {1: [7], 2: [8, 9]})
    (drive,) = _opt(argv, "-drive")
    # its own copy, written (kernels are installed on it), never the image it was copied from
    assert drive.startswith(f"file={guest.rundir}/{_vmlab.DISK_FILE},") and "snapshot=on" not in drive
    assert guest.image not in " ".join(argv)
    # GRUB boots it (no -kernel), and a reboot resets the machine rather than ending QEMU
    assert "-kernel" not in argv and "-append" not in argv and "-no-reboot" not in argv
    # the same lab share and NICs as a kernel-booted guest
    assert "virtio-9p-pci,fsdev=labfs,mount_tag=xdplab_lab" in argv and len(_opt(argv, "-netdev")) == 3


def test_a_disk_booted_guest_needs_no_kernel_but_its_disk_image(guest):
    guest.boot, guest.kernel = "disk", ""
    _vmlab.validate(guest)
    guest.image = "/nonexistent/disk.img"
    with pytest.raises(_vmlab.VmlabError, match="guest 'vmdut': disk image '/nonexistent/disk.img' does not exist"):
        _vmlab.validate(guest)
    guest.boot = "pxe"
    with pytest.raises(_vmlab.VmlabError, match="guest 'vmdut': boot 'pxe' is not one of kernel, disk"):
        _vmlab.validate(guest)


def test_argv_is_tcg_or_kvm(guest):
    assert _opt(_vmlab.plan_argv(guest, {1: [7], 2: [8, 9]}), "-accel") == ["tcg"]
    guest.accel = "kvm"
    argv = _vmlab.plan_argv(guest, {1: [7], 2: [8, 9]})
    assert _opt(argv, "-accel") == ["kvm"] and _opt(argv, "-cpu") == ["host"]


def test_wrong_number_of_tap_fds_is_refused(guest):
    with pytest.raises(_vmlab.VmlabError, match="vnet0 needs 2 tap fds, got 1"):
        _vmlab.plan_argv(guest, {1: [7], 2: [8]})


def test_cmdline_boots_the_image_init_and_names_the_guest(guest):
    line = _vmlab.kernel_cmdline(guest)
    assert "root=/dev/vda" in line and "init=/usr/local/sbin/xdplab-init" in line and "console=ttyS0" in line


def test_device_help_parser_reads_real_output():
    assert {"igb", "virtio-net-pci", "e1000e"} <= _vmlab.parse_device_names(DEVICE_HELP_10)
    assert "igb" not in _vmlab.parse_device_names(DEVICE_HELP_72)


def test_a_nic_model_the_qemu_lacks_is_named_with_the_guest(guest):
    with pytest.raises(_vmlab.VmlabError, match=r"guest 'vmdut': this QEMU .* has no device 'igb'"):
        _vmlab.validate(guest, _vmlab.parse_device_names(DEVICE_HELP_72))
    _vmlab.validate(guest, _vmlab.parse_device_names(DEVICE_HELP_10))


@pytest.mark.parametrize(("change", "message"), [
    (lambda g: setattr(g, "name", "Bad_Name"), "lowercase"),
    (lambda g: setattr(g, "ssh_port", 22), "1024..65535"),
    (lambda g: setattr(g, "kernel", "/nonexistent/bzImage"), "kernel '/nonexistent/bzImage' does not exist"),
    (lambda g: g.nics.append(_vmlab.Nic("rtl8139", "rtl0", "rtl0")), "NIC model 'rtl8139' is not one of"),
    (lambda g: g.nics.append(_vmlab.Nic("igb", "igb0", "x")), "used twice"),
    (lambda g: setattr(g.nics[1], "queues", 64), "queues=64 is out of 1..16"),
    (lambda g: setattr(g.nics[0], "name", "mgmt0"), "used twice"),
])
def test_bad_guests_are_refused_naming_the_guest(guest, change, message):
    change(guest)
    with pytest.raises(_vmlab.VmlabError, match=message) as err:
        _vmlab.validate(guest)
    assert "guest " in str(err.value)


def test_tap_names_fit_ifnamsiz(guest):
    guest.lab_id, guest.index = 255, 63
    assert len(_vmlab.tap_name(guest, 9)) <= 15


def test_only_multiqueue_backends_get_several_tap_queues():
    assert _vmlab.backend_queues(_vmlab.Nic("igb", "igb0", "l", queues=4)) == 1
    assert _vmlab.backend_queues(_vmlab.Nic("virtio-net-pci", "v0", "l", queues=4)) == 4


def _pair(guest, **peer):
    other = _vmlab.Guest(**{**guest.__dict__, "name": "vmgen", "index": 0, **peer})
    return [other, guest]


def test_links_pair_the_same_link_name_on_two_guests(guest):
    other = _vmlab.Guest(**{**guest.__dict__, "name": "vmgen", "index": 0,
                            "nics": [_vmlab.Nic("igb", "igb0", "igb0"),
                                     _vmlab.Nic("virtio-net-pci", "vnet0", "vnet0", queues=2)]})
    assert _vmlab.link_pairs([other, guest]) == [("vl1g0n1", "vl1g1n1"), ("vl1g0n2", "vl1g1n2")]


def test_a_link_on_one_guest_only_is_refused(guest):
    with pytest.raises(_vmlab.VmlabError, match="link 'igb0' must join two guests"):
        _vmlab.link_pairs([guest])


def test_a_link_between_different_models_is_refused(guest):
    other = _vmlab.Guest(**{**guest.__dict__, "name": "vmgen", "index": 0,
                            "nics": [_vmlab.Nic("e1000e", "igb0", "igb0"),
                                     _vmlab.Nic("virtio-net-pci", "vnet0", "vnet0", queues=2)]})
    with pytest.raises(_vmlab.VmlabError, match="link 'igb0'.*differ"):
        _vmlab.link_pairs([other, guest])


def test_share_names_nics_by_mac_and_carries_the_key(guest):
    files = _vmlab.share_files(guest, "ssh-ed25519 AAAA test\n")
    assert files["nics"].splitlines() == ["52:54:01:00:01:00 mgmt0", "52:54:01:00:01:01 igb0",
                                          "52:54:01:00:01:02 vnet0"]
    assert files["authorized_keys"] == "ssh-ed25519 AAAA test\n" and files["hostname"] == "vmdut\n"


def test_start_records_the_ledger_entry_before_exec(tmp_path):
    # The child is gated between fork and exec: by the time it runs its program the entry exists.
    ledger = tmp_path / "ledger"
    marker = tmp_path / "seen"
    script = f"import os,sys; open({str(marker)!r},'w').write(str(sorted(os.listdir({str(ledger)!r}))))"
    argv = ["/usr/bin/python3", "-c", script]
    pid, entry = _vmlab.start(argv, [], str(tmp_path / "log"),
                              lambda pid: _ledger.record(str(ledger), _ledger.qemu_entry(pid, argv))[0])
    os.waitpid(pid, 0)
    assert os.path.basename(entry) in marker.read_text()


def test_start_does_not_exec_when_the_ledger_cannot_be_written(tmp_path):
    bad = tmp_path / "ledger"
    bad.mkdir(mode=0o777)
    os.chmod(bad, 0o777)  # noqa: S103 - group/world-writable on purpose: the ledger refuses it
    marker = tmp_path / "ran"
    with pytest.raises(Exception, match="writable"):
        argv = ["/usr/bin/touch", str(marker)]
        _vmlab.start(argv, [], str(tmp_path / "log"),
                     lambda pid: _ledger.record(str(bad), _ledger.qemu_entry(pid, argv))[0])
    assert not marker.exists()


def test_ssh_banner_is_none_without_a_listener():
    assert _vmlab.ssh_banner(1, timeout=0.5) is None


def test_image_and_rundir_cannot_inject_qemu_options(guest, tmp_path):
    """-drive/-fsdev split on ',': the image and run directory have their commas doubled; -serial file:
    and -pidfile take the rest verbatim; control characters are refused, naming the value."""
    odd = tmp_path / "lab,readonly=off,x=y z"
    odd.mkdir()
    image = odd / "root,snapshot=off.img"
    image.write_bytes(b"i")
    guest.image, guest.rundir = str(image), str(odd / "run")
    _vmlab.validate(guest)
    argv = _vmlab.plan_argv(guest, {1: [7], 2: [8, 9]})
    esc = str(odd).replace(",", ",,")
    assert _opt(argv, "-drive") == [f"file={esc}/root,,snapshot=off.img,if=virtio,format=raw,snapshot=on,cache=unsafe"]
    assert _opt(argv, "-fsdev") == [f"local,id=labfs,path={esc}/run/share,security_model=none,readonly=on"]
    assert _opt(argv, "-serial") == [f"file:{odd}/run/console.log"]
    assert _opt(argv, "-pidfile") == [f"{odd}/run/qemu.pid"]
    guest.boot = "disk"
    assert _opt(_vmlab.plan_argv(guest, {1: [7], 2: [8, 9]}), "-drive")[0].startswith(f"file={esc}/run/")
    for field in ("image", "rundir"):
        bad = str(tmp_path / "a\nb")
        with pytest.raises(_vmlab.VmlabError, match=re.escape(f"{field} {bad!r} holds a control character")):
            _vmlab.validate(_vmlab.Guest(**dict(guest.__dict__, **{field: bad})))
