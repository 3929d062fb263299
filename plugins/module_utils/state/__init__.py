# SPDX-License-Identifier: GPL-3.0-or-later
"""The state ledger (what the collection created or changed on a host, recorded before acting, with
what undoing needs) and the run lock.

Imports from module_utils: common."""
