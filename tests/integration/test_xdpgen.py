# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""xdpgen for real: built with its Makefile, run in a namespace this test creates
(h2t<pid>...), sending through a veth pair into files/xdp/xdp_drop (native) on the peer, whose
xdplab_stats counter must agree with what xdpgen reports. Also: frame contents and flows captured
behind xdp_pass, bad options (exit 2 naming the value), SIGINT, and no BPF program left behind."""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._output_parsers import parse
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._xdpgen_trafgen_argv import xdpgen_argv

pytestmark = pytest.mark.root

ROOT = Path(__file__).resolve().parents[2]
_seq = itertools.count()

if os.geteuid() != 0:  # pragma: no cover
    pytest.fail("tests/integration/test_xdpgen.py needs root (namespaces, XDP)", pytrace=False)

# Frames that are not ours may reach the receiver (IPv6 ND/MLD when the link comes up).
SLACK = 20


def sh(*argv: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, check=check, **kw)  # noqa: S603


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    out = tmp_path_factory.mktemp("h2build")
    sh("make", "-s", "-C", str(ROOT / "files/xdpgen"), f"OUT={out}")
    sh("make", "-s", "-C", str(ROOT / "files/xdp"), f"OUT={out}")
    return {"xdpgen": str(out / "xdpgen"), "drop": str(out / "xdp_drop.o"), "pass": str(out / "xdp_pass.o")}


class Pair:
    def __init__(self, build: dict, program: str) -> None:
        tag = f"{os.getpid() % 100000}{next(_seq)}"
        self.gns, self.dns = f"h2tg{tag}", f"h2td{tag}"
        self.gif, self.dif = f"h2tg{tag}", f"h2td{tag}"
        self.xdpgen = build["xdpgen"]
        sh("ip", "netns", "add", self.gns)
        try:
            sh("ip", "netns", "add", self.dns)
            sh("ip", "link", "add", self.gif, "netns", self.gns, "type", "veth", "peer", "name", self.dif,
               "netns", self.dns)
            # No IPv6 on the pair: its neighbour discovery would add packets the tests do not send.
            for ns, ifname in ((self.gns, self.gif), (self.dns, self.dif)):
                sh("ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{ifname}.disable_ipv6=1")
            sh("ip", "-n", self.gns, "link", "set", self.gif, "up")
            sh("ip", "-n", self.dns, "link", "set", self.dif, "up")
            sh("ip", "-n", self.dns, "link", "set", self.dif, "xdpdrv", "obj", build[program], "sec", "xdp")
            link = json.loads(sh("ip", "-n", self.dns, "-j", "-d", "link", "show", self.dif).stdout)[0]
            self.dmac = link["address"]
            self.gmac = json.loads(sh("ip", "-n", self.gns, "-j", "link", "show", self.gif).stdout)[0]["address"]
            prog = json.loads(sh("bpftool", "-j", "prog", "show", "id", str(link["xdp"]["prog"]["id"])).stdout)
            names = {m: json.loads(sh("bpftool", "-j", "map", "show", "id", str(m)).stdout)["name"]
                     for m in prog["map_ids"]}
            self.map_id = next(m for m, n in names.items() if n == "xdplab_stats")
        except Exception:
            self.close()
            raise

    def counter(self, action: int) -> int:
        out = json.loads(sh("bpftool", "-j", "map", "lookup", "id", str(self.map_id),
                            "key", str(action), "0", "0", "0").stdout)
        return sum(v["value"]["packets"] for v in out["formatted"]["values"])

    def run(self, *args: str, **kw) -> subprocess.CompletedProcess:
        return sh("ip", "netns", "exec", self.gns, self.xdpgen, *args, check=False, timeout=60, **kw)

    def close(self) -> None:
        for ns in (self.gns, self.dns):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)  # noqa: S603,S607


@pytest.fixture
def drop_pair(build):
    pair = Pair(build, "drop")
    time.sleep(0.3)  # carrier up, IPv6 link-local chatter out of the way
    yield pair
    pair.close()


@pytest.fixture
def pass_pair(build):
    pair = Pair(build, "pass")
    yield pair
    pair.close()


def test_xdpgen_one_second_counted_by_the_receiver(drop_pair):
    before = drop_pair.counter(1)
    argv = xdpgen_argv({"interface": drop_pair.gif, "duration": 1, "dst_mac": drop_pair.dmac},
                       binary=drop_pair.xdpgen)
    proc = drop_pair.run(*argv[1:])
    assert proc.returncode == 0, proc.stderr
    received = drop_pair.counter(1) - before
    r = parse("xdpgen", proc.stdout)
    assert r["threads"] == 1 and r["pkt_size"] == 64 and r["bytes"] == r["packets"] * 64
    assert 0.95 <= r["seconds"] <= 1.5, r
    assert r["packets"] > 10_000, r  # live frames send millions per second; 10k would mean it is broken
    # the receiver's XDP_DROP counter agrees with the sender within 1% (+ stray link-local frames)
    assert abs(received - r["packets"]) <= r["packets"] * 0.01 + SLACK, (received, r)
    assert r["pps"] == pytest.approx(r["packets"] / r["seconds"], rel=1e-3)
    assert r["gbps"] == pytest.approx(r["pps"] * 64 * 8 / 1e9, rel=1e-3, abs=1e-4)


def test_xdpgen_count_exact_one_thread(drop_pair):
    before = drop_pair.counter(1)
    proc = drop_pair.run("-i", drop_pair.gif, "-n", "300001", "-s", "128", "-b", "7000", "-q")
    assert proc.returncode == 0, proc.stderr
    r = parse("xdpgen", proc.stdout)
    assert r["packets"] == 300001 and r["bytes"] == 300001 * 128 and r["pkt_size"] == 128
    # one sender CPU: the veth peer's ring never overflows, every frame is dropped by XDP
    assert 300001 <= drop_pair.counter(1) - before <= 300001 + SLACK


def _veth_xmit(pair: Pair) -> tuple[int, int]:
    """(frames the sending veth put on the peer's ring, frames it could not: the ring was full), from
    ethtool -S over all queues."""
    out = sh("ip", "netns", "exec", pair.gns, "ethtool", "-S", pair.gif).stdout
    stats = {k: int(v) for k, _dummy, v in (line.strip().partition(": ") for line in out.splitlines()) if v.isdigit()}
    return (sum(v for k, v in stats.items() if k.endswith("xdp_xmit")),
            sum(v for k, v in stats.items() if k.endswith("xdp_xmit_errors")))


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs 2 CPUs for 2 threads")
def test_xdpgen_count_split_over_two_threads(drop_pair):
    before, (xmit_before, errors_before) = drop_pair.counter(1), _veth_xmit(drop_pair)
    proc = drop_pair.run("-i", drop_pair.gif, "-n", "300001", "-t", "2", "-q")
    assert proc.returncode == 0, proc.stderr
    r = parse("xdpgen", proc.stdout)
    assert r["packets"] == 300001 and r["threads"] == 2
    assert sorted(t["packets"] for t in r["per_thread"]) == [150000, 150001]
    assert [t["cpu"] for t in r["per_thread"]] == [0, 1]
    # Two CPUs feed one veth rx ring: when it is full the sending veth drops the frame and counts it
    # as an xdp_xmit error (how many depends on the load). Both counters live in the peer queue's
    # stats, which veth_xdp_xmit updates with a plain += per bulk from whichever CPU sends it, so two
    # senders at once lose whole bulks' counts of either (seen in CI: xmit + errors short by 16 and by
    # 80 of 300001). The DUT program's per-CPU count is exact, so it stands in for xmit when higher;
    # what may still be short is the racy error count, bounded here at 1%.
    # The last frames may still sit in the peer's ring when xdpgen exits: wait for the counts to settle.

    def counts() -> tuple[int, int, int]:
        xmit, errors = _veth_xmit(drop_pair)
        return drop_pair.counter(1) - before, xmit - xmit_before, errors - errors_before
    received, xmit, errors = counts()
    deadline = time.monotonic() + 5
    while received < xmit and time.monotonic() < deadline:
        time.sleep(0.2)
        received, xmit, errors = counts()
    assert received >= 0.5 * 300001
    assert xmit + errors <= 300001, (xmit, errors)
    assert max(xmit, received - SLACK) + errors >= 0.99 * 300001, (received, xmit, errors)
    # Every frame the veth delivered was counted by the DUT's XDP program, and no more than were sent
    # and not refused (plus the odd IPv6 neighbour packet of the link itself). The upper bound is not
    # xmit: two senders update the peer queue's xdp_xmit counter at once, and the veth's count then
    # falls short of what it delivered by whole bulks (seen in CI: received 247409, xmit 247361).
    assert xmit <= received <= 300001 - errors + SLACK, (received, xmit, errors)


def test_xdpgen_sigint_prints_figures_so_far(drop_pair):
    before = drop_pair.counter(1)
    proc = subprocess.Popen(["ip", "netns", "exec", drop_pair.gns, drop_pair.xdpgen, "-i", drop_pair.gif,  # noqa: S603,S607
                             "-d", "30"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=10)
    assert time.monotonic() - t0 < 2.0, "xdpgen took too long to stop"
    assert proc.returncode == 0, err
    assert "Interrupt" in err
    r = parse("xdpgen", out)
    assert 0.3 < r["seconds"] < 5 and r["packets"] > 0
    assert abs(drop_pair.counter(1) - before - r["packets"]) <= r["packets"] * 0.01 + SLACK


def _our_prog_ids(pid: int) -> set[int]:
    ids = set()
    for fd in Path(f"/proc/{pid}/fdinfo").iterdir():
        try:
            m = re.search(r"^prog_id:\s*(\d+)$", fd.read_text(), re.M)
        except OSError:
            continue
        if m:
            ids.add(int(m.group(1)))
    return ids


def test_xdpgen_leaves_no_program_behind(drop_pair):
    """Live frames: xdpgen's program is loaded while it runs and gone after. Packet mode (a kernel that
    refuses live frames): only the probe's program was loaded, and it is closed before sending starts."""
    proc = subprocess.Popen(["ip", "netns", "exec", drop_pair.gns, drop_pair.xdpgen, "-i", drop_pair.gif,  # noqa: S603,S607
                             "-d", "1.5", "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ids: set[int] = set()
    seen_at: list[float] = []
    started = time.monotonic()
    while proc.poll() is None and time.monotonic() - started < 1.0:
        time.sleep(0.05)
        now = _our_prog_ids(proc.pid) if proc.poll() is None else set()
        if now:
            seen_at.append(time.monotonic() - started)
        ids |= now
    names = {i: json.loads(sh("bpftool", "-j", "prog", "show", "id", str(i), check=False).stdout or "{}").get("name")
             for i in ids}
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    if parse("xdpgen", out)["mode"] == "live":
        assert ids, "could not see xdpgen's BPF program while it ran"
        assert set(names.values()) == {"xdpgen"}, names
    else:
        assert "refuses BPF_PROG_RUN live frames" in err or not err, err
        # sampling starts after exec: the probe (loaded and closed first) is rarely seen, never late
        assert set(names.values()) <= {"xdpgen_probe", None}, names
        assert not seen_at or max(seen_at) < 0.5, f"a program was held while sending: {names} at {seen_at}"
    # The program (and its generic attachment to the private namespace's lo) goes with the process;
    # namespace teardown is asynchronous, so allow it a moment.
    for _dummy in range(50):
        left = [i for i in ids if sh("bpftool", "prog", "show", "id", str(i), check=False).returncode == 0]
        if not left:
            break
        time.sleep(0.1)
    assert not left, f"xdpgen program(s) {left} still loaded after exit"


CAPTURE = r"""
import json, socket, struct, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
s.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)  # SO_RCVBUFFORCE: room for every frame of the burst
s.bind((sys.argv[1], 0))
s.settimeout(2)
print("ready", flush=True)
frames = []
try:
    while len(frames) < int(sys.argv[2]):
        frames.append(s.recv(4096).hex())
except socket.timeout:
    pass
print(json.dumps(frames))
"""


def _capture(pair: Pair, n: int, *xdpgen_args: str) -> tuple[list[bytes], subprocess.CompletedProcess]:
    cap = subprocess.Popen(["ip", "netns", "exec", pair.dns, sys.executable, "-c", CAPTURE, pair.dif, str(n)],  # noqa: S603,S607
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert cap.stdout.readline().strip() == "ready", cap.stderr.read()
    proc = pair.run(*xdpgen_args)
    out, err = cap.communicate(timeout=20)
    return [bytes.fromhex(f) for f in json.loads(out.splitlines()[-1])], proc


def _csum(b: bytes) -> int:
    s = sum(struct_unpack_words(b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def struct_unpack_words(b: bytes) -> list[int]:
    return [b[i] << 8 | b[i + 1] for i in range(0, len(b), 2)]


def test_xdpgen_frame_contents(pass_pair):
    frames, proc = _capture(pass_pair, 50, "-i", pass_pair.gif, "-n", "50", "-b", "10", "-s", "100",
                            "--dst-mac", pass_pair.dmac, "--src-ip", "198.18.7.1", "--dst-ip", "198.19.7.2",
                            "--sport", "4000", "--dport", "5001", "-q")
    assert proc.returncode == 0, proc.stderr
    ours = [f for f in frames if f[12:14] == b"\x08\x00" and f[23] == 17]
    assert ours, f"no UDP frame from xdpgen captured ({len(frames)} frames)"
    f = ours[0]
    assert len(f) == 100
    assert f[0:6].hex(":") == pass_pair.dmac and f[6:12].hex(":") == pass_pair.gmac
    ip = f[14:34]
    assert ip[0] == 0x45 and int.from_bytes(ip[2:4], "big") == 86 and ip[8] == 64
    assert _csum(ip) == 0xFFFF, "IPv4 header checksum invalid"
    assert ip[12:16] == bytes([198, 18, 7, 1]) and ip[16:20] == bytes([198, 19, 7, 2])
    udp = f[34:42]
    assert int.from_bytes(udp[0:2], "big") == 4000 and int.from_bytes(udp[2:4], "big") == 5001
    assert int.from_bytes(udp[4:6], "big") == 66 and udp[6:8] == b"\0\0"


def test_xdpgen_flows_vary_the_source_port(pass_pair):
    frames, proc = _capture(pass_pair, 400, "-i", pass_pair.gif, "-n", "400", "-b", "20",
                            "--sport", "1000", "--flows", "4", "-q")
    assert proc.returncode == 0, proc.stderr
    ports = {int.from_bytes(f[34:36], "big") for f in frames if f[12:14] == b"\x08\x00" and f[23] == 17}
    assert len(frames) >= 100, f"only {len(frames)} frames captured"
    assert ports == {1000, 1001, 1002, 1003}


BAD = [
    (["-s", "abc"], "'abc' for -s/--size"),
    (["-s", "59"], "'59' for -s/--size"),
    (["-s", "1515"], "'1515' for -s/--size"),       # MTU 1500 + 14
    (["-n", "0"], "'0' for -n/--count"),
    (["-d", "soon"], "'soon' for -d/--duration"),
    (["-d", "-1"], "'-1' for -d/--duration"),
    (["-t", "0"], "'0' for -t/--threads"),
    (["-b", "0"], "'0' for -b/--batch"),
    (["--dst-mac", "02:00:00:00:00"], "'02:00:00:00:00' for --dst-mac"),
    (["--src-ip", "198.18.0.300"], "'198.18.0.300' for --src-ip"),
    (["--dport", "65536"], "'65536' for --dport"),
    (["--flows", "x"], "'x' for --flows"),
    (["-n", "10", "-d", "1"], "mutually exclusive"),
    (["--bogus"], "unknown option '--bogus'"),
    (["--mode", "fast"], "'fast' for -m/--mode"),
    (["--rate", "0"], "'0' for -r/--rate"),
    (["-r", "lots"], "'lots' for -r/--rate"),
    (["-r", "3", "-t", "4"], "'3' for -r/--rate is smaller than -t/--threads 4"),
    (["--interval", "0"], "'0' for --interval"),
    (["--packet-tx", "pipe"], "'pipe' for --packet-tx"),
]


@pytest.mark.parametrize("args,needle", BAD, ids=[n for _dummy, n in BAD])
def test_xdpgen_bad_option_exit_2_naming_value(drop_pair, args, needle):
    proc = drop_pair.run("-i", drop_pair.gif, *args)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert needle in proc.stderr
    assert proc.stdout == ""


def test_xdpgen_unknown_interface_named(drop_pair):
    proc = drop_pair.run("-i", "h2nosuch0", "-d", "1")
    assert proc.returncode == 2 and "'h2nosuch0' for -i/--dev" in proc.stderr


def test_xdpgen_interface_down_fails(drop_pair):
    sh("ip", "-n", drop_pair.gns, "link", "set", drop_pair.gif, "down")
    proc = drop_pair.run("-i", drop_pair.gif, "-d", "1")
    assert proc.returncode == 1 and f"interface {drop_pair.gif} is down" in proc.stderr


def test_xdpgen_version_and_help(build):
    v = sh(build["xdpgen"], "--version")
    assert re.fullmatch(r"xdpgen \d+\.\d+\.\d+\n", v.stdout)
    h = sh(build["xdpgen"], "--help")
    for opt in ("--dev", "--size", "--count", "--duration", "--threads", "--cpu", "--batch", "--dst-mac",
                "--src-mac", "--src-ip", "--dst-ip", "--sport", "--dport", "--flows", "--mode", "--quiet",
                "--rate", "--interval", "--packet-tx"):
        assert opt in h.stdout


def test_xdpgen_largest_live_frame(drop_pair):
    for ns, dev in ((drop_pair.gns, drop_pair.gif), (drop_pair.dns, drop_pair.dif)):
        sh("ip", "-n", ns, "link", "set", dev, "mtu", "3394")
    before = drop_pair.counter(1)
    proc = drop_pair.run("-i", drop_pair.gif, "-n", "1000", "-s", "3408", "-q")
    assert proc.returncode == 0, proc.stderr
    r = parse("xdpgen", proc.stdout)
    assert r["packets"] == 1000 and r["bytes"] == 3408 * 1000
    assert 1000 <= drop_pair.counter(1) - before <= 1000 + SLACK
    too_big = drop_pair.run("-i", drop_pair.gif, "-n", "1000", "-s", "3409")
    assert too_big.returncode == 2 and "'3409' for -s/--size" in too_big.stderr


def test_xdpgen_mode_follows_the_kernel(drop_pair):
    """--mode live runs, or fails (exit 1) saying the kernel refuses live frames; --mode auto then takes
    the same choice (live where live runs, else packet), and says why on stderr."""
    live = drop_pair.run("-i", drop_pair.gif, "-n", "1000", "--mode", "live", "-q")
    auto = drop_pair.run("-i", drop_pair.gif, "-n", "1000")
    assert auto.returncode == 0, auto.stderr
    if live.returncode == 0:
        assert parse("xdpgen", live.stdout)["mode"] == "live"
        assert parse("xdpgen", auto.stdout)["mode"] == "live"
    else:
        assert live.returncode == 1 and "the kernel refuses BPF_PROG_RUN live frames" in live.stderr, live.stderr
        assert live.stdout == ""
        assert parse("xdpgen", auto.stdout)["mode"] == "packet"
        assert "sending from an AF_PACKET socket instead" in auto.stderr, auto.stderr


def test_xdpgen_packet_mode_count_exact(drop_pair):
    """The socket path on any kernel: the exact count reaches the receiver's XDP program, two threads,
    128-byte frames; a frame the device could not take is sent again, not counted twice."""
    before = drop_pair.counter(1)
    proc = drop_pair.run("-i", drop_pair.gif, "-n", "200001", "-s", "128", "-t", "2", "--mode", "packet", "-q")
    assert proc.returncode == 0, proc.stderr
    r = parse("xdpgen", proc.stdout)
    assert r["mode"] == "packet" and r["packets"] == 200001 and r["bytes"] == 200001 * 128
    deadline = time.monotonic() + 5
    while drop_pair.counter(1) - before < 200001 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert 200001 <= drop_pair.counter(1) - before <= 200001 + SLACK


@pytest.mark.parametrize("mode", ["packet", "packet-mmsg", "auto"])
def test_xdpgen_paced_rate_held(drop_pair, mode):
    """--rate 50000 for 3 s: the achieved rate within 1% of the asked one, the receiver counting what
    was sent, the summary naming the asked rate, the 100 ms intervals without bursts (every interior
    interval within 20% of the rate: a burst would put a whole interval's worth into one).

    On a shared machine another task can hold the sender's CPU for longer than the lag xdpgen makes
    up (50 ms): that run falls short and says so. One more attempt is allowed for that; two short runs
    in a row fail."""
    extra = {"packet": ["--mode", "packet"], "packet-mmsg": ["--mode", "packet", "--packet-tx", "mmsg"],
             "auto": []}[mode]
    tries = []
    for _attempt in range(2):
        before = drop_pair.counter(1)
        proc = drop_pair.run("-i", drop_pair.gif, "-d", "3", "--rate", "50000", "--interval", "0.1", "-q", *extra)
        assert proc.returncode == 0, proc.stderr
        r = parse("xdpgen", proc.stdout)
        assert r["rate_asked"] == 50000.0 and "rate=50000" in proc.stdout
        assert abs(drop_pair.counter(1) - before - r["packets"]) <= SLACK
        interior = r["interval_pps"][1:-1]
        tries.append((r["rate_achieved"], min(interior), max(interior)))
        if r["rate_achieved"] == pytest.approx(50000, rel=0.01) and len(interior) >= 25 \
                and all(40000 <= x <= 60000 for x in interior):
            return
    pytest.fail(f"paced runs (achieved pps, slowest and fastest 100 ms): {tries}")


def test_xdpgen_paced_count(drop_pair):
    """--count with --rate: exactly the count, in count / rate seconds."""
    proc = drop_pair.run("-i", drop_pair.gif, "-n", "20000", "--rate", "20000", "--mode", "packet", "-q")
    assert proc.returncode == 0, proc.stderr
    r = parse("xdpgen", proc.stdout)
    assert r["packets"] == 20000 and 0.95 < r["seconds"] < 1.2, r
