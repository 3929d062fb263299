# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_tuning: request normalization, the NIC planner against raw reads shaped like the kernel's
(netdevsim-like and veth-like), snapshots and the snapshot store."""

from __future__ import annotations

import json
import os

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _plan_and_snapshots as t

# A multi-queue NIC as read through ethtool netlink (_ethtool.read_nic_raw shape).
NIC = {
    "ring": {"rx_max": 4096, "rx_mini_max": 0, "rx_jumbo_max": 0, "tx_max": 4096, "rx": 512, "tx": 512,
             "rx_mini": 0, "rx_jumbo": 0, "tx_push": False},
    "channels": {"combined_max": 8, "combined": 4},
    "coalesce": {"rx_usecs": 50, "rx_frames": 0, "tx_usecs": 50, "adaptive_rx": True, "adaptive_tx": True},
    "pause": {"autoneg": True, "rx": True, "tx": True},
    "features": {
        "hw": {"rx-gro": True, "rx-lro": False, "tx-tcp-segmentation": True, "tx-tcp6-segmentation": True,
               "tx-tcp-ecn-segmentation": False, "rx-ntuple-filter": True, "vlan-challenged": False},
        "wanted": {"rx-gro": True, "rx-lro": False, "tx-tcp-segmentation": True, "tx-tcp6-segmentation": True,
                   "tx-tcp-ecn-segmentation": False, "rx-ntuple-filter": False, "vlan-challenged": False},
        "active": {},
        "nochange": {"vlan-challenged": True},
    },
    "private_flags": {"legacy-rx": False, "link-down-on-close": False},
}
LINK = {"mtu": 1500, "min_mtu": 68, "max_mtu": 9600}


def plan(desired, current=None, unsupported=None, link=None):
    return t.plan_nic("eth9", current if current is not None else NIC, unsupported or {},
                      t.normalize_request(desired), LINK if link is None else link)


def test_latency_setup_plans_exactly_the_differences():
    p = plan({"coalesce": {"rx-usecs": 30, "adaptive_rx": "off"}, "pause": {"autoneg": False, "rx": False, "tx": True},
              "features": {"gro": False, "lro": False, "ntuple": True}, "ring": {"rx": 4096}, "mtu": 9000})
    assert not p.errors and not p.unsupported
    assert p.changes == {
        "coalesce": {"rx_usecs": 30, "adaptive_rx": False},
        "pause": {"autoneg": False, "rx": False},
        "features": {"rx-gro": False, "rx-ntuple-filter": True},
        "ring": {"rx": 4096},
        "mtu": {"mtu": 9000},
    }
    assert p.before["coalesce"] == {"rx_usecs": 50, "adaptive_rx": True}
    assert p.before["mtu"] == {"mtu": 1500}
    assert t.apply_order(p.changes) == ["mtu", "ring", "features", "coalesce", "pause"]


def test_nothing_to_do_is_unchanged():
    p = plan({"coalesce": {"rx_usecs": 50}, "channels": {"combined": 4}, "features": {"gro": True}, "mtu": 1500})
    assert not p.changed and not p.errors and not p.unsupported


def test_ring_above_maximum_names_the_maximum():
    p = plan({"ring": {"rx": 8192}})
    assert p.errors == ["eth9: ring rx=8192 exceeds the device maximum 4096"]
    assert not p.changed


def test_ring_max_keyword_resolves_to_device_maximum():
    p = plan({"ring": {"rx": "max", "tx": "MAX"}, "channels": {"combined": "max"}})
    assert p.changes == {"ring": {"rx": 4096, "tx": 4096}, "channels": {"combined": 8}}


def test_channel_kind_without_maximum_is_unsupported():
    p = plan({"channels": {"rx": 2}})
    assert [u.message for u in p.unsupported] == ["eth9: channels setting rx is not supported by the device"]


def test_tso_alias_sets_only_changeable_members():
    p = plan({"features": {"tso": False}})
    assert p.changes == {"features": {"tx-tcp-segmentation": False, "tx-tcp6-segmentation": False}}


def test_fixed_and_unknown_features():
    p = plan({"features": {"lro": True, "vlan-challenged": True, "warp-drive": True}})
    msgs = [u.message for u in p.unsupported]
    assert "eth9: feature lro (rx-lro) is fixed on this device" in msgs
    assert "eth9: feature vlan-challenged (vlan-challenged) is fixed on this device" in msgs
    assert len(p.errors) == 1 and "unknown feature name 'warp-drive'" in p.errors[0]


def test_private_flags_unknown_name_lists_device_flags():
    p = plan({"private_flags": {"legacy-rx": True, "turbo": True}})
    assert p.changes == {"private_flags": {"legacy-rx": True}}
    assert p.errors == ["eth9: unknown private flag 'turbo' (the device has: legacy-rx, link-down-on-close)"]


def test_veth_like_device_unsupported_groups_carry_kernel_reason():
    veth = {"channels": {"rx_max": 4, "tx_max": 4, "rx": 4, "tx": 4}, "features": NIC["features"]}
    p = plan({"coalesce": {"rx_usecs": 30}, "channels": {"rx": 2}}, veth,
             {"coalesce": "Operation not supported"})
    assert [u.message for u in p.unsupported] == [
        "eth9: coalesce setting rx_usecs is not supported by the device (Operation not supported)"]
    assert p.changes == {"channels": {"rx": 2}}
    assert t.split_unsupported(p, "fail") == ([p.unsupported[0].message], [])
    assert t.split_unsupported(p, "skip") == ([], [p.unsupported[0].message])


def test_mtu_out_of_range():
    assert plan({"mtu": 9700}).errors == ["eth9: mtu 9700 is outside the device range 68..9600"]
    assert plan({"mtu": 60}).errors == ["eth9: mtu 60 is outside the device range 68..9600"]


@pytest.mark.parametrize("desired,needle", [
    ({"coalesce": {"rx_usec": 1}}, "unknown coalesce setting 'rx_usec'"),
    ({"coalesce": {"rx_usecs": -1}}, "coalesce rx_usecs: -1 is outside 0..4294967295"),
    ({"coalesce": {"rx_usecs": "fast"}}, "expected a non-negative integer, got 'fast'"),
    ({"coalesce": {"rx_usecs": True}}, "expected a non-negative integer"),
    ({"pause": {"rx": "perhaps"}}, "pause rx: expected on/off"),
    ({"ring": {"tx": "max-ish"}}, "ring tx: expected a non-negative integer"),
    ({"mtu": 0}, "mtu must be a positive integer"),
    ({"features": ["gro"]}, "features must be a dict"),
])
def test_bad_input_is_named(desired, needle):
    with pytest.raises(t.TuningInputError, match=None) as exc:
        t.normalize_request(desired)
    assert needle in str(exc.value)


def test_cli_spellings_are_aliases():
    req = t.normalize_request({"coalesce": {"rx-frames": 8, "use_adaptive_tx": "on"}, "ring": {"rx_pending": 1}})
    assert req == {"coalesce": {"rx_frames": 8, "adaptive_tx": True}, "ring": {"rx": 1}}


def test_snapshot_covers_restorable_settings_only():
    snap = t.snapshot_from_raw(NIC, LINK)
    assert snap["ring"] == {"rx": 512, "tx": 512, "tx_push": False}  # rx_mini/rx_jumbo have maximum 0
    assert snap["channels"] == {"combined": 4}
    assert "vlan-challenged" not in snap["features"] and "rx-lro" not in snap["features"]
    assert snap["features"]["rx-ntuple-filter"] is False
    assert snap["mtu"] == 1500
    # Planning the snapshot against the state it came from changes nothing.
    p = t.plan_nic("eth9", NIC, {}, snap, LINK)
    assert not p.changed and not p.errors and not p.unsupported


def test_store_never_overwrites_and_merges_new_keys(tmp_path):
    moves = []
    store = t.SnapshotStore(str(tmp_path / "state"))

    def mover(src, dst):
        moves.append(dst)
        os.replace(src, dst)

    written, doc = store.save("nic-host-eth9", "nic", "eth9", {"channels": {"combined": 4}}, mover)
    assert written and moves == [store.path("nic-host-eth9")]
    written, doc2 = store.save("nic-host-eth9", "nic", "eth9", {"channels": {"combined": 1}}, mover)
    assert not written and doc2["state"] == {"channels": {"combined": 4}}
    written, doc3 = store.save("nic-host-eth9", "nic", "eth9", {"channels": {"combined": 1}, "mtu": 1500}, mover)
    assert written and doc3["state"] == {"channels": {"combined": 4}, "mtu": 1500}
    on_disk = json.loads(open(store.path("nic-host-eth9")).read())
    assert on_disk["schema"] == t.SNAPSHOT_SCHEMA and on_disk["state"] == doc3["state"]
    assert sorted(os.listdir(tmp_path / "state")) == ["nic-host-eth9.json"]  # no temp files left
    assert store.remove("nic-host-eth9") and not store.remove("nic-host-eth9")
    assert store.load("nic-host-eth9") is None


def test_store_rejects_foreign_files_and_bad_keys(tmp_path):
    store = t.SnapshotStore(str(tmp_path))
    (tmp_path / "x.json").write_text('{"schema": "something/v9"}')
    with pytest.raises(t.TuningInputError, match="is not a xdplab.tuning-snapshot/v1"):
        store.load("x")
    for bad in ("../etc/passwd", ".hidden", "a b"):
        with pytest.raises(t.TuningInputError, match="snapshot key"):
            store.path(bad)


def test_current_netns_name(tmp_path):
    proc = tmp_path / "proc/self/ns"
    proc.mkdir(parents=True)
    (proc / "net").write_text("")
    run = tmp_path / "run"
    run.mkdir()
    os.link(proc / "net", run / "dut")
    (run / "gen").write_text("")
    assert t.current_netns_name(str(tmp_path / "proc"), str(run)) == "dut"
    assert t.current_netns_name(str(tmp_path / "proc"), str(tmp_path / "none")) == "host"


def test_wait_for_carrier_returns_once_the_link_is_back(tmp_path):
    carrier = tmp_path / "class" / "net" / "igb0" / "carrier"
    carrier.parent.mkdir(parents=True)
    carrier.write_text("0\n")
    now = [0.0]

    def sleep(dt):
        now[0] += dt
        if now[0] >= 1.0:
            carrier.write_text("1\n")

    assert t.wait_for_carrier("igb0", timeout=5, sys_root=str(tmp_path), sleep=sleep, clock=lambda: now[0])
    assert 1.0 <= now[0] < 1.5


def test_wait_for_carrier_gives_up_after_the_timeout(tmp_path):
    # No carrier file at all (a device that is down answers EINVAL; a missing one is the same here).
    now = [0.0]

    def sleep(dt):
        now[0] += dt

    assert not t.wait_for_carrier("igb0", timeout=3, sys_root=str(tmp_path), sleep=sleep, clock=lambda: now[0])
    assert 3.0 <= now[0] < 3.5


def test_queue_and_mtu_changes_come_before_pause_and_are_the_resetting_ones():
    order = t.apply_order({"pause": {"rx": False}, "ring": {"rx": 512}, "channels": {"combined": 1}})
    assert order == ["channels", "ring", "pause"]
    assert set(t.RESETTING_GROUPS) == {"mtu", "channels", "ring"}
