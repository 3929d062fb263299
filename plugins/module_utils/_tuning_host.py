# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Host knobs: readers, planners and the C-state holder (private to xdplab.testbed).

This module is private to the xdplab.testbed collection: its API may change
without notice.

Every reader takes a root (``/`` on the host, a tmp_path tree in tests) and
returns None when the host has no such knob, so the caller can tell "not
there" from "off".  Shapes match the environment fingerprint (_envfacts):
governor is one string or {cpuN: governor}, smt the sysfs control word,
tuned_profile the active profile name.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import struct
import time
from typing import Any

# Netfilter module families unloaded by netfilter_unload.
NF_FAMILY_RE = re.compile(
    r"^(iptable_\w+|ip6table_\w+|nf_conntrack\w*|nft_\w+|nf_tables|nf_nat\w*|nf_defrag_\w+|nf_reject_\w+"
    r"|nf_log_\w+|nf_flow_table\w*|xt_\w+|ip_tables|ip6_tables|x_tables|ebtable_\w+|ebtables|arptable_\w+"
    r"|arp_tables|nfnetlink\w*|nf_socket_\w+|nf_tproxy_\w+|nf_dup_\w+)$"
)
SMT_VALUES = ("on", "off", "forceoff")
CMDLINE_KEYS_RE = re.compile(r"^[a-z][a-z0-9_.-]*\Z")


class HostTuningError(ValueError):
    """Bad input or a refused change; names the knob and the value."""


def _p(root: str, path: str) -> str:
    return os.path.join(root, path.lstrip("/"))


def _line(root: str, path: str) -> str | None:
    try:
        with open(_p(root, path), encoding="utf-8") as fh:
            return fh.read().strip()
    except OSError:
        return None


def _cpus(root: str) -> list[str]:
    try:
        names = os.listdir(_p(root, "/sys/devices/system/cpu"))
    except OSError:
        return []
    return sorted((n for n in names if re.fullmatch(r"cpu\d+", n)), key=lambda n: int(n[3:]))


# -- readers -----------------------------------------------------------------

def read_governor(root: str = "/") -> str | dict[str, str] | None:
    govs = {}
    for cpu in _cpus(root):
        g = _line(root, f"/sys/devices/system/cpu/{cpu}/cpufreq/scaling_governor")
        if g:
            govs[cpu] = g
    if not govs:
        return None
    values = set(govs.values())
    return values.pop() if len(values) == 1 else govs


def available_governors(root: str = "/") -> list[str]:
    for cpu in _cpus(root):
        text = _line(root, f"/sys/devices/system/cpu/{cpu}/cpufreq/scaling_available_governors")
        if text:
            return text.split()
    return []


def turbo_path(root: str = "/") -> tuple[str, bool] | None:
    """(sysfs path, inverted) of the turbo/boost switch; inverted means 1 = turbo off (intel_pstate)."""
    for path, inverted in (("/sys/devices/system/cpu/intel_pstate/no_turbo", True),
                           ("/sys/devices/system/cpu/cpufreq/boost", False)):
        if os.path.exists(_p(root, path)):
            return path, inverted
    return None


def read_turbo(root: str = "/") -> bool | None:
    tp = turbo_path(root)
    if tp is None:
        return None
    value = _line(root, tp[0])
    if value is None or not value.isdigit():
        return None
    return (value == "0") if tp[1] else (value != "0")


def read_smt_control(root: str = "/") -> str | None:
    """The raw SMT control word, notsupported included (the fingerprint's smt)."""
    return _line(root, "/sys/devices/system/cpu/smt/control")


def read_smt(root: str = "/") -> str | None:
    """SMT control word (on, off, forceoff); None when the kernel cannot control SMT here."""
    value = _line(root, "/sys/devices/system/cpu/smt/control")
    if value in (None, "notsupported", "notimplemented"):
        return None
    return value


def read_tuned_profile(root: str = "/") -> str | None:
    return _line(root, "/etc/tuned/active_profile") or None


def parse_proc_modules(text: str) -> dict[str, list[str]]:
    """/proc/modules -> {module: [modules using it]}."""
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        users = [u for u in fields[3].split(",") if u and u != "-"]
        out[fields[0]] = users
    return out


def read_modules(root: str = "/") -> dict[str, list[str]] | None:
    try:
        with open(_p(root, "/proc/modules"), encoding="utf-8") as fh:
            return parse_proc_modules(fh.read())
    except OSError:
        return None


def netfilter_unload_order(modules: dict[str, list[str]]) -> list[str]:
    """Loaded netfilter modules, users before what they use (the order rmmod needs).

    Raises HostTuningError naming a module held by something outside the
    netfilter families (it could not be unloaded without breaking that user).
    """
    family = {m for m in modules if NF_FAMILY_RE.match(m)}
    for mod in sorted(family):
        outside = [u for u in modules[mod] if u not in family]
        if outside:
            raise HostTuningError(
                f"netfilter module {mod} is used by {', '.join(outside)} (not a netfilter module): refusing to unload")
    order: list[str] = []
    done: set[str] = set()

    def visit(mod: str, stack: tuple[str, ...]) -> None:
        if mod in done:
            return
        if mod in stack:
            raise HostTuningError(f"module dependency cycle: {' -> '.join((*stack, mod))}")
        for user in sorted(modules.get(mod, [])):
            visit(user, (*stack, mod))
        done.add(mod)
        order.append(mod)

    for mod in sorted(family):
        visit(mod, ())
    return order


# -- kernel command line through /etc/default/grub -----------------------------

_GRUB_RE = re.compile(r'^(GRUB_CMDLINE_LINUX=)(["\']?)(.*?)\2[ \t]*$', re.MULTILINE)


def grub_cmdline(text: str) -> str | None:
    m = _GRUB_RE.search(text)
    return m.group(3) if m else None


def set_cmdline_params(cmdline: str, params: dict[str, Any]) -> str:
    """Set (value) or remove (None/False) parameters in a kernel command line string; others kept in order."""
    tokens = shlex.split(cmdline)
    out = []
    seen = set()
    for tok in tokens:
        key = tok.split("=", 1)[0]
        if key in params:
            if key in seen:
                continue
            seen.add(key)
            value = params[key]
            if value is None or value is False:
                continue
            out.append(key if value is True else f"{key}={value}")
        else:
            out.append(tok)
    for key, value in params.items():
        if key not in seen and value is not None and value is not False:
            out.append(key if value is True else f"{key}={value}")
    return " ".join(out)


def edit_grub(text: str, params: dict[str, Any]) -> tuple[str, str, str]:
    """(new text, old cmdline, new cmdline) with params applied to GRUB_CMDLINE_LINUX (added when absent)."""
    for key in params:
        if not CMDLINE_KEYS_RE.match(str(key)):
            raise HostTuningError(f"kernel_cmdline: {key!r} is not a kernel parameter name")
    old = grub_cmdline(text)
    new = set_cmdline_params(old or "", params)
    line = f'GRUB_CMDLINE_LINUX="{new}"'
    if old is None:
        return text.rstrip("\n") + "\n" + line + "\n", "", new
    return _GRUB_RE.sub(lambda m: line, text, count=1), old, new


def restore_grub(text: str, old_cmdline: str) -> str:
    line = f'GRUB_CMDLINE_LINUX="{old_cmdline}"'
    if grub_cmdline(text) is None:
        return text.rstrip("\n") + "\n" + line + "\n"
    return _GRUB_RE.sub(lambda m: line, text, count=1)


# -- /dev/cpu_dma_latency holder ------------------------------------------------

def read_cpu_dma_latency(root: str = "/") -> int | None:
    """Current PM QoS CPU latency target in microseconds (the device reads as a native s32)."""
    try:
        with open(_p(root, "/dev/cpu_dma_latency"), "rb") as fh:
            data = fh.read(4)
    except OSError:
        return None
    return struct.unpack("=i", data)[0] if len(data) == 4 else None


def start_latency_holder(usecs: int, pidfile: str, root: str = "/") -> int:
    """Fork a holder that keeps /dev/cpu_dma_latency open with ``usecs`` until killed; return its pid.

    The PM QoS request lives as long as the file stays open, so the holder
    must outlive the module: double fork, new session, pid in ``pidfile``.
    """
    if usecs < 0:
        raise HostTuningError(f"cpu_dma_latency must be >= 0 microseconds, got {usecs}")
    dev = _p(root, "/dev/cpu_dma_latency")
    if not os.path.exists(dev):
        raise HostTuningError(f"cpu_dma_latency: {dev} does not exist on this host")
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # first child
        os.close(rfd)
        os.setsid()
        if os.fork() != 0:
            os._exit(0)
        try:  # grandchild: the holder
            fd = os.open(dev, os.O_WRONLY)
            os.write(fd, struct.pack("=i", usecs))
            devnull = os.open(os.devnull, os.O_RDWR)
            for std in (0, 1, 2):
                os.dup2(devnull, std)
            # Keep no inherited descriptor (the caller's pipes would never see EOF).
            for name in os.listdir("/proc/self/fd"):
                if int(name) > 2 and int(name) not in (fd, wfd):
                    try:
                        os.close(int(name))
                    except OSError:
                        pass
            os.write(wfd, str(os.getpid()).encode())
            os.close(wfd)
            while True:
                signal.pause()
        except BaseException:
            os._exit(1)
    os.close(wfd)
    os.waitpid(pid, 0)
    with os.fdopen(rfd) as fh:
        text = fh.read()
    if not text.isdigit():
        raise HostTuningError(f"cpu_dma_latency: the holder could not open {dev}")
    holder = int(text)
    tmp = pidfile + ".tmp"
    with open(tmp, "w", encoding="ascii") as fh:
        fh.write(f"{holder}\n")
    os.replace(tmp, pidfile)
    return holder


def holder_pid(pidfile: str) -> int | None:
    """Pid of a live holder recorded in pidfile, else None."""
    try:
        with open(pidfile, encoding="ascii") as fh:
            pid = int(fh.read().strip())
    except (OSError, ValueError):
        return None
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            fh.read(1)
        os.kill(pid, 0)
    except OSError:
        return None
    return pid


def stop_latency_holder(pidfile: str) -> bool:
    pid = holder_pid(pidfile)
    if pid is not None:
        os.kill(pid, signal.SIGTERM)
        for _dummy in range(50):
            try:
                os.kill(pid, 0)
            except OSError:
                break
            time.sleep(0.02)
    try:
        os.unlink(pidfile)
    except FileNotFoundError:
        pass
    return pid is not None


def read_sysctl(name: str, root: str = "/") -> str | None:
    if not re.fullmatch(r"[A-Za-z0-9_.\-/]+", name) or ".." in name:
        raise HostTuningError(f"not a sysctl name: {name!r}")
    value = _line(root, "/proc/sys/" + name.replace(".", "/"))
    return " ".join(value.split()) if value is not None else None


def read_host(root: str = "/") -> dict[str, Any]:
    """Host part of the read-back: keys the host can tell, absent ones omitted."""
    out: dict[str, Any] = {}
    for key, reader in (("tuned_profile", read_tuned_profile), ("governor", read_governor),
                        ("turbo", read_turbo), ("smt", read_smt_control),
                        ("cpu_dma_latency", read_cpu_dma_latency)):
        value = reader(root)
        if value is not None:
            out[key] = value
    mods = read_modules(root)
    if mods is not None:
        out["netfilter_modules"] = sorted(m for m in mods if NF_FAMILY_RE.match(m))
    return out
