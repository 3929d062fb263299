# SPDX-License-Identifier: GPL-3.0-or-later
"""The ledger's table of kinds (state/_kinds.py): every row complete, every undo field an entry holds
checked by its row when the entry is read, so an entry with a missing or wrongly typed field is set
aside and named by ``ledger state=cleaned``, never acted on."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from _fake_module import FakeModule
from _run_module import run_module
from ansible_collections.xdplab.testbed.plugins.module_utils.state import _kinds, _ledger

BOOT = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"

# One entry per kind as the modules that write it record it (key, netns, undo fields): the table must
# take every one of them.
GOOD = {
    "netns": ({"name": "xdplab-dut"}, None,
              {"found": True, "inode": 4026532000,
               "undo_found": {"links_created": ["veth9"], "lo_was_down": True,
                              "sysctls": {"net.ipv4.ip_forward": "0", "net.ipv6.conf.all.forwarding": None},
                              "links": {"eth0": {"mtu": 1500, "mac": "02:00:00:00:00:01", "gro": None, "up": True,
                                                 "addresses_added": ["198.18.0.1/24"],
                                                 "addresses_removed": []}}}}),
    "xdp": ({"interface": "veth0"}, "xdplab-dut",
            {"previous": [{"mode": "native", "prog_id": 42, "tag": "0123456789abcdef", "name": "xdp_pass",
                           "pin": "/sys/fs/bpf/xdplab/veth0-native"}]}),
    "tc": ({"interface": "tap0"}, "xdplab-lab", {"created_clsact": True, "pref": 1, "handle": 1, "filter": "u32"}),
    "nft": ({"family": "inet", "table": "xdplab_bench"}, "xdplab-dut", {}),
    "ovs": ({"datapath": "xdplab-ovs"}, "xdplab-dut", {}),
    "neigh": ({"interface": "veth0", "address": "198.18.0.2"}, "xdplab-gen",
              {"previous": {"lladdr": "02:00:00:00:00:02", "state": "permanent"}}),
    "addr": ({"interface": "veth0", "address": "198.18.0.1/24"}, "xdplab-gen", {"set_up": True}),
    "tuning": ({"state_file": "/var/lib/xdplab/tuning/host-host-knobs.json"}, None,
               {"snapshot_kind": "host", "subject": "knobs", "grub_file": "/etc/default/grub"}),
    "qemu": ({"pid": 4242, "cmdline_sha256": "0" * 64, "owner": 4000, "owner_start": 12, "start": 13,
              "boot_id": BOOT}, None, {}),
    "process": ({"pid": 4242, "start": 13, "boot_id": BOOT}, "xdplab-gen",
                {"tool": "pktgen", "pktgen": "/proc/net/pktgen", "log": "/run/xdplab/bench-server-x.log"}),
    "napi": ({"interface": "veth0"}, "xdplab-dut", {"found": "0", "affinity": {"4242": [0, 1]}}),
}

# (kind, field, bad value, what the message must say): a wrong type or an incomplete record.
BAD = [
    ("tc", "pref", "1", "ledger tc pref must be an integer, got '1'"),
    ("tc", "handle", True, "ledger tc handle must be an integer, got True"),
    ("tc", "filter", "flower", "ledger tc filter must be one of bpf, u32, got 'flower'"),
    ("tc", "created_clsact", "yes", "ledger tc created_clsact must be true or false, got 'yes'"),
    ("xdp", "previous", {"mode": "native"}, "ledger xdp previous must be a list"),
    ("xdp", "previous", [{"mode": "native", "name": "p"}], "ledger xdp previous[0] needs 'pin'"),
    ("xdp", "previous", [{"mode": "native", "name": "p", "pin": "rel/pin"}],
     "ledger xdp previous[0].pin must be an absolute path"),
    ("xdp", "previous", [{"mode": "turbo", "name": "p", "pin": "/sys/fs/bpf/p"}],
     "ledger xdp previous[0].mode must be one of native, generic, offload, got 'turbo'"),
    ("addr", "set_up", 1, "ledger addr set_up must be true or false, got 1"),
    ("neigh", "previous", ["02:00:00:00:00:02"], "ledger neigh previous must be a neighbour entry or null"),
    ("neigh", "previous", {"lladdr": 2, "state": "permanent"}, "ledger neigh previous.lladdr must be a string"),
    ("netns", "found", "true", "ledger netns found must be true or false, got 'true'"),
    ("netns", "inode", "4026532000", "ledger netns inode must be an integer or null"),
    ("netns", "undo_found", {"links": {"eth0": {"mtu": "9000; reboot"}}},
     "ledger netns undo_found.links['eth0'].mtu must be an integer or null, got '9000; reboot'"),
    ("netns", "undo_found", {"links_created": ["../x"]}, "'../x'"),
    ("netns", "undo_found", {"sysctls": {"net.ipv4.ip_forward": 1}},
     "ledger netns undo_found.sysctls['net.ipv4.ip_forward'] must be a string or null, got 1"),
    ("tuning", "grub_file", "grub", "ledger tuning grub_file must be an absolute path without '..', got 'grub'"),
    ("tuning", "subject", None, "ledger tuning subject must be a string, got None"),
    ("process", "pktgen", ["/proc/net/pktgen"], "ledger process pktgen must be a string"),
    ("qemu", "run_id", 7, "ledger qemu run_id must be a string or null, got 7"),
    ("napi", "found", 0, "ledger napi found must be a string, got 0"),
    ("napi", "affinity", {"4242": ["0; reboot"]}, "ledger napi affinity['4242'][0] must be an integer"),
]


def _entry(kind: str, **fields) -> dict:
    key, netns, undo = GOOD[kind]
    return {**undo, **_ledger.check_entry(kind, key, netns), "run_id": None, "created": "2026-12-07T00:00:00Z",
            **fields}


def _write(directory: Path, entry: dict) -> Path:
    directory.mkdir(mode=0o700, exist_ok=True)
    path = directory / _ledger.entry_id(entry)
    path.write_text(json.dumps(entry))
    return path


def test_every_kind_has_one_complete_row():
    assert set(GOOD) == set(_kinds.TABLE) == set(_ledger.KINDS)
    for name, row in _kinds.TABLE.items():
        assert row.name == name and row.key and callable(row.remove) and isinstance(row.order, int)
        assert not set(row.undo) & set(_kinds.COMMON_FIELDS), name


@pytest.mark.parametrize("kind", sorted(GOOD))
def test_the_entries_the_modules_write_are_taken(kind, tmp_path):
    entry = _entry(kind)
    _kinds.check_fields(entry)
    _write(tmp_path / "ledger", entry)
    good, bad = _ledger.scan(str(tmp_path / "ledger"))
    assert bad == [] and [e for _dummy, e in good] == [entry]


@pytest.mark.parametrize(("kind", "field", "value", "message"), BAD)
def test_a_bad_undo_field_sets_the_entry_aside_naming_it(kind, field, value, message, tmp_path):
    path = _write(tmp_path / "ledger", _entry(kind, **{field: value}))
    good, bad = _ledger.scan(str(tmp_path / "ledger"))
    assert good == []
    assert [p for p, _dummy in bad] == [str(path)]
    assert message in bad[0][1]


@pytest.mark.parametrize(("kind", "field"), [(k, f) for k, row in sorted(_kinds.TABLE.items()) for f in row.undo])
def test_every_undo_field_of_every_row_is_checked(kind, field):
    """A field a row names is never taken unchecked: an object of no JSON type is refused, naming it."""
    with pytest.raises(_ledger.LedgerError, match=f"ledger {kind} {field}"):
        _kinds.check_fields(_entry(kind, **{field: object()}))


def test_record_refuses_a_bad_undo_field_before_writing(tmp_path):
    with pytest.raises(_ledger.LedgerError, match="ledger addr set_up must be true or false"):
        _ledger.record(str(tmp_path / "ledger"), _ledger.check_entry("addr", *GOOD["addr"][:2]), None, set_up="no")
    assert os.listdir(tmp_path / "ledger") == []


def test_an_unknown_kind_is_refused_naming_it():
    with pytest.raises(_ledger.LedgerError, match="ledger kind must be one of netns, .*, got 'bogus'"):
        _kinds.check_fields({"kind": "bogus"})


def _run_ledger(args: dict) -> dict:
    return run_module("ledger", args)


def test_cleaned_sets_a_bad_entry_aside_and_never_acts_on_it(tmp_path):
    """A tc entry whose pref is text would have put that text on tc's command line: it is set aside,
    named with the field, and nothing is removed."""
    path = _write(tmp_path / "ledger", _entry("tc", pref="1 handle 7", netns=None))
    res = _run_ledger({"state": "cleaned", "dir": str(tmp_path / "ledger")})
    assert not res.get("failed"), res
    assert res["removed"] == [] and res["entries"] == []
    [aside] = res["set_aside"]
    assert aside["path"] == str(path) and "ledger tc pref must be an integer, got '1 handle 7'" in aside["reason"]
    assert not path.exists() and os.path.exists(aside["moved_to"])


def test_a_kind_outside_the_table_is_refused_by_the_module(tmp_path):
    res = _run_ledger({"state": "cleaned", "dir": str(tmp_path / "ledger"), "keep": ["netns", "bogus"]})
    assert res["failed"] and "got 'bogus'" in res["msg"]
    res = _run_ledger({"state": "recorded", "dir": str(tmp_path / "ledger"), "kind": "bogus", "key": {"x": "y"}})
    assert res["failed"] and "got 'bogus'" in res["msg"]


def test_a_namespace_still_there_after_its_delete_is_not_undone(tmp_path, monkeypatch):
    """The netns row's verify: a created namespace that is still there after 'ip netns delete' keeps its
    entry, named."""
    monkeypatch.setattr(_kinds.Cleaner, "netns_exists", lambda self, name: True)
    monkeypatch.setattr(_kinds.Cleaner, "netns_inode", staticmethod(lambda name: None))
    m = FakeModule(tmp_path)
    with pytest.raises(RuntimeError, match="namespace xdplab-x is still there"):
        _kinds.Cleaner(m).remove(_ledger.check_entry("netns", {"name": "xdplab-x"}))
    assert m.calls[-1] == ["/usr/sbin/ip", "netns", "delete", "xdplab-x"]


def test_an_xdp_entry_naming_a_file_outside_bpffs_is_neither_attached_nor_unlinked(tmp_path, monkeypatch):
    """The pins an xdp entry names are unlinked after they are attached again: an entry naming any other
    file (planted, or an old run's under a bpffs since unmounted) leaves it where it is, named."""
    monkeypatch.setattr(_kinds.Cleaner, "netns_exists", lambda self, name: True)
    victim = tmp_path / "not-a-pin"
    victim.write_text("precious")
    entry = _entry("xdp", previous=[dict(GOOD["xdp"][2]["previous"][0], pin=str(victim))])
    m = FakeModule(tmp_path)
    with pytest.raises(RuntimeError, match=f"{victim} is not a pin in a bpffs, left alone"):
        _kinds.Cleaner(m).remove(entry)
    assert victim.read_text() == "precious"
    assert not any("attach" in argv for argv in m.calls), m.calls


def test_rows_in_netns_are_skipped_when_their_namespace_is_gone(tmp_path, monkeypatch):
    monkeypatch.setattr(_kinds.Cleaner, "netns_exists", lambda self, name: False)
    m = FakeModule(tmp_path)
    for kind, row in _kinds.TABLE.items():
        if row.in_netns:
            assert _kinds.Cleaner(m).remove(_entry(kind, netns="xdplab-gone")) is None
    assert m.calls == []


def test_worked_example_a_new_kind_is_one_row(tmp_path, monkeypatch):
    """CONTRIBUTING Recipe 4, worked: a kind that exists only as a row (here added at run time, as a
    contributor adds it to _ROWS) is recorded with its undo fields checked, listed, ordered by its row
    and undone by its row's remove; nothing else in the ledger knows its name."""
    removed = []

    def remove(cleaner, entry):
        cleaner.run(["/usr/sbin/ip", "link", "set", "dev", entry["key"]["interface"], "threaded", "0"],
                    ("Cannot find device",))
        removed.append(entry["key"]["interface"])

    row = _kinds.Kind("napi", {"interface": _kinds._ifname}, remove, order=1, in_netns=True,
                      undo={"threaded": _kinds._BOOL})
    monkeypatch.setitem(_kinds.TABLE, "napi", row)
    directory = str(tmp_path / "ledger")
    entry = _ledger.check_entry("napi", {"interface": "veth0"}, "xdplab-dut")
    path, created = _ledger.record(directory, entry, "run1", threaded=False)
    assert created
    with pytest.raises(_ledger.LedgerError, match="ledger napi threaded must be true or false"):
        _ledger.record(directory, _ledger.check_entry("napi", {"interface": "veth1"}), None, threaded="0")
    [(listed, e)] = _ledger.entries(directory)
    assert listed == path and e["threaded"] is False
    netns = _ledger.check_entry("netns", {"name": "xdplab-x"})
    assert [x["kind"] for _p, x in _ledger.teardown_plan([("b", netns), ("a", e)])] == ["napi", "netns"]
    monkeypatch.setattr(_kinds.Cleaner, "netns_exists", lambda self, name: True)
    m = FakeModule(tmp_path)
    assert _kinds.Cleaner(m).remove(e) is None
    assert removed == ["veth0"] and m.calls == [["/usr/sbin/ip", "link", "set", "dev", "veth0", "threaded", "0"]]
