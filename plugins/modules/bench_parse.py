#!/usr/bin/python
# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parse the output of a traffic generator or benchmark tool."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: bench_parse
short_description: Parse traffic generator and benchmark tool output into packet rates
version_added: "0.1.0"
description:
  - Turns the text output of a generator or benchmark tool into a dictionary with at least
    C(pps) (packets per second, float) plus the tool's own figures.
  - Empty, truncated or unrecognised output fails the task with a message naming the tool;
    it never yields a rate of 0.
  - Runs on the controller or any host; it reads nothing from the system.
options:
  tool:
    description:
      - Tool whose output is given.
      - C(xdpgen) is the collection's own live-frame XDP generator; C(pktgen) is the kernel
        generator (/proc/net/pktgen device files or the sample scripts' output);
        C(sockperf) accepts C(tp), C(pp) and C(ul) client summaries; C(iperf3) needs C(--json)
        (TCP pps is an estimate from the MSS, see RETURN); C(xdp-bench) accepts default and
        extended (C(-e)) output; C(testpmd) reads C(show port stats) blocks.
      - Any parser registered in C(plugins/module_utils/traffic/_output_parsers.py) (C(TOOLS)); an unknown
        name fails listing the known ones.
    type: str
    required: true
  output:
    description: The tool's output (stdout, or stdout and stderr together).
    type: str
    required: true
extends_documentation_fragment:
  - xdplab.testbed.attributes
attributes:
  check_mode:
    support: full
    details: Pure computation; runs the same in check mode.
  diff_mode:
    support: none
author:
  - xdplab.testbed contributors (!UNKNOWN)"""

EXAMPLES = r"""
- name: Parse an xdpgen run
  xdplab.testbed.bench_parse:
    tool: xdpgen
    output: "{{ gen_run.stdout }}"
  register: parsed

- name: Show the rate
  ansible.builtin.debug:
    msg: "{{ parsed.parsed.pps | round(0) }} pps"

- name: Parse a pktgen device file
  xdplab.testbed.bench_parse:
    tool: pktgen
    output: "{{ lookup('ansible.builtin.file', '/proc/net/pktgen/veth0@0') }}"
"""

RETURN = r"""
parsed:
  description:
    - Parsed figures. Always has C(pps) (float, packets/s) and C(tool).
    - xdpgen adds packets, bytes, seconds, gbps, threads, pkt_size, per_thread.
    - pktgen adds packets, errors, bps, seconds, pkt_size, pps_basis, devices (one per DEV@THREAD); pps is
      all packets over the wall span (the longest device's elapsed time).
    - trafgen adds packets, bytes, seconds, per_cpu; pps is all packets over the longest CPU's time.
    - sockperf adds mode (tp or pp); pp pps is replies per second in the valid window, with latency_usec.
    - iperf3 adds protocol and pps_basis; UDP pps is packets received per second, TCP pps is an
      estimate (received bytes / tcp_mss_default / seconds).
    - xdp-bench and xdp-trafficgen add intervals (one per printed line); pps is the mean of the steady
      intervals, without leading and trailing zero intervals and the two partial edge intervals
      (trailing_zero_intervals, edge_intervals_dropped, intervals_used, interior say what was used).
    - testpmd adds ports (the last complete stats block of each, with blocks) and pps_direction (rx when
      any port receives, else tx); pps is the sum over ports of that block's rate.
  returned: success
  type: dict
  sample:
    tool: xdpgen
    pps: 5898820.24
    packets: 5900000
    bytes: 377600000
    seconds: 1.0002
    gbps: 3.0202
    threads: 2
    pkt_size: 64
    per_thread:
      - {thread: 0, cpu: 0, packets: 3000000, seconds: 1.0002, pps: 2999400.12}
      - {thread: 1, cpu: 1, packets: 2900000, seconds: 1.0001, pps: 2899710.03}
ns_per_packet:
  description: 1e9 / pps.
  returned: success
  type: float
  sample: 169.53
"""

import traceback

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._output_parsers import ParseError, parse


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            # checked by parse() against the parser table (an unknown name fails listing the known ones)
            "tool": {"type": "str", "required": True},
            "output": {"type": "str", "required": True},
        },
        supports_check_mode=True,
    )
    try:
        parsed = parse(module.params["tool"], module.params["output"])
    except ParseError as exc:
        module.fail_json(msg=str(exc), tool=module.params["tool"])
    except Exception as exc:  # pragma: no cover - bug guard
        module.fail_json(msg=f"bench_parse: unexpected error: {exc}", exception=traceback.format_exc())
    module.exit_json(changed=False, parsed=parsed, ns_per_packet=1e9 / parsed["pps"])


if __name__ == "__main__":
    main()
