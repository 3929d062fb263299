# SPDX-License-Identifier: GPL-3.0-or-later
"""files/xsk tools on a real veth pair in namespaces of this test: xskgen counted by the peer, TX metadata
request with completion timestamps, zero-copy refused on veth, xsksink/udpsink bursts, bad input and a
generator whose interface disappears mid-run."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._client_server_argv import parse_info, parse_sink
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._output_parsers import parse

ROOT = Path(__file__).resolve().parents[2]
P = f"h7x{os.getpid() % 100000}"
A, B = f"{P}a", f"{P}b"

pytestmark = pytest.mark.root


def sh(*argv, check=True, **kw):
    return subprocess.run(list(argv), capture_output=True, text=True, check=check, **kw)


def nsx(ns, *argv, check=False, timeout=60):
    return sh("ip", "netns", "exec", ns, *argv, check=check, timeout=timeout)


@pytest.fixture(scope="module")
def bed(tmp_path_factory):
    out = tmp_path_factory.mktemp("xsk")
    sh("make", "-s", "-C", str(ROOT / "files/xsk"), f"OUT={out}")
    sh("ip", "netns", "add", A)
    sh("ip", "netns", "add", B)
    try:
        sh("ip", "link", "add", "h7v0", "netns", A, "type", "veth", "peer", "name", "h7v1", "netns", B)
        for ns, dev, addr in ((A, "h7v0", "198.18.7.1/24"), (B, "h7v1", "198.18.7.2/24")):
            sh("ip", "-n", ns, "addr", "add", addr, "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        mac = nsx(B, "cat", "/sys/class/net/h7v1/address", check=True).stdout.strip()
        yield {"bin": out, "mac": mac}
    finally:
        sh("ip", "netns", "del", A, check=False)
        sh("ip", "netns", "del", B, check=False)


def rx_packets():
    return int(nsx(B, "cat", "/sys/class/net/h7v1/statistics/rx_packets", check=True).stdout)


def test_xskgen_count_reaches_the_peer(bed):
    before = rx_packets()
    proc = nsx(A, str(bed["bin"] / "xskgen"), "--dev", "h7v0", "--count", "20000", "--dst-mac", bed["mac"], "--copy")
    assert proc.returncode == 0, proc.stderr
    parsed = parse("xskgen", proc.stdout)
    assert parsed["packets"] == 20000
    assert rx_packets() - before >= 20000
    assert parse_info("xskgen", proc.stdout)["mode"] == "copy"


def test_zero_copy_refused_on_veth_with_a_clear_message(bed):
    proc = nsx(A, str(bed["bin"] / "xskgen"), "--dev", "h7v0", "--count", "10", "--zero-copy")
    assert proc.returncode == 1
    assert "bind(XDP_ZEROCOPY) failed" in proc.stderr
    assert "zero-copy is not supported by the driver of h7v0" in proc.stderr
    auto = nsx(A, str(bed["bin"] / "xskgen"), "--dev", "h7v0", "--count", "10")
    assert auto.returncode == 0 and "zero-copy refused by h7v0" in parse_info("xskgen", auto.stdout)["mode_note"]


def test_tx_metadata_request_counts_completion_timestamps(bed):
    proc = nsx(A, str(bed["bin"] / "xskgen"), "--dev", "h7v0", "--count", "5000", "--dst-mac", bed["mac"], "-m")
    info = parse_info("xskgen", proc.stdout)
    if proc.returncode != 0:  # a kernel without TX metadata must say so plainly
        assert "this kernel has no AF_XDP TX metadata" in proc.stderr, proc.stderr
        return
    assert info["tx_metadata"] == "request" and info["completions"] == 5000
    # 6.18 copy mode fills software TX timestamps; whatever the kernel does, the count is consistent
    assert 0 <= info["tx_timestamp_filled"] <= 5000
    if info["tx_timestamp_filled"]:
        assert info["last_tx_timestamp"] > 10**18  # nanoseconds of a real clock, not our request bytes


def run_sink(bed, argv, send):
    sink = subprocess.Popen(["ip", "netns", "exec", B, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + 10
        line = ""
        while "ready" not in line and time.monotonic() < deadline:
            line = sink.stdout.readline()
            assert line or sink.poll() is None, sink.stderr.read()
        for i, argv2 in enumerate(send):
            if i:
                time.sleep(0.6)
            assert nsx(A, *argv2).returncode == 0
        time.sleep(0.5)
    finally:
        sink.send_signal(signal.SIGINT)
        out, err = sink.communicate(timeout=10)
    assert sink.returncode == 0, err
    return parse_sink(line + out)


def test_xsksink_sees_one_burst_per_run(bed):
    gen = [str(bed["bin"] / "xskgen"), "--dev", "h7v0", "--count", "3000", "--dst-mac", bed["mac"], "--batch", "16"]
    got = run_sink(bed, [str(bed["bin"] / "xsksink"), "--dev", "h7v1", "--copy"], [gen, gen])
    assert len(got["bursts"]) == 2 and got["info"]["mode"] == "copy"
    assert all(0 < b["packets"] <= 3000 for b in got["bursts"])
    # the program went with the process (BPF link): nothing left attached
    assert "xdp" not in nsx(B, "ip", "link", "show", "h7v1", check=True).stdout.split("mtu")[1].split()[1:2]


def test_udpsink_counts_udpgen(bed):
    gen = [str(bed["bin"] / "udpgen"), "--count", "4000", "--dst-ip", "198.18.7.2", "--src-ip", "198.18.7.1",
           "--batch", "8"]
    got = run_sink(bed, [str(bed["bin"] / "udpsink"), "--port", "9"], [gen])
    assert len(got["bursts"]) == 1 and got["bursts"][0]["packets"] + got["info"]["rcvbuf_errors"] == 4000


@pytest.mark.parametrize(("argv", "msg"), [
    (["xskgen", "--dev", "h7v0", "--size", "59"], "--size must be an integer in 60..4096, got '59'"),
    (["xskgen", "--dev", "nosuch0", "--count", "1"], "interface 'nosuch0' not found"),
    (["xskgen", "--dev", "h7v0", "--count", "1", "--duration", "1"], "mutually exclusive"),
    (["xsksink", "--dev", "h7v1", "--xdp-mode", "offload"],
     "--xdp-mode must be native, generic or auto, got 'offload'"),
    (["udpsink", "--port", "70000"], "--port must be an integer in 1..65535, got '70000'"),
])
def test_bad_input_named(bed, argv, msg):
    proc = nsx(A if argv[0] != "xsksink" and argv[0] != "udpsink" else B, str(bed["bin"] / argv[0]), *argv[1:])
    assert proc.returncode in (1, 2) and msg in proc.stderr, proc.stderr


def test_generator_dies_when_its_interface_goes(bed):
    sh("ip", "-n", A, "link", "add", "h7d0", "type", "veth", "peer", "name", "h7d1")
    sh("ip", "-n", A, "link", "set", "h7d0", "up")
    sh("ip", "-n", A, "link", "set", "h7d1", "up")
    gen = subprocess.Popen(["ip", "netns", "exec", A, str(bed["bin"] / "xskgen"), "--dev", "h7d0", "--duration", "20"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    sh("ip", "-n", A, "link", "del", "h7d0")
    out, err = gen.communicate(timeout=15)
    assert gen.returncode == 1, (out, err)
    assert "failed" in err or "never completed" in err or "no packet completed" in err, err
