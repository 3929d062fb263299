# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_ethtool message classes (encoded and decoded through pyroute2, as the kernel's replies are),
read_nic_raw's unsupported/no-device handling and nic_tuning's all-or-nothing apply against a mocked
netlink object that fails midway."""

from __future__ import annotations

import errno
import re
from pathlib import Path

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _ethtool_netlink as _ethtool
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _plan_and_snapshots as _tuning
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _restore


def roundtrip(cls, attrs):
    msg = cls()
    msg["cmd"] = 0
    msg["version"] = 1
    msg["attrs"] = attrs
    msg.encode()
    out = cls(msg.data)
    out.decode()
    return out


def bits(pairs, nomask=False):
    entries = []
    for name, value in pairs:
        attrs = [["ETHTOOL_A_BITSET_BIT_NAME", name]]
        if value and not nomask:
            attrs.append(["ETHTOOL_A_BITSET_BIT_VALUE", True])
        entries.append(["ETHTOOL_A_BITSET_BITS_BIT", {"attrs": attrs}])
    head = [["ETHTOOL_A_BITSET_NOMASK", True]] if nomask else []
    return {"attrs": [*head, ["ETHTOOL_A_BITSET_SIZE", 64], ["ETHTOOL_A_BITSET_BITS", {"attrs": entries}]]}


def test_features_bitsets_decode_mask_and_list_forms():
    cls = _ethtool._msg_class("features", _ethtool.FEATURES_ATTRS)
    reply = roundtrip(cls, [
        ["hw", bits([("rx-gro", True), ("rx-lro", False), ("", True)])],  # mask form: every bit listed
        ["active", bits([("rx-gro", True)], nomask=True)],  # list form: only set bits
    ])
    hw, nomask = _ethtool._bitset_to_dict(reply.get_attr("hw"))
    assert (hw, nomask) == ({"rx-gro": True, "rx-lro": False}, False)  # unnamed bit dropped
    active, nomask = _ethtool._bitset_to_dict(reply.get_attr("active"))
    assert (active, nomask) == ({"rx-gro": True}, True)


def test_bitset_request_lists_only_given_bits():
    req = _ethtool._bitset_request({"rx-gro": False, "rx-ntuple-filter": True})
    bits_ = req["attrs"][0][1]["attrs"]
    assert [b[1]["attrs"] for b in bits_] == [
        [["ETHTOOL_A_BITSET_BIT_NAME", "rx-gro"]],
        [["ETHTOOL_A_BITSET_BIT_NAME", "rx-ntuple-filter"], ["ETHTOOL_A_BITSET_BIT_VALUE", True]],
    ]


UAPI = Path("/usr/include/linux/ethtool_netlink.h")  # linux-libc-dev (pulled in by libbpf-dev)


def uapi_enum(prefix: str) -> list[str]:
    """Attribute names of one ETHTOOL_A_<prefix>_* enum, in value order, from the installed uapi header."""
    text = UAPI.read_text()
    start = text.index(f"ETHTOOL_A_{prefix}_UNSPEC")
    body = text[start:text.index("};", start)]
    names = re.findall(rf"^\s*ETHTOOL_A_{prefix}_(\w+)\s*(?:=\s*\w+)?,", body, re.MULTILINE)
    return [n.lower() for n in names if not n.startswith("_")]


@pytest.mark.parametrize("prefix,table,aliases", [
    ("RINGS", _ethtool.RING_ATTRS, {}),
    ("CHANNELS", _ethtool.CHANNEL_ATTRS, {"rx_count": "rx", "tx_count": "tx", "other_count": "other",
                                          "combined_count": "combined"}),
    ("COALESCE", _ethtool.COALESCE_ATTRS, {"rx_max_frames": "rx_frames", "tx_max_frames": "tx_frames",
                                           "rx_max_frames_irq": "rx_frames_irq", "tx_max_frames_irq": "tx_frames_irq",
                                           "use_adaptive_rx": "adaptive_rx", "use_adaptive_tx": "adaptive_tx",
                                           "rx_max_frames_low": "rx_frames_low", "tx_max_frames_low": "tx_frames_low",
                                           "rx_max_frames_high": "rx_frames_high",
                                           "tx_max_frames_high": "tx_frames_high",
                                           "rate_sample_interval": "sample_interval",
                                           "use_cqe_mode_tx": "cqe_mode_tx", "use_cqe_mode_rx": "cqe_mode_rx"}),
    ("PAUSE", _ethtool.PAUSE_ATTRS, {}),
    ("FEATURES", _ethtool.FEATURES_ATTRS, {}),
])
def test_attribute_tables_follow_the_uapi_header(prefix, table, aliases):
    """Index in our table == enum value in the kernel header, for every attribute the header has."""
    if not UAPI.exists():
        pytest.fail(f"{UAPI} missing: install linux-libc-dev")
    header = [aliases.get(n, n) for n in uapi_enum(prefix)]
    ours = [n for n, _dummy in table]
    n = min(len(header), len(ours))
    assert n >= 5
    assert ours[:n] == header[:n]


def test_scalar_reply_decodes_to_short_names():
    cls = _ethtool._msg_class("pause", _ethtool.PAUSE_ATTRS)
    reply = roundtrip(cls, [["autoneg", 1], ["rx", 0], ["tx", 1]])
    assert {a[0]: a[1] for a in reply["attrs"]} == {"autoneg": 1, "rx": 0, "tx": 1}


class FakeEth:
    """Stands in for EthtoolNetlink: groups it lacks raise EOPNOTSUPP, one set may fail."""

    def __init__(self, state, fail_on=None, refuses=()):
        self.state = state
        self.fail_on = fail_on
        self.refuses = refuses  # groups read but never set (virtio_net's coalesce without the feature)
        self.calls = []

    def _get(self, group):
        if group not in self.state:
            raise _ethtool.EthtoolError("eth9", group, errno.EOPNOTSUPP, "Operation not supported")
        return self.state[group]

    def get(self, group, ifname):
        return dict(self._get(group))

    def get_features(self, ifname):
        return self._get("features")

    def get_private_flags(self, ifname):
        return self._get("private_flags")

    def _set(self, group, values):
        self.calls.append((group, dict(values)))
        if group in self.refuses:
            raise _ethtool.EthtoolError("eth9", group, errno.EOPNOTSUPP, "Operation not supported", "set")
        if group == self.fail_on:
            self.fail_on = None  # fail once; the rollback of other groups must still work
            raise _ethtool.EthtoolError("eth9", group, errno.EINVAL, "invalid argument", "set")
        self.state[group].update(values)

    def set(self, group, ifname, values):
        self._set(group, values)

    def set_features(self, ifname, values):
        self._set("features", values)

    def set_private_flags(self, ifname, values):
        self._set("private_flags", values)


def test_read_nic_raw_maps_unsupported_groups():
    eth = FakeEth({"channels": {"rx_max": 4, "tx_max": 4, "rx": 4, "tx": 4}, "private_flags": {}})
    raw, unsupported = _ethtool.read_nic_raw(eth, "eth9")
    assert list(raw) == ["channels"]
    assert unsupported["coalesce"] == "Operation not supported"
    assert unsupported["private_flags"] == "the device has no private flags"


def test_read_nic_raw_propagates_missing_device():
    class Gone(FakeEth):
        def get(self, group, ifname):
            raise _ethtool.EthtoolError("eth9", group, errno.ENODEV, "No such device")

    with pytest.raises(_ethtool.EthtoolError) as exc:
        _ethtool.read_nic_raw(Gone({}), "eth9")
    assert exc.value.no_device


def test_apply_rolls_back_groups_already_applied_when_kernel_rejects_one():
    eth = FakeEth({"channels": {"combined": 4}, "ring": {"rx": 512}, "coalesce": {"rx_usecs": 50}},
                  fail_on="coalesce")
    plan = _tuning.NicPlan("eth9")
    plan.add("channels", "combined", 4, 2)
    plan.add("ring", "rx", 512, 4096)
    plan.add("coalesce", "rx_usecs", 50, 30)
    with pytest.raises(RuntimeError, match="rolled back channels, ring"):
        _restore.apply_nic_all_or_nothing(eth, "eth9", plan)
    assert eth.state == {"channels": {"combined": 4}, "ring": {"rx": 512}, "coalesce": {"rx_usecs": 50}}
    assert [c[0] for c in eth.calls] == ["channels", "ring", "coalesce", "ring", "channels"]


def test_a_group_the_driver_refuses_is_left_and_named_the_others_applied():
    eth = FakeEth({"channels": {"combined": 4}, "coalesce": {"rx_usecs": 0}, "ring": {"rx": 256}},
                  refuses=("coalesce",))
    plan = _tuning.NicPlan("eth9")
    plan.add("channels", "combined", 4, 1)
    plan.add("coalesce", "rx_usecs", 0, 30)
    plan.add("ring", "rx", 256, 512)
    refused = []
    _restore.apply_nic_all_or_nothing(eth, "eth9", plan, refused=refused)
    assert eth.state == {"channels": {"combined": 1}, "coalesce": {"rx_usecs": 0}, "ring": {"rx": 512}}
    assert [g for g, _msg in refused] == ["coalesce"] and "refuses to set coalesce" in refused[0][1]
    # without a list to name it in (on_unsupported=fail) the refusal is an error, and the rest is rolled back
    eth = FakeEth({"channels": {"combined": 4}, "coalesce": {"rx_usecs": 0}}, refuses=("coalesce",))
    plan = _tuning.NicPlan("eth9")
    plan.add("channels", "combined", 4, 1)
    plan.add("coalesce", "rx_usecs", 0, 30)
    with pytest.raises(RuntimeError, match="Operation not supported.*rolled back channels"):
        _restore.apply_nic_all_or_nothing(eth, "eth9", plan)
    assert eth.state == {"channels": {"combined": 4}, "coalesce": {"rx_usecs": 0}}


def test_apply_first_group_failing_applies_nothing():
    eth = FakeEth({"channels": {"combined": 4}}, fail_on="channels")
    plan = _tuning.NicPlan("eth9")
    plan.add("channels", "combined", 4, 2)
    with pytest.raises(RuntimeError, match="nothing had been applied"):
        _restore.apply_nic_all_or_nothing(eth, "eth9", plan)
    assert eth.state == {"channels": {"combined": 4}}
