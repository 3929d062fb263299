# SPDX-License-Identifier: GPL-3.0-or-later
"""Kernels under test: patch series, Kconfig checks and build keys (_build_logic), and QEMU guests
that boot them (_qemu_guest; its caller records the guest in the ledger).

Imports from module_utils: common."""
