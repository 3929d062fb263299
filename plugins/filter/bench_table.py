# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
name: bench_table
short_description: Summary table (pps, ns/packet, n, bound) of a results run directory
version_added: 0.1.0
description:
  - Reads the result records v1 of a run directory on the controller and renders one line per record
    with the mean rate, ns/packet, the 95% interval half-width in ns/packet (or "n=1, no interval"),
    n, whether the point was generator- or DUT-bound, and the largest loss of its repetitions.
options:
  _input:
    description: A run directory (results/<run id>) on the controller.
    type: path
    required: true
author: xdplab.testbed developers
"""

EXAMPLES = r"""
- name: Print the summary of a run
  ansible.builtin.debug:
    msg: "{{ ('results/' ~ run_id) | xdplab.testbed.bench_table }}"
"""

RETURN = r"""
_value:
  description: The table, one line per record, with a header.
  type: str
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.module_utils.results._run_summary import load_run, table


def bench_table(run_dir: str) -> str:
    if not isinstance(run_dir, str) or not run_dir or "\0" in run_dir:
        # an int would be opened as a file descriptor
        raise AnsibleFilterError(f"bench_table: the run directory must be a path, got {run_dir!r}")
    try:
        records = load_run(run_dir)
    except (OSError, ValueError) as exc:
        raise AnsibleFilterError(f"bench_table: cannot read {run_dir!r}: {exc}") from exc
    if not records:
        return f"no result records in {run_dir}"
    return table(records)


class FilterModule:
    def filters(self):
        return {"bench_table": bench_table}
