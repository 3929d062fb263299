#!/usr/bin/python
# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: napi_threads
short_description: Poll a port's NAPI in kthreads pinned to one CPU, recorded in the ledger first
version_added: 0.2.0
description:
  - With O(state=present) sets C(/sys/class/net/<interface>/threaded) to 1, so the kernel polls the port's
    NAPI in C(napi/<interface>-<id>) kthreads, and pins those kthreads to O(cpu) (by default the highest
    CPU this module may run on that is not in O(avoid_cpus), the generator's).
  - On veth this takes the DUT's receive path off the sender's CPU, so the DUT's CPU time is its own.
  - Before it changes anything it records in the state ledger (a C(napi) entry) the C(threaded) value it
    found and the CPU affinity of every kthread it pins, so that O(state=absent) and
    C(xdplab.testbed.ledger state=cleaned) put them back.
  - The kthreads exist only while the port has NAPI instances (on veth, while GRO is on or an XDP program is
    attached).
author:
  - xdplab.testbed contributors (!UNKNOWN)
extends_documentation_fragment:
  - xdplab.testbed.object_ledger
  - xdplab.testbed.attributes
options:
  interface:
    description: The port, in the namespace the module runs in.
    type: str
    required: true
  cpu:
    description: The CPU the kthreads are pinned to.
    type: int
  avoid_cpus:
    description: Without O(cpu), CPUs not to pin to (the generator's).
    type: list
    elements: int
    default: []
  state:
    description: V(present) sets threaded NAPI and pins; V(absent) puts back what the ledger says was found.
    type: str
    choices: [present, absent]
    default: present
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
"""

EXAMPLES = r"""
- name: Poll the DUT port in a kthread on a CPU the generator (CPU 0) does not use
  xdplab.testbed.napi_threads:
    interface: veth0
    avoid_cpus: [0]
"""

RETURN = r"""
threads:
  description: The port's NAPI kthreads after the call, with the CPUs each may run on.
  returned: always
  type: list
  elements: dict
  sample: [{"tid": 4242, "name": "napi/veth0-8193", "cpus": [1]}]
found:
  description: The C(threaded) value found before the call.
  returned: always
  type: str
  sample: "0"
cpu:
  description: The CPU the kthreads were pinned to (O(state=present)).
  returned: when state is present
  type: int
"""

import os
import time
import traceback

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _validate
from ansible_collections.xdplab.testbed.plugins.module_utils.state import _ledger
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning._napi_threads import (
    NapiError,
    napi_threads,
    pick_cpu,
    read_threaded,
    restore_affinity,
    write_threaded,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning._plan_and_snapshots import current_netns_name

# Seconds to wait for the kernel to start the kthreads after threaded is set.
START_WAIT = 2.0


def describe(threads: dict[int, str]) -> list[dict]:
    out = []
    for tid, name in sorted(threads.items()):
        try:
            cpus = sorted(os.sched_getaffinity(tid))
        except OSError:
            continue  # gone meanwhile
        out.append({"tid": tid, "name": name, "cpus": cpus})
    return out


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            interface=dict(type="str", required=True),
            cpu=dict(type="int"),
            avoid_cpus=dict(type="list", elements="int", default=[]),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            ledger_dir=dict(type="path", default=_ledger.DEFAULT_DIR),
            run_id=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    ifname = p["interface"]
    changed, result = False, {}
    try:
        _validate.ifname(ifname, "interface")
        here = current_netns_name()
        entry = _ledger.check_entry("napi", {"interface": ifname}, None if here == "host" else here)
        recorded = _ledger.read(p["ledger_dir"], entry)
        found = read_threaded(ifname)
        if p["state"] == "present":
            allowed = os.sched_getaffinity(0)
            cpu = p["cpu"] if p["cpu"] is not None else pick_cpu(allowed, p["avoid_cpus"])
            if cpu not in allowed:
                raise NapiError(f"cpu {cpu} is not one this host lets the module use ({sorted(allowed)})")
            threads = napi_threads(ifname) if found == "1" else {}
            changed = found != "1" or any(t["cpus"] != [cpu] for t in describe(threads))
            if changed and not module.check_mode:
                # before acting; an entry of an earlier task of the run keeps what that one found
                if recorded is None:
                    _ledger.record(p["ledger_dir"], entry, p["run_id"], found=found,
                                   affinity={str(t["tid"]): t["cpus"] for t in describe(threads)})
                before = set(napi_threads(ifname))
                if found != "1":
                    write_threaded(ifname, "1")
                    deadline = time.monotonic() + START_WAIT
                    threads = {}
                    while not threads and time.monotonic() < deadline:
                        time.sleep(0.05)
                        threads = {t: n for t, n in napi_threads(ifname).items() if t not in before}
                    if not threads:
                        raise NapiError(f"{ifname}: threaded NAPI set, but no napi/{ifname}-* kthread started "
                                        f"within {START_WAIT} s (the port has no NAPI instance: on veth, GRO off "
                                        "and no XDP program attached)")
                for tid in threads:
                    os.sched_setaffinity(tid, {cpu})
            result = {"cpu": cpu, "threads": describe(threads)}
        else:
            result = {"threads": describe(napi_threads(ifname) if found == "1" else {})}
            if recorded is not None:
                changed = True
                if not module.check_mode:
                    restore(ifname, recorded)
                    _ledger.forget(p["ledger_dir"], entry)
    except (NapiError, _validate.ValidationError, _ledger.LedgerError) as exc:
        module.fail_json(msg=str(exc), interface=ifname)
    except Exception as exc:  # noqa: BLE001 - one top-level handler, reported with traceback
        module.fail_json(msg=f"threaded NAPI on {ifname}: {exc}", exception=traceback.format_exc())
    module.exit_json(changed=changed, found=found, **result)


def restore(ifname: str, recorded: dict) -> None:
    """Put back the affinity of the kthreads found (still named as then), then the threaded value."""
    restore_affinity(ifname, recorded.get("affinity") or {})
    if read_threaded(ifname) != recorded["found"]:
        write_threaded(ifname, recorded["found"])


if __name__ == "__main__":
    main()
