#!/usr/bin/python
# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: bench_server
short_description: Start or stop the DUT-side server or sink of a benchmark point
version_added: 0.1.0
description:
  - With O(state=started), starts a receiver in the background on the target host (the DUT) and
    returns once it is ready. Servers are C(xsksink) (AF_XDP RX sink of files/xsk), C(udpsink) (UDP socket
    receiver), C(sockperf sr) or C(iperf3 --server). Its output goes to a log file; a server that
    exits while starting fails the task with its own message.
  - With O(state=stopped), stops the process started before (identified by O(pid) and its start time,
    so a recycled pid is never signalled), returns its output, its CPU use and, for the sinks, the
    packets it received per burst of traffic. A server that died during the run fails the task with
    its output; the log is removed in every case.
  - Normally driven by the M(xdplab.testbed.bench_run) action through its
    O(xdplab.testbed.bench_run#module:server) option.
author:
  - xdplab.testbed developers (!UNKNOWN)
options:
  state:
    description: C(started) starts the server; C(stopped) stops the one named by O(pid) and O(log).
    type: str
    choices: [started, stopped]
    required: true
  tool:
    description: The server. Required with O(state=started).
    type: str
    choices: [xsksink, udpsink, sockperf, iperf3]
  params:
    description:
      - Server parameters. C(xsksink) takes interface, queue, xsk_mode (auto, copy, zerocopy), xdp_mode
        (auto, native, generic), busy_poll, gap, batch; C(udpsink) dport, address, busy_poll, gap, batch,
        rcvbuf; C(sockperf) and C(iperf3) address, dport.
    type: dict
    default: {}
  binary:
    description: Path of the server binary; default the tool's name on PATH.
    type: path
  ready_timeout:
    description: Seconds to wait for the server to say it is ready (sinks) or to stay up (sockperf, iperf3).
    type: float
    default: 5
  pid:
    description: Process id returned by O(state=started). Required with O(state=stopped).
    type: int
  log:
    description: Log file returned by O(state=started). Required with O(state=stopped).
    type: path
  stop_timeout:
    description: Seconds to wait after SIGINT before SIGKILL.
    type: float
    default: 5
extends_documentation_fragment:
  - xdplab.testbed.attributes
  - xdplab.testbed.process_ledger
attributes:
  check_mode:
    support: none
    details: Starting a traffic receiver is the whole point.
  diff_mode:
    support: none
"""

EXAMPLES = r"""
- name: AF_XDP sink on the DUT
  xdplab.testbed.bench_server:
    state: started
    tool: xsksink
    binary: /var/lib/xdplab/bin/xsksink
    params: {interface: veth0, xsk_mode: copy}
  register: sink

- name: Stop it and read what it received
  xdplab.testbed.bench_server:
    state: stopped
    pid: "{{ sink.pid }}"
    log: "{{ sink.log }}"
  register: received
"""

RETURN = r"""
pid:
  description: Process id of the server.
  returned: always
  type: int
log:
  description: Log file of the server (removed by O(state=stopped)).
  returned: state=started
  type: str
argv:
  description: The command line started.
  returned: state=started
  type: list
  elements: str
output:
  description: Everything the server printed.
  returned: state=stopped, or when it failed to start
  type: str
sink:
  description:
    - For C(xsksink)/C(udpsink), the packets received per burst of traffic (C(bursts) with C(packets),
      C(bits), C(seconds), C(pps)), the total, and the sink's information lines (C(info)).
  returned: state=stopped, sinks only
  type: dict
cpu:
  description:
    - C(process_seconds) (user + system CPU time of the server), C(wall_seconds) (its lifetime),
      C(app_pct) (its CPU time over the seconds it was receiving bursts, percent of one CPU; over its
      lifetime when no bursts are known) and the host's C(softirq_pct) over its lifetime.
  returned: state=stopped
  type: dict
  sample: {"process_seconds": 1.9, "wall_seconds": 9.5, "app_pct": 97.0, "softirq_pct": 88.1}
"""

import json
import os
import signal
import subprocess
import time
import traceback

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _command
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _process_identity as _proc
from ansible_collections.xdplab.testbed.plugins.module_utils.state import _ledger
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._client_server_argv import (
    SERVER_TOOLS,
    parse_sink,
    server_argv,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._dut_counters import cpu_shares, read_proc_stat
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._xdpgen_trafgen_argv import GeneratorParamError
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning._plan_and_snapshots import current_netns

READY = {"xsksink": " ready", "udpsink": " ready"}
LOG_DIR = "/run/xdplab"


def proc_times(pid: int) -> tuple[int, float] | None:
    """(start time in clock ticks since boot, user+system CPU seconds) of a live pid, else None."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
    if fields[0] == "Z":
        return None
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[19]), (int(fields[11]) + int(fields[12])) / tick


def start(module: AnsibleModule) -> None:
    p = module.params
    argv = server_argv({"tool": p["tool"], "params": p["params"]})
    binary = p["binary"] or module.get_bin_path(argv[0])
    if not binary or not os.access(binary, os.X_OK):
        module.fail_json(msg=f"server {argv[0]!r} not found (binary={p['binary']!r})")
    argv = [binary, *argv[1:]]
    os.makedirs(LOG_DIR, mode=0o755, exist_ok=True)
    log = os.path.join(LOG_DIR, f"bench-server-{p['tool']}-{os.getpid()}-{time.time_ns()}.log")
    out_fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    entry_path: list[str] = []

    def record(pid: int) -> None:  # the ledger entry, before the server runs
        if p["ledger_dir"]:
            entry_path.append(_ledger.record_process(p["ledger_dir"], pid, current_netns(), p["run_id"],
                                                     tool=p["tool"], log=log))

    def forget() -> None:
        for path in entry_path:
            if os.path.exists(path):
                os.unlink(path)

    try:
        with os.fdopen(out_fd, "wb") as out, open(os.devnull, "rb") as devnull:
            proc = _proc.spawn_recorded(argv, record, stdin=devnull, stdout=out, stderr=subprocess.STDOUT,
                                        start_new_session=True, env=_command.c_env())
    except _ledger.LedgerError as exc:
        cleanup(log)
        module.fail_json(msg=f"{p['tool']} not started: {exc}")
    ident = _proc.identity(proc.pid)
    state = {"proc_stat": read_proc_stat(), "wall": time.time(), "identity": ident}
    fd = os.open(log + ".json", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(state, fh)
    marker = READY.get(p["tool"])
    deadline = time.monotonic() + p["ready_timeout"]
    while True:
        time.sleep(0.05)
        rc = proc.poll()
        with open(log, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        if rc is not None:
            cleanup(log)
            forget()
            tail = " / ".join(text.strip().splitlines()[-5:])
            module.fail_json(msg=f"{p['tool']} exited while starting (rc={rc}): {tail}", rc=rc, output=text,
                             argv=argv)
        if marker and marker in text:
            break
        if time.monotonic() >= deadline:
            if marker:
                proc.kill()
                proc.wait()
                cleanup(log)
                forget()
                module.fail_json(msg=f"{p['tool']} did not get ready within {p['ready_timeout']} s", output=text,
                                 argv=argv)
            break
    module.exit_json(changed=True, pid=proc.pid, log=log, argv=argv, starttime=proc_times(proc.pid)[0])


def cleanup(log: str) -> None:
    for path in (log, log + ".json"):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def stop(module: AnsibleModule) -> None:
    p = module.params
    pid, log = p["pid"], p["log"]
    _proc.check_pid(pid)
    if os.path.dirname(os.path.normpath(log)) != LOG_DIR or not os.path.basename(log).startswith("bench-server-"):
        module.fail_json(msg=f"log {log!r} is not a bench_server log")
    try:
        fd = os.open(log + ".json", os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, encoding="utf-8") as fh:
            state = json.load(fh)
    except FileNotFoundError:
        module.fail_json(msg=f"no server state next to {log!r}: it was never started or already stopped")
    ident = state.get("identity")
    if not isinstance(ident, dict) or ident.get("pid") != pid:
        module.fail_json(msg=f"pid {pid} is not the server that {log!r} names (it names "
                         f"{(ident or {}).get('pid')!r}): nothing signalled")
    _proc.check_identity(ident, "bench server")
    tool = os.path.basename(log).split("-")[2]
    times = proc_times(pid) if _proc.same(ident) else None
    died = times is None
    cpu_seconds = times[1] if times else None
    if not died:
        # SIGINT (the servers print their totals on it), SIGKILL after stop_timeout; each signal only
        # after the pid's start time and boot id are checked again.
        _proc.stop(ident, signal.SIGINT, timeout=p["stop_timeout"])
    fd = os.open(log, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    wall = time.time() - state["wall"]
    cpu = cpu_shares(state["proc_stat"], read_proc_stat(), os.cpu_count() or 1)
    cleanup(log)
    if p["ledger_dir"]:
        _ledger.forget(p["ledger_dir"], _ledger.check_entry("process", ident, current_netns()))
    if died:
        tail = " / ".join(text.strip().splitlines()[-5:])
        module.fail_json(msg=f"{tool} (pid {pid}) died during the run: {tail or 'no output'}", output=text, pid=pid)
    result = {"changed": True, "pid": pid, "output": text,
              "cpu": {"process_seconds": round(cpu_seconds, 3), "wall_seconds": round(wall, 3),
                      "softirq_pct": cpu["softirq_pct"], "host_app_pct": cpu["app_pct"]}}
    busy = wall
    if tool in READY:
        try:
            result["sink"] = parse_sink(text)
        except ValueError as exc:
            module.fail_json(msg=f"{tool}: {exc}", output=text, pid=pid)
        busy = sum(b["seconds"] for b in result["sink"]["bursts"]) or wall
    result["cpu"]["app_pct"] = round(100.0 * cpu_seconds / busy, 1) if busy > 0 else 0.0
    module.exit_json(**result)


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["started", "stopped"], required=True),
            tool=dict(type="str", choices=list(SERVER_TOOLS)),
            params=dict(type="dict", default={}),
            binary=dict(type="path"),
            ready_timeout=dict(type="float", default=5.0),
            pid=dict(type="int"),
            log=dict(type="path"),
            stop_timeout=dict(type="float", default=5.0),
            ledger_dir=dict(type="path", default=_ledger.DEFAULT_DIR),
            run_id=dict(type="str"),
        ),
        required_if=[("state", "started", ("tool",)), ("state", "stopped", ("pid", "log"))],
        supports_check_mode=False,
    )
    try:
        if module.params["state"] == "started":
            start(module)
        else:
            stop(module)
    except GeneratorParamError as exc:
        module.fail_json(msg=str(exc), params=module.params["params"])
    except _proc.ProcessIdentityError as exc:
        module.fail_json(msg=f"bench_server: {exc}")
    except Exception as exc:  # noqa: BLE001 - one top-level handler, reported with traceback
        module.fail_json(msg=f"bench_server failed: {exc}", exception=traceback.format_exc())


if __name__ == "__main__":
    main()
