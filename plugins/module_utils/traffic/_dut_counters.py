# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""DUT-side packet counters read without spawning a process where possible.
Private to the xdplab.testbed collection.

A counter spec names where the DUT counts the packets of a scenario:
  {"type": "xdp", "interface": "veth0", "action": "drop"}   xdplab_stats of the attached XDP program
  {"type": "tc", "interface": "veth0", "action": "drop"}    xdplab_stats of the cls_bpf ingress program
  {"type": "nft", "family": "inet", "table": "xdplab", "counter": "drop"}   a named nftables counter
  {"type": "netdev", "interface": "veth0", "stat": "rx_packets"}           /sys/class/net statistics
  {"type": "ovs", "datapath": "xdplab-ovs"}   lookup hits of an Open vSwitch kernel datapath (ovs-dpctl show)
  {"type": "runs", "interface": "veth0", "hook": "xdp"}   run count of the program attached there (xdp or
                                                          tc ingress): any program, no counter map needed;
                                                          it moves only while kernel.bpf_stats_enabled is 1
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable

from ansible_collections.xdplab.testbed.plugins.module_utils.common import _validate

XDP_ACTIONS = ("aborted", "drop", "pass", "tx", "redirect")
COUNTER_TYPES = ("xdp", "tc", "nft", "netdev", "ovs", "runs")
RUN_HOOKS = ("xdp", "tc")
BPF_STATS = "/proc/sys/kernel/bpf_stats_enabled"
_STAT_RE = re.compile(r"^[a-z0-9_]{1,64}\Z")


class CounterError(ValueError):
    """A counter spec that cannot be read."""


def check_spec(spec: dict) -> dict:
    """Validate a counter spec; returns it with defaults filled in, raises CounterError naming the bad value."""
    if not isinstance(spec, dict):
        raise CounterError(f"counter must be a dict, got {spec!r}")
    kind = spec.get("type")
    if kind not in COUNTER_TYPES:
        raise CounterError(f"counter type must be one of {', '.join(COUNTER_TYPES)}, got {kind!r}")
    out = dict(spec)
    if kind in ("xdp", "tc", "netdev", "runs"):
        try:
            _validate.ifname(spec.get("interface"), "counter")
        except _validate.ValidationError as exc:
            raise CounterError(str(exc)) from None
    if kind in ("xdp", "tc"):
        action = out.setdefault("action", "all")
        if action != "all" and action not in XDP_ACTIONS:
            raise CounterError(f"counter action must be 'all' or one of {', '.join(XDP_ACTIONS)}, got {action!r}")
    if kind == "runs" and out.setdefault("hook", "xdp") not in RUN_HOOKS:
        raise CounterError(f"runs counter hook must be one of {', '.join(RUN_HOOKS)}, got {out['hook']!r}")
    if kind == "netdev":
        stat = out.setdefault("stat", "rx_packets")
        if not _STAT_RE.match(str(stat)):
            raise CounterError(f"counter stat must be a statistics file name like rx_packets, got {stat!r}")
    if kind == "ovs":
        try:
            _validate.ifname(out.setdefault("datapath", "xdplab-ovs"), "ovs counter datapath")
        except _validate.ValidationError as exc:
            raise CounterError(str(exc)) from None
    if kind == "nft":
        out.setdefault("family", "inet")
        try:
            _validate.nft_family(out["family"], "nft counter")
            for key in ("table", "counter"):
                _validate.nft_name(out.get(key), key, "nft counter")
        except _validate.ValidationError as exc:
            raise CounterError(str(exc)) from None
    return out


def describe(spec: dict) -> str:
    kind = spec["type"]
    if kind in ("xdp", "tc"):
        return f"{kind} {spec['action']} on {spec['interface']}"
    if kind == "netdev":
        return f"{spec['stat']} of {spec['interface']}"
    if kind == "runs":
        return f"runs of the {spec['hook']} program on {spec['interface']}"
    if kind == "ovs":
        return f"lookup hits of Open vSwitch datapath {spec['datapath']}"
    return f"nft counter {spec['family']} {spec['table']} {spec['counter']}"


def _sum_actions(stats: dict, action: str) -> int:
    if action == "all":
        return sum(int(v.get("packets", 0)) for v in stats.values())
    return int(stats.get(action, {}).get("packets", 0))


def netdev_stat(ifname: str, stat: str, root: str = "/sys/class/net") -> int:
    path = os.path.join(root, ifname, "statistics", stat)
    try:
        with open(path, encoding="ascii") as fh:
            return int(fh.read().strip())
    except FileNotFoundError as exc:
        raise CounterError(f"no statistics {stat!r} for interface {ifname!r} ({path})") from exc


def make_reader(spec: dict, run_command: Callable | None = None) -> Callable[[], int]:
    """A zero-argument function returning the counter's current packet count."""
    spec = check_spec(spec)
    kind = spec["type"]
    if kind == "netdev":
        netdev_stat(spec["interface"], spec["stat"])  # fail now, naming the interface
        return lambda: netdev_stat(spec["interface"], spec["stat"])
    if kind in ("xdp", "tc"):
        from ansible_collections.xdplab.testbed.plugins.module_utils.xdp import _bpf

        try:
            reader = _bpf.StatsReader(spec["interface"], hook=kind)
        except (LookupError, OSError) as exc:
            raise CounterError(f"cannot read {describe(spec)}: {exc}") from exc
        return lambda: _sum_actions(reader.read(), spec["action"])
    if kind == "runs":
        return _runs_reader(spec)
    if run_command is None:
        raise CounterError(f"{kind} counters need a command runner")
    if kind == "ovs":
        return _command_reader(spec, run_command, ["ovs-dpctl", "show", spec["datapath"]], _ovs_hits)
    argv = ["nft", "-j", "list", "counter", spec["family"], spec["table"], spec["counter"]]
    return _command_reader(spec, run_command, argv, _nft_packets)


def bpf_stats_enabled(path: str | None = None) -> bool:
    try:
        with open(path or BPF_STATS, encoding="ascii") as fh:
            return fh.read().strip() == "1"
    except OSError:
        return False


def _runs_reader(spec: dict) -> Callable[[], int]:
    from ansible_collections.xdplab.testbed.plugins.module_utils.xdp import _bpf

    if not bpf_stats_enabled():
        raise CounterError(f"cannot read {describe(spec)}: a program's run count moves only while "
                           f"kernel.bpf_stats_enabled is 1, and it is not (the bench role switches it on with "
                           f"bench_dut_cost)")
    try:
        reader = _bpf.ProgRuns(spec["interface"], hook=spec["hook"])
    except (LookupError, OSError) as exc:
        raise CounterError(f"cannot read {describe(spec)}: {exc}") from exc
    return lambda: reader.run_stats()[1]


def _nft_packets(spec: dict, out: str) -> int:
    for item in json.loads(out).get("nftables", []):
        if "counter" in item:
            return int(item["counter"]["packets"])
    raise CounterError(f"{describe(spec)}: no counter in nft output")


def _ovs_hits(spec: dict, out: str) -> int:
    from ansible_collections.xdplab.testbed.plugins.module_utils.xdp import _hooks

    try:
        return _hooks.ovs_show(out)["hit"]
    except _hooks.HookError as exc:
        raise CounterError(f"{describe(spec)}: {exc}") from None


def _command_reader(spec: dict, run_command: Callable, argv: list[str],
                    parse: Callable[[dict, str], int]) -> Callable[[], int]:
    """A reader running argv and parsing its output; read once now, so a bad counter fails at once."""
    def read() -> int:
        rc, out, err = run_command(argv)
        if rc != 0:
            raise CounterError(f"cannot read {describe(spec)}: {err.strip() or out.strip()} (rc={rc})")
        return parse(spec, out)

    read()
    return read


def parse_ethtool_stats(text: str) -> dict[str, int]:
    """`ethtool -S IF` text -> {name: value}; lines that are not `name: integer` are skipped."""
    stats: dict[str, int] = {}
    for line in text.splitlines():
        name, sep, value = line.strip().rpartition(":")
        if not sep or not name:
            continue
        try:
            stats[name.strip()] = int(value.strip())
        except ValueError:
            continue
    return stats


def counter_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """Per-name increase between two snapshots; names whose value did not change are left out."""
    return {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}


def read_proc_stat(path: str = "/proc/stat") -> dict[str, int]:
    """Aggregate CPU jiffies: {user, nice, system, idle, iowait, irq, softirq, steal}."""
    with open(path, encoding="ascii") as fh:
        fields = fh.readline().split()
    names = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
    return {n: int(v) for n, v in zip(names, fields[1:9], strict=False)}


def cpu_shares(before: dict[str, int], after: dict[str, int], cpus: int) -> dict[str, float]:
    """CPU use between two /proc/stat snapshots, in percent of one CPU (100 = one core busy).

    app = user + nice + system, softirq = softirq + irq, as in "APP CPU | Softirq CPU" tables.
    """
    d = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    total = sum(d.values())
    if total <= 0:
        return {"app_pct": 0.0, "softirq_pct": 0.0, "idle_pct": 100.0 * cpus}
    scale = 100.0 * cpus / total
    return {
        "app_pct": round((d.get("user", 0) + d.get("nice", 0) + d.get("system", 0)) * scale, 1),
        "softirq_pct": round((d.get("softirq", 0) + d.get("irq", 0)) * scale, 1),
        "idle_pct": round((d.get("idle", 0) + d.get("iowait", 0)) * scale, 1),
    }
