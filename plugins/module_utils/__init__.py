# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared code of the xdplab.testbed modules and plugins, one sub-package per step of the loop.

Private to the xdplab.testbed collection: not a public API, may change without notice.

    common    atomic file writes, shared by every step
    state     the ledger (undo log) and the run lock on each host
    testbed   namespaces, veth links and addresses of the virtual test bed
    kernel    kernel builds (patch series, Kconfig, build keys) and QEMU guests
    tuning    NIC (ethtool netlink), IRQ and host knobs: plans, snapshots, restores
    xdp       bpf(2) access and XDP program objects
    traffic   generators and servers (argv, output parsers), DUT counters and their bursts
    results   records, statistics, comparisons, reports and the environment fingerprint

Layering (checked by tests/unit/test_layering.py): module_utils never imports modules, action or
other plugins; results never imports state; only modules and action plugins write the ledger.
"""
