# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One validator per kind of name (_validate), and the places that used to paste text unchecked into
files a shell or parser reads: /etc/default/grub, nftables rulesets, results directories, record file
names and QEMU option strings."""

from __future__ import annotations

import os
import re

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.filter.valid_name import valid_name
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _validate
from ansible_collections.xdplab.testbed.plugins.module_utils.kernel import _qemu_guest as _qemu
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_schema import record_filename
from ansible_collections.xdplab.testbed.plugins.module_utils.state._ledger import LedgerError, check_entry
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._dut_counters import CounterError, check_spec
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._pktgen_proc import PktgenError
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._pktgen_proc import check_spec as pktgen_spec
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._xdpgen_trafgen_argv import (
    GeneratorParamError,
    xdpgen_argv,
)
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _host_knobs as th
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning._irq_strategies import IrqError, parse_cpulist
from ansible_collections.xdplab.testbed.plugins.module_utils.xdp._hooks import HookError, nft_ruleset

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# ---- class 6: validators with holes ------------------------------------------------------------


@pytest.mark.parametrize("name", [".", "..", "a..b", "-x", "a\x1bb", "a\nb", "a/b", "a b", "", "a\0b",
                                  "n" * 33, "\u200bx", "$(id)", "a'b"])
def test_netns_name_refused(name):
    with pytest.raises(_validate.ValidationError) as exc:
        _validate.netns_name(name)
    assert repr(name) in str(exc.value)


@pytest.mark.parametrize("name", ["veth%d", "eth%s0", "-veth", ".", "..", "a\0b", "é" * 8, "a:b", "a/b",
                                  'a"b', "a\\b", "x" * 16, "网卡"])
def test_ifname_refused(name):
    with pytest.raises(_validate.ValidationError) as exc:
        _validate.ifname(name)
    assert repr(name) in str(exc.value)


def test_ifname_counts_bytes_and_accepts_real_names():
    for ok in ("eth0", "enp1s0f0", "veth-gen", "br0.100", "x" * 15):
        assert _validate.ifname(ok) == ok
    with pytest.raises(_validate.ValidationError, match="bytes"):
        _validate.ifname("é" * 8)  # 8 characters, 16 bytes


@pytest.mark.parametrize("bad", ["veth%d", "-x", "a\0b", "é" * 8, "."])
def test_every_interface_consumer_uses_the_one_rule(bad):
    with pytest.raises(GeneratorParamError):
        xdpgen_argv({"interface": bad})
    with pytest.raises(PktgenError):
        pktgen_spec({"interface": bad})
    with pytest.raises(CounterError):
        check_spec({"type": "netdev", "interface": bad})
    with pytest.raises(LedgerError):
        check_entry("xdp", {"interface": bad})


@pytest.mark.parametrize("name", ["-rf", "-x", "..", "a..b", ".hidden", "a b", "a\nb", "$x"])
def test_ledger_names_never_look_like_options_or_paths(name):
    with pytest.raises(LedgerError) as exc:
        check_entry("netns", {"name": name})
    assert repr(name) in str(exc.value)


@pytest.mark.parametrize("name", ["..", "eth0@..", "eth0@x", "../eth0", "eth0@1@2", "-eth0"])
def test_pktgen_device_refused(name):
    with pytest.raises(_validate.ValidationError):
        _validate.pktgen_device(name)
    assert _validate.pktgen_device("eth0@3") == "eth0@3"


@pytest.mark.parametrize("text", ["0-4294967295", "0-8192", "99999999", "1-2," * 2000, [10 ** 9], 10 ** 12])
def test_cpulist_is_bounded(text):
    with pytest.raises(IrqError):
        parse_cpulist(text)


def test_cpulist_good():
    assert parse_cpulist("0-2,5") == [0, 1, 2, 5]
    assert parse_cpulist("8191") == [8191]


@pytest.mark.parametrize(("a", "b"), [("a/b", "a_b"), ("a b", "a_b"), ("a__b", "a_b"), ("../x", "x"),
                                      ("a.", "a"), ("x" * 70, "x" * 71), ("é", "_")])
def test_distinct_scenario_names_never_share_a_record_file(a, b):
    assert record_filename(a, "v", {}) != record_filename(b, "v", {})
    assert record_filename("s", a, {}) != record_filename("s", b, {})
    for name in (a, b):
        f = record_filename(name, name, {})
        assert "/" not in f and ".." not in f and not f.startswith(".")


def test_separator_cannot_be_forged():
    # scenario 'a__b' + variant 'c' vs scenario 'a' + variant 'b__c'
    assert record_filename("a__b", "c", {}) != record_filename("a", "b__c", {})
    assert record_filename("a_", "_b", {}) != record_filename("a", "__b", {})


# ---- class 1: run id, kernel_cmdline, grub, nftables, QEMU -------------------------------------


@pytest.mark.parametrize("rid", ["../../x", "..", "/tmp/x", "20261129T215000Z-1a2b3c/..", "a b", "",
                                 "20261129T215000Z-1a2b3c\n", None])
def test_run_id_refused(rid):
    with pytest.raises(AnsibleFilterError) as exc:
        valid_name(rid, "run_id", "bench_run_id")
    assert repr(rid) in str(exc.value) and "bench_run_id" in str(exc.value)
    assert valid_name("20261129T215000Z-1a2b3c", "run_id") == "20261129T215000Z-1a2b3c"


def test_roles_check_the_run_id_before_making_the_directory():
    # The run_id filter draws a new id or checks the given one (RUN_ID_RE) before the directory is named:
    # the run role makes it, the bench and scenarios roles check the id they are given.
    with open(os.path.join(ROOT, "roles", "run", "tasks", "begin.yml"), encoding="utf-8") as fh:
        text = fh.read()
    assert "run_id | default('', true) | xdplab.testbed.run_id }}" in text
    assert text.index("xdplab.testbed.run_id") < text.index("Create the results directory")
    for role in ("bench", "scenarios"):
        with open(os.path.join(ROOT, "roles", role, "tasks", "prepare.yml"), encoding="utf-8") as fh:
            text = fh.read()
        assert "_run_id | xdplab.testbed.run_id }}" in text, role
        assert "Create the results directory" not in text, role


GRUB = 'GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX="console=ttyS0"\n'


@pytest.mark.parametrize("value", ['2"; touch /tmp/p; x="', "$(reboot)", "`id`", "1 2", "a\\b", "a'b", "a;b",
                                   "a\nb", "a#b", "a|b", "", "a>b"])
def test_kernel_cmdline_values_restricted(value):
    with pytest.raises(th.HostTuningError) as exc:
        th.edit_grub(GRUB, {"isolcpus": value})
    assert repr(value) in str(exc.value)


def test_kernel_cmdline_good_values():
    text, _old, new = th.edit_grub(GRUB, {"isolcpus": "managed_irq,domain,2-3", "nosmt": True, "mitigations": "off",
                                          "hugepages": 4})
    assert new == "console=ttyS0 isolcpus=managed_irq,domain,2-3 nosmt mitigations=off hugepages=4"
    assert f'GRUB_CMDLINE_LINUX="{new}"' in text


@pytest.mark.parametrize("line", [
    'GRUB_CMDLINE_LINUX="quiet splash" # c',
    "GRUB_CMDLINE_LINUX='quiet splash'",
    "GRUB_CMDLINE_LINUX=quiet",
    'GRUB_CMDLINE_LINUX=""',
    '  GRUB_CMDLINE_LINUX="quiet"\t',
])
def test_grub_restored_byte_for_byte(line):
    original = f"GRUB_DEFAULT=0\n{line}\nGRUB_TIMEOUT=5\n"
    saved = th.grub_snapshot(original)
    edited, _dummy, _dummy = th.edit_grub(original, {"isolcpus": "2-3"})
    assert edited != original and "isolcpus=2-3" in th.grub_cmdline(edited)
    assert th.restore_grub(edited, saved) == original


def test_grub_line_added_is_removed_on_restore():
    original = "GRUB_DEFAULT=0\n"
    saved = th.grub_snapshot(original)
    edited, _dummy, _dummy = th.edit_grub(original, {"nosmt": True})
    assert th.restore_grub(edited, saved) == original


@pytest.mark.parametrize("line", ['GRUB_CMDLINE_LINUX="$EXTRA quiet"', 'GRUB_CMDLINE_LINUX="a`id`"',
                                  'GRUB_CMDLINE_LINUX="a" "b"', 'GRUB_CMDLINE_LINUX="x\\"y"'])
def test_grub_line_that_is_not_plain_is_not_edited(line):
    with pytest.raises(th.HostTuningError, match="cannot safely edit"):
        th.edit_grub(f"{line}\n", {"isolcpus": "1"})


def test_grub_with_two_cmdline_lines_is_not_edited():
    with pytest.raises(th.HostTuningError, match="more than once"):
        th.edit_grub('GRUB_CMDLINE_LINUX="a"\nGRUB_CMDLINE_LINUX="b"\n', {"isolcpus": "1"})


@pytest.mark.parametrize("iface", ['eth0" accept; }', "eth0\n}", "a;b", "veth%d", "$(x)"])
def test_nft_ruleset_refuses_names_that_leave_their_quotes(iface):
    with pytest.raises(_validate.ValidationError):
        nft_ruleset("xdplab_bench", "xdplab_dropped", "ingress", iface)


def test_nft_ruleset_renders_a_plain_name_and_refuses_a_bad_table():
    family, text = nft_ruleset("xdplab_bench", "xdplab_dropped", "ingress", "eth0")
    assert family == "netdev" and 'device "eth0"' in text
    with pytest.raises(_validate.ValidationError):
        nft_ruleset("t { }", "xdplab_dropped", "ingress", "eth0")
    with pytest.raises(HookError):
        nft_ruleset("xdplab_bench", "xdplab_dropped", "output; flush ruleset", "eth0")


def test_scenario_hooks_go_through_packet_hook_never_raw_tc_or_nft():
    """The reference scenarios make their tc, nftables and Open vSwitch hooks with packet_hook (ledgered,
    checked values, only what it made removed), never with a raw tc, nft or ovs-dpctl command."""
    import yaml

    tasks_dir = os.path.join(ROOT, "roles/scenarios/tasks")
    raw = []

    def walk(tasks, name):
        for task in tasks or []:
            for key in ("block", "rescue", "always"):
                walk(task.get(key), name)
            cmd = task.get("ansible.builtin.command") or task.get("command") or {}
            argv = cmd.get("argv") if isinstance(cmd, dict) else str(cmd).split()
            if argv and str(argv[0]) in ("tc", "nft", "ovs-dpctl", "ovs-vsctl"):
                raw.append((name, task.get("name")))
    for fname in sorted(os.listdir(tasks_dir)):
        with open(os.path.join(tasks_dir, fname), encoding="utf-8") as fh:
            walk(yaml.safe_load(fh), fname)
    assert raw == []
    with open(os.path.join(tasks_dir, "point_xdp_flow.yml"), encoding="utf-8") as fh:
        # tc, nftables and ovs made; one task takes any of them away
        assert fh.read().count("xdplab.testbed.packet_hook:") == 4


def test_nft_flow_match_renders_checked_values_only():
    flow = {"src": "198.18.0.1", "dst": "198.18.0.2", "proto": "udp", "sport": 9, "dport": 9}
    family, text = nft_ruleset("xdplab_scenarios", "dropped", "ingress", "eth0", flow)
    assert family == "netdev"
    assert ('    ip saddr 198.18.0.1 ip daddr 198.18.0.2 udp sport 9 udp dport 9 counter name "dropped" drop\n'
            in text)
    _dummy, text6 = nft_ruleset("t", "c", "prerouting", "eth0", {"src": "2001:db8::1", "proto": "tcp"})
    assert 'iifname "eth0" ip6 saddr 2001:db8::1 meta l4proto tcp counter name "c" drop' in text6
    # no flow: everything arriving is dropped, as before
    assert 'iifname "eth0" counter name "c" drop' in nft_ruleset("t", "c", "prerouting", "eth0")[1]


@pytest.mark.parametrize("flow, words", [
    ({"src": "198.18.0.1; flush ruleset"}, "is not an IP address"),
    ({"dst": "1.2.3.4 drop"}, "is not an IP address"),
    ({"src": "198.18.0.1", "dst": "2001:db8::2"}, "different IP families"),
    ({"sport": 9}, "need proto"),
    ({"proto": "icmp"}, "proto must be one of"),
    ({"proto": "udp; drop", "dport": 9}, "proto must be one of"),
    ({"proto": "udp", "dport": 70000}, "port number 0..65535"),
    ({"proto": "udp", "dport": "9 drop"}, "port number 0..65535"),
    ({"proto": "udp", "dport": True}, "port number 0..65535"),
    ({"src": "198.18.0.1", "vlan": 5}, "unknown keys ['vlan']"),
])
def test_nft_flow_match_refuses_what_could_leave_its_place(flow, words):
    with pytest.raises((HookError, _validate.ValidationError), match=re.escape(words)):
        nft_ruleset("t", "c", "ingress", "eth0", flow)


@pytest.mark.parametrize("nft", [{"table": "a b"}, {"table": "t;x"}, {"family": "inet;"}, {"counter": "-c"}])
def test_nft_counter_names(nft):
    with pytest.raises(CounterError):
        check_spec(dict({"type": "nft", "table": "t", "counter": "c"}, **nft))


def _bzimage(path):
    data = bytearray(0x400)
    data[0x202:0x206] = b"HdrS"
    path.write_bytes(bytes(data))
    return str(path)


def test_qemu_commas_in_paths_are_escaped(tmp_path):
    rundir = tmp_path / "run,readonly=off,x=y"
    rundir.mkdir()
    spec = _qemu.GuestSpec(kernel=_bzimage(tmp_path / "bz"), command="true", rundir=str(rundir))
    argv = _qemu.qemu_argv(spec, str(rundir / "console.log"))
    fsdev = [a for a in argv if a.startswith("local,")]
    assert any("run,,readonly=off,,x=y/out," in a for a in fsdev)
    assert all(",readonly=off," not in a.replace(",,", "") for a in fsdev)
    assert argv[argv.index("-serial") + 1] == f"file:{rundir}/console.log"  # taken verbatim by QEMU


@pytest.mark.parametrize("tag", ["a,b", "t=x", "x y", "-t", "a" * 40, ""])
def test_qemu_share_tags_refused(tmp_path, tag):
    spec = _qemu.GuestSpec(kernel=_bzimage(tmp_path / "bz"), command="true", rundir=str(tmp_path),
                           shares=[_qemu.Share(path=str(tmp_path), tag=tag, mount="/mnt")])
    with pytest.raises(_qemu.QemuError):
        _qemu.validate_spec(spec)


def test_qemu_control_characters_refused(tmp_path):
    spec = _qemu.GuestSpec(kernel=_bzimage(tmp_path / "bz"), command="true", rundir=str(tmp_path) + "/a\nb")
    with pytest.raises(_qemu.QemuError, match="control character"):
        _qemu.validate_spec(spec)


@pytest.mark.parametrize(("value", "canonical"), [("198.18.10.1/24", "198.18.10.1/24"),
                                                  ("2001:DB8:10:0::1/64", "2001:db8:10::1/64"),
                                                  (" 192.0.2.7/32", "192.0.2.7/32")])
def test_ip_interface_canonical(value, canonical):
    assert _validate.ip_interface(value) == canonical


@pytest.mark.parametrize("value", ["198.18.10.1", "198.18.10.1/33", "2001:db8::1/129", "a/24", "", None, 5,
                                   "198.18.10.1/24; reboot"])
def test_ip_interface_refused_naming_it(value):
    with pytest.raises(_validate.ValidationError, match=re.escape(repr(value))):
        _validate.ip_interface(value)


def test_addr_ledger_entry_must_be_canonical():
    entry = check_entry("addr", {"interface": "eth1", "address": "2001:db8:10::1/64"})
    assert entry["key"] == {"address": "2001:db8:10::1/64", "interface": "eth1"}
    with pytest.raises(LedgerError, match="canonically"):
        check_entry("addr", {"interface": "eth1", "address": "2001:DB8:10::1/64"})
    with pytest.raises(LedgerError, match="prefix length"):
        check_entry("addr", {"interface": "eth1", "address": "2001:db8:10::1"})


@pytest.mark.parametrize("name", ["0..", "a..b", "eth0.."])
def test_ifname_with_dot_dot_refused(name):
    # Linux allows such names, but no NIC is called so, and every other validator refuses '..'
    with pytest.raises(_validate.ValidationError, match=re.escape(repr(name))):
        _validate.ifname(name)
