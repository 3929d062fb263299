# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests that run INSIDE a guest booted by xdplab.testbed.qemu_exec on a kernel the kernel role built.

Driven from the host by tests/integration/test_kernel_qemu.py and molecule/kernel (verify), e.g.
``qemu_exec: {chdir: <checkout>, environment: {XDPLAB_EXPECT_PATCHED: "1"},
command: ".venv/bin/pytest -q tests/qemu"}``. On the host itself they are skipped (not a guest);
pytest.ini's testpaths do not include this directory.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

IN_GUEST = os.uname().nodename == "xdplab-guest" and Path("/run/xdplab-out").is_dir()
pytestmark = [pytest.mark.qemu, pytest.mark.skipif(not IN_GUEST, reason="runs inside a qemu_exec guest only")]

MARKER = "xdplab-fixture: pgctrl-marker=1"
XDP_C = """
#include <linux/bpf.h>
#define SEC(n) __attribute__((section(n), used))
SEC("xdp") int h5_drop(struct xdp_md *ctx) { return XDP_DROP; }
char _license[] SEC("license") = "GPL";
"""


def sh(*argv: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), check=True, capture_output=True, text=True, **kw)


def test_kernel_release_has_variant():
    want = os.environ.get("XDPLAB_EXPECT_RELEASE")
    assert want, "the driver must pass XDPLAB_EXPECT_RELEASE"
    assert os.uname().release == want


def test_patch_effect_matches_variant():
    expect = os.environ.get("XDPLAB_EXPECT_PATCHED")
    assert expect in ("0", "1"), "the driver must pass XDPLAB_EXPECT_PATCHED=0|1"
    pgctrl = Path("/proc/net/pktgen/pgctrl").read_text()
    assert pgctrl.startswith("Packet Generator for packet performance testing.")
    assert (MARKER in pgctrl) == (expect == "1"), pgctrl


def test_pktgen_sends_on_dummy():
    sh("ip", "link", "add", "h5pg0", "type", "dummy")
    try:
        sh("ip", "link", "set", "h5pg0", "up")
        pg = Path("/proc/net/pktgen")
        (pg / "kpktgend_0").write_text("rem_device_all\n")
        (pg / "kpktgend_0").write_text("add_device h5pg0\n")
        for cmd in ("count 20000", "pkt_size 60", "dst 198.18.0.2", "dst_mac 02:00:00:00:00:02"):
            (pg / "h5pg0").write_text(cmd + "\n")
        (pg / "pgctrl").write_text("start\n")
        text = (pg / "h5pg0").read_text()
        assert "Result: OK:" in text, text
        sent = int(text.split("pkts-sofar: ")[1].split()[0])
        assert sent == 20000, text
    finally:
        (Path("/proc/net/pktgen") / "pgctrl").write_text("reset\n")
        subprocess.run(["ip", "link", "del", "h5pg0"], check=False)


def test_netdevsim_device_with_ethtool():
    bus = Path("/sys/bus/netdevsim")
    (bus / "new_device").write_text("515 1\n")
    try:
        netdir = None
        for _dummy in range(50):
            nets = list((bus / "devices" / "netdevsim515" / "net").glob("*")) if (
                bus / "devices" / "netdevsim515" / "net").exists() else []
            if nets:
                netdir = nets[0]
                break
            time.sleep(0.1)
        assert netdir is not None, "netdevsim515 created no netdev"
        out = sh("ethtool", "-i", netdir.name).stdout
        assert "driver: netdevsim" in out
    finally:
        (bus / "del_device").write_text("515\n")


def test_bpf_jit_and_native_xdp_on_veth(tmp_path):
    assert Path("/proc/sys/net/core/bpf_jit_enable").read_text().strip() == "1"
    clang = shutil.which("clang")
    assert clang, "clang missing on the host root"
    (tmp_path / "drop.c").write_text(XDP_C)
    sh(clang, "-O2", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu", "-c", str(tmp_path / "drop.c"),
       "-o", str(tmp_path / "drop.o"))
    sh("ip", "link", "add", "h5x0", "type", "veth", "peer", "name", "h5x1")
    try:
        sh("ip", "link", "set", "dev", "h5x0", "xdpdrv", "obj", str(tmp_path / "drop.o"), "sec", "xdp")
        out = sh("ip", "-d", "link", "show", "dev", "h5x0").stdout
        assert "xdp " in out or "prog/xdp" in out, out
    finally:
        subprocess.run(["ip", "link", "del", "h5x0"], check=False)
