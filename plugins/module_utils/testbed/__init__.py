# SPDX-License-Identifier: GPL-3.0-or-later
"""Test beds: the virtual one's topology specs of namespaces, veth links, addresses and sysctls,
planned against live netlink state (_topology), neighbour entry states (_neighbours), and the lab in a
box's QEMU guests with emulated NICs (_vmlab_guests).

Imports from module_utils: common."""
