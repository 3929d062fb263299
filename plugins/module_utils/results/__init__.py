# SPDX-License-Identifier: GPL-3.0-or-later
"""Results: the record v1 schema and files, statistics, comparisons, reports, sweeps, the A/B loop's
boot order, in-guest plan and analysis by boot, the end-of-run summary and the environment
fingerprint. Never imports state; reads NICs through tuning.

Imports from module_utils: common, traffic, tuning, xdp."""
