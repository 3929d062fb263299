# SPDX-License-Identifier: GPL-3.0-or-later
"""The state ledger (what the collection created or changed on a host, recorded before acting, with
what undoing needs), its kinds (_kinds: one row per kind, with how each is checked, undone and
verified; undoing a tuning snapshot or an XDP attachment takes the tuning and xdp packages' restore and
modes) and the run lock.

Imports from module_utils: common, tuning, xdp."""
