# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
name: bisect_report
short_description: The report of a performance bisection (text, Markdown, figures)
version_added: 0.2.0
description:
  - The culprit's subject and patch-id, its Δ ns/packet with interval, each step (prefix, boots, Δ, decision),
    the cost, the method and the error it controls; text and Markdown of at most 100 columns (docs/bisect.md).
options:
  _input:
    description: The bisection's state C({series, scenario, threshold, threshold_source, alpha, looks, steps,
      result, cost, run_id}).
    type: dict
    required: true
author: xdplab.testbed developers
"""

EXAMPLES = r"""
- name: Render
  ansible.builtin.set_fact:
    __report: "{{ state | xdplab.testbed.bisect_report }}"
"""

RETURN = r"""
_value:
  description: C({text, markdown, summary}), summary the figures for the YAML file.
  type: dict
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.module_utils.results._bisect import BisectError
from ansible_collections.xdplab.testbed.plugins.module_utils.results._bisect_report import (
    render_markdown,
    render_text,
    summary,
)


def bisect_report(state: dict) -> dict:
    try:
        state = dict(state)
        return {"text": render_text(state), "markdown": render_markdown(state), "summary": summary(state)}
    except (BisectError, KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"bisect_report: {exc!s}") from exc


class FilterModule:
    def filters(self):
        return {"bisect_report": bisect_report}
