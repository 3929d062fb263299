# Copyright: (c) 2026, xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

# ruff: noqa: E402  (Ansible plugin layout: DOCUMENTATION before the imports)

DOCUMENTATION = r"""
name: netns
short_description: Run tasks inside a network namespace on the controller
description:
  - Every host of the virtual test bed is a network namespace on the machine that runs Ansible.
    This connection runs each command under C(ip netns exec NAME), so the module sees the namespace's
    interfaces, routes, sysctls and its own C(/sys) (C(ip netns exec) remounts sysfs for the namespace).
  - Files are on the shared filesystem, so putting and fetching files are local copies, exactly as with
    the P(ansible.builtin.local#connection) connection, which this plugin extends (pipelining included).
  - The namespace must already exist (the P(xdplab.testbed.netns_topology#module) module or the
    C(xdplab.testbed.testbed) role create them); otherwise the host is reported unreachable with a
    message naming the namespace.
  - Needs root (or CAP_SYS_ADMIN) on the controller, like C(ip netns exec) itself.
author:
  - xdplab.testbed contributors (!UNKNOWN)
version_added: 0.1.0
options:
  netns:
    description:
      - Name of the network namespace (as listed by C(ip netns list), a file under C(/run/netns)).
      - When unset, the host's address is used (C(ansible_host), which defaults to the inventory hostname).
    type: str
    vars:
      - name: xdplab_netns
      - name: ansible_netns
  ip_executable:
    description:
      - The C(ip) binary of iproute2 used to enter the namespace.
      - When unset, C(ip) is looked up in C(PATH), then C(/usr/sbin) and C(/sbin).
    type: str
    vars:
      - name: xdplab_netns_ip_executable
extends_documentation_fragment:
  - connection_pipelining
notes:
  - The namespace name follows the same rules as the O(xdplab.testbed.netns_topology#module:namespaces) option of
    the module (at most 32 bytes, no C(/), no C(..), no leading C(-)).
"""

EXAMPLES = r"""
# inventory (YAML): each host is a namespace named xdplab-<host>
# all:
#   children:
#     xdplab_virtual:
#       vars:
#         ansible_connection: xdplab.testbed.netns
#         xdplab_netns: "xdplab-{{ inventory_hostname }}"
#         ansible_python_interpreter: "{{ ansible_playbook_python }}"
#       hosts:
#         gen:
#         dut:

# ad hoc:  ansible -i 'ns1,' all -c xdplab.testbed.netns -m ansible.builtin.command -a 'ip -j link'
"""

import os
import shlex
import shutil

import ansible.constants as C
from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.connection.local import Connection as LocalConnection
from ansible.utils.display import Display
from ansible_collections.xdplab.testbed.plugins.module_utils.testbed._topology import TopologyError, check_netns_name

display = Display()

NETNS_RUN_DIR = "/run/netns"


class Connection(LocalConnection):
    """Local connection whose commands run inside ``ip netns exec NAME``."""

    transport = "xdplab.testbed.netns"
    has_pipelining = True

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._netns: str | None = None
        self._ip: str | None = None

    def _resolve(self) -> tuple[str, str]:
        name = self.get_option("netns") or self._play_context.remote_addr
        try:
            check_netns_name(name, "xdplab.testbed.netns")  # the same rule as the netns_topology module
        except TopologyError as exc:
            raise AnsibleConnectionFailure(str(exc)) from None
        path = os.path.join(NETNS_RUN_DIR, name)
        # A namespace is a bind mount of an nsfs inode; a leftover plain file is not one.
        if not os.path.ismount(path):
            raise AnsibleConnectionFailure(
                f"xdplab.testbed.netns: network namespace {name!r} does not exist ({path} is not a namespace mount);"
                " create it first (xdplab.testbed.testbed role or xdplab.testbed.netns_topology module)"
            )
        ip = self.get_option("ip_executable") or shutil.which("ip")
        if not ip:
            ip = next((p for p in ("/usr/sbin/ip", "/sbin/ip") if os.access(p, os.X_OK)), None)
        if not ip:
            raise AnsibleConnectionFailure("xdplab.testbed.netns: iproute2 'ip' not found (install iproute2)")
        return name, ip

    def _connect(self) -> Connection:
        if not self._connected:
            self._netns, self._ip = self._resolve()
            display.vvv(f"ESTABLISH NETNS CONNECTION INTO {self._netns}", host=self._play_context.remote_addr)
        return super()._connect()

    def exec_command(self, cmd, in_data: bytes | None = None, sudoable: bool = True) -> tuple[int, bytes, bytes]:
        """Run ``cmd`` (a shell command line, as Ansible builds it) inside the namespace."""
        self._connect()
        shell = C.DEFAULT_EXECUTABLE.split()[0] if C.DEFAULT_EXECUTABLE else "/bin/sh"
        if not isinstance(cmd, (str, bytes)):
            cmd = shlex.join(str(c) for c in cmd)
        elif isinstance(cmd, bytes):
            cmd = cmd.decode("utf-8", errors="surrogateescape")
        wrapped = shlex.join([self._ip, "netns", "exec", self._netns, shell, "-c", cmd])
        return super().exec_command(wrapped, in_data=in_data, sudoable=sudoable)
