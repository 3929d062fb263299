# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""module_utils/xdp/_bpf.py pure parts: cpu lists, per-CPU buffers, counters, netlink attributes."""

from __future__ import annotations

import struct

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.xdp import _bpf

# Raw TCA_OPTIONS of a cls_bpf filter (tc_drop.o, direct-action) as the 6.18 kernel sent it, captured
# from pyroute2 0.9.7 (which leaves TCA_BPF_ID undecoded): name, id 140, tag, flags, flags_gen.
TCA_OPTIONS_RAW = (b"<\x00\x02\x00\x13\x00\x07\x00tc_drop.o:[tc]\x00\x00\x08\x00\x0b\x00\x8c\x00\x00\x00"
                   b"\x0c\x00\n\x00$\xea&\xd0\x98{\xea\xd6\x08\x00\x08\x00\x01\x00\x00\x00\x08\x00\t\x00"
                   b"\x08\x00\x00\x00")


def test_possible_cpus_counts_the_mask(tmp_path):
    p = tmp_path / "possible"
    p.write_text("0-3,6\n")
    assert _bpf.possible_cpus(str(p)) == 5


def test_percpu_slots_are_rounded_to_8_bytes():
    assert _bpf.percpu_value_size(4, 3) == 24
    raw = b"".join(struct.pack("<I", v) + b"\xee" * 4 for v in (1, 2, 3))
    assert [struct.unpack("<I", v)[0] for v in _bpf.split_percpu(raw, 4, 3)] == [1, 2, 3]
    with pytest.raises(ValueError, match="expected 24"):
        _bpf.split_percpu(raw[:-1], 4, 3)


def test_sum_counters_over_cpus():
    values = [struct.pack("=QQ", 10, 640), struct.pack("=QQ", 5, 320), struct.pack("=QQ", 0, 0)]
    assert _bpf.sum_counters(values) == {"packets": 15, "bytes": 960}


def test_tc_bpf_id_from_real_options():
    assert _bpf.tc_bpf_id_from_options(TCA_OPTIONS_RAW) == 140
    nlas = dict(_bpf.parse_nlas(TCA_OPTIONS_RAW[4:]))
    assert nlas[7] == b"tc_drop.o:[tc]\0"
    assert nlas[10] == bytes.fromhex("24ea26d0987bead6")  # the tag bpftool printed for it


def test_tc_bpf_id_absent_or_truncated():
    assert _bpf.tc_bpf_id_from_options(b"") is None
    assert _bpf.tc_bpf_id_from_options(TCA_OPTIONS_RAW[:20]) is None  # length says more than there is


@pytest.mark.parametrize("attrs,mode,prog_id,ids", [
    ({}, None, None, {}),
    ({"IFLA_XDP_ATTACHED": "xdpgeneric", "IFLA_XDP_PROG_ID": 136, "IFLA_XDP_SKB_PROG_ID": 136},
     "generic", 136, {"generic": 136}),
    ({"IFLA_XDP_ATTACHED": "xdp", "IFLA_XDP_PROG_ID": 7, "IFLA_XDP_DRV_PROG_ID": 7}, "native", 7, {"native": 7}),
    ({"IFLA_XDP_ATTACHED": "xdpmulti", "IFLA_XDP_DRV_PROG_ID": 7, "IFLA_XDP_HW_PROG_ID": 9},
     "multi", 7, {"native": 7, "offload": 9}),
    ({"IFLA_XDP_ATTACHED": 1, "IFLA_XDP_PROG_ID": 3}, "native", 3, {"native": 3}),
])
def test_xdp_attachment_from_attrs(attrs, mode, prog_id, ids):
    att = _bpf.xdp_attachment_from_attrs(4, attrs)
    assert (att.mode, att.prog_id, att.prog_ids) == (mode, prog_id, ids)


def test_stats_reader_needs_exactly_one_target():
    with pytest.raises(ValueError, match="exactly one"):
        _bpf.StatsReader()
    with pytest.raises(ValueError, match="exactly one"):
        _bpf.StatsReader("veth0", prog_id=3)


def test_unknown_hook_is_named():
    with pytest.raises(ValueError, match="'ingress'"):
        _bpf.find_prog_id("veth0", hook="ingress")
