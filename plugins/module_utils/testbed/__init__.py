# SPDX-License-Identifier: GPL-3.0-or-later
"""The virtual test bed: topology specs of namespaces, veth links, addresses and sysctls, planned
against live netlink state. Imports nothing else of module_utils."""
