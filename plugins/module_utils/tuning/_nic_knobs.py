# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The NIC knob table: ethtool groups, their settable keys, booleans, maxima, CLI aliases and short
feature names. The planner (_plan_and_snapshots) and the netlink reader/writer (_ethtool_netlink)
both read it, so a new knob is one row here.

PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.
"""

from __future__ import annotations

# Settable keys per scalar group (canonical names: the ethtool CLI's with
# '_' for '-'): the planner and the ethtool netlink code both read this table.
SCALAR_KEYS: dict[str, tuple[str, ...]] = {
    "ring": ("rx", "rx_mini", "rx_jumbo", "tx", "rx_buf_len", "cqe_size", "tx_push", "rx_push"),
    "channels": ("rx", "tx", "other", "combined"),
    "coalesce": (
        "rx_usecs", "rx_frames", "rx_usecs_irq", "rx_frames_irq",
        "tx_usecs", "tx_frames", "tx_usecs_irq", "tx_frames_irq",
        "stats_block_usecs", "adaptive_rx", "adaptive_tx",
        "pkt_rate_low", "rx_usecs_low", "rx_frames_low", "tx_usecs_low", "tx_frames_low",
        "pkt_rate_high", "rx_usecs_high", "rx_frames_high", "tx_usecs_high", "tx_frames_high",
        "sample_interval", "cqe_mode_tx", "cqe_mode_rx",
        "tx_aggr_max_bytes", "tx_aggr_max_frames", "tx_aggr_time_usecs",
    ),
    "pause": ("autoneg", "rx", "tx"),
}
BOOL_KEYS: dict[str, frozenset[str]] = {
    "ring": frozenset({"tx_push", "rx_push"}),
    "channels": frozenset(),
    "coalesce": frozenset({"adaptive_rx", "adaptive_tx", "cqe_mode_tx", "cqe_mode_rx"}),
    "pause": frozenset({"autoneg", "rx", "tx"}),
}
MAXIMA: dict[str, dict[str, str]] = {
    "ring": {"rx": "rx_max", "rx_mini": "rx_mini_max", "rx_jumbo": "rx_jumbo_max", "tx": "tx_max"},
    "channels": {"rx": "rx_max", "tx": "tx_max", "other": "other_max", "combined": "combined_max"},
}
# ethtool CLI spellings accepted as aliases of the canonical keys.
KEY_ALIASES: dict[str, dict[str, str]] = {
    "coalesce": {
        "rx_usecs": "rx_usecs", "rx_frames": "rx_frames", "rx_max_frames": "rx_frames",
        "tx_max_frames": "tx_frames", "use_adaptive_rx": "adaptive_rx", "use_adaptive_tx": "adaptive_tx",
        "rx_max_frames_irq": "rx_frames_irq", "tx_max_frames_irq": "tx_frames_irq",
        "rate_sample_interval": "sample_interval", "use_cqe_mode_rx": "cqe_mode_rx",
        "use_cqe_mode_tx": "cqe_mode_tx",
    },
    "ring": {"rx_mini_pending": "rx_mini", "rx_pending": "rx", "tx_pending": "tx", "rx_jumbo_pending": "rx_jumbo"},
    "channels": {"rx_count": "rx", "tx_count": "tx", "other_count": "other", "combined_count": "combined"},
    "pause": {"rx_pause": "rx", "tx_pause": "tx"},
}

# Short feature names of the ethtool CLI (off_flag_def in ethtool.c) and a
# few more.  A value is a regex over the kernel's feature names.
FEATURE_ALIASES: dict[str, str] = {
    "rx": r"rx-checksum",
    "tx": r"tx-checksum-.*",
    "sg": r"tx-scatter-gather.*",
    "tso": r"tx-tcp.*segmentation",
    "ufo": r"tx-udp-fragmentation",
    "gso": r"tx-generic-segmentation",
    "gro": r"rx-gro",
    "lro": r"rx-lro",
    "rxvlan": r"rx-vlan-hw-parse",
    "txvlan": r"tx-vlan-hw-insert",
    "rx-vlan-offload": r"rx-vlan-hw-parse",
    "tx-vlan-offload": r"tx-vlan-hw-insert",
    "rxvlanfilter": r"rx-vlan-filter",
    "ntuple": r"rx-ntuple-filter",
    "rxhash": r"rx-hashing",
    "rxfcs": r"rx-fcs",
    "rxall": r"rx-all",
    "hw-tc-offload": r"hw-tc-offload",
    "gro-hw": r"rx-gro-hw",
    "gro-list": r"rx-gro-list",
}
