# SPDX-License-Identifier: GPL-3.0-or-later
"""The shared command runner (common/_command.py): argv in the C locale, check mode, failures that carry
rc/stdout/stderr/cmd; and the C locale set there only."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _command

ROOT = Path(__file__).resolve().parents[2]


class Module:
    def __init__(self, rc=0, out="", err="", check_mode=False):
        self.check_mode = check_mode
        self.answer = (rc, out, err)
        self.calls: list[tuple[list[str], dict]] = []

    def run_command(self, argv, **kwargs):
        self.calls.append((argv, kwargs))
        return self.answer


# (run's keyword arguments, the module's answer (rc, out, err), check mode,
#  the run_command call expected (None: not run), the result or the CommandError message)
CASES = [
    ({}, (0, "ok\n", ""), False, {"environ_update": {"LC_ALL": "C"}}, (0, "ok\n", "")),
    ({"env": {"HOME": "/nonexistent"}}, (0, "", ""), False,
     {"environ_update": {"LC_ALL": "C", "HOME": "/nonexistent"}}, (0, "", "")),
    ({"data": "x", "binary_data": True, "cwd": "/"}, (0, "", ""), False,
     {"environ_update": {"LC_ALL": "C"}, "data": "x", "binary_data": True, "cwd": "/"}, (0, "", "")),
    ({"changes": True}, (0, "", ""), True, None, (0, "", "")),
    ({}, (0, "read", ""), True, {"environ_update": {"LC_ALL": "C"}}, (0, "read", "")),
    ({}, (2, "", "RTNETLINK answers: Operation not permitted\n"), False, {"environ_update": {"LC_ALL": "C"}},
     "ip link failed (rc=2): RTNETLINK answers: Operation not permitted"),
    ({"what": "attaching veth0"}, (1, "only stdout\n", ""), False, {"environ_update": {"LC_ALL": "C"}},
     "attaching veth0 failed (rc=1): only stdout"),
    ({"gone": ("Cannot find device",)}, (1, "", "Cannot find device \"veth9\"\n"), False,
     {"environ_update": {"LC_ALL": "C"}}, (1, "", "Cannot find device \"veth9\"\n")),
    ({"ok": (0, 1)}, (1, "", ""), False, {"environ_update": {"LC_ALL": "C"}}, (1, "", "")),
    ({"ok": (0, 1)}, (2, "", "boom"), False, {"environ_update": {"LC_ALL": "C"}}, "ip link failed (rc=2): boom"),
    ({"ok": None}, (255, "", "x"), False, {"environ_update": {"LC_ALL": "C"}}, (255, "", "x")),
]


@pytest.mark.parametrize(("kwargs", "answer", "check_mode", "call", "want"), CASES)
def test_run(kwargs, answer, check_mode, call, want):
    module = Module(*answer, check_mode=check_mode)
    argv = ["/usr/sbin/ip", "link", "set", "dev", "veth0", "up"]
    if isinstance(want, str):
        with pytest.raises(_command.CommandError) as exc:
            _command.run(module, argv, **kwargs)
        assert str(exc.value) == want
        assert exc.value.fail_kwargs() == {"msg": want, "rc": answer[0], "stdout": answer[1], "stderr": answer[2],
                                           "cmd": argv}
    else:
        assert _command.run(module, argv, **kwargs) == want
    assert module.calls == ([] if call is None else [(argv, call)])


def test_a_failure_names_the_last_lines_of_what_the_tool_said():
    err = "".join(f"line {i}\n" for i in range(40))
    with pytest.raises(_command.CommandError) as exc:
        _command.run(Module(1, "", err), ["make", "olddefconfig"])
    said = str(exc.value).split(": ", 1)[1].splitlines()
    assert said == [f"line {i}" for i in range(25, 40)]


def test_c_env_is_this_environment_in_the_c_locale(monkeypatch):
    monkeypatch.setenv("LC_ALL", "de_DE.UTF-8")
    monkeypatch.setenv("XDPLAB_TEST", "1")
    env = _command.c_env(HOME="/nonexistent")
    assert env["LC_ALL"] == "C" and env["XDPLAB_TEST"] == "1" and env["HOME"] == "/nonexistent"


# Files that still set the locale themselves: modules and helpers other work owns for now (they move to
# the runner when it lands), and a shell line run inside a QEMU guest, which no module runner reaches.
LEFT = {"plugins/modules/bench_sample.py", "plugins/modules/bench_run.py",
        "plugins/modules/vmlab_guest.py", "plugins/module_utils/kernel/_qemu_guest.py"}


def test_the_c_locale_is_set_in_one_place():
    setters = {str(p.relative_to(ROOT)) for p in (ROOT / "plugins").rglob("*.py")
               if re.search(r"LC_ALL|\bLANG\b", p.read_text(encoding="utf-8"))}
    assert setters - LEFT == {"plugins/module_utils/common/_command.py"}
    assert LEFT <= setters, f"{sorted(LEFT - setters)} no longer set the locale: take them off LEFT"
