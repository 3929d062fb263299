#!/usr/bin/python
# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: pktgen
short_description: Drive the kernel packet generator (/proc/net/pktgen) and return per-device results
version_added: 0.1.0
description:
  - Configures the in-kernel packet generator the way the kernel's C(samples/pktgen/functions.sh) does
    (C(pgctrl reset); per thread C(rem_device_all) and C(add_device DEV) (C(DEV@N) with several threads);
    per device C(count), C(clone_skb), C(pkt_size), C(delay), C(burst), addresses, C(dst_mac), UDP port
    ranges, C(flows)/C(flowlen), C(queue_map), flags), checks the C(Result:) line after every command,
    starts it with C(pgctrl start) and returns the per-device results parsed from the device files.
  - V(state=run) runs to the end (O(count) packets per device, or O(duration) seconds then C(stop)).
    V(state=started) starts in the background and returns once pktgen lists every device as running
    (within O(timeout)); V(state=stopped) stops whatever
    runs, returns the results of the configured devices and resets pktgen.
  - A command the kernel refuses (for example C(burst 8) or C(clone_skb) on veth, which lacks
    IFF_TX_SKB_SHARING) fails the task with the command and the kernel's reason; pktgen is reset so
    nothing stays configured.
  - pktgen is global to the kernel, not per network namespace; C(pgctrl reset) removes every device of
    every thread. Run one pktgen user at a time per host.
author:
  - xdplab.testbed developers (!UNKNOWN)
options:
  state:
    description:
      - V(run) configure, run and wait; V(started) configure and start in the background;
        V(stopped) stop, read the results, reset.
    type: str
    choices: [run, started, stopped]
    default: run
  interface:
    description: Device to send on (must exist). Required unless O(state=stopped).
    type: str
  threads:
    description: pktgen kernel threads (CPU numbers, C(kpktgend_N)) to send from, one device each.
    type: list
    elements: int
    default: [0]
  count:
    description: Packets per device (and thread); V(0) is endless and needs O(duration).
    type: int
    default: 0
  duration:
    description: Seconds to run, then C(pgctrl stop). With O(count) the run ends at whichever comes first.
    type: float
  timeout:
    description:
      - Seconds a O(count) run may take before it is stopped and the task fails; with O(state=started),
        seconds to wait for pktgen to list the devices as running.
    type: float
    default: 300
  pkt_size:
    description: Frame size in bytes without the FCS.
    type: int
    default: 60
  burst:
    description: Packets handed to the driver per xmit (xmit_more); values over 1 need a driver with IFF_TX_SKB_SHARING.
    type: int
    default: 1
  clone_skb:
    description: Times each skb is sent again before a new one is built (V(0) builds every packet).
    type: int
    default: 0
  delay:
    description: Nanoseconds between packets.
    type: int
    default: 0
  dst:
    description: Destination IPv4 address (the lower end when O(dst_max) is set).
    type: str
  dst_max:
    description: Upper end of a destination address range.
    type: str
  src:
    description: Source IPv4 address (the lower end when O(src_max) is set).
    type: str
  src_max:
    description: Upper end of a source address range.
    type: str
  dst_mac:
    description: Destination MAC address.
    type: str
  udp_src_min:
    description: Lowest UDP source port.
    type: int
  udp_src_max:
    description: Highest UDP source port (default O(udp_src_min)).
    type: int
  udp_dst_min:
    description: Lowest UDP destination port.
    type: int
  udp_dst_max:
    description: Highest UDP destination port (default O(udp_dst_min)).
    type: int
  flows:
    description: Concurrent flows (pktgen C(flows)); V(0) leaves them off.
    type: int
    default: 0
  flowlen:
    description: Packets per flow before the next one (pktgen C(flowlen)).
    type: int
    default: 0
  queue_map_min:
    description: Lowest TX queue.
    type: int
  queue_map_max:
    description: Highest TX queue (default O(queue_map_min)).
    type: int
  queue_map_cpu:
    description: Send on the TX queue of the thread's CPU (C(flag QUEUE_MAP_CPU)).
    type: bool
    default: false
  flags:
    description: Further pktgen flags (C(UDPSRC_RND), C(NO_TIMESTAMP), C(FLOW_SEQ), ...; C(!FLAG) clears one).
    type: list
    elements: str
    default: []
  proc_dir:
    description: The pktgen control directory (a fake tree in tests).
    type: path
    default: /proc/net/pktgen
extends_documentation_fragment:
  - xdplab.testbed.attributes
  - xdplab.testbed.process_ledger
attributes:
  check_mode:
    support: full
    details: Checks that pktgen, the threads and the device exist and returns the commands it would write.
  diff_mode:
    support: none
notes:
  - The host kernel of the virtual test bed may have no pktgen; the kernel role builds a guest kernel
    with it, run under QEMU (M(xdplab.testbed.qemu_exec), C(playbooks/pktgen_burst.yml)).
"""

EXAMPLES = r"""
- name: 1M packets of 64 B, bursts of 32, each skb sent 64 times
  xdplab.testbed.pktgen:
    interface: dummy0
    count: 1000000
    pkt_size: 64
    burst: 32
    clone_skb: 64
    dst: 198.18.0.2
    dst_mac: "02:00:00:00:00:02"
  register: pg

- name: Two threads, 1024 flows over a UDP source port range, for 10 seconds
  xdplab.testbed.pktgen:
    interface: eth1
    threads: [0, 1]
    duration: 10
    dst: 198.18.0.2
    dst_mac: "{{ dut_mac }}"
    udp_src_min: 9
    udp_src_max: 1032
    flows: 1024
    flowlen: 8
    flags: [UDPSRC_RND]

- name: Start in the background, measure something else, then stop and read
  xdplab.testbed.pktgen:
    state: started
    interface: eth1
    dst: 198.18.0.2
    duration: 3600
- name: Stop it
  xdplab.testbed.pktgen:
    state: stopped
  register: pg
"""

RETURN = r"""
pps:
  description: Packets per second summed over the devices (they run in parallel).
  returned: when results were read (O(state=run), O(state=stopped))
  type: float
  sample: 2158546.0
packets:
  description: Packets sent, all devices.
  returned: when results were read
  type: int
  sample: 200000
errors:
  description: Transmit errors, all devices.
  returned: when results were read
  type: int
  sample: 0
seconds:
  description: Longest device run time in seconds.
  returned: when results were read
  type: float
  sample: 0.092654
devices:
  description: Per device the parsed result (device, thread, usec, packets, pkt_size, pps, mbps, bps, errors).
  returned: when results were read
  type: list
  elements: dict
commands:
  description: The commands written (or, in check mode, that would be), each as a file name, a colon and the command.
  returned: always
  type: list
  elements: str
  sample: ["kpktgend_0: rem_device_all", "kpktgend_0: add_device dummy0", "dummy0: count 1000000"]
cpu:
  description: Share of all CPUs' time during the run (system = the kpktgend threads, softirq, busy).
  returned: with O(state=run)
  type: dict
  sample: {"system_pct": 49.6, "softirq_pct": 0.4, "busy_pct": 51.0}
pid:
  description: Process blocked in C(pgctrl start) while pktgen runs in the background.
  returned: with O(state=started)
  type: int
raw:
  description: The device files the results were parsed from.
  returned: when results were read
  type: str
"""

import os
import traceback

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils.state import _ledger
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._pktgen_proc import (
    Pktgen,
    PktgenError,
    check_spec,
    commands,
    cpu_share,
    cpu_times,
    device_names,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning._plan_and_snapshots import current_netns

_SPEC_KEYS = ("interface", "threads", "count", "duration", "pkt_size", "burst", "clone_skb", "delay", "dst",
              "dst_max", "src", "src_max", "dst_mac", "udp_src_min", "udp_src_max", "udp_dst_min",
              "udp_dst_max", "flows", "flowlen", "queue_map_min", "queue_map_max", "queue_map_cpu", "flags")


def _stat() -> dict[str, int]:
    with open("/proc/stat") as fh:
        return cpu_times(fh.read())


def forget_started(ledger_dir: str | None, proc_dir: str) -> None:
    """Drop the ledger entries of pktgen starters in this namespace: pktgen is stopped and reset."""
    if not ledger_dir or not os.path.isdir(ledger_dir):
        return
    here = current_netns()
    for path, entry in _ledger.entries(ledger_dir):
        if entry["kind"] == "process" and entry.get("pktgen") == proc_dir and entry.get("netns") == here:
            os.unlink(path)


def run(module: AnsibleModule) -> dict:
    p = module.params
    # bad parameters are named before the kernel's pktgen is looked at
    spec = check_spec({k: p[k] for k in _SPEC_KEYS}) if p["state"] != "stopped" else None
    pg = Pktgen(p["proc_dir"])
    pg.available()
    if p["state"] == "stopped":
        devices = pg.configured()
        if module.check_mode:
            return {"changed": bool(devices), "commands": ["pgctrl: stop", "pgctrl: reset"]}
        if not devices:
            forget_started(p["ledger_dir"], p["proc_dir"])
            return {"changed": False, "commands": [], "msg": "pktgen has no device configured"}
        pg.pgset("pgctrl", "stop")
        try:
            out = pg.results(devices)
        finally:
            pg.reset()
            forget_started(p["ledger_dir"], p["proc_dir"])
        out.update(changed=True, commands=pg.log)
        return out

    if module.check_mode:
        missing = [t for t in spec["threads"] if t not in pg.threads()]
        if missing:
            raise PktgenError(f"pktgen thread(s) {missing} do not exist (kpktgend_N per online CPU: {pg.threads()})")
        if p["proc_dir"] == "/proc/net/pktgen" and not os.path.exists(f"/sys/class/net/{spec['interface']}"):
            raise PktgenError(f"pktgen interface {spec['interface']!r} does not exist")
        return {"changed": True, "commands": [f"{f}: {c}" for f, c in [("pgctrl", "reset"), *commands(spec)]]}
    # state=run: this process is recorded in the ledger before pktgen is configured, so a run killed
    # with it (its playbook SIGKILLed, its ssh session gone) is stopped and reset by teardown; the entry
    # goes once pktgen is reset.
    own_entry = None
    if p["state"] == "run" and p["ledger_dir"]:
        own_entry = _ledger.record_process(p["ledger_dir"], os.getpid(), current_netns(), p["run_id"],
                                           tool="pktgen", pktgen=p["proc_dir"])
    try:
        pg.configure(spec)
        if p["state"] == "started":
            def record(pid: int) -> None:  # the ledger entry, before the starter writes 'start'
                if p["ledger_dir"]:
                    _ledger.record_process(p["ledger_dir"], pid, current_netns(), p["run_id"], tool="pktgen",
                                           pktgen=p["proc_dir"])
            pid = pg.start_background(record, [dev for _dummy, dev in device_names(spec)], p["timeout"])
            return {"changed": True, "pid": pid, "commands": pg.log}
        before = _stat()
        pg.start_blocking(spec["duration"], p["timeout"])
        cpu = cpu_share(before, _stat())
        out = pg.results([dev for _dummy, dev in device_names(spec)])
    except BaseException:
        # nothing stays configured after a refused command or a failed run
        try:
            pg.reset()
        except PktgenError:
            pass
        _forget(own_entry)
        raise
    pg.reset()
    _forget(own_entry)
    out.update(changed=True, commands=pg.log, cpu=cpu)
    return out


def _forget(entry: str | None) -> None:
    if entry and os.path.lexists(entry):
        os.unlink(entry)


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["run", "started", "stopped"], default="run"),
            interface=dict(type="str"),
            threads=dict(type="list", elements="int", default=[0]),
            count=dict(type="int", default=0),
            duration=dict(type="float"),
            timeout=dict(type="float", default=300),
            pkt_size=dict(type="int", default=60),
            burst=dict(type="int", default=1),
            clone_skb=dict(type="int", default=0),
            delay=dict(type="int", default=0),
            dst=dict(type="str"),
            dst_max=dict(type="str"),
            src=dict(type="str"),
            src_max=dict(type="str"),
            dst_mac=dict(type="str"),
            udp_src_min=dict(type="int"),
            udp_src_max=dict(type="int"),
            udp_dst_min=dict(type="int"),
            udp_dst_max=dict(type="int"),
            flows=dict(type="int", default=0),
            flowlen=dict(type="int", default=0),
            queue_map_min=dict(type="int"),
            queue_map_max=dict(type="int"),
            queue_map_cpu=dict(type="bool", default=False),
            flags=dict(type="list", elements="str", default=[]),
            proc_dir=dict(type="path", default="/proc/net/pktgen"),
            ledger_dir=dict(type="path", default=_ledger.DEFAULT_DIR),
            run_id=dict(type="str"),
        ),
        required_if=[("state", "run", ("interface",)), ("state", "started", ("interface",))],
        required_by={"dst_max": "dst", "src_max": "src", "udp_src_max": "udp_src_min",
                     "udp_dst_max": "udp_dst_min", "queue_map_max": "queue_map_min"},
        supports_check_mode=True,
    )
    try:
        module.exit_json(**run(module))
    except PktgenError as exc:
        module.fail_json(msg=str(exc), commands=getattr(exc, "commands", []))
    except Exception as exc:  # noqa: BLE001 - one top-level handler, reported with traceback
        module.fail_json(msg=f"pktgen: {exc}", exception=traceback.format_exc())


if __name__ == "__main__":
    main()
