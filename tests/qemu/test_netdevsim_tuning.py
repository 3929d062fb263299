# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""nic_tuning on netdevsim, INSIDE the QEMU-booted kernel (netdevsim is not in the host kernel).

tests/qemu/test_netdevsim_runner.py boots the guest kernel with the collection's QEMU runner and runs
this file there with XDPLAB_IN_GUEST=1 (a guest `pytest tests/qemu` through qemu_exec runs it too);
on the host this module is skipped as a whole because that runner is what executes it.
netdevsim implements coalesce (all parameters), rings (maxima 4096), pause (rx/tx, autoneg
refused), channels (combined, maximum = the device's queue count) and features: apply,
idempotence, check mode and restore exact, each read back with the ethtool CLI.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import run_module_file

# Same guest test as tests/qemu/test_guest_kernel.py (hostname set by _qemu's init), or the runner's variable.
IN_GUEST = os.environ.get("XDPLAB_IN_GUEST") == "1" or (
    os.uname().nodename == "xdplab-guest" and Path("/run/xdplab-out").is_dir())
if not IN_GUEST:
    pytest.skip("runs inside the QEMU guest (tests/qemu/test_netdevsim_runner.py boots it)", allow_module_level=True)

pytestmark = pytest.mark.qemu

ROOT = Path(__file__).resolve().parents[2]
MODULES = ROOT / "plugins" / "modules"
NSIM_ID = 66  # the guest is ours alone; one device per test, removed afterwards
QUEUES = 4


def sh(*argv: str) -> str:
    proc = subprocess.run(list(argv), capture_output=True, text=True, check=False, env=dict(os.environ, LC_ALL="C"))
    if proc.returncode != 0:
        raise AssertionError(f"{argv} failed rc={proc.returncode}: {proc.stderr}")
    return proc.stdout


def run_module(name: str, args: dict, check: bool = False) -> dict:
    # The tuning modules record their snapshot in a state ledger before they act: the guest's root is
    # the host's, read-only, so the ledger goes beside the test's own snapshot directory.
    if "state_dir" in args and "ledger_dir" not in args:
        args = dict(args, ledger_dir=os.path.join(os.path.dirname(args["state_dir"]), "ledger"))
    return run_module_file(MODULES / f"{name}.py", dict(args, _ansible_check_mode=check, _ansible_diff=True))


def cli_state(ifname: str) -> dict[str, str]:
    """Everything the ethtool CLI shows for the groups netdevsim implements, plus the MTU."""
    return {
        "coalesce": sh("ethtool", "-c", ifname),
        "ring": sh("ethtool", "-g", ifname),
        "pause": sh("ethtool", "-a", ifname),
        "channels": sh("ethtool", "-l", ifname),
        "features": sh("ethtool", "-k", ifname),
        "mtu": Path(f"/sys/class/net/{ifname}/mtu").read_text().strip(),
    }


def cli_value(text: str, label: str, section: str | None = None) -> str:
    if section:
        text = text.split(section, 1)[1]
    m = re.search(rf"^{re.escape(label)}:\s+(\S+)", text, re.MULTILINE)
    assert m, f"{label!r} not in ethtool output:\n{text}"
    return m.group(1)


@pytest.fixture
def nsim(tmp_path):
    """A netdevsim device with one port and QUEUES queues; (ifname, state_dir)."""
    bus = Path("/sys/bus/netdevsim")
    if not bus.exists():
        pytest.fail("the guest kernel has no netdevsim (CONFIG_NETDEVSIM): files/kconfig/netdevsim.config")
    (bus / "new_device").write_text(f"{NSIM_ID} 1 {QUEUES}")
    try:
        net = bus / "devices" / f"netdevsim{NSIM_ID}"
        for _dummy in range(100):
            names = list(net.glob("net/*"))
            if names:
                break
            time.sleep(0.05)
        assert names, "netdevsim created no net device"
        yield names[0].name, str(tmp_path / "state")
    finally:
        (bus / "del_device").write_text(str(NSIM_ID))


def test_netdevsim_apply_idempotent_restore_exact(nsim):
    ifname, state_dir = nsim
    before = cli_state(ifname)
    args = {
        "interface": ifname,
        "coalesce": {"rx_usecs": 30, "rx_frames": 16, "tx_usecs": 40, "adaptive_rx": False, "adaptive_tx": True},
        "ring": {"rx": 1024, "tx": "max"},
        "pause": {"autoneg": False, "rx": True, "tx": False},
        "channels": {"combined": 2},
        "features": {"gro": False, "hw-tc-offload": True},
        "mtu": 9000,
        "state_dir": state_dir,
    }
    check = run_module("nic_tuning", args, check=True)
    assert check["rc"] == 0 and check["changed"], check
    assert cli_state(ifname) == before, "check mode changed the device"

    first = run_module("nic_tuning", args)
    assert first["rc"] == 0 and first["changed"], first
    assert first["mismatched"] == {}
    st = cli_state(ifname)
    assert cli_value(st["coalesce"], "rx-usecs") == "30"
    assert cli_value(st["coalesce"], "rx-frames") == "16"
    assert cli_value(st["coalesce"], "tx-usecs") == "40"
    assert cli_value(st["coalesce"], "Adaptive RX") == "off"
    assert cli_value(st["ring"], "RX", "Current hardware settings") == "1024"
    assert cli_value(st["ring"], "TX", "Current hardware settings") == "4096"
    assert cli_value(st["pause"], "RX") == "on" and cli_value(st["pause"], "TX") == "off"
    assert cli_value(st["channels"], "Combined", "Current hardware settings") == "2"
    assert cli_value(st["features"], "generic-receive-offload") == "off"
    assert cli_value(st["features"], "hw-tc-offload") == "on"
    assert st["mtu"] == "9000"
    assert first["state"]["ring"]["max"]["rx"] == 4096
    assert first["state"]["channels"]["max"]["combined"] == QUEUES

    second = run_module("nic_tuning", args)
    assert second["rc"] == 0 and not second["changed"], second["changes"]

    back = run_module("nic_tuning", {"interface": ifname, "state": "restored", "state_dir": state_dir})
    assert back["rc"] == 0 and back["changed"] and back["snapshot_removed"], back
    assert cli_state(ifname) == before


def test_netdevsim_ring_above_maximum_names_it(nsim):
    ifname, state_dir = nsim
    before = cli_state(ifname)
    out = run_module("nic_tuning", {"interface": ifname, "ring": {"rx": 8192}, "coalesce": {"rx_usecs": 7},
                                    "state_dir": state_dir})
    assert out["rc"] != 0 and f"{ifname}: ring rx=8192 exceeds the device maximum 4096" in out["msg"]
    assert cli_state(ifname) == before


def test_netdevsim_channels_above_queue_count(nsim):
    ifname, state_dir = nsim
    out = run_module("nic_tuning", {"interface": ifname, "channels": {"combined": QUEUES + 1},
                                    "state_dir": state_dir})
    assert out["rc"] != 0 and f"channels combined={QUEUES + 1} exceeds the device maximum {QUEUES}" in out["msg"]


def test_netdevsim_kernel_rejection_rolls_back(nsim):
    """netdevsim refuses pause autoneg (EINVAL) after the earlier groups were applied: they are put back."""
    ifname, state_dir = nsim
    before = cli_state(ifname)
    out = run_module("nic_tuning", {"interface": ifname, "channels": {"combined": 1}, "coalesce": {"rx_usecs": 99},
                                    "pause": {"autoneg": True}, "state_dir": state_dir})
    assert out["rc"] != 0 and "pause" in out["msg"] and "rolled back" in out["msg"], out["msg"]
    assert cli_state(ifname) == before


def test_netdevsim_private_flags_unsupported_path(nsim):
    ifname, state_dir = nsim
    out = run_module("nic_tuning", {"interface": ifname, "private_flags": {"legacy-rx": True},
                                    "state_dir": state_dir})
    assert out["rc"] != 0 and f"{ifname}: private flag legacy-rx is not supported" in out["msg"]


def test_netdevsim_readback_matches_envfacts_reader(nsim):
    """The verify read-back and the fingerprint's ethtool part are the same function."""
    ifname, _dummy = nsim
    sys.path.insert(0, str(ROOT / ".collections"))
    from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _ethtool_netlink as _ethtool

    view = _ethtool.read_nic_state(ifname)
    assert set(view) >= {"coalesce", "ring", "pause", "channels", "features"}
    assert view["pause"]["autoneg"] is False
    assert view["channels"]["combined"] == QUEUES
