# SPDX-License-Identifier: GPL-3.0-or-later
"""The pktgen outputs captured inside a kernel-role guest (tests/unit/fixtures/pktgen/qemu_*) parse with
the collection's pktgen parser to the figures printed in them."""

from __future__ import annotations

import pytest
from _fixtures import read_fixture
from ansible_collections.xdplab.testbed.plugins.module_utils.traffic import _output_parsers as _parsers


@pytest.mark.parametrize(
    ("name", "pps", "packets", "pkt_size", "usec"),
    [
        ("qemu_device_dummy0_burst8_clone64.txt", 2158546.0, 200000, 64, 92654),
        ("qemu_device_h5v0_veth.txt", 75351.0, 100000, 60, 1327120),
    ],
)
def test_device_captures_parse(name, pps, packets, pkt_size, usec):
    parsed = _parsers.parse("pktgen", read_fixture(f"pktgen/{name}"))
    assert parsed["pps"] == pps
    assert parsed["packets"] == packets
    assert parsed["pkt_size"] == pkt_size
    assert parsed["errors"] == 0
    assert parsed["devices"][0]["usec"] == usec


@pytest.mark.parametrize("name", ["qemu_thread_kpktgend_0_dummy.txt", "qemu_thread_kpktgend_0_veth.txt"])
def test_thread_captures_have_no_rates(name):
    with pytest.raises(_parsers.ParseError, match="thread file"):
        _parsers.parse("pktgen", read_fixture(f"pktgen/{name}"))


def test_unpatched_pgctrl_has_no_fixture_marker():
    """The fixture patch series adds an 'xdplab-fixture' line to pgctrl: the unpatched kernel's has none
    (the capture's own provenance line, '#xdplab-fixture: ...', is not part of what the kernel printed)."""
    text = read_fixture("pktgen/qemu_pgctrl_unpatched.txt")
    assert text.startswith("Packet Generator for packet performance testing. Version: 2.75")
    assert "xdplab-fixture" not in text
