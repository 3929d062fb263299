# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run a function with the calling thread in a named network namespace, and always come back.

PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.

Procfs paths under /proc/sys/net, /proc/net and /proc/interrupts' view of devices, and sockets opened
meanwhile, follow the thread's namespace. pyroute2's ``netns.pushns``/``popns`` do this too, but keep
the saved namespace in a module-global stack and need pyroute2; this is one setns(2) there and one
back, on the thread's own /proc/thread-self/ns/net, with no dependency, so every module (the ledger's
cleaner, netns_topology, the vmlab tap opener) shares it.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable
from typing import TypeVar

NETNS_RUN_DIR = "/run/netns"
CLONE_NEWNET = 0x40000000
T = TypeVar("T")


def setns(fd: int) -> None:
    """setns(2) into the network namespace open at fd (OSError with errno on failure)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def netns_path(name: str, run_dir: str = NETNS_RUN_DIR) -> str:
    """The bind mount of a named namespace; ValueError for a name that is not one path component."""
    if not name or "/" in name or name in (".", "..") or "\0" in name:
        raise ValueError(f"network namespace name {name!r} is not a single path component")
    return os.path.join(run_dir, name)


def call_in_netns(name: str, func: Callable[[], T], run_dir: str = NETNS_RUN_DIR) -> T:
    """func() with this thread in namespace ``name``; back in the caller's namespace afterwards, whether
    func returns or raises. OSError (ENOENT) when the namespace does not exist, before func runs."""
    there = os.open(netns_path(name, run_dir), os.O_RDONLY | os.O_CLOEXEC)
    try:
        here = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        try:
            setns(there)
            try:
                return func()
            finally:
                setns(here)
        finally:
            os.close(here)
    finally:
        os.close(there)
