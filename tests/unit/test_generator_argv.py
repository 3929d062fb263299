# SPDX-License-Identifier: GPL-3.0-or-later
"""Generator argv/config builders (plugins/module_utils/traffic/_xdpgen_trafgen_argv.py).

Cases are data: params in, the exact argv (or the error naming the bad value) out.
The trafgen configuration is also checked by its frame layout: the byte count it
describes must equal pkt_size.
"""

from __future__ import annotations

import re

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._xdpgen_trafgen_argv import (
    PARAM_KEYS,
    GeneratorParamError,
    normalize_params,
    trafgen_argv,
    trafgen_config,
    xdpgen_argv,
)

BASE = ["--dst-mac", "ff:ff:ff:ff:ff:ff", "--src-ip", "198.18.0.1", "--dst-ip", "198.18.0.2",
        "--sport", "9", "--dport", "9"]

XDPGEN_CASES = [
    ("defaults: duration 5",
     {"interface": "veth0"},
     ["xdpgen", "--dev", "veth0", "--size", "64", "--duration", "5", "--threads", "1", "--cpu", "0", *BASE]),
    ("count, strings from Ansible, threads/cpu/batch",
     {"interface": "gen0", "pkt_size": "128", "count": "1000000", "threads": "2", "cpu": "0", "batch": "4096"},
     ["xdpgen", "--dev", "gen0", "--size", "128", "--count", "1000000", "--threads", "2", "--cpu", "0",
      "--batch", "4096", *BASE]),
    ("fractional duration, MACs lower-cased, flows",
     {"interface": "gen0", "duration": 1.5, "dst_mac": "02:AA:bb:00:00:01", "src_mac": "02:00:00:00:00:02",
      "src_ip": "198.18.1.1", "dst_ip": "198.19.0.9", "sport": 1000, "dport": 7, "flows": 16},
     ["xdpgen", "--dev", "gen0", "--size", "64", "--duration", "1.5", "--threads", "1", "--cpu", "0",
      "--dst-mac", "02:aa:bb:00:00:01", "--src-mac", "02:00:00:00:00:02", "--src-ip", "198.18.1.1",
      "--dst-ip", "198.19.0.9", "--sport", "1000", "--dport", "7", "--flows", "16"]),
    ("a paced rate (whole or fractional packets/s) and the interval lines",
     {"interface": "gen0", "duration": 5, "rate": "250000", "interval": 0.1},
     ["xdpgen", "--dev", "gen0", "--size", "64", "--duration", "5", "--threads", "1", "--cpu", "0", *BASE,
      "--rate", "250000", "--interval", "0.1"]),
    ("a fractional rate",
     {"interface": "gen0", "rate": 1500.5},
     ["xdpgen", "--dev", "gen0", "--size", "64", "--duration", "5", "--threads", "1", "--cpu", "0", *BASE,
      "--rate", "1500.5"]),
    ("None values mean 'not given'",
     {"interface": "gen0", "count": None, "duration": 2, "src_mac": None, "batch": None},
     ["xdpgen", "--dev", "gen0", "--size", "64", "--duration", "2", "--threads", "1", "--cpu", "0", *BASE]),
]


@pytest.mark.parametrize("name,params,argv", XDPGEN_CASES, ids=[c[0] for c in XDPGEN_CASES])
def test_xdpgen_argv(name, params, argv):
    assert xdpgen_argv(params) == argv


def test_xdpgen_argv_binary_is_argv0():
    assert xdpgen_argv({"interface": "gen0"}, binary="/var/lib/xdplab/bin/xdpgen")[0] == "/var/lib/xdplab/bin/xdpgen"


BAD = [
    ({"interface": "gen0", "pkt_size": "abc"}, "pkt_size must be an integer, got 'abc'"),
    ({"interface": "gen0", "pkt_size": 59}, "pkt_size must be in 60..3408, got 59"),
    ({"interface": "gen0", "pkt_size": 3409}, "pkt_size must be in 60..3408, got 3409"),
    ({"interface": "gen0", "pkt_size": True}, "pkt_size must be an integer, got True"),
    ({"interface": "gen0", "pkt_size": 64.5}, "pkt_size must be an integer, got 64.5"),
    ({"interface": "gen0", "pkt_size": "-64"}, "pkt_size must be an integer, got '-64'"),
    ({"interface": "gen0", "count": 0}, "count must be in 1..18446744073709551615, got 0"),
    ({"interface": "gen0", "count": 10, "duration": 1}, "count (10) and duration (1) are mutually exclusive"),
    ({"interface": "gen0", "duration": "soon"}, "duration must be a number of seconds, got 'soon'"),
    ({"interface": "gen0", "duration": 0}, "duration must be > 0 and <= 31536000 seconds, got 0"),
    ({"interface": "gen0", "duration": float("nan")}, "duration must be > 0"),
    ({"interface": "gen0", "threads": 0}, "threads must be in 1..256, got 0"),
    ({"interface": "gen0", "count": 1, "threads": 2}, "count 1 is smaller than threads 2"),
    ({"interface": "gen0", "cpu": -1}, "cpu must be in 0..4095, got -1"),
    ({"interface": "gen0", "batch": 0}, "batch must be in 1..16777216, got 0"),
    ({"interface": "gen0", "dst_mac": "ff:ff:ff:ff:ff"}, "dst_mac must be a MAC address like 02:00:00:00:00:01, "
                                                         "got 'ff:ff:ff:ff:ff'"),
    ({"interface": "gen0", "src_mac": 42}, "src_mac must be a MAC address like 02:00:00:00:00:01, got 42"),
    ({"interface": "gen0", "src_ip": "198.18.0.256"}, "src_ip must be an IPv4 address, got '198.18.0.256'"),
    ({"interface": "gen0", "dst_ip": "2001:db8::1"}, "dst_ip must be an IPv4 address, got '2001:db8::1'"),
    ({"interface": "gen0", "sport": 0}, "sport must be in 1..65535, got 0"),
    ({"interface": "gen0", "dport": "http"}, "dport must be an integer, got 'http'"),
    ({"interface": "gen0", "flows": 0}, "flows must be in 1..65535, got 0"),
    ({"interface": "gen0", "sport": 65000, "flows": 1000}, "flows 1000 with sport 65000 runs past port 65535"),
    ({"interface": "gen0", "rate": 0}, "rate must be in 1..1000000000 packets/s, got 0"),
    ({"interface": "gen0", "rate": "fast"}, "rate must be a rate in packets/s, got 'fast'"),
    ({"interface": "gen0", "rate": True}, "rate must be a rate in packets/s, got True"),
    ({"interface": "gen0", "rate": float("inf")}, "rate must be in 1..1000000000 packets/s, got inf"),
    ({"interface": "gen0", "rate": 2e9}, "rate must be in 1..1000000000 packets/s, got 2000000000.0"),
    ({"interface": "gen0", "rate": 3, "threads": 4}, "rate 3 is below 1 packet/s for each of 4 threads"),
    ({"interface": "gen0", "interval": 0}, "interval must be > 0 and <= 31536000 seconds, got 0"),
    ({}, "interface is required"),
    ({"interface": "a/b"}, "interface must be a network interface name"),
    ({"interface": "sixteen-chars-xx"}, "got 'sixteen-chars-xx'"),
    ({"interface": "gen0", "pktsize": 64}, "unknown generator parameter(s) 'pktsize'"),
]


@pytest.mark.parametrize("params,msg", BAD, ids=[m for _dummy, m in BAD])
def test_xdpgen_bad_params_named(params, msg):
    with pytest.raises(GeneratorParamError) as exc:
        xdpgen_argv(params)
    assert msg in str(exc.value)


def test_params_must_be_a_dict():
    with pytest.raises(GeneratorParamError, match="params must be a dict, got 'gen0'"):
        normalize_params("gen0")


def test_param_keys_are_the_documented_ones():
    assert set(PARAM_KEYS) == {"interface", "pkt_size", "count", "duration", "threads", "cpu", "batch",
                               "dst_mac", "src_mac", "src_ip", "dst_ip", "sport", "dport", "flows",
                               "rate", "interval"}


# ------------------------------------------------------------------ trafgen
def test_trafgen_argv():
    argv = trafgen_argv({"interface": "gen0", "count": 200000, "threads": 2}, "/tmp/tg.cfg")
    assert argv == ["trafgen", "--dev", "gen0", "--conf", "/tmp/tg.cfg", "--cpus", "2", "--num", "200000"]


def test_trafgen_argv_rate():
    argv = trafgen_argv({"interface": "gen0", "count": 10, "rate": "100000"}, "c.cfg")
    assert argv[-2:] == ["--rate", "100000pps"]
    assert "--rate" not in trafgen_argv({"interface": "gen0", "count": 10}, "c.cfg")


def test_trafgen_argv_jumbo_frames_need_the_flag():
    argv = trafgen_argv({"interface": "gen0", "count": 10, "pkt_size": 9014}, "c.cfg", binary="/usr/sbin/trafgen")
    assert argv[0] == "/usr/sbin/trafgen" and argv[-1] == "--jumbo-support"
    assert "--jumbo-support" not in trafgen_argv({"interface": "gen0", "count": 10, "pkt_size": 2048}, "c.cfg")


@pytest.mark.parametrize("params,msg", [
    ({"interface": "gen0"}, "trafgen has no time limit: give count instead of duration 5.0"),
    ({"interface": "gen0", "duration": 3}, "instead of duration 3.0"),
    ({"interface": "gen0", "count": 5, "cpu": 1}, "cpu 1: trafgen always runs on CPUs 0..threads-1"),
    ({"interface": "gen0", "count": 5, "batch": 64}, "batch 64 is an xdpgen parameter"),
    ({"interface": "gen0", "count": 5, "interval": 1}, "interval 1.0 is an xdpgen parameter"),
    ({"interface": "gen0", "count": 5, "rate": 10.5}, "rate 10.5: trafgen takes whole packets/s"),
    ({"interface": "gen0", "count": 5, "pkt_size": 9015}, "pkt_size must be in 60..9014, got 9015"),
    ({"interface": "gen0", "count": "many"}, "count must be an integer, got 'many'"),
])
def test_trafgen_bad_params_named(params, msg):
    for build in (lambda p: trafgen_argv(p, "x.cfg"), trafgen_config):
        with pytest.raises(GeneratorParamError) as exc:
            build(params)
        assert msg in str(exc.value)


def test_trafgen_conf_path_checked():
    with pytest.raises(GeneratorParamError, match="conf_path must be a file path, got ''"):
        trafgen_argv({"interface": "gen0", "count": 1}, "")


def _frame_bytes(conf: str) -> int:
    """Bytes a rendered config describes: eth 14 + ipv4 20 + udp 8 + fill(N)."""
    body = conf[conf.index("{"):]
    assert body.count("eth(") == 1 and body.count("ipv4(") == 1 and body.count("udp(") == 1
    return 14 + 20 + 8 + sum(int(n) for n in re.findall(r"fill\(0x00, (\d+)\)", body))


@pytest.mark.parametrize("size", [60, 64, 128, 1514, 9014])
def test_trafgen_config_frame_size(size):
    assert _frame_bytes(trafgen_config({"interface": "gen0", "count": 1, "pkt_size": size})) == size


def test_trafgen_config_same_frame_as_xdpgen():
    conf = trafgen_config({"interface": "gen0", "count": 1, "dst_mac": "02:00:00:00:00:0A",
                           "src_mac": "02:00:00:00:00:0b", "src_ip": "198.18.0.5", "dst_ip": "198.18.0.6",
                           "sport": 1234, "dport": 4321})
    assert "eth(da=02:00:00:00:00:0a, sa=02:00:00:00:00:0b)" in conf
    assert "ipv4(sa=198.18.0.5, da=198.18.0.6, ttl=64, df)" in conf
    assert "udp(sp=1234, dp=4321, csum=0)" in conf


def test_trafgen_config_flows_and_default_src_mac():
    conf = trafgen_config({"interface": "gen0", "count": 1, "sport": 1000, "flows": 8})
    assert "udp(sp=dinc(1000, 1007), dp=9, csum=0)" in conf
    assert "eth(da=ff:ff:ff:ff:ff:ff)," in conf  # trafgen fills in the device's MAC as source
