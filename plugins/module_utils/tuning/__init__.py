# SPDX-License-Identifier: GPL-3.0-or-later
"""Host and NIC tuning: the NIC knob table (_nic_knobs), knob plans and snapshots
(_plan_and_snapshots), the ethtool netlink reader and writer (_ethtool_netlink), IRQ discovery and
pinning strategies (_irq_strategies), host knobs (_host_knobs: governor, SMT, C-states, kernel
command line) and threaded NAPI with its kthreads' CPUs (_napi_threads).

Imports from module_utils: common."""
