# SPDX-License-Identifier: GPL-3.0-or-later
"""common._netns_switch on real namespaces: the function runs in the named namespace, and the thread is
back in its own afterwards, whether the function returned or raised; a missing namespace or a name
that is not one path component fails before the function runs."""

from __future__ import annotations

import os
import subprocess
import uuid

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _netns_switch


def _inode() -> int:
    return os.stat("/proc/thread-self/ns/net").st_ino


@pytest.fixture
def netns():
    name = f"xdplab-sw-{uuid.uuid4().hex[:8]}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    yield name
    subprocess.run(["ip", "netns", "delete", name], check=True)


def test_the_function_runs_there_and_the_thread_comes_back(netns):
    home, there = _inode(), os.stat(f"/run/netns/{netns}").st_ino
    assert home != there
    assert _netns_switch.call_in_netns(netns, _inode) == there
    assert _inode() == home
    # /proc/sys/net follows the thread: the fresh namespace has only lo
    assert _netns_switch.call_in_netns(netns, lambda: sorted(os.listdir("/proc/sys/net/ipv4/conf"))) == [
        "all", "default", "lo"]

    def fail():
        assert _inode() == there
        raise RuntimeError("inside")

    with pytest.raises(RuntimeError, match="inside"):
        _netns_switch.call_in_netns(netns, fail)
    assert _inode() == home


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "../../proc/1/ns/net", "a\0b"])
def test_a_name_that_is_not_one_path_component_is_refused(name):
    ran = []
    with pytest.raises(ValueError, match="single path component"):
        _netns_switch.call_in_netns(name, lambda: ran.append(1))
    assert ran == [] and _inode() == os.stat("/proc/self/ns/net").st_ino


def test_a_missing_namespace_fails_before_the_function_runs():
    ran = []
    with pytest.raises(FileNotFoundError):
        _netns_switch.call_in_netns(f"xdplab-none-{uuid.uuid4().hex[:8]}", lambda: ran.append(1))
    assert ran == []
