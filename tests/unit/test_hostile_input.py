# SPDX-License-Identifier: GPL-3.0-or-later
"""Hostile input, property-based (hypothesis): shell metacharacters, newlines, ../ traversal, huge
numbers, unicode interface names.

- Every parser (bench_parse's TOOLS): arbitrary text and real captures with hostile bytes spliced in
  either parse to a finite pps > 0 or raise ParseError - never another exception, never pps <= 0/NaN.
- Ledger entries and paths: anything not a plain name is rejected with LedgerError naming the value.
- Every module, driven in-process in check mode over its whole argument spec with hostile values:
  it ends with exit_json or fail_json (never an uncaught exception), a failure message is a string,
  and every command it would run is an argv list, never a shell string, never use_unsafe_shell.

Each test counts the cases it ran into HOSTILE_COUNT; the last test prints the figure.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import pkgutil
import re
import traceback
from pathlib import Path
from unittest import mock

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _validate
from ansible_collections.xdplab.testbed.plugins.module_utils.state import _ledger
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic import _output_parsers as _parsers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FIXTURES = Path(__file__).parent / "fixtures"
HOSTILE_COUNT: dict[str, int] = {}

# The nasty pieces, combined by hypothesis with arbitrary text.
NASTY = ["; rm -rf /", "$(reboot)", "`id`", "|", "&&", ">", "<", "\n", "\r\n", "\x00", "../", "../../etc/passwd",
         "/..", "'", '"', "\\", "*", "?", "~", "$HOME", "${IFS}", "-", "--", "-rf", " ", "\t", "é", "ü", "网卡",
         "eth\u200b0", "\ud7ff", "\U0001f4a9", "9" * 40, "-1", "1e309", "nan", "inf", "0x", "%s%n", "{{ x }}"]
hostile_text = st.lists(st.one_of(st.sampled_from(NASTY), st.text(max_size=12)), min_size=1, max_size=6).map("".join)
huge_ints = st.one_of(st.integers(min_value=2**31 - 2, max_value=2**70), st.integers(max_value=-1, min_value=-2**70))


def count(name: str) -> None:
    HOSTILE_COUNT[name] = HOSTILE_COUNT.get(name, 0) + 1


# ---- parsers ------------------------------------------------------------------------------------

def _captures() -> list[tuple[str, str]]:
    out = []
    for tool in _parsers.TOOLS:
        for path in sorted((FIXTURES / tool).glob("*")) if (FIXTURES / tool).is_dir() else []:
            if path.is_file() and path.suffix in ("", ".txt", ".out", ".log", ".json"):
                out.append((tool, path.read_text(encoding="utf-8", errors="replace")))
    return out


CAPTURES = _captures()


def check_parse(tool: str, text: str) -> None:
    try:
        parsed = _parsers.parse(tool, text)
    except _parsers.ParseError as exc:
        assert str(exc), "ParseError without a message"
        return
    pps = parsed["pps"]
    assert isinstance(pps, float) and math.isfinite(pps) and pps > 0, f"{tool}: pps {pps!r} from {text[:200]!r}"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tool=st.sampled_from(sorted(_parsers.TOOLS)), text=hostile_text)
def test_parsers_on_hostile_text(tool, text):
    count("parser: arbitrary hostile text")
    check_parse(tool, text)


@pytest.mark.skipif(not CAPTURES, reason="no captured tool output under tests/unit/fixtures")
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_parsers_on_corrupted_captures(data):
    """A real capture with a hostile piece spliced in, a number replaced by a huge/negative/NaN one,
    or truncated: still ParseError or a sane pps."""
    tool, text = data.draw(st.sampled_from(CAPTURES))
    how = data.draw(st.sampled_from(["splice", "number", "truncate"]))
    if how == "splice":
        at = data.draw(st.integers(0, len(text)))
        text = text[:at] + data.draw(hostile_text) + text[at:]
    elif how == "number":
        digits = [i for i, c in enumerate(text) if c.isdigit()]
        if digits:
            at = data.draw(st.sampled_from(digits))
            repl = data.draw(st.sampled_from(["0", "-5", "nan", "inf", "1e999", "9" * 400, "0.0", "-0"]))
            text = text[:at] + repl + text[at + 1:]
    else:
        text = text[:data.draw(st.integers(0, len(text)))]
    count("parser: corrupted real capture")
    check_parse(tool, text)


# ---- ledger entries / lock ------------------------------------------------------------------------

@pytest.mark.parametrize(("module", "name", "valid"), [
    ("common._validate", "LEDGER_NAME_RE", "xdplab-dut"),
    ("common._validate", "IFNAME_RE", "veth0"),
    ("common._validate", "NETNS_RE", "xdplab-dut"),
    ("common._validate", "PKTGEN_DEV_RE", "eth0@1"),
    ("common._validate", "RECORD_NAME_RE", "xdp_drop"),
    ("common._validate", "CMDLINE_KEY_RE", "isolcpus"),
    ("common._validate", "CMDLINE_VALUE_RE", "2-3"),
    ("common._validate", "QEMU_ID_RE", "xdplab0"),
    ("common._validate", "NFT_NAME_RE", "xdplab_bench"),
    ("traffic._dut_counters", "_STAT_RE", "rx_packets"),
    ("traffic._xdpgen_trafgen_argv", "_MAC", "02:00:00:00:00:01"),
    ("traffic._pktgen_proc", "_MAC", "02:00:00:00:00:01"),
    ("testbed._topology", "_MAC_RE", "02:00:00:00:00:01"),
    ("tuning._plan_and_snapshots", "_KEY_RE", "nic-host-eth0"),
    ("common._validate", "RUN_ID_RE", "20261130T020000Z-abcdef"),
])
def test_validators_reject_a_trailing_newline(module, name, valid):
    """`$` matches before a final newline: every validator anchors with \\Z (found by hypothesis: the
    ledger accepted the name '-\\n')."""
    rx = getattr(importlib.import_module(f"ansible_collections.xdplab.testbed.plugins.module_utils.{module}"), name)
    assert rx.match(valid)
    assert not rx.match(valid + "\n")


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(["netns", "xdp", "tc", "nft"]), value=hostile_text)
def test_ledger_rejects_non_plain_names(kind, value):
    field = {"netns": "name", "xdp": "interface", "tc": "interface", "nft": "table"}[kind]
    key = {field: value} if kind != "nft" else {"family": "inet", "table": value}
    count("ledger: hostile name")
    try:
        entry = _ledger.check_entry(kind, key)
    except _ledger.LedgerError as exc:
        assert repr(value) in str(exc), f"the message does not name the bad value: {exc}"
        return
    # Accepted only as a plain name: no shell metacharacter, no path separator, no whitespace.
    rx = _validate.NFT_NAME_RE if field == "table" else _validate.LEDGER_NAME_RE
    assert rx.fullmatch(value) and ".." not in value and not value.startswith("-"), f"accepted {value!r}"
    assert entry["key"][field] == value


@settings(max_examples=200, deadline=None)
@given(path=st.one_of(hostile_text, hostile_text.map(lambda s: "/var/lib/xdplab/" + s)))
def test_ledger_state_file_paths(path):
    count("ledger: hostile state_file path")
    try:
        _ledger.check_entry("tuning", {"state_file": path})
    except _ledger.LedgerError as exc:
        assert repr(path) in str(exc)
        return
    assert os.path.isabs(path) and ".." not in path.split("/")


@settings(max_examples=100, deadline=None)
@given(pid=st.one_of(huge_ints, st.integers(-5, 1), hostile_text))
def test_ledger_qemu_pid(pid):
    count("ledger: hostile pid")
    try:
        _ledger.check_entry("qemu", {"pid": pid, "cmdline_sha256": "0" * 64})
    except _ledger.LedgerError as exc:
        assert repr(pid) in str(exc)
        return
    assert isinstance(pid, int) and pid > 1


# ---- the name validators (_validate), one per kind of name -------------------------------------

_UNSAFE = set("/\\\"'`$;&|<>()*?[]{}#~!%\0\n\r\t ")


@settings(max_examples=400, deadline=None)
@given(kind=st.sampled_from(["ifname", "netns", "ledger_name", "pktgen_device", "record_name", "qemu_id",
                             "nft_name", "run_id"]),
       value=st.one_of(hostile_text, st.sampled_from([".", "..", "-x", "veth%d", "a/b", "a__b", "eth0@..",
                                                      "é" * 8, "x" * 16, "a\0b"])))
def test_name_validators_accept_only_inert_names(kind, value):
    """A name any validator accepts holds nothing a shell, ip(8), nft, a path or a QEMU option string
    would read as more than a name; a refused one is named in the message."""
    count(f"validate: {kind}")
    try:
        out = _validate.check(kind, value, "w")
    except _validate.ValidationError as exc:
        assert repr(value) in str(exc), f"the message does not name the bad value: {exc}"
        return
    assert out == value and isinstance(value, str)
    assert not (_UNSAFE & set(value)) or (kind == "pktgen_device" and set(value) & _UNSAFE <= {"@"})
    assert not value.startswith(("-", ".")) and ".." not in value
    assert all(32 < ord(c) < 127 for c in value), f"{kind} accepted {value!r}"
    if kind in ("ifname", "pktgen_device"):
        assert len(value.split("@")[0].encode()) <= 15


@settings(max_examples=200, deadline=None)
@given(key=st.one_of(st.sampled_from(["isolcpus", "nohz_full", "quiet"]), hostile_text),
       value=st.one_of(hostile_text, st.booleans(), huge_ints))
def test_kernel_cmdline_accepts_only_values_grub_and_sh_take_literally(key, value):
    count("validate: kernel_cmdline")
    try:
        tok = _validate.cmdline_param(key, value)
    except _validate.ValidationError as exc:
        assert repr(value) in str(exc) or repr(key) in str(exc)
        return
    assert tok is None or not (set(tok) & set("\"'`$\\;&|<>()*?[]{}#~! \t\n\0"))
    assert tok is None or ".." not in tok.partition("=")[2].split("/"), tok


@pytest.mark.parametrize("value", ["..", "../etc", "a/../b", "..//../", "/dev/.."])
def test_kernel_cmdline_refuses_a_dotdot_component_naming_it(value):
    with pytest.raises(_validate.ValidationError, match=re.escape(repr(value))):
        _validate.cmdline_param("isolcpus", value)


@settings(max_examples=200, deadline=None)
@given(text=st.one_of(hostile_text, st.lists(st.integers(-5, 10 ** 12), max_size=5), huge_ints,
                      st.builds(lambda a, b: f"{a}-{b}", st.integers(0, 2 ** 40), st.integers(0, 2 ** 40))))
def test_cpulist_bounded(text):
    count("validate: cpulist")
    try:
        cpus = _validate.cpulist(text)
    except _validate.ValidationError:
        return
    assert all(0 <= c <= _validate.CPU_MAX for c in cpus) and len(cpus) <= _validate.CPU_MAX + 1


@settings(max_examples=200, deadline=None)
@given(a=hostile_text, b=hostile_text)
def test_distinct_record_names_give_distinct_files(a, b):
    count("validate: record file names")
    fa, fb = _validate.record_file_part(a), _validate.record_file_part(b)
    assert "/" not in fa and not fa.startswith(".") and ".." not in fa and "__" not in fa
    if a != b:
        assert fa != fb, f"{a!r} and {b!r} share {fa!r}"


# ---- every module, in-process, check mode -------------------------------------------------------

class Exit(Exception):
    def __init__(self, kind: str, result: dict):
        super().__init__(kind)
        self.kind, self.result = kind, result


MODULES_PKG = "ansible_collections.xdplab.testbed.plugins.modules"
MODULE_NAMES = sorted(m.name for m in pkgutil.iter_modules(importlib.import_module(MODULES_PKG).__path__))


def _spec_of(name: str) -> dict:
    """The module's argument_spec, captured by running main() with no arguments."""
    mod = importlib.import_module(f"{MODULES_PKG}.{name}")
    captured: dict = {}
    real_init = basic.AnsibleModule.__init__

    def spy(self, argument_spec, *a, **kw):
        captured.update(argument_spec)
        raise Exit("spec", {})

    with mock.patch.object(basic.AnsibleModule, "__init__", spy), patch_module_args({}):
        try:
            mod.main()
        except (Exit, SystemExit):
            pass
    assert real_init is basic.AnsibleModule.__init__
    return captured


SPECS = {name: _spec_of(name) for name in MODULE_NAMES}


def _value_for(opt: dict, draw) -> object:
    typ = opt.get("type", "str")
    if opt.get("choices") and draw(st.booleans()):
        return draw(st.sampled_from(list(opt["choices"])))
    if typ in ("str", "path", "raw"):
        return draw(hostile_text)
    if typ == "int":
        return draw(st.one_of(huge_ints, hostile_text))
    if typ == "float":
        return draw(st.one_of(st.floats(allow_nan=True, allow_infinity=True), hostile_text))
    if typ == "bool":
        return draw(st.one_of(st.booleans(), hostile_text))
    if typ == "list":
        return draw(st.lists(st.one_of(hostile_text, huge_ints), max_size=3))
    if typ == "dict":
        return draw(st.dictionaries(hostile_text, st.one_of(hostile_text, huge_ints, st.booleans()), max_size=3))
    return draw(hostile_text)


# Every module's entry: the options that name the collection's own state (pointed into a sandbox for the
# run, or given hostile values), and "named": options whose hostile value must be refused naming it, with
# the plain arguments that let the module reach that option's check. A module added without its entry
# fails test_every_module_and_filter_has_its_hostile_entry.
HOSTILE_ENTRIES: dict[str, dict] = {
    "bench_compare": {"state": []},
    "bench_parse": {"state": []},
    "bench_report": {"state": ["dest"]},
    "bench_run": {"state": ["results_dir"]},
    "bench_sample": {"state": []},
    "bench_server": {"state": ["log", "ledger_dir"]},
    "bisect_series": {"state": ["dest"]},
    "env_facts": {"state": []},
    "host_tuning": {"state": ["grub_file", "state_dir", "ledger_dir"],
                    "named": {"kernel_cmdline": lambda v: {"isolcpus": v}},
                    "files": {"grub_file": 'GRUB_CMDLINE_LINUX=""\n'}},
    "interface_address": {"state": ["ledger_dir"], "base": {"address": "198.18.0.1/24"},
                          "named": {"interface": lambda v: v}},
    "irq_affinity": {"state": ["state_dir", "ledger_dir"], "named": {"interface": lambda v: v}},
    "kernel_config": {"state": ["dest"]},
    "kernel_patch": {"state": ["state_dir"]},
    "ledger": {"state": ["dir"]},
    "napi_threads": {"state": ["ledger_dir"], "named": {"interface": lambda v: v}},
    "neighbour": {"state": ["ledger_dir"], "base": {"address": "198.18.0.2", "lladdr": "02:00:00:00:00:02"},
                  "named": {"interface": lambda v: v}},
    "netns_topology": {"state": ["ledger_dir"], "named": {"namespaces": lambda v: [v]}},
    "nic_tuning": {"state": ["state_dir", "ledger_dir"], "named": {"interface": lambda v: v}},
    "packages_missing": {"state": []},
    "packet_hook": {"state": ["ledger_dir"], "base": {"type": "nft"}, "named": {"interface": lambda v: v}},
    "pktgen": {"state": ["ledger_dir"], "named": {"interface": lambda v: v}},
    "qemu_exec": {"state": ["rundir", "ledger_dir"]},
    "run_lock": {"state": ["path"], "base": {"owner_pid": 4194000, "owner_host": "ctl"}},
    "source_files": {"state": ["dest"]},
    "vmlab_guest": {"state": ["rundir", "ledger_dir"], "base": {"state": "stopped"},
                    "named": {"name": lambda v: v}},
    "vmlab_link": {"state": ["ledger_dir"], "base": {"guests": []}, "named": {"netns": lambda v: v}},
    "xdp_prog": {"state": ["ledger_dir", "pin_dir"], "base": {"state": "detached"},
                 "named": {"interface": lambda v: v}},
}
FILTERS_PKG = "ansible_collections.xdplab.testbed.plugins.filter"
FILTER_NAMES = sorted(m.name for m in pkgutil.iter_modules(importlib.import_module(FILTERS_PKG).__path__))
# Every filter that takes a name, path, number or free text, with how a hostile value is fed to it; the
# test checks it raises an AnsibleFilterError (or a ValueError) naming the value, or returns.
# (how a hostile value reaches it, whether a refusal must name the value): free text (a console log,
# KTAP output) is handled, names and paths are refused naming the value.
HOSTILE_FILTERS: dict[str, tuple] = {
    "ab_boot_plan": (lambda f, v: f(["a", "b"], v), False),
    "ab_guest_plan": (lambda f, v: f({"index": 0, "kernel": "a"}, v, ["s"]), False),
    "as_build_user": (lambda f, v: f(v), True),
    "bench_scenarios": (lambda f, v: f({}, {v: {"source": v}}, v), True),
    "bench_schedule": (lambda f, v: f(["a", "b"], v), False),
    "bench_table": (lambda f, v: f(v), False),
    "bisect_cpu": (lambda f, v: f([{"variant": v, "replicate": {"level": "boot", "id": v},
                                    "reps": [{"devices": [{"usec_cpu": v, "packets": v}]}]}], v, v), False),
    "bisect_decide": (lambda f, v: f({"baseline": [v, v, v], "candidate": [v, v, v]}, v, v), False),
    "bisect_next": (lambda f, v: f([{"prefix": v}], v, v), False),
    "bisect_report": (lambda f, v: f({"patches": [v], "steps": [v]}), False),
    "boot_console": (lambda f, v: f(v, since=v), False),
    "ktap": (lambda f, v: f(v), False),
    "pktgen_record": (lambda f, v: f({}, v, v, v, v, {}, v, v), False),
    "progress": (lambda f, v: f(v, v, v), False),
    "run_id": (lambda f, v: f(v), True),
    "series_paths": (lambda f, v: f([v], base=v), False),
    "sweep_merge": (lambda f, v: f(v, v), False),
    "sweep_plan": (lambda f, v: f(v, repetitions=v), False),
    "valid_name": (lambda f, v: f(v, "ifname"), True),
}


class Sandbox:
    """Records every change to the file system and every signal a module makes, letting through only
    changes under ``root`` (the collection's own state for this run) and no signal at all (check mode)."""

    WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

    def __init__(self, root: str):
        self.root = os.path.realpath(root)
        self.outside: list[str] = []

    def _ok(self, what: str, path) -> bool:
        if isinstance(path, int):
            return True
        try:
            real = os.path.realpath(os.fsdecode(path))
        except (TypeError, ValueError):
            return True  # a NUL byte: the call itself fails
        if real == self.root or real.startswith(self.root + os.sep):
            return True
        self.outside.append(f"{what} {path!r}")
        return False

    def patches(self):
        import builtins
        import shutil

        real = {n: getattr(os, n) for n in ("unlink", "remove", "rmdir", "rename", "replace", "mkdir", "symlink",
                                            "link", "chmod", "chown", "open", "kill", "killpg")}
        real_open, real_rmtree = builtins.open, shutil.rmtree

        def guard(name, nargs=1):
            def fn(*a, **kw):
                if all(self._ok(name, p) for p in a[:nargs]):
                    return real[name](*a, **kw)
                raise PermissionError(13, "outside the sandbox", a[0])
            return fn

        def os_open(path, flags, *a, **kw):
            if flags & self.WRITE_FLAGS and not self._ok("open for writing", path):
                raise PermissionError(13, "outside the sandbox", path)
            return real["open"](path, flags, *a, **kw)

        def b_open(file, mode="r", *a, **kw):
            if any(c in mode for c in "wax+") and not self._ok(f"open({mode!r})", file):
                raise PermissionError(13, "outside the sandbox", file)
            return real_open(file, mode, *a, **kw)

        def rmtree(path, *a, **kw):
            if self._ok("rmtree", path):
                return real_rmtree(path, *a, **kw)
            raise PermissionError(13, "outside the sandbox", path)

        def no_signal(what):
            def fn(*a, **kw):
                self.outside.append(f"{what}{a!r}")
            return fn

        return [mock.patch("os." + n, guard(n, 2 if n in ("rename", "replace", "symlink", "link") else 1))
                for n in ("unlink", "remove", "rmdir", "rename", "replace", "mkdir", "symlink", "link", "chmod",
                          "chown")] + [
            mock.patch("os.open", os_open), mock.patch("builtins.open", b_open), mock.patch("shutil.rmtree", rmtree),
            mock.patch("os.kill", no_signal("kill")), mock.patch("os.killpg", no_signal("killpg")),
            mock.patch("signal.pidfd_send_signal", no_signal("pidfd_send_signal")),
        ]


def drive(name: str, args: dict, sandbox: Sandbox | None = None) -> tuple[str, dict, list]:
    """Run the module's main() in check mode with run_command recording; return (exit kind, result, calls)."""
    mod = importlib.import_module(f"{MODULES_PKG}.{name}")
    calls: list = []

    def run_command(self, args, *a, **kw):
        calls.append((args, kw))
        return 1, "", "refused by the hostile-input test"

    def exit_json(self, **kw):
        raise Exit("exit", kw)

    def fail_json(self, msg=None, **kw):
        raise Exit("fail", dict(kw, msg=msg))

    margs = dict(args, _ansible_check_mode=True)
    import contextlib

    with contextlib.ExitStack() as stack:
        for patch in (sandbox.patches() if sandbox else []):
            stack.enter_context(patch)
        return _drive_in(mod, name, margs, run_command, exit_json, fail_json, calls)


def _drive_in(mod, name, margs, run_command, exit_json, fail_json, calls):
    with mock.patch.object(basic.AnsibleModule, "run_command", run_command), \
            mock.patch.object(basic.AnsibleModule, "exit_json", exit_json), \
            mock.patch.object(basic.AnsibleModule, "fail_json", fail_json), \
            mock.patch("subprocess.Popen", side_effect=AssertionError("a module spawned a process directly")), \
            mock.patch("os.system", side_effect=AssertionError("os.system")), \
            patch_module_args(margs):
        try:
            mod.main()
        except Exit as done:
            return done.kind, done.result, calls
        except OverflowError as exc:
            # ansible-core 2.19's check_type_int lets int(Decimal('inf')) raise OverflowError instead of
            # its TypeError: the module stops in AnsibleModule's own argument validation (a MODULE
            # FAILURE with that message), before any of our code runs. Accepted only from there.
            frames = [f.filename for f in traceback.extract_tb(exc.__traceback__)]
            if not any(f.endswith("module_utils/common/validation.py") for f in frames):
                raise
            return "fail", {"msg": f"ansible-core argument validation: {exc}"}, calls
    raise AssertionError(f"{name}: main() returned without exit_json/fail_json")


@pytest.mark.parametrize("name", MODULE_NAMES)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_module_hostile_arguments(name, data):
    spec = SPECS[name]
    assert spec, f"{name}: no argument_spec captured"
    import tempfile

    entry = HOSTILE_ENTRIES[name]
    root = tempfile.mkdtemp(prefix="xdplab-hostile-")
    try:
        args = {}
        for opt_name, opt in spec.items():
            if opt_name in entry["state"] and data.draw(st.booleans()):
                args[opt_name] = os.path.join(root, "own", opt_name)  # the collection's own state, in the sandbox
            elif opt.get("required") or data.draw(st.booleans()):
                args[opt_name] = _value_for(opt, data.draw)
        count(f"module: {name}")
        sandbox = Sandbox(root)
        kind, result, calls = drive(name, args, sandbox)
        assert not sandbox.outside, f"{name} in check mode touched {sandbox.outside} with {args!r}"
    finally:
        import shutil

        shutil.rmtree(root, ignore_errors=True)
    if kind == "fail":
        assert isinstance(result.get("msg"), str) and result["msg"], f"{name}: failure without a message"
    for argv, kw in calls:
        assert isinstance(argv, list), f"{name}: ran a shell string {argv!r}"
        assert all(isinstance(a, str) for a in argv), f"{name}: non-string argv element in {argv!r}"
        assert not kw.get("use_unsafe_shell"), f"{name}: use_unsafe_shell with {argv!r}"
    json.dumps(result, default=str)


def test_every_module_and_filter_has_its_hostile_entry():
    """A module or filter added without its entry here fails: the entry says which of its options are
    the collection's own state (sandboxed) and which hostile values it must refuse by name."""
    assert sorted(HOSTILE_ENTRIES) == MODULE_NAMES, (
        f"modules without a hostile entry: {sorted(set(MODULE_NAMES) - set(HOSTILE_ENTRIES))}; "
        f"entries without a module: {sorted(set(HOSTILE_ENTRIES) - set(MODULE_NAMES))}")
    assert sorted(HOSTILE_FILTERS) == FILTER_NAMES, (
        f"filters without a hostile entry: {sorted(set(FILTER_NAMES) - set(HOSTILE_FILTERS))}")
    for name, entry in HOSTILE_ENTRIES.items():
        unknown = (set(entry["state"]) | set(entry.get("named", {})) | set(entry.get("base", {}))) - set(SPECS[name])
        assert not unknown, f"{name}: the entry names options the module does not have: {sorted(unknown)}"


# Values no name, path or number check may let through: each holds a newline, a NUL, a '/..' or a shell
# metacharacter.
refused_text = st.tuples(hostile_text, st.sampled_from(["\n", "\x00", "/../", ";", "$(", "`"]), hostile_text).map(
    "".join)


NAMED = [(m, o) for m, e in sorted(HOSTILE_ENTRIES.items()) for o in sorted(e.get("named", {}))]


def _names(msg: str, value) -> bool:
    return str(value) in msg or repr(value) in msg or repr(value)[1:-1] in msg


@pytest.mark.parametrize(("name", "option"), NAMED)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=refused_text)
def test_a_hostile_name_is_refused_naming_it(name, option, value):
    import shutil
    import tempfile

    entry = HOSTILE_ENTRIES[name]
    root = tempfile.mkdtemp(prefix="xdplab-hostile-")
    try:
        args = dict(entry.get("base", {}), **{o: os.path.join(root, "own", o) for o in entry["state"]})
        args[option] = entry["named"][option](value)
        for opt, content in entry.get("files", {}).items():  # files the module must find to reach the check
            os.makedirs(os.path.dirname(args[opt]), exist_ok=True)
            with open(args[opt], "w", encoding="utf-8") as fh:
                fh.write(content)
        count(f"named: {name} {option}")
        sandbox = Sandbox(root)
        kind, result, _calls = drive(name, args, sandbox)
        assert kind == "fail" and _names(result["msg"], value), f"{name} {option}={value!r}: {kind} {result}"
        assert not sandbox.outside, sandbox.outside
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("name", FILTER_NAMES)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=st.one_of(refused_text, huge_ints, st.floats(allow_nan=True, allow_infinity=True)))
def test_filter_hostile_values(name, value):
    from ansible.errors import AnsibleError

    feed, must_name = HOSTILE_FILTERS[name]
    fn = importlib.import_module(f"{FILTERS_PKG}.{name}").FilterModule().filters()[name]
    count(f"filter: {name}")
    try:
        feed(fn, value)
    except (AnsibleError, ValueError, TypeError) as exc:
        assert str(exc), f"{name}: an error without a message for {value!r}"
        if must_name and isinstance(value, str):
            assert _names(str(exc), value), f"{name}: {exc} does not name {value!r}"
        return
    assert not must_name or not isinstance(value, str), f"{name} let {value!r} through"


def test_the_sandbox_sees_a_change_outside_and_lets_none_through(tmp_path):
    outside = tmp_path / "outside"
    sandbox = Sandbox(str(tmp_path / "own"))
    import contextlib

    with contextlib.ExitStack() as stack:
        for patch in sandbox.patches():
            stack.enter_context(patch)
        for act in (lambda: open(outside, "w"), lambda: os.mkdir(outside), lambda: os.kill(os.getpid(), 0)):
            with contextlib.suppress(PermissionError):
                act()
    assert len(sandbox.outside) == 3 and not outside.exists(), sandbox.outside


def test_zz_every_hostile_target_ran(capsys):
    """Runs last (module order): every target above ran hypothesis cases. A target whose strategy
    stopped drawing, or a test renamed away from its count, shows here as missing."""
    total = sum(HOSTILE_COUNT.values())
    with capsys.disabled():
        print(f"\nhostile inputs run: {total} ({len(HOSTILE_COUNT)} targets)")
        for what, n in sorted(HOSTILE_COUNT.items()):
            print(f"  {n:5d}  {what}")
    expected = {"parser: arbitrary hostile text", "parser: corrupted real capture", "ledger: hostile name",
                "ledger: hostile state_file path", "ledger: hostile pid"} | {f"module: {n}" for n in MODULE_NAMES} \
        | {f"filter: {n}" for n in FILTER_NAMES} | {f"named: {m} {o}" for m, o in NAMED}
    missing = sorted(what for what in expected if HOSTILE_COUNT.get(what, 0) < 1)
    assert not missing, f"no hostile cases ran for {missing} (run the whole file: this test reads the others' counts)"


@pytest.mark.parametrize("args", [
    {"results": ["/tmp/r"], "dest": "/tmp/re\x00port.txt"},
    {"results": ["/tmp/r\x00", "/tmp/s"], "dest": "/tmp/cmp.txt"},
])
def test_a_nul_byte_in_a_report_path_is_named(args):
    # found by the property test above: os.path.realpath raised ValueError out of the module
    kind, result, _calls = drive("bench_report", args)
    assert kind == "fail" and "holds a NUL byte: not a path" in result["msg"], result


def test_every_threat_model_row_names_tests_that_exist():
    """docs/safety.md's threat model: each row names the tests that hold it, and each named test exists."""
    import re

    root = Path(__file__).resolve().parents[2]
    doc = (root / "docs" / "safety.md").read_text(encoding="utf-8")
    table = doc[doc.index("## Threat model"):]
    rows = [line for line in table.splitlines() if line.startswith("| ")][1:]
    assert len(rows) >= 8
    for row in rows:
        held = row.rstrip(" |").rsplit(" | ", 1)[1]
        files = re.findall(r"`(tests/[\w/]+\.py)(?:::(\w+))?`(?: \(([^)]*)\))?", held)
        assert files, f"a threat model row names no test: {row[:80]}"
        for path, name, names in files:
            text = (root / path).read_text(encoding="utf-8")
            for test in [name] + re.findall(r"`(test_\w+)`", names):
                assert not test or f"def {test}(" in text, f"{path} has no {test}"
