# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.
#
# The environment fingerprint of a host (docs/architecture.md "Result record v1"): read from
# procfs/sysfs/etc and, for interfaces, ethtool netlink, SIOCETHTOOL drvinfo and
# IFLA_XDP. Every value is read from the host; what the host cannot tell is
# omitted, never invented. File reads go through ``root`` so unit tests can
# point them at a captured tree.
"""Environment fingerprint (env_facts) and fingerprint diffs."""

from __future__ import annotations

import array
import errno
import fcntl
import gzip
import hashlib
import json
import os
import socket
import struct
from collections.abc import Callable
from typing import Any

from ansible_collections.xdplab.testbed.plugins.module_utils.common import _validate

__all__ = [
    "SystemReader",
    "gather",
    "host_facts",
    "interface_facts",
    "fingerprint_diff",
    "flatten",
    "netfilter_modules",
    "drvinfo",
    "DEFAULT_PATCHES_FILE",
]

# The kernel role records the applied series here (installed kernel).
DEFAULT_PATCHES_FILE = "/etc/xdplab/kernel-series.json"

_NF_PREFIXES = ("nf_", "nft_", "xt_", "ipt_", "ip6t_", "iptable_", "ip6table_", "ebt_", "ebtable_",
                "arpt_", "arptable_")
_NF_NAMES = {"x_tables", "ip_tables", "ip6_tables", "arp_tables", "nfnetlink", "br_netfilter",
             "nf_tables", "ebtables"}


class SystemReader:
    """Reads files below ``root`` ('/' on a live host)."""

    def __init__(self, root: str = "/") -> None:
        self.root = root

    def path(self, p: str) -> str:
        return os.path.join(self.root, p.lstrip("/"))

    def text(self, p: str) -> str | None:
        try:
            with open(self.path(p), encoding="utf-8", errors="replace") as fh:
                return fh.read()
        except (FileNotFoundError, NotADirectoryError, PermissionError, IsADirectoryError):
            return None
        except OSError:
            return None

    def line(self, p: str) -> str | None:
        t = self.text(p)
        return t.strip() if t is not None else None

    def raw(self, p: str) -> bytes | None:
        try:
            with open(self.path(p), "rb") as fh:
                return fh.read()
        except OSError:
            return None

    def listdir(self, p: str) -> list[str]:
        try:
            return sorted(os.listdir(self.path(p)))
        except OSError:
            return []

    def link_name(self, p: str) -> str | None:
        try:
            return os.path.basename(os.readlink(self.path(p)))
        except OSError:
            return None


# ---------------------------------------------------------------- host keys

def _cpuinfo(r: SystemReader) -> dict:
    out: dict[str, Any] = {}
    text = r.text("/proc/cpuinfo")
    if not text:
        return out
    mhz: list[float] = []
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        if key == "model name" and "cpu_model" not in out:
            out["cpu_model"] = value
        elif key == "cpu MHz":
            try:
                mhz.append(float(value))
            except ValueError:
                pass
    if mhz:
        # /proc/cpuinfo's current clock of each CPU, averaged: what the host says
        out["cpu_mhz"] = round(sum(mhz) / len(mhz), 3)
    return out


def _governor(r: SystemReader) -> str | dict | None:
    govs = {}
    for cpu in r.listdir("/sys/devices/system/cpu"):
        if cpu.startswith("cpu") and cpu[3:].isdigit():
            g = r.line(f"/sys/devices/system/cpu/{cpu}/cpufreq/scaling_governor")
            if g:
                govs[cpu] = g
    if not govs:
        return None
    values = set(govs.values())
    return values.pop() if len(values) == 1 else dict(sorted(govs.items()))


def netfilter_modules(proc_modules: str) -> list[str]:
    """Netfilter-related module names from /proc/modules text, sorted."""
    names = []
    for line in proc_modules.splitlines():
        name = line.split(" ", 1)[0].strip()
        if name and (name in _NF_NAMES or name.startswith(_NF_PREFIXES)):
            names.append(name)
    return sorted(set(names))


def _kernel_config_sha256(r: SystemReader, release: str | None) -> dict:
    raw = r.raw("/proc/config.gz")
    if raw is not None:
        try:
            return {"kernel_config_sha256": hashlib.sha256(gzip.decompress(raw)).hexdigest(),
                    "kernel_config_source": "/proc/config.gz"}
        except (OSError, EOFError):
            pass
    if release:
        path = f"/boot/config-{release}"
        raw = r.raw(path)
        if raw is not None:
            return {"kernel_config_sha256": hashlib.sha256(raw).hexdigest(),
                    "kernel_config_source": path}
    return {}


def _kernel_patches(r: SystemReader, path: str, warnings: list[str], release: str | None = None) -> Any:
    """The running kernel's series from the record the kernel role installs. A record that names another
    release (a kernel installed but not booted, or one the host fell back from) is not this kernel's."""
    text = r.text(path)
    if text is None:
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        warnings.append(f"kernel_patches: {path} is not valid JSON ({exc}); key omitted")
        return None
    if isinstance(data, dict) and release and data.get("release") not in (None, release):
        warnings.append(f"kernel_patches: {path} records the series of {data.get('release')}, not of the running "
                        f"{release}; key omitted")
        return None
    if isinstance(data, dict) and "patches" in data:
        data = data["patches"]
    if not isinstance(data, list):
        warnings.append(f"kernel_patches: {path} holds {type(data).__name__}, expected a list; key omitted")
        return None
    return data


def host_facts(r: SystemReader, patches_file: str = DEFAULT_PATCHES_FILE,
               warnings: list[str] | None = None) -> dict:
    """Host-wide keys of the fingerprint (no interfaces)."""
    warnings = warnings if warnings is not None else []
    out: dict[str, Any] = {}
    out.update(_cpuinfo(r))
    online = r.line("/sys/devices/system/cpu/online")
    if online:
        out["cpus_online"] = len(_validate.cpulist(online, "/sys/devices/system/cpu/online"))
        out["cpus_online_list"] = online
    smt = r.line("/sys/devices/system/cpu/smt/control")
    if smt:
        out["smt"] = smt
    nodes = r.line("/sys/devices/system/node/online")
    if nodes:
        out["numa_nodes"] = len(_validate.cpulist(nodes, "/sys/devices/system/node/online"))
    gov = _governor(r)
    if gov:
        out["governor"] = gov
    tuned = r.line("/etc/tuned/active_profile")
    if tuned:
        out["tuned_profile"] = tuned
    release = r.line("/proc/sys/kernel/osrelease")
    if release:
        out["kernel"] = release
    version = r.line("/proc/sys/kernel/version")
    if version:
        out["kernel_version"] = version
    cmdline = r.line("/proc/cmdline")
    if cmdline is not None:
        out["kernel_cmdline"] = cmdline
    out.update(_kernel_config_sha256(r, release))
    patches = _kernel_patches(r, patches_file, warnings, release)
    if patches is not None:
        out["kernel_patches"] = patches
    mods = r.text("/proc/modules")
    if mods is not None:
        out["netfilter_modules"] = netfilter_modules(mods)
    return out


# ----------------------------------------------------------- interface keys

_ETHTOOL_GDRVINFO = 0x00000003
_SIOCETHTOOL = 0x8946
_DRVINFO_FMT = "=I32s32s32s32s32s12s5I"


def drvinfo(ifname: str) -> dict[str, str]:
    """ETHTOOL_GDRVINFO (driver, version, firmware, bus) of an interface in this netns.

    Empty strings are dropped (veth has no firmware or bus). Raises OSError
    when the interface does not exist.
    """
    buf = array.array("B", struct.pack(_DRVINFO_FMT, _ETHTOOL_GDRVINFO, *([b""] * 6), *([0] * 5)))
    ifr = struct.pack("16sP", ifname.encode()[:15], buf.buffer_info()[0])
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        fcntl.ioctl(s.fileno(), _SIOCETHTOOL, ifr)
    fields = struct.unpack(_DRVINFO_FMT, buf.tobytes())
    names = ("driver", "version", "firmware", "bus", "erom_version")
    out = {}
    for name, value in zip(names, fields[1:6], strict=True):
        text = value.split(b"\0", 1)[0].decode(errors="replace").strip()
        if text and text.lower() != "n/a":
            out[name] = text
    out.pop("erom_version", None)
    return out


def _irqs_of(r: SystemReader, ifname: str) -> list[int]:
    irqs = {int(n) for n in r.listdir(f"/sys/class/net/{ifname}/device/msi_irqs") if n.isdigit()}
    text = r.text("/proc/interrupts") or ""
    for line in text.splitlines():
        head, sep, rest = line.partition(":")
        if sep and head.strip().isdigit() and (ifname + "-" in rest or rest.rstrip().endswith(ifname)):
            irqs.add(int(head.strip()))
    return sorted(irqs)


def irq_affinity(r: SystemReader, ifname: str) -> dict[str, str]:
    """{irq: smp_affinity_list} for the interface's IRQs (MSI vectors and /proc/interrupts names)."""
    out = {}
    for irq in _irqs_of(r, ifname):
        aff = r.line(f"/proc/irq/{irq}/smp_affinity_list")
        if aff is not None:
            out[str(irq)] = aff
    return out


def interface_facts(ifname: str, r: SystemReader, *,
                    ethtool_reader: Callable[[str], dict] | None = None,
                    drvinfo_reader: Callable[[str], dict] | None = None,
                    xdp_reader: Callable[[str], dict | None] | None = None,
                    warnings: list[str] | None = None) -> dict:
    """nic / ethtool / irq_affinity / xdp parts for one interface (keys absent when unknown)."""
    warnings = warnings if warnings is not None else []
    out: dict[str, Any] = {}
    nic: dict[str, Any] = {}
    if drvinfo_reader is not None:
        try:
            nic.update(drvinfo_reader(ifname))
        except OSError as exc:
            if exc.errno != errno.EOPNOTSUPP:  # lo has no drvinfo: nothing to say
                warnings.append(f"{ifname}: drvinfo not available ({exc})")
    driver = r.link_name(f"/sys/class/net/{ifname}/device/driver")
    if driver and "driver" not in nic:
        nic["driver"] = driver
    bus = r.link_name(f"/sys/class/net/{ifname}/device")
    if bus and "bus" not in nic:
        nic["bus"] = bus
    speed = r.line(f"/sys/class/net/{ifname}/speed")
    if speed and speed.lstrip("-").isdigit() and int(speed) > 0:
        nic["speed_mbps"] = int(speed)
    mtu = r.line(f"/sys/class/net/{ifname}/mtu")
    if mtu and mtu.isdigit():
        nic["mtu"] = int(mtu)
    if nic:
        out["nic"] = nic
    if ethtool_reader is not None:
        try:
            eth = ethtool_reader(ifname)
        except Exception as exc:  # netlink errors differ by pyroute2 version
            warnings.append(f"{ifname}: ethtool netlink read failed ({exc})")
        else:
            if eth:
                out["ethtool"] = eth
    aff = irq_affinity(r, ifname)
    if aff:
        out["irq_affinity"] = aff
    if xdp_reader is not None:
        try:
            xdp = xdp_reader(ifname)
        except Exception as exc:
            warnings.append(f"{ifname}: XDP state not readable ({exc})")
        else:
            if xdp:
                out["xdp"] = xdp
    return out


def live_xdp(ifname: str) -> dict | None:
    """{mode, prog_id, program, tag} of the XDP program on ifname, or None when none is attached."""
    from ansible_collections.xdplab.testbed.plugins.module_utils.xdp import _bpf

    att = _bpf.xdp_attachment(ifname)
    if not att.mode or not att.prog_id:
        return None
    out: dict[str, Any] = {"mode": att.mode, "prog_id": att.prog_id}
    try:
        info = _bpf.prog_info(att.prog_id)
    except OSError:
        return out
    out["program"] = info.name
    out["tag"] = info.tag
    if len(att.prog_ids) > 1:
        out["prog_ids"] = dict(att.prog_ids)
    return out


def live_ethtool(ifname: str) -> dict:
    from ansible_collections.xdplab.testbed.plugins.module_utils.tuning._ethtool_netlink import read_nic_state

    return read_nic_state(ifname)


def gather(interfaces: list[str] | None = None, *, root: str = "/",
           patches_file: str = DEFAULT_PATCHES_FILE, live: bool = True) -> tuple[dict, list[str]]:
    """The full fingerprint of this host: (facts, warnings).

    Per-interface parts are keyed by interface name under nic, ethtool,
    irq_affinity and xdp. ``live`` enables netlink/ioctl reads (off in unit tests).
    """
    r = SystemReader(root)
    warnings: list[str] = []
    facts = host_facts(r, patches_file, warnings)
    per: dict[str, dict] = {}
    for ifname in interfaces or []:
        if not os.path.exists(r.path(f"/sys/class/net/{ifname}")):
            raise ValueError(f"interface {ifname!r} does not exist on this host")
        per[ifname] = interface_facts(
            ifname, r,
            ethtool_reader=live_ethtool if live else None,
            drvinfo_reader=drvinfo if live else None,
            xdp_reader=live_xdp if live else None,
            warnings=warnings)
    for key in ("nic", "ethtool", "irq_affinity", "xdp"):
        part = {name: f[key] for name, f in per.items() if key in f}
        if part:
            facts[key] = part
    return facts, warnings


# --------------------------------------------------------------------- diffs

def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts -> {'a.b.c': leaf}; lists stay leaves."""
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for k in sorted(value, key=str):
            out.update(flatten(value[k], f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: value} if prefix else {}


_ABSENT = "(absent)"


def fingerprint_diff(a: dict | None, b: dict | None) -> list[dict]:
    """Keys whose values differ between two fingerprints, with both values.

    Returns [{"key": "ethtool.eth0.ring.rx", "baseline": 512, "candidate": 1024}, ...]
    in key order; a key present on one side only shows "(absent)" on the other.
    """
    fa, fb = flatten(a or {}), flatten(b or {})
    out = []
    for key in sorted(set(fa) | set(fb)):
        va, vb = fa.get(key, _ABSENT), fb.get(key, _ABSENT)
        if va != vb:
            out.append({"key": key, "baseline": va, "candidate": vb})
    return out
