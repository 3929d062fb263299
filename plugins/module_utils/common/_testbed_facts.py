# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.
"""The facts a run spells in many files, each defined here once.

Python reads these names. YAML cannot import them: the role defaults and argument specs that must
carry a literal (``ansible-doc -t role`` shows it) and playbooks/vars/run.yml, which the run
playbooks read, hold copies that tests/unit/test_fact_drift.py keeps equal to this table; any other
copy in a role default, argument spec, role vars file or playbook fails that test.
"""

from __future__ import annotations

# The embedded test bed: the generator's and the DUT's ports facing each other (veth pair gen-dut),
# the sink's port facing the DUT, and the test addresses (198.18.0.0/15, the RFC 2544 benchmark range).
GEN_INTERFACE = "veth0"
DUT_INTERFACE = "veth0"
SINK_INTERFACE = "veth0"
GEN_ADDRESS = "198.18.0.1"
DUT_ADDRESS = "198.18.0.2"

# Results on the controller: <root>/<run id>/ (a Jinja expression: the directory ansible-playbook ran in).
RESULTS_ROOT = "{{ lookup('ansible.builtin.env', 'PWD') }}/results"
# The bench and scenarios roles' own default when they run outside a run playbook (which hands them
# the run's root): beside the playbook.
ROLE_RESULTS_ROOT = "{{ playbook_dir }}/results"

# Artifact directories on every test host: built tools, compiled XDP objects, the state ledger and the
# tuning snapshots.
BIN_DIR = "/var/lib/xdplab/bin"
XDP_DIR = "/var/lib/xdplab/xdp"
LEDGER_DIR = "/var/lib/xdplab/ledger"
TUNING_DIR = "/var/lib/xdplab/tuning"

# Frame sizes count the Ethernet header and payload, not the 4-byte FCS.
ETH_IP_UDP_LEN = 14 + 20 + 8
DEFAULT_PKT_SIZE = 64
MIN_PKT_SIZE = 60
JUMBO_MAX_PKT_SIZE = 9000 + 14                  # MTU 9000 + Ethernet header
SOCKET_MAX_PKT_SIZE = 65507 + ETH_IP_UDP_LEN    # the largest UDP datagram as a frame
XDPGEN_MAX_PKT_SIZE = 3408   # BPF_PROG_RUN live frames: one page minus page header, headroom, tailroom
