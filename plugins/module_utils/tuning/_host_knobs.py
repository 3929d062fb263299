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
from dataclasses import dataclass
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


# -- kernel command line through /etc/default/grub and /etc/default/grub.d/*.cfg ---------------
#
# grub-mkconfig (update-grub) sources /etc/default/grub, then /etc/default/grub.d/*.cfg in glob order,
# with /bin/sh: the last assignment of GRUB_CMDLINE_LINUX wins, and its value ends up in grub.cfg, which
# GRUB's own shell-like parser reads again. We edit the line the effective value comes from, only when
# it is a plain assignment (optionally exported) whose value is plain (no quote, '$', '`' or '\\' inside:
# nothing either shell would expand), outside any if/case/loop; any other form is refused, naming the
# file, line and form. Values we write are plain too (_validate.cmdline_param). The original line is kept
# so a restore puts it back byte for byte.

GRUB_VAR = "GRUB_CMDLINE_LINUX"
GRUB_DEFAULT_VAR = "GRUB_CMDLINE_LINUX_DEFAULT"
_GRUB_LINE_RE = re.compile(r"^[ \t]*GRUB_CMDLINE_LINUX=(.*)$", re.MULTILINE)
_GRUB_VALUE_RE = re.compile(r"""^(?:"([^"$`\\']*)"|'([^"$`\\']*)'|([^\s"$`\\'#;&|<>()]*))([ \t]+#.*|[ \t]*)$""")
_ASSIGN_RE = re.compile(r"^(?P<prefix>[ \t]*(?:export[ \t]+)?)(?P<var>GRUB_CMDLINE_LINUX(?:_DEFAULT)?)=(?P<rest>.*)$")
_MENTION_RE = re.compile(r"\bGRUB_CMDLINE_LINUX(?:_DEFAULT)?\b")
_OPENERS = ("if", "case", "for", "while", "until", "select")
_CLOSERS = ("fi", "esac", "done")


@dataclass
class GrubAssignment:
    """One place a grub defaults file sets GRUB_CMDLINE_LINUX[_DEFAULT]. ``form``: "plain" (editable),
    "export" (editable, prefix kept), or why it is not: "conditional" (inside if/case/a loop, or after
    &&/||/;), "expansion" (the value refers to variables or commands), "not plain" (quotes or more than
    one word), "other" (unset, readonly, declare, ...)."""
    path: str
    lineno: int
    start: int
    end: int
    line: str
    var: str
    form: str
    value: str | None = None
    comment: str = ""
    prefix: str = ""

    def where(self) -> str:
        return f"{self.path}:{self.lineno}"


def grub_sources(grub_file: str) -> list[str]:
    """The files grub-mkconfig sources, in its order: ``grub_file``, then ``grub_file``.d/*.cfg (glob order,
    the C locale's byte order)."""
    directory = grub_file + ".d"
    try:
        names = sorted((n for n in os.listdir(directory) if n.endswith(".cfg")), key=os.fsencode)
    except (FileNotFoundError, NotADirectoryError):
        names = []
    return [grub_file] + [os.path.join(directory, n) for n in names if os.path.exists(os.path.join(directory, n))]


def read_grub_sources(grub_file: str) -> list[tuple[str, str]]:
    out = []
    for path in grub_sources(grub_file):
        if path == grub_file and not os.path.exists(path):
            continue
        with open(path, encoding="utf-8", newline="") as fh:
            out.append((path, fh.read()))
    return out


def scan_grub(path: str, text: str) -> list[GrubAssignment]:
    """Every line of one file that sets or touches GRUB_CMDLINE_LINUX[_DEFAULT], classified."""
    found: list[GrubAssignment] = []
    depth, pos = 0, 0
    for lineno, raw in enumerate(text.splitlines(keepends=True), start=1):
        line = raw.rstrip("\r\n")
        start, pos = pos, pos + len(raw)
        words = line.strip().replace(";", " ; ").split()
        first = words[0] if words else ""
        m = _ASSIGN_RE.match(line)
        if m:
            form, value, comment = ("export" if "export" in m.group("prefix") else "plain"), None, ""
            vm = _GRUB_VALUE_RE.match(m.group("rest"))
            if depth > 0:
                form = "conditional"
            elif vm:
                value = next(g for g in vm.groups()[:3] if g is not None)
                comment = vm.group(4)
            elif "$" in m.group("rest") or "`" in m.group("rest"):
                form = "expansion"
            else:
                form = "not plain"
            found.append(GrubAssignment(path, lineno, start, start + len(line), line, m.group("var"), form, value,
                                        comment, m.group("prefix")))
        elif _MENTION_RE.search(line) and not line.lstrip().startswith("#"):
            assigns = re.search(r"\bGRUB_CMDLINE_LINUX(?:_DEFAULT)?=", line)
            var = "GRUB_CMDLINE_LINUX_DEFAULT" if "GRUB_CMDLINE_LINUX_DEFAULT" in line else GRUB_VAR
            bare_export = re.fullmatch(r"[ \t]*export[ \t]+[A-Z_ \t]+", line)
            if assigns or not bare_export:
                form = "conditional" if assigns and (depth > 0 or re.search(r"&&|\|\||;|\bthen\b|\bdo\b", line)) \
                    else "other"
                found.append(GrubAssignment(path, lineno, start, start + len(line), line, var, form))
        if first in _OPENERS:
            depth += 1
        if first in _CLOSERS or (words and words[-1] in _CLOSERS and first not in _OPENERS):
            depth = max(0, depth - 1)
        elif first in _OPENERS and words[-1] in _CLOSERS:
            depth = max(0, depth - 1)  # a one-line if ...; fi
    return found


def _effective(sources: list[tuple[str, str]], var: str) -> tuple[GrubAssignment | None, list[GrubAssignment]]:
    every = [a for path, text in sources for a in scan_grub(path, text) if a.var == var]
    return (every[-1] if every else None), every


def grub_line(text: str) -> str | None:
    """The GRUB_CMDLINE_LINUX line of one file as it stands (without its newline), None when there is none.

    Raises HostTuningError when there are several (the shell would take the last one, and an edit of
    any one of them would not be what the kernel gets)."""
    lines = [a for a in scan_grub("", text) if a.var == GRUB_VAR]
    if len(lines) > 1:
        raise HostTuningError("kernel_cmdline: /etc/default/grub sets GRUB_CMDLINE_LINUX more than once: "
                              "refusing to edit it")
    return lines[0].line if lines else None


def grub_cmdline(text: str) -> str | None:
    """The value of GRUB_CMDLINE_LINUX of one file; None when there is no such line, or it is not plain."""
    try:
        lines = [a for a in scan_grub("", text) if a.var == GRUB_VAR]
    except HostTuningError:
        return None
    return lines[-1].value if len(lines) == 1 else None


def _key_re(key: str) -> re.Pattern:
    return re.compile(rf"""(?:^|[\s"'=]){re.escape(key)}(?:=|[\s"']|$)""")


def set_cmdline_params(cmdline: str, params: dict[str, Any]) -> str:
    """Set (value) or remove (None/False) parameters in a kernel command line string; others kept in order,
    repeated ones (console=tty0 console=ttyS0) included.

    Each parameter goes through _validate.cmdline_param: only values GRUB and /bin/sh take literally. A
    parameter we set that the line gives several times is left as it is when our value is among them,
    and refused otherwise (which one the kernel uses depends on the parameter); removing one removes all."""
    rendered: dict[str, str | None] = {}
    for key, value in params.items():
        try:
            rendered[key] = _validate.cmdline_param(key, value)
        except _validate.ValidationError as exc:
            raise HostTuningError(str(exc)) from None
    tokens = cmdline.split()
    for key, tok in rendered.items():
        given = [t for t in tokens if t.split("=", 1)[0] == key]
        if len(given) > 1 and tok is not None and tok not in given:
            raise HostTuningError(f"kernel_cmdline: {key} is given {len(given)} times ({' '.join(given)}): a "
                                  f"repeated parameter is not replaced by {tok}; edit it by hand")
    out = []
    seen = set()
    for tok in tokens:
        key = tok.split("=", 1)[0]
        if key in rendered:
            if rendered[key] is None:
                continue
            if key in seen:
                out.append(tok)  # a repeated parameter stays as it is
                continue
            seen.add(key)
            given = [t for t in tokens if t.split("=", 1)[0] == key]
            out.append(tok if len(given) > 1 else rendered[key])
        else:
            out.append(tok)
    for key, tok in rendered.items():
        if key not in seen and tok is not None:
            out.append(tok)
    return " ".join(out)


@dataclass
class GrubEdit:
    """What edit_grub_sources decided: the file to write, its new text, the command lines before and
    after, and the snapshot restore_grub needs."""
    path: str
    text: str
    old: str
    new: str
    saved: dict[str, Any]


def edit_grub_sources(sources: list[tuple[str, str]], params: dict[str, Any], grub_file: str) -> GrubEdit:
    """Apply ``params`` to the effective GRUB_CMDLINE_LINUX of ``sources`` (read_grub_sources): in the file
    and on the line it comes from, or, when no file sets it, on a line added to ``grub_file``.

    Refused (HostTuningError naming file, line and form): an effective line that is not a plain assignment;
    a parameter we set or remove that GRUB_CMDLINE_LINUX_DEFAULT also names (the kernel reads it after)."""
    texts = dict(sources)
    last, every = _effective(sources, GRUB_VAR)
    if last is not None and last.form not in ("plain", "export"):
        raise HostTuningError(f"kernel_cmdline: GRUB_CMDLINE_LINUX is set last at {last.where()} in a form we "
                              f"cannot safely edit ({last.form}: {last.line.strip()!r}): edit it by hand")
    for item in _effective(sources, GRUB_DEFAULT_VAR)[1]:
        for key in params:
            if _key_re(key).search(item.line.split("=", 1)[1] if "=" in item.line else item.line):
                raise HostTuningError(f"kernel_cmdline: {key} is also in GRUB_CMDLINE_LINUX_DEFAULT at "
                                      f"{item.where()} ({item.line.strip()!r}), which the kernel reads after "
                                      "GRUB_CMDLINE_LINUX: edit it there by hand")
    old = last.value if last is not None else ""
    new = set_cmdline_params(old, params)
    if last is None:
        path = grub_file
        text = texts.get(path, "")
        new_line = f'{GRUB_VAR}="{new}"'
        joint = "\n" if text and not text.endswith("\n") else ""
        saved = {"file": path, "line": None, "written": new_line, "joint": joint}
        return GrubEdit(path, text + joint + new_line + "\n" if new != old else text, old, new, saved)
    text = texts[last.path]
    new_line = f'{last.prefix}{GRUB_VAR}="{new}"{last.comment}'
    saved = {"file": last.path, "line": last.line, "written": new_line}
    if new == old:
        return GrubEdit(last.path, text, old, new, saved)
    del every
    return GrubEdit(last.path, text[:last.start] + new_line + text[last.end:], old, new, saved)


def edit_grub(text: str, params: dict[str, Any]) -> tuple[str, str, str]:
    """One file's (new text, old cmdline, new cmdline) (edit_grub_sources on that file alone)."""
    lines = [a for a in scan_grub("grub", text) if a.var == GRUB_VAR]
    if len(lines) > 1:
        raise HostTuningError("kernel_cmdline: /etc/default/grub sets GRUB_CMDLINE_LINUX more than once: "
                              "refusing to edit it")
    edit = edit_grub_sources([("grub", text)], params, "grub")
    return edit.text, edit.old, edit.new


def grub_snapshot(text: str) -> dict[str, str | None]:
    """What restore_grub needs to put one file's GRUB_CMDLINE_LINUX back byte for byte (an older form;
    edit_grub_sources returns the full snapshot in GrubEdit.saved)."""
    return {"line": grub_line(text)}


def restore_grub(text: str, saved: dict[str, Any] | str) -> str:
    """``text`` with the line we wrote replaced by the saved original one (or removed, with the newline we
    joined it with, when there was none). ``saved`` is GrubEdit.saved; an older snapshot ({"line": ...}
    of /etc/default/grub) replaces the file's only GRUB_CMDLINE_LINUX line, and a plain string is an older
    snapshot's cmdline value, written back double-quoted. Raises HostTuningError when the line we wrote is
    not there exactly once (changed since: restore by hand)."""
    if isinstance(saved, dict) and "written" in saved:
        original, written = saved.get("line"), saved["written"]
        lines = text.splitlines(keepends=True)
        hits = [i for i, raw in enumerate(lines) if raw.rstrip("\r\n") == written]
        if original is not None and not hits and any(raw.rstrip("\r\n") == original for raw in lines):
            return text  # already restored
        if original is None and not hits:
            return text
        if len(hits) != 1:
            raise HostTuningError(f"kernel_cmdline: the line written to {saved.get('file')} ({written!r}) is "
                                  f"{'gone' if not hits else 'there more than once'}: restore it by hand")
        i = hits[0]
        if original is not None:
            ending = lines[i][len(lines[i].rstrip("\r\n")):]
            lines[i] = original + ending
            return "".join(lines)
        del lines[i]
        out = "".join(lines)
        joint = saved.get("joint", "")
        if joint and i == len(lines) and out.endswith(joint):
            out = out[:-len(joint)]
        return out
    if isinstance(saved, str):
        if saved and not _GRUB_VALUE_RE.match(f'"{saved}"'):
            raise HostTuningError(f"kernel_cmdline: the saved command line {saved!r} is not plain: restore by hand")
        original = f'GRUB_CMDLINE_LINUX="{saved}"'
    else:
        original = saved.get("line")
    lines = list(_GRUB_LINE_RE.finditer(text))
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


def grub_written_now(text: str, saved: dict[str, Any]) -> str | None:
    """The line of ``text`` that the snapshot's line stands at now: the saved original when it is there,
    the line we wrote when that is, else None (the snapshot's shape: compare with saved["line"])."""
    lines = [raw.rstrip("\r\n") for raw in text.splitlines()]
    if saved.get("line") is not None and saved["line"] in lines:
        return saved["line"]
    return saved["written"] if saved.get("written") in lines else None


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
