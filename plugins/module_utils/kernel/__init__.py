"""Kernels under test: patch series, Kconfig checks and build keys (_build_logic), and QEMU guests
that boot them (_qemu_guest). Imports nothing else of module_utils except state, for QEMU guests'
ledger entries."""
