# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""nic_tuning, host_tuning and the tuning role on real veth pairs in a namespace this test creates
(prefix h6<pid>). Settings are read back with the ethtool CLI and iproute2 (independent of the module's
own netlink reader): apply, idempotence, check mode, restore exact, the unsupported paths of veth
(coalesce, pause, ring) and bad input that must leave the device untouched."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import playbook_run
import pytest

pytestmark = pytest.mark.root

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MODULES = ROOT / "plugins" / "modules"
TAG = f"h6{os.getpid() % 100000}"

if os.geteuid() != 0:  # pragma: no cover
    pytest.fail("tests/integration/test_tuning_veth.py needs root (namespaces, veth)", pytrace=False)


# --------------------------------------------------------------------- helpers


def sh(*argv: str, ns: str | None = None, check: bool = True) -> str:
    cmd = (["ip", "netns", "exec", ns] if ns else []) + list(argv)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=dict(os.environ, LC_ALL="C"))
    if check and proc.returncode != 0:
        raise AssertionError(f"{cmd} failed rc={proc.returncode}: {proc.stderr}")
    return proc.stdout


def run_module(name: str, args: dict, ns: str | None, check: bool = False, diff: bool = True) -> dict:
    """Run a module file inside namespace ns (None: the initial one) as Ansible would (args file, JSON on
    stdout)."""
    payload = dict(args, _ansible_check_mode=check, _ansible_diff=diff)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump({"ANSIBLE_MODULE_ARGS": payload}, handle)
    try:
        env = dict(os.environ, PYTHONPATH=str(ROOT / ".collections"))
        argv = [*(["ip", "netns", "exec", ns] if ns else []), sys.executable, str(MODULES / f"{name}.py"), handle.name]
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120, check=False)
    finally:
        os.unlink(handle.name)
    try:
        out = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise AssertionError(f"module printed no JSON: rc={proc.returncode} {proc.stdout!r} {proc.stderr!r}") from None
    out["rc"] = proc.returncode
    return out


def channels(ns: str, ifname: str) -> dict[str, str]:
    """Current channel counts as the ethtool CLI prints them."""
    text = sh("ethtool", "-l", ifname, ns=ns)
    current = text.split("Current hardware settings:")[1]
    return {k: v for k, v in re.findall(r"^(RX|TX|Combined):\s+(\S+)", current, re.MULTILINE) if v != "n/a"}


def features(ns: str, ifname: str) -> dict[str, str]:
    text = sh("ethtool", "-k", ifname, ns=ns)
    return {m[0]: m[1] for m in re.findall(r"^\s*([\w-]+): (on|off)", text, re.MULTILINE)}


def mtu(ns: str, ifname: str) -> int:
    return json.loads(sh("ip", "-j", "link", "show", ifname, ns=ns))[0]["mtu"]


def whole_state(ns: str, ifname: str) -> tuple:
    """Everything the CLI shows that tuning may touch: the 'restore exact' yardstick."""
    return (sh("ethtool", "-l", ifname, ns=ns), sh("ethtool", "-k", ifname, ns=ns), mtu(ns, ifname))


@pytest.fixture
def veth(tmp_path):
    """A namespace with a 4-queue veth pair; (ns, ifname, state_dir). Removed afterwards, also on failure."""
    ns = f"{TAG}{tmp_path.name[-4:]}".replace("_", "")[:12]
    ifname = f"{ns[:10]}a"
    sh("ip", "netns", "add", ns)
    try:
        sh("ip", "-n", ns, "link", "add", ifname, "numrxqueues", "4", "numtxqueues", "4", "type", "veth",
           "peer", "name", f"{ns[:10]}b", "numrxqueues", "4", "numtxqueues", "4")
        yield ns, ifname, str(tmp_path / "state")
    finally:
        sh("ip", "netns", "del", ns, check=False)
    assert ns not in sh("ip", "netns", "list")


# --------------------------------------------------------------------- nic_tuning on veth


def test_apply_idempotent_restore_exact(veth):
    ns, ifname, state_dir = veth
    before = whole_state(ns, ifname)
    assert channels(ns, ifname) == {"RX": "4", "TX": "4"}
    was_gro = features(ns, ifname)["generic-receive-offload"]
    want_gro = was_gro == "off"
    args = {"interface": ifname, "channels": {"rx": 2, "tx": 1}, "features": {"gro": want_gro, "tso": False},
            "mtu": 9000, "state_dir": state_dir}

    check = run_module("nic_tuning", args, ns, check=True)
    assert check["rc"] == 0 and check["changed"], check
    assert channels(ns, ifname) == {"RX": "4", "TX": "4"}, "check mode changed the device"
    assert not os.path.exists(check["snapshot_path"]), "check mode wrote a snapshot"

    first = run_module("nic_tuning", args, ns)
    assert first["rc"] == 0 and first["changed"], first
    assert first["snapshot_created"] and os.path.exists(first["snapshot_path"])
    assert channels(ns, ifname) == {"RX": "2", "TX": "1"}
    feats = features(ns, ifname)
    assert feats["generic-receive-offload"] == ("on" if want_gro else "off")
    assert feats["tcp-segmentation-offload"] == "off"
    assert mtu(ns, ifname) == 9000
    assert first["diff"]["before"]["channels"] == {"rx": 4, "tx": 4}
    assert first["diff"]["after"]["channels"] == {"rx": 2, "tx": 1}
    assert first["state"]["channels"]["rx"] == 2 and first["state"]["channels"]["max"] == {"rx": 4, "tx": 4}
    assert first["state"]["mtu"] == 9000

    second = run_module("nic_tuning", args, ns)
    assert second["rc"] == 0 and not second["changed"], second["changes"]

    restored = run_module("nic_tuning", {"interface": ifname, "state": "restored", "state_dir": state_dir}, ns)
    assert restored["rc"] == 0 and restored["changed"] and restored["snapshot_removed"], restored
    assert whole_state(ns, ifname) == before
    assert not os.path.exists(first["snapshot_path"])

    again = run_module("nic_tuning", {"interface": ifname, "state": "restored", "state_dir": state_dir}, ns)
    assert again["rc"] == 0 and not again["changed"]


def test_the_ledger_restores_what_a_killed_run_tuned(veth, tmp_path):
    """nic_tuning records its snapshot in the ledger before it changes the port. No restore follows (the
    run was killed): `ledger state=cleaned`, run in the initial namespace as teardown runs it, restores
    the port exactly inside its namespace, then drops the snapshot and the entry."""
    ns, ifname, state_dir = veth
    ledger = tmp_path / "ledger"
    before = whole_state(ns, ifname)
    gro = features(ns, ifname)["generic-receive-offload"] == "off"
    tuned = run_module("nic_tuning", {"interface": ifname, "channels": {"rx": 2, "tx": 1}, "mtu": 9000,
                                      "features": {"gro": gro, "tso": False}, "state_dir": state_dir,
                                      "ledger_dir": str(ledger), "run_id": "20261201T050000Z-0a1b2c"}, ns)
    assert tuned["rc"] == 0 and tuned["changed"], tuned
    [entry] = [json.loads(p.read_text()) for p in ledger.glob("*.json")]
    assert (entry["kind"], entry["netns"], entry["snapshot_kind"]) == ("tuning", ns, "nic"), entry
    assert entry["key"] == {"state_file": tuned["snapshot_path"]}
    assert whole_state(ns, ifname) != before

    cleaned = run_module("ledger", {"state": "cleaned", "dir": str(ledger)}, None)
    assert cleaned["rc"] == 0 and not cleaned.get("failed"), cleaned
    assert cleaned["removed"] == [f"tuning state_file={tuned['snapshot_path']} in {ns}"]
    assert whole_state(ns, ifname) == before
    assert not os.path.exists(tuned["snapshot_path"]) and not list(ledger.glob("*.json"))


def test_second_snapshot_does_not_overwrite_first(veth):
    ns, ifname, state_dir = veth
    before = whole_state(ns, ifname)
    one = run_module("nic_tuning", {"interface": ifname, "channels": {"rx": 3}, "state_dir": state_dir}, ns)
    assert one["snapshot_created"]
    snap1 = json.loads(Path(one["snapshot_path"]).read_text())
    two = run_module("nic_tuning", {"interface": ifname, "channels": {"rx": 1}, "mtu": 4000,
                                    "state_dir": state_dir}, ns)
    assert two["rc"] == 0 and two["changed"] and not two["snapshot_created"]
    assert json.loads(Path(one["snapshot_path"]).read_text()) == snap1
    assert snap1["state"]["channels"]["rx"] == 4
    run_module("nic_tuning", {"interface": ifname, "state": "restored", "state_dir": state_dir}, ns)
    assert whole_state(ns, ifname) == before


@pytest.mark.parametrize("group,values", [
    ("coalesce", {"rx_usecs": 30}),
    ("pause", {"rx": False}),
    ("ring", {"rx": 512}),
])
def test_unsupported_on_veth_fails_and_applies_nothing(veth, group, values):
    ns, ifname, state_dir = veth
    before = whole_state(ns, ifname)
    out = run_module("nic_tuning", {"interface": ifname, "channels": {"rx": 1}, group: values,
                                    "state_dir": state_dir}, ns)
    assert out["rc"] != 0 and out.get("failed")
    key = next(iter(values))
    assert ifname in out["msg"] and f"{group} setting {key}" in out["msg"], out["msg"]
    assert whole_state(ns, ifname) == before, "a failed call changed the device"
    assert not os.listdir(state_dir) if os.path.isdir(state_dir) else True


@pytest.mark.parametrize("policy", ["warn", "skip"])
def test_unsupported_skipped_when_asked(veth, policy):
    ns, ifname, state_dir = veth
    out = run_module("nic_tuning", {"interface": ifname, "channels": {"rx": 1}, "coalesce": {"rx_usecs": 30},
                                    "pause": {"autoneg": False}, "on_unsupported": policy,
                                    "state_dir": state_dir}, ns)
    assert out["rc"] == 0 and out["changed"], out
    assert channels(ns, ifname)["RX"] == "1"
    assert any("coalesce setting rx_usecs" in m for m in out["skipped_settings"])
    assert any("pause setting autoneg" in m for m in out["skipped_settings"])
    assert bool(out.get("warnings")) == (policy == "warn")
    run_module("nic_tuning", {"interface": ifname, "state": "restored", "state_dir": state_dir}, ns)
    assert channels(ns, ifname)["RX"] == "4"


@pytest.mark.parametrize("args,needle", [
    ({"channels": {"rx": 9}}, "channels rx=9 exceeds the device maximum 4"),
    ({"features": {"turbo-offload": True}}, "unknown feature name 'turbo-offload'"),
    ({"mtu": 70000}, "mtu 70000 is outside the device range 68..65535"),
    ({"channels": {"rxx": 1}}, "unknown channels setting 'rxx'"),
    ({"features": {"gro": "maybe"}}, "expected on/off"),
])
def test_bad_input_names_value_and_changes_nothing(veth, args, needle):
    ns, ifname, state_dir = veth
    before = whole_state(ns, ifname)
    # A valid setting rides along: it must not be applied either.
    valid = {"mtu": 1400} if "mtu" not in args else {"channels": {"tx": 1}}
    out = run_module("nic_tuning", {"interface": ifname, **valid, **args, "state_dir": state_dir}, ns)
    assert out["rc"] != 0 and needle in out["msg"], out["msg"]
    assert whole_state(ns, ifname) == before
    assert not (os.path.isdir(state_dir) and os.listdir(state_dir))


def test_unknown_interface(veth):
    ns, _ifname, state_dir = veth
    out = run_module("nic_tuning", {"interface": "h6nosuch0", "mtu": 1400, "state_dir": state_dir}, ns)
    assert out["rc"] != 0 and "interface 'h6nosuch0' does not exist" in out["msg"]


def test_restore_of_a_vanished_port(veth):
    """A tuned port deleted under the run (its veth peer's namespace went away): the restore fails
    naming it and keeps the snapshot, unless on_missing=discard, which drops the snapshot."""
    ns, ifname, state_dir = veth
    tuned = run_module("nic_tuning", {"interface": ifname, "channels": {"rx": 2}, "state_dir": state_dir}, ns)
    assert tuned["rc"] == 0 and tuned["snapshot_created"], tuned
    sh("ip", "-n", ns, "link", "del", ifname)
    kept = run_module("nic_tuning", {"interface": ifname, "state": "restored", "state_dir": state_dir}, ns)
    assert kept["rc"] != 0 and f"interface '{ifname}' does not exist" in kept["msg"], kept
    assert os.path.exists(tuned["snapshot_path"])
    checked = run_module("nic_tuning", {"interface": ifname, "state": "restored", "state_dir": state_dir,
                                        "on_missing": "discard"}, ns, check=True)
    assert checked["rc"] == 0 and checked["changed"] and os.path.exists(tuned["snapshot_path"]), checked
    dropped = run_module("nic_tuning", {"interface": ifname, "state": "restored", "state_dir": state_dir,
                                        "on_missing": "discard"}, ns)
    assert dropped["rc"] == 0 and dropped["interface_missing"] and dropped["snapshot_removed"], dropped
    assert not os.path.exists(tuned["snapshot_path"])
    assert "no longer exists" in json.dumps(dropped.get("warnings")), dropped


def test_fixed_feature_is_unsupported(veth):
    ns, ifname, state_dir = veth
    out = run_module("nic_tuning", {"interface": ifname, "features": {"lro": True}, "state_dir": state_dir}, ns)
    assert out["rc"] != 0 and "feature lro (rx-lro) is fixed" in out["msg"], out["msg"]
    assert features(ns, ifname)["large-receive-offload"] == "off"


def test_irq_affinity_veth_has_no_queue_irqs(veth):
    ns, ifname, state_dir = veth
    out = run_module("irq_affinity", {"interface": ifname, "state_dir": state_dir}, ns)
    assert out["rc"] != 0 and f"interface {ifname!r} has no queue IRQs" in out["msg"]


# --------------------------------------------------------------------- host_tuning paths that exist here


def test_host_smt_off_needs_opt_in(veth):
    ns, _ifname, state_dir = veth
    out = run_module("host_tuning", {"smt": "off", "state_dir": state_dir}, ns)
    assert out["rc"] != 0 and "allow_smt_change" in out["msg"]
    assert not (os.path.isdir(state_dir) and os.listdir(state_dir))


def test_host_sysctl_snapshot_and_cpu_latency_holder(veth):
    ns, _ifname, state_dir = veth
    sh("sysctl", "-qw", "net.ipv4.ip_forward=0", ns=ns)
    before_latency = run_module("host_tuning", {"state": "read", "state_dir": state_dir}, ns)["facts"].get(
        "cpu_dma_latency")
    if before_latency is None:
        pytest.fail("/dev/cpu_dma_latency is not readable on this host")
    # A harmless target (just below the 2 s default) so other users of the machine are not affected.
    out = run_module("host_tuning", {"cpu_dma_latency": 1999999, "sysctl_snapshot": ["net.ipv4.ip_forward"],
                                     "state_dir": state_dir}, ns)
    try:
        assert out["rc"] == 0 and out["changed"], out
        assert out["facts"]["cpu_dma_latency"] == 1999999
        # The holder's pidfile names its identity (pid, start time, boot id), checked before any signal.
        pid = json.loads(Path(state_dir, "cpu_dma_latency.pid").read_text())["pid"]
        assert os.path.exists(f"/proc/{pid}")
        again = run_module("host_tuning", {"cpu_dma_latency": 1999999, "state_dir": state_dir}, ns)
        assert again["rc"] == 0 and not again["changed"], again
        sh("sysctl", "-qw", "net.ipv4.ip_forward=1", ns=ns)
    finally:
        back = run_module("host_tuning", {"state": "restored", "state_dir": state_dir}, ns)
    assert back["rc"] == 0 and back["sysctl_restore"] == {"net.ipv4.ip_forward": "0"}, back
    assert back["facts"]["cpu_dma_latency"] == before_latency
    assert not os.path.exists(f"/proc/{pid}") or "cpu_dma" not in Path(f"/proc/{pid}/cmdline").read_text()
    # The sysctls are the caller's to write (the role does it with ansible.posix.sysctl): until they read
    # back equal the snapshot is kept, and the next restore removes it.
    assert back["snapshot_kept"] and os.path.exists(back["snapshot_path"]), back
    sh("sysctl", "-qw", "net.ipv4.ip_forward=0", ns=ns)
    done = run_module("host_tuning", {"state": "restored", "state_dir": state_dir}, ns)
    assert done["rc"] == 0 and not done["sysctl_restore"] and not done["snapshot_kept"], done
    assert not os.path.exists(back["snapshot_path"])


def test_host_unsupported_knobs_here_fail_or_skip(veth):
    ns, _ifname, state_dir = veth
    facts = run_module("host_tuning", {"state": "read", "state_dir": state_dir}, ns)["facts"]
    if "governor" in facts:
        pytest.fail("this host has cpufreq: extend the test to set a governor for real")
    out = run_module("host_tuning", {"governor": "performance", "state_dir": state_dir}, ns)
    assert out["rc"] != 0 and "governor: this host has no cpufreq" in out["msg"]
    out = run_module("host_tuning", {"governor": "performance", "on_unsupported": "skip", "state_dir": state_dir}, ns)
    assert out["rc"] == 0 and not out["changed"] and out["skipped_settings"]


# --------------------------------------------------------------------- the role


PLAYBOOK = textwrap.dedent("""\
    - hosts: localhost
      gather_facts: false
      roles:
        - role: xdplab.testbed.tuning
      post_tasks:
        - name: Dump the read-back
          ansible.builtin.copy:
            content: "{{ tuning_readback | to_json }}"
            dest: "{{ readback_file }}"
            mode: "0600"
          changed_when: false  # test plumbing, not part of the converge being checked
    """)


def run_role(ns: str, tmp: Path, extra: dict) -> tuple[int, str, dict]:
    pb = tmp / "pb.yml"
    pb.write_text(PLAYBOOK)
    ev = tmp / "vars.json"
    readback = tmp / "readback.json"
    ev.write_text(json.dumps({**extra, "readback_file": str(readback),
                              "ansible_python_interpreter": sys.executable}))
    proc = playbook_run.run(
        ["ip", "netns", "exec", ns, str(BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local",
         "-e", f"@{ev}", str(pb)],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=False,
        env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1"))
    recap = re.search(r"localhost\s+: ok=\d+\s+changed=(\d+).*failed=(\d+)", proc.stdout)
    assert recap, proc.stdout[-3000:] + proc.stderr[-2000:]
    data = json.loads(readback.read_text()) if readback.exists() and proc.returncode == 0 else {}
    readback.unlink(missing_ok=True)
    return proc.returncode, recap.group(1), data


def test_role_latency_preset_on_veth(veth, tmp_path):
    ns, ifname, state_dir = veth
    before = whole_state(ns, ifname)
    extra = {"tuning_preset": "latency", "tuning_on_unsupported": "skip", "tuning_state_dir": state_dir,
             "tuning_interfaces": [{"name": ifname, "channels": {"rx": 2, "tx": 2}, "mtu": 3000}]}
    rc, changed, readback = run_role(ns, tmp_path, extra)
    assert rc == 0 and int(changed) >= 1
    assert channels(ns, ifname) == {"RX": "2", "TX": "2"}
    assert features(ns, ifname)["generic-receive-offload"] == "off"  # the latency preset
    assert readback["ethtool"][ifname]["channels"]["rx"] == 2
    assert readback["ethtool"][ifname]["mtu"] == 3000
    assert "coalesce" not in readback["ethtool"][ifname]  # veth: unsupported, absent not invented

    rc, changed, _dummy = run_role(ns, tmp_path, extra)
    assert rc == 0 and changed == "0", "second converge changed something"

    rc, changed, readback = run_role(ns, tmp_path, {**extra, "tuning_state": "restored"})
    assert rc == 0 and int(changed) >= 1
    assert whole_state(ns, ifname) == before
    assert not os.listdir(state_dir)


def test_role_fails_on_unsupported_by_default(veth, tmp_path):
    ns, ifname, state_dir = veth
    before = whole_state(ns, ifname)
    rc, _changed, _dummy = run_role(ns, tmp_path, {"tuning_preset": "latency", "tuning_state_dir": state_dir,
                                                   "tuning_interfaces": [{"name": ifname, "channels": {"rx": 1}}]})
    assert rc != 0
    assert whole_state(ns, ifname) == before


def test_host_tuned_profile_without_daemon_is_unsupported(veth):
    """Debian's tuned-adm exits 0 without the daemon yet applies nothing: the module must not believe it.
    make installs no tuned (its package enables a daemon that retunes the host): where it is absent, a
    tuned profile is refused naming the package, and nothing changes."""
    ns, _ifname, state_dir = veth
    if not os.path.exists("/usr/sbin/tuned-adm"):
        out = run_module("host_tuning", {"tuned_profile": "latency-performance", "state_dir": state_dir}, ns)
        assert out.get("failed") and "tuned-adm is not installed (Debian package tuned)" in out["msg"], out
        assert not os.path.exists("/etc/tuned/active_profile")
        return
    active = subprocess.run(["tuned-adm", "active"], capture_output=True, text=True, check=False)
    if "Cannot talk to TuneD daemon" not in active.stdout + active.stderr:
        pytest.skip("the TuneD daemon runs here: this test covers the no-daemon path (CI VM, PID 1 not systemd)")
    before = Path("/etc/tuned/active_profile").read_text()
    out = run_module("host_tuning", {"tuned_profile": "latency-performance", "state_dir": state_dir}, ns)
    assert out["rc"] != 0 and "the TuneD daemon is not running" in out["msg"], out
    assert Path("/etc/tuned/active_profile").read_text() == before
