# SPDX-License-Identifier: GPL-3.0-or-later
"""What existed before a run is the same after it: after a run, after a failed run, and after a
SIGKILLed run followed by playbooks/teardown.yml.

Planted before each case, on real objects: the test bed's namespaces xdplab-gen and xdplab-dut and
their veth link, already there (so the run finds them rather than creating them), with a process in
xdplab-dut; on the DUT port a clsact qdisc holding someone else's cls_bpf filter, an nftables table of
"the host's firewall" in xdplab-dut, the veth's offload settings that the run's tuning changes (VLAN
offload on), and, for the failed run, someone else's XDP program on the DUT port. After each case all
of it reads back exactly as before, and nothing of the run is left (its sink namespace, ledger
entries, tuning snapshots, the lock).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import (
    LOCK,
    NFT_TABLE,
    TUNING,
    alive,
    assert_records_intact,
    bench,
    listing,
    netns_names,
    our_ledger_entries,
    read_lock,
    sh,
    sh_json,
    sigkill_playbook,
    teardown,
    wait_until,
)

pytestmark = pytest.mark.root

GEN, DUT, PORT = "xdplab-gen", "xdplab-dut", "veth0"
FOREIGN_XDP_OBJ = "/var/lib/xdplab/xdp/xdp_pass.o"
THEIR_TABLE = ("inet", "h8_fw")
# Someone else's tc program: passes every packet (this kernel has no matchall or gact to do it).
FOREIGN_TC_SRC = ('__attribute__((section("tc"), used)) int h8_pass(void *skb) { return 0; }\n'
                  'char _license[] __attribute__((section("license"), used)) = "GPL";\n')


def ethtool_features(ns: str) -> dict[str, str]:
    out = sh(["ethtool", "-k", PORT], ns).stdout
    return dict(line.strip().split(": ", 1) for line in out.splitlines()[1:] if ": " in line)


def found_state(sleeper: subprocess.Popen) -> dict:
    """Everything planted, read back from the kernel."""
    try:
        sleeper_ns = os.stat(f"/proc/{sleeper.pid}/ns/net").st_ino if sleeper.poll() is None else None
    except FileNotFoundError:
        sleeper_ns = None
    return {
        "namespaces": {ns: os.stat(f"/run/netns/{ns}").st_ino if ns in netns_names() else None
                       for ns in (GEN, DUT)},
        "sleeper": (sleeper.poll() is None, sleeper_ns),
        "qdiscs": sorted(q["kind"] for q in sh_json(["tc", "-n", DUT, "-j", "qdisc", "show", "dev", PORT]))
        if DUT in netns_names() else None,
        "filters": sh_json(["tc", "-n", DUT, "-j", "filter", "show", "dev", PORT, "ingress"])
        if DUT in netns_names() else None,
        "xdp": [(x["devname"], x["mode"], x["id"]) for b in sh_json(["bpftool", "-j", "net", "show"], DUT)
                for x in b.get("xdp", [])] if DUT in netns_names() else None,
        "nft": sh_json(["nft", "-j", "list", "table", *THEIR_TABLE], DUT) if DUT in netns_names() else None,
        "features": {ns: ethtool_features(ns) for ns in (GEN, DUT) if ns in netns_names()},
        "channels": {ns: sh(["ethtool", "-l", PORT], ns).stdout for ns in (GEN, DUT) if ns in netns_names()},
        "mtu": {ns: sh_json(["ip", "-n", ns, "-j", "link", "show", PORT])[0]["mtu"] for ns in (GEN, DUT)
                if ns in netns_names()},
    }


@pytest.fixture
def planted(host_before, tmp_path):
    """The objects that exist before the run; yields (state before, the process in xdplab-dut)."""
    src = tmp_path / "h8_pass.c"
    src.write_text(FOREIGN_TC_SRC)
    sh(["clang", "-O2", "-g", "-target", "bpf", "-c", str(src), "-o", str(tmp_path / "h8_pass.o")])
    for ns in (GEN, DUT):
        sh(["ip", "netns", "add", ns])
        sh(["ip", "-n", ns, "link", "set", "lo", "up"])
    # The link exactly as the test bed wants it (addresses, MTU, GRO on), so the run finds it.
    sh(["ip", "-n", GEN, "link", "add", PORT, "type", "veth", "peer", "name", PORT, "netns", DUT])
    for ns, addr in ((GEN, "198.18.0.1/24"), (DUT, "198.18.0.2/24")):
        sh(["ip", "-n", ns, "addr", "add", addr, "dev", PORT])
        sh(["ip", "-n", ns, "link", "set", PORT, "mtu", "1500", "up"])
        sh(["ethtool", "-K", PORT, "gro", "on", "rxvlan", "on", "txvlan", "on"], ns)
    sleeper = subprocess.Popen(["ip", "netns", "exec", DUT, "sleep", "3600"],  # noqa: S607 - test helper
                               start_new_session=True)
    sh(["tc", "-n", DUT, "qdisc", "add", "dev", PORT, "clsact"])
    sh(["tc", "-n", DUT, "filter", "add", "dev", PORT, "ingress", "pref", "9", "handle", "9", "bpf", "da",
        "obj", str(tmp_path / "h8_pass.o"), "sec", "tc"])
    sh(["nft", "add", "table", *THEIR_TABLE], DUT)
    sh(["nft", "add chain inet h8_fw input { type filter hook input priority 0; policy accept; }"], DUT)
    sh(["nft", "add rule inet h8_fw input tcp dport 22 accept"], DUT)
    wait_until(lambda: sleeper.pid and os.path.exists(f"/proc/{sleeper.pid}/ns/net")
               and os.stat(f"/proc/{sleeper.pid}/ns/net").st_ino == os.stat(f"/run/netns/{DUT}").st_ino,
               10, "the planted process to be in xdplab-dut")
    yield sleeper
    sleeper.kill()
    sleeper.wait()


def plant_xdp() -> None:
    sh(["ip", "-n", DUT, "link", "set", "dev", PORT, "xdpgeneric", "obj", FOREIGN_XDP_OBJ, "sec", "xdp"])


def nothing_of_the_run_left() -> list[str]:
    out = []
    if "xdplab-sink" in netns_names():
        out.append("the run's sink namespace")
    if our_ledger_entries():
        out.append(f"ledger entries {our_ledger_entries()}")
    if listing(TUNING):
        out.append(f"tuning snapshots {listing(TUNING)}")
    holder = read_lock(LOCK)
    if holder is not None:
        out.append(f"run lock held: {holder.describe()}")
    if DUT in netns_names():
        ours = [f for f in sh_json(["tc", "-n", DUT, "-j", "filter", "show", "dev", PORT, "ingress"])
                if f.get("pref") != 9]
        if ours:
            out.append(f"tc filters of the run {ours}")
        tables = {t["table"]["name"] for t in sh_json(["nft", "-j", "list", "tables"], DUT).get("nftables", [])
                  if "table" in t}
        if NFT_TABLE in tables:
            out.append(f"nft table {NFT_TABLE}")
    return out


def test_found_objects_are_the_same_after_a_run(tmp_path, planted):
    """A complete run (XDP_DROP, tc and nftables drop on the DUT port, the port tuned) on a test bed it
    found in place: the namespaces and their process, the foreign clsact filter, the firewall table and
    the veth settings read back as before; the run's own sink namespace, hooks and snapshots are gone."""
    before = found_state(planted)
    assert before["features"][DUT]["rx-vlan-offload"] == "on" and before["sleeper"][0]
    run = bench(tmp_path, "found", ["xdp_drop", "tc_drop", "nft_drop"])
    assert run.wait() == 0, f"the run failed; log {run.log_path}"
    assert_records_intact(run, {"xdp_drop", "tc_drop", "nft_drop"}, incomplete=False)
    assert found_state(planted) == before
    assert nothing_of_the_run_left() == []


def test_found_objects_are_the_same_after_a_failed_run(tmp_path, planted):
    """Someone else's XDP program on the DUT port: the run measures tc_drop (port tuned, hook made), then
    refuses to replace that program for xdp_drop (it cannot keep it) and fails. Everything found, the
    XDP program included (same id), reads back as before."""
    plant_xdp()
    before = found_state(planted)
    assert before["xdp"] and before["xdp"][0][1] == "generic"
    run = bench(tmp_path, "found-failed", ["tc_drop", "xdp_drop"])
    assert run.wait() != 0, f"the run should have failed at xdp_drop; log {run.log_path}"
    assert "could not keep" in " ".join(run.text().split()), run.text()[-3000:]
    assert_records_intact(run, {"tc_drop"}, incomplete=True)
    assert found_state(planted) == before
    assert nothing_of_the_run_left() == []


def test_found_objects_are_the_same_after_a_sigkilled_run_and_teardown(tmp_path, planted):
    """ansible-playbook is SIGKILLed while nft_drop measures (the port tuned, the run's table made, its
    tc hook gone already); teardown.yml then undoes the run from the ledgers: the run's table and the
    tuning go, everything found stays as it was."""
    plant_xdp()
    before = found_state(planted)
    run = bench(tmp_path, "found-kill", ["tc_drop", "nft_drop"])

    def measuring_nft():
        tables = sh_json(["nft", "-j", "list", "tables"], DUT).get("nftables", [])
        return any(t.get("table", {}).get("name") == NFT_TABLE for t in tables) and listing(TUNING)
    try:
        wait_until(measuring_nft, 300, "the nft_drop scenario's table, with the port tuned", run.proc, step=0.1)
    except BaseException:
        run.kill_all()
        raise
    tuned = ethtool_features(DUT)
    sigkill_playbook(run)
    assert tuned["rx-vlan-offload"] == "off", "the run did not tune the DUT port before the kill"
    holder = read_lock(LOCK)
    assert holder is not None and holder.pid == run.pid and not alive(holder.pid)
    entries = our_ledger_entries()
    assert any(" tuning " in e for e in entries), f"the tuning is not in the ledger: {entries}"

    down = teardown(tmp_path)
    assert down.wait() == 0, f"teardown failed; log {down.log_path}"
    assert found_state(planted) == before
    assert nothing_of_the_run_left() == []
    assert Path(run.run_dirs()[0], "INCOMPLETE").exists()
