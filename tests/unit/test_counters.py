# SPDX-License-Identifier: GPL-3.0-or-later
"""Counter specs, ethtool -S parsing and CPU shares (module_utils/traffic/_dut_counters.py)."""

from __future__ import annotations

import json

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._dut_counters import (
    CounterError,
    check_spec,
    counter_delta,
    cpu_shares,
    describe,
    make_reader,
    netdev_stat,
    parse_ethtool_stats,
)

# Real `ethtool -S` output of a veth with XDP attached, captured on the 6.18 test VM.
ETHTOOL_VETH = """NIC statistics:
     peer_ifindex: 7
     rx_queue_0_xdp_packets: 1836000
     rx_queue_0_xdp_bytes: 110160000
     rx_queue_0_drops: 0
     rx_queue_0_xdp_redirect: 0
     rx_queue_0_xdp_drops: 1836000
     tx_queue_0_xdp_xmit: 0
"""


def test_parse_ethtool_stats():
    stats = parse_ethtool_stats(ETHTOOL_VETH)
    assert stats["rx_queue_0_xdp_drops"] == 1836000
    assert "NIC statistics" not in stats
    assert len(stats) == 7


def test_counter_delta_keeps_only_changes():
    assert counter_delta({"a": 1, "b": 5}, {"a": 1, "b": 9, "c": 2}) == {"b": 4, "c": 2}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"type": "xdpp", "interface": "veth0"}, "got 'xdpp'"),
        ({"type": "xdp", "interface": "a" * 16}, "a" * 16),
        ({"type": "xdp", "interface": "../x"}, "'../x'"),
        ({"type": "xdp", "interface": "veth0", "action": "dropp"}, "got 'dropp'"),
        ({"type": "nft", "table": "x;rm -rf /", "counter": "c"}, "x;rm -rf /"),
        ({"type": "netdev", "interface": "veth0", "stat": "../../etc/passwd"}, "../../etc/passwd"),
        ("veth0", "must be a dict"),
    ],
)
def test_bad_specs_name_the_value(spec, message):
    with pytest.raises(CounterError) as exc:
        check_spec(spec)
    assert message in str(exc.value)


def test_defaults_and_description():
    spec = check_spec({"type": "xdp", "interface": "veth0"})
    assert spec["action"] == "all"
    assert describe(spec) == "xdp all on veth0"
    assert describe(check_spec({"type": "nft", "table": "xdplab", "counter": "drop"})) == "nft counter inet xdplab drop"


def test_netdev_stat_reads_sysfs_tree(tmp_path):
    d = tmp_path / "veth0" / "statistics"
    d.mkdir(parents=True)
    (d / "rx_packets").write_text("1234\n")
    assert netdev_stat("veth0", "rx_packets", root=str(tmp_path)) == 1234
    with pytest.raises(CounterError, match="'nosuch'"):
        netdev_stat("nosuch", "rx_packets", root=str(tmp_path))


def test_nft_reader_uses_argv_and_reports_errors():
    calls = []
    payload = {"nftables": [{"metainfo": {}}, {"counter": {"name": "drop", "packets": 42, "bytes": 2520}}]}

    def ok(argv):
        calls.append(argv)
        return 0, json.dumps(payload), ""

    read = make_reader({"type": "nft", "table": "xdplab", "counter": "drop"}, run_command=ok)
    assert read() == 42
    assert calls[0] == ["nft", "-j", "list", "counter", "inet", "xdplab", "drop"]

    def missing(argv):
        return 1, "", "Error: No such file or directory"

    with pytest.raises(CounterError, match="No such file or directory"):
        make_reader({"type": "nft", "table": "xdplab", "counter": "drop"}, run_command=missing)


def test_cpu_shares_percent_of_one_cpu():
    before = {"user": 100, "nice": 0, "system": 50, "idle": 1000, "iowait": 0, "irq": 0, "softirq": 10, "steal": 0}
    after = {"user": 150, "nice": 0, "system": 100, "idle": 1050, "iowait": 0, "irq": 0, "softirq": 110, "steal": 0}
    shares = cpu_shares(before, after, cpus=2)
    assert shares == {"app_pct": 80.0, "softirq_pct": 80.0, "idle_pct": 40.0}
