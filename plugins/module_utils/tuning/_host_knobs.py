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

import json
import os
import re
import signal
import struct
from typing import Any

from ansible_collections.xdplab.testbed.plugins.module_utils.common import _process_identity as _proc
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _validate

# Netfilter module families unloaded by netfilter_unload.
NF_FAMILY_RE = re.compile(
    r"^(iptable_\w+|ip6table_\w+|nf_conntrack\w*|nft_\w+|nf_tables|nf_nat\w*|nf_defrag_\w+|nf_reject_\w+"
    r"|nf_log_\w+|nf_flow_table\w*|xt_\w+|ip_tables|ip6_tables|x_tables|ebtable_\w+|ebtables|arptable_\w+"
    r"|arp_tables|nfnetlink\w*|nf_socket_\w+|nf_tproxy_\w+|nf_dup_\w+)$"
)
SMT_VALUES = ("on", "off", "forceoff")


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
#
# /etc/default/grub is sourced by /bin/sh (update-grub) and its GRUB_CMDLINE_LINUX ends up in grub.cfg,
# which GRUB's own shell-like parser reads again. We edit the line only when its value is plain (no
# quote, '$', '`' or '\\' inside: nothing either shell would expand), write values that are plain too
# (_validate.cmdline_param), and keep the original line so a restore puts it back byte for byte.

_GRUB_LINE_RE = re.compile(r"^[ \t]*GRUB_CMDLINE_LINUX=(.*)$", re.MULTILINE)
_GRUB_VALUE_RE = re.compile(r"""^(?:"([^"$`\\']*)"|'([^"$`\\']*)'|([^\s"$`\\'#;&|<>()]*))([ \t]+#.*|[ \t]*)$""")


def _grub_lines(text: str) -> list[re.Match]:
    return list(_GRUB_LINE_RE.finditer(text))


def grub_line(text: str) -> str | None:
    """The GRUB_CMDLINE_LINUX line as it stands (without its newline), None when there is none.

    Raises HostTuningError when there are several (the shell would take the last one, and an edit of
    any one of them would not be what the kernel gets)."""
    lines = _grub_lines(text)
    if len(lines) > 1:
        raise HostTuningError("kernel_cmdline: /etc/default/grub sets GRUB_CMDLINE_LINUX more than once: "
                              "refusing to edit it")
    return lines[0].group(0) if lines else None


def _parse_grub_line(line: str) -> tuple[str, str]:
    """(value, trailing comment with its leading blanks) of a plain GRUB_CMDLINE_LINUX line."""
    rest = line.split("=", 1)[1]
    m = _GRUB_VALUE_RE.match(rest)
    if not m:
        raise HostTuningError(f"kernel_cmdline: cannot safely edit {line!r} (quotes, '$', '`' or '\\' inside "
                              "the value, or more than one word): edit it by hand")
    value = next(g for g in m.groups()[:3] if g is not None)
    return value, m.group(4)


def grub_cmdline(text: str) -> str | None:
    """The value of GRUB_CMDLINE_LINUX; None when there is no such line, or it is not plain."""
    try:
        line = grub_line(text)
        return _parse_grub_line(line)[0] if line is not None else None
    except HostTuningError:
        return None


def set_cmdline_params(cmdline: str, params: dict[str, Any]) -> str:
    """Set (value) or remove (None/False) parameters in a kernel command line string; others kept in order.

    Each parameter goes through _validate.cmdline_param: only values GRUB and /bin/sh take literally."""
    rendered: dict[str, str | None] = {}
    for key, value in params.items():
        try:
            rendered[key] = _validate.cmdline_param(key, value)
        except _validate.ValidationError as exc:
            raise HostTuningError(str(exc)) from None
    out = []
    seen = set()
    for tok in cmdline.split():
        key = tok.split("=", 1)[0]
        if key in rendered:
            if key in seen:
                continue
            seen.add(key)
            if rendered[key] is not None:
                out.append(rendered[key])
        else:
            out.append(tok)
    for key, tok in rendered.items():
        if key not in seen and tok is not None:
            out.append(tok)
    return " ".join(out)


def edit_grub(text: str, params: dict[str, Any]) -> tuple[str, str, str]:
    """(new text, old cmdline, new cmdline) with params applied to GRUB_CMDLINE_LINUX (added when absent).

    The original line is what grub_line(text) returned; keep it (grub_snapshot) to restore it exactly."""
    line = grub_line(text)
    old, comment = _parse_grub_line(line) if line is not None else ("", "")
    new = set_cmdline_params(old, params)
    if new == old:
        return text, old, new
    new_line = f'GRUB_CMDLINE_LINUX="{new}"{comment}'
    if line is None:
        return text.rstrip("\n") + "\n" + new_line + "\n", "", new
    m = _grub_lines(text)[0]
    return text[:m.start()] + new_line + text[m.end():], old, new


def grub_snapshot(text: str) -> dict[str, str | None]:
    """What restore_grub needs to put the file's GRUB_CMDLINE_LINUX back byte for byte."""
    return {"line": grub_line(text)}


def restore_grub(text: str, saved: dict[str, str | None] | str) -> str:
    """``text`` with its GRUB_CMDLINE_LINUX line replaced by the saved original one (or removed when
    there was none). ``saved`` is grub_snapshot() of the original; a plain string is an older snapshot's
    cmdline value, written back double-quoted."""
    if isinstance(saved, str):
        if saved and not _GRUB_VALUE_RE.match(f'"{saved}"'):
            raise HostTuningError(f"kernel_cmdline: the saved command line {saved!r} is not plain: restore by hand")
        original: str | None = f'GRUB_CMDLINE_LINUX="{saved}"'
    else:
        original = saved.get("line")
    lines = _grub_lines(text)
    if len(lines) > 1:
        raise HostTuningError("kernel_cmdline: /etc/default/grub sets GRUB_CMDLINE_LINUX more than once: "
                              "refusing to restore it")
    if not lines:
        return text if original is None else text.rstrip("\n") + "\n" + original + "\n"
    m = lines[0]
    if original is None:  # we added the line: take it out with its newline
        end = m.end() + 1 if text[m.end():m.end() + 1] == "\n" else m.end()
        return text[:m.start()] + text[end:]
    return text[:m.start()] + original + text[m.end():]


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
    ident = _proc.identity(holder)
    if ident is None:
        raise HostTuningError(f"cpu_dma_latency: the holder (pid {holder}) exited at once")
    write_pidfile(pidfile, ident)
    return holder


def write_pidfile(pidfile: str, ident: dict[str, Any]) -> None:
    """The holder's identity (pid, start time, boot id) as JSON, 0600, written to a temp name and renamed."""
    tmp = f"{pidfile}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        json.dump(ident, fh)
        fh.write("\n")
    os.replace(tmp, pidfile)


def read_pidfile(pidfile: str) -> dict[str, Any] | None:
    """The recorded holder identity, None when there is no usable record (a bare pid, as older versions
    wrote, cannot be told from a reused pid: it is never signalled)."""
    try:
        fd = os.open(pidfile, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, encoding="ascii", errors="replace") as fh:
            ident = json.loads(fh.read())
        return _proc.check_identity(ident, "cpu_dma_latency holder")
    except (OSError, ValueError):
        return None


def _holds_latency_device(pid: int, proc: str = "/proc") -> bool:
    try:
        for fd in os.listdir(f"{proc}/{pid}/fd"):
            if os.readlink(f"{proc}/{pid}/fd/{fd}") == "/dev/cpu_dma_latency":
                return True
    except OSError:
        return False
    return False


def holder_pid(pidfile: str) -> int | None:
    """Pid of the live holder recorded in pidfile - same pid, start time and boot id, and holding
    /dev/cpu_dma_latency open - else None."""
    ident = read_pidfile(pidfile)
    if ident is None or not _proc.same(ident) or not _holds_latency_device(ident["pid"]):
        return None
    return ident["pid"]


def stop_latency_holder(pidfile: str) -> bool:
    """SIGTERM the recorded holder if it is still that process (identity checked), then drop the pidfile.
    A pidfile that survived a reboot, or names a pid now used by another process, signals nothing."""
    ident = read_pidfile(pidfile)
    stopped = False
    if ident is not None and holder_pid(pidfile) is not None:
        stopped = _proc.stop(ident, signal.SIGTERM, timeout=1.0) != "gone"
    try:
        os.unlink(pidfile)
    except FileNotFoundError:
        pass
    return stopped


def read_sysctl(name: str, root: str = "/") -> str | None:
    try:
        path = _validate.sysctl_path(name)
    except _validate.ValidationError as exc:
        raise HostTuningError(str(exc)) from None
    value = _line(root, "/proc/sys/" + path)
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
