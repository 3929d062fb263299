# SPDX-License-Identifier: GPL-3.0-or-later
"""The integration suite as a whole leaves nothing of ours behind on the host.

Each test cleans up after itself; this checks the sum at the end of the session: no new entry in the
host's ledger (a test that forgets `ledger_dir` writes there), no namespace, no /run/xdplab or
/var/lib/xdplab/ledger file that was not there before.

`make integration` runs the files in two pytest-xdist workers (`--dist loadgroup`): the files whose runs
take the host's run lock are one group, handed out first and run in a row by one worker; every other
file is a group of its own, taken by whichever worker is free. Those files name what they create
uniquely. The listing is taken by the controller, before any worker starts and after all have ended, so
the two compare like with like. The lab in a
box (inventories/vmlab), which may run beside them, is not theirs: its namespace and run
directory come and go with it, and molecule/vmlab's destroy checks that nothing of it is left.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from _netns_runs import RUN_LOCK_GROUP

WATCHED = ("/var/lib/xdplab/ledger", "/run/netns", "/run/xdplab")
LISTING = pytest.StashKey[set]()
_VMLAB = Path(__file__).resolve().parents[2] / "roles" / "vmlab"


def _lab_paths() -> tuple[str, ...]:
    """The lab in a box's namespace and run directory, as its role names them."""
    defaults = yaml.safe_load((_VMLAB / "defaults" / "main.yml").read_text())
    private = yaml.safe_load((_VMLAB / "vars" / "main.yml").read_text())
    return (f"/run/netns/{defaults['vmlab_netns']}", private["__vmlab_run_dir"])


def _listing() -> set[str]:
    found = set()
    for top in WATCHED:
        for dirpath, dirnames, filenames in os.walk(top):
            found.update(os.path.join(dirpath, n) for n in dirnames + filenames)
    lab = _lab_paths()
    return {path for path in found if not any(path == top or path.startswith(top + "/") for top in lab)}


def _is_worker(config: pytest.Config) -> bool:
    """A pytest-xdist worker: its session is a slice of the whole, so the controller checks."""
    return hasattr(config, "workerinput")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test file with no group of its own is its own group (each module's fixtures set up once); the
    run-lock group comes first (with `--no-loadscope-reorder`, in this order), as the longest chain."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.path.name))
    items.sort(key=lambda item: item.get_closest_marker("xdist_group").args[0] != RUN_LOCK_GROUP)


def pytest_sessionstart(session: pytest.Session) -> None:
    if not _is_worker(session.config):
        session.config.stash[LISTING] = _listing()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _is_worker(session.config):
        return
    left = sorted(_listing() - session.config.stash[LISTING])
    if left:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"FAILED: the integration tests left these behind: {left}", red=True, bold=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
