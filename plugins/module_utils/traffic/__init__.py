# SPDX-License-Identifier: GPL-3.0-or-later
"""Traffic: the argv of each generator and server (_xdpgen_trafgen_argv, _client_server_argv), their
output parsers (_output_parsers), pktgen through /proc (_pktgen_proc), bench_run's argument spec,
DUT counters (_dut_counters) and the bursts found in their samples (_counter_bursts), the NDR/PDR
search planner (_rate_search).

Imports from module_utils: common, xdp."""
