# SPDX-License-Identifier: GPL-3.0-or-later
"""Connection plugin xdplab.testbed.netns without the kernel: the command it runs (captured at the
subprocess boundary), the fallback to the host name, and the unreachable error naming the namespace.
(Option resolution from inventory variables is covered by tests/integration/test_netns_connection.py.)"""

from __future__ import annotations

import shlex
import subprocess

import pytest
from ansible.errors import AnsibleConnectionFailure
from ansible.playbook.play_context import PlayContext
from ansible_collections.xdplab.testbed.plugins.connection import netns as netns_plugin


class FakePopen:
    """Records argv; answers like a finished process."""

    calls: list = []

    def __init__(self, args, **kwargs):
        FakePopen.calls.append((args, kwargs))
        self.returncode = 0

    def communicate(self, in_data=None):
        return b"out", b""


def make(remote_addr="gen", **options):
    pc = PlayContext()
    pc.remote_addr = remote_addr
    conn = netns_plugin.Connection(pc)
    # The plugin loader would fill these from inventory variables; set them as it would.
    conn.get_option = options.get
    return conn


@pytest.fixture
def fake_run(monkeypatch):
    FakePopen.calls = []
    monkeypatch.setattr(subprocess, "Popen", FakePopen)
    monkeypatch.setattr(netns_plugin.os.path, "ismount", lambda path: path.startswith("/run/netns/h3-"))
    return FakePopen.calls


def test_command_runs_under_ip_netns_exec(fake_run):
    conn = make(netns="h3-dut", ip_executable="/usr/sbin/ip")
    rc, out, err = conn.exec_command("echo 'a b' && ip -j link")
    assert (rc, out) == (0, b"out")
    (argv, kwargs), = fake_run
    assert kwargs["shell"] is True  # the local plugin's convention: one shell line
    words = shlex.split(argv)
    assert words[:4] == ["/usr/sbin/ip", "netns", "exec", "h3-dut"]
    assert words[4].endswith("sh") and words[5] == "-c"
    assert words[6] == "echo 'a b' && ip -j link"  # quoted as one argument, unchanged


def test_netns_option_wins_else_the_host_name(fake_run):
    make(remote_addr="h3-host", netns="h3-option", ip_executable="/bin/ip").exec_command("true")
    make(remote_addr="h3-host", ip_executable="/bin/ip").exec_command("true")
    assert [shlex.split(argv)[3] for argv, _dummy in fake_run] == ["h3-option", "h3-host"]


def test_missing_namespace_is_unreachable_and_named(fake_run):
    conn = make(netns="xdplab-nosuch")
    with pytest.raises(AnsibleConnectionFailure) as err:
        conn.exec_command("true")
    assert "'xdplab-nosuch' does not exist" in str(err.value)
    assert fake_run == []


@pytest.mark.parametrize("bad", ["../etc", "a/b", "-rf", "x" * 33, "sp ace"])
def test_bad_namespace_name_is_refused_before_running_anything(fake_run, bad):
    with pytest.raises(AnsibleConnectionFailure) as err:
        make(netns=bad).exec_command("true")
    assert repr(bad) in str(err.value)
    assert fake_run == []
