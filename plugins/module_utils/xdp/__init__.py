# SPDX-License-Identifier: GPL-3.0-or-later
"""XDP and BPF: bpf(2) through ctypes (_bpf), the program objects, sections and map entries the
xdp_prog module attaches (_program_objects), and the tc and nftables hooks compared with XDP (_hooks).

Imports from module_utils: common."""
