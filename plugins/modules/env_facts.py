#!/usr/bin/python
# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Environment fingerprint of a host."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: env_facts
short_description: Environment fingerprint of a generator or DUT host
version_added: "0.1.0"
description:
  - Reads the facts a reviewer asks about a packet-rate number from the host itself
    (procfs, sysfs, /etc, ethtool netlink, SIOCETHTOOL, IFLA_XDP) and returns them flat,
    with the keys of the result record v1 C(environment).
  - Host keys C(cpu_model), C(cpu_mhz) (mean of /proc/cpuinfo C(cpu MHz)), C(cpus_online),
    C(smt), C(numa_nodes), C(governor), C(tuned_profile), C(kernel), C(kernel_cmdline),
    C(kernel_config_sha256) (/proc/config.gz, else /boot/config-RELEASE), C(kernel_patches)
    (from O(kernel_patches_file)), C(netfilter_modules) (from /proc/modules).
  - Per interface (keyed by name) C(nic) (driver, version, firmware, bus, speed, mtu),
    C(ethtool) (coalesce, ring, channels, pause, features, private_flags as the device supports),
    C(irq_affinity) and C(xdp) (mode, prog_id, program, tag).
  - What the host cannot tell is omitted, never invented; reasons go to C(warnings).
  - Runs inside a network namespace through the C(xdplab.testbed.netns) connection, so
    interface facts are those of that namespace.
options:
  interfaces:
    description: Interfaces whose NIC, ethtool, IRQ and XDP state belong to the fingerprint.
    type: list
    elements: str
    default: []
  kernel_patches_file:
    description: JSON file where the kernel role records the applied patch series
      (a list of C({subject, patch_id}) or a dict with C(patches)).
    type: path
    default: /etc/xdplab/kernel-series.json
requirements:
  - pyroute2 (ethtool netlink and IFLA_XDP reads)
extends_documentation_fragment:
  - xdplab.testbed.attributes
attributes:
  check_mode:
    support: full
    details: Only reads; the same in check mode.
  diff_mode:
    support: none
author:
  - xdplab.testbed contributors (!UNKNOWN)"""

EXAMPLES = r"""
- name: Fingerprint the DUT and its test interface
  xdplab.testbed.env_facts:
    interfaces: [veth-dut0]
  register: dut_env

- name: Compare with the generator
  ansible.builtin.debug:
    msg: "{{ dut_env.environment.kernel }} on {{ dut_env.environment.cpu_model }}"
"""

RETURN = r"""
environment:
  description: The fingerprint, flat (host keys) with per-interface keys nested by interface name.
  returned: success
  type: dict
  sample:
    cpu_model: AMD EPYC
    cpu_mhz: 2596.142
    cpus_online: 2
    smt: notsupported
    numa_nodes: 1
    kernel: 6.18.44
    kernel_cmdline: console=ttyS0 quiet
    kernel_config_sha256: cd69f98a06748cbd55a2046a0436aaff9f52c5943c458029e8590e3618f2598e
    netfilter_modules: []
    nic: {veth0: {driver: veth, version: "1.0", mtu: 1500}}
    ethtool: {veth0: {channels: {rx: 1, tx: 1, max: {rx: 2, tx: 2}}, features: {rx-gro: false}}}
    xdp: {veth0: {mode: native, prog_id: 42, program: xdp_drop, tag: 57cd311f2e27366b}}
ansible_facts:
  description: The same fingerprint as C(xdplab_environment).
  returned: success
  type: dict
"""

import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible_collections.xdplab.testbed.plugins.module_utils.results import _environment as _envfacts

try:
    import pyroute2  # noqa: F401  # pylint: disable=unused-import

    HAS_PYROUTE2 = True
    PYROUTE2_ERR = None
except ImportError:  # pragma: no cover - depends on the host
    HAS_PYROUTE2 = False
    PYROUTE2_ERR = traceback.format_exc()


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "interfaces": {"type": "list", "elements": "str", "default": []},
            "kernel_patches_file": {"type": "path", "default": _envfacts.DEFAULT_PATCHES_FILE},
        },
        supports_check_mode=True,
    )
    if module.params["interfaces"] and not HAS_PYROUTE2:
        module.fail_json(msg=missing_required_lib("pyroute2"), exception=PYROUTE2_ERR)
    try:
        facts, warnings = _envfacts.gather(module.params["interfaces"],
                                           patches_file=module.params["kernel_patches_file"])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    except Exception as exc:
        module.fail_json(msg=f"env_facts: {exc}", exception=traceback.format_exc())
    for w in warnings:
        module.warn(w)
    module.exit_json(changed=False, environment=facts, ansible_facts={"xdplab_environment": facts})


if __name__ == "__main__":
    main()
