# SPDX-License-Identifier: GPL-3.0-or-later
"""One CPU-list parser (common/_validate.cpulist) for every CPU list the collection reads: users' options
(irq_affinity cpus), the kernel's lists in sysfs (online CPUs and NUMA nodes for the environment
fingerprint, possible CPUs for per-CPU BPF maps) and IRQ affinities. A reversed range such as 3-1 is
refused everywhere (one of the three parsers there were took it as no CPU at all)."""

from __future__ import annotations

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _validate
from ansible_collections.xdplab.testbed.plugins.module_utils.results import _environment
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _irq_strategies as _irq
from ansible_collections.xdplab.testbed.plugins.module_utils.xdp import _bpf
from hypothesis import given
from hypothesis import strategies as st

CPUS = st.sets(st.integers(min_value=0, max_value=_validate.CPU_MAX), max_size=64)


@pytest.mark.parametrize(("text", "cpus"), [
    ("0-3,8,10-11", [0, 1, 2, 3, 8, 10, 11]), ("0-1\n", [0, 1]), ("0", [0]), ("", []), (" 5 , 1-2 ", [1, 2, 5]),
    ("3,1,3,2-3", [1, 2, 3]), (7, [7]), ([1, "3-4"], [1, 3, 4]),
])
def test_good_lists(text, cpus):
    assert _validate.cpulist(text) == cpus


@pytest.mark.parametrize("text", ["3-1", "0-x", "a-b", "0-", "-1", "1-", "0-3,5-4", "1 2", "0x3", "0-8192", True,
                                  None, 1.5])
def test_bad_lists_are_refused_naming_them(text):
    with pytest.raises(_validate.ValidationError) as exc:
        _validate.cpulist(text, "cpus")
    assert repr(text)[:40] in str(exc.value) or str(text)[:40] in str(exc.value)


@given(CPUS)
def test_the_formatter_and_the_parser_round_trip(cpus):
    assert _validate.cpulist(_irq.format_cpulist(sorted(cpus))) == sorted(cpus)


@given(st.integers(min_value=0, max_value=_validate.CPU_MAX), st.integers(min_value=1, max_value=100))
def test_a_reversed_range_is_refused(lo, gap):
    text = f"{lo + gap}-{lo}"
    with pytest.raises(_validate.ValidationError, match="reversed range"):
        _validate.cpulist(text)


@given(st.lists(st.tuples(st.integers(0, 200), st.integers(0, 8)), min_size=1, max_size=8))
def test_ranges_are_their_cpus_whatever_their_order_and_overlap(ranges):
    text = ",".join(f"{lo}-{lo + n}" if n else str(lo) for lo, n in ranges)
    assert _validate.cpulist(text) == sorted({c for lo, n in ranges for c in range(lo, lo + n + 1)})


def test_every_reader_uses_it(tmp_path):
    """The sysfs readers count what the one parser returns, and refuse what it refuses."""
    possible = tmp_path / "possible"
    possible.write_text("0-3,8\n")
    assert _bpf.possible_cpus(str(possible)) == 5
    for bad in ("3-1\n", "\n"):
        possible.write_text(bad)
        _bpf.possible_cpus.cache_clear()
        with pytest.raises(_validate.ValidationError, match=str(possible)):
            _bpf.possible_cpus(str(possible))
    assert _irq.parse_cpulist("0-2,5") == [0, 1, 2, 5]
    with pytest.raises(_irq.IrqError, match="reversed range"):
        _irq.parse_cpulist("3-1")

    root = tmp_path / "root"
    (root / "sys/devices/system/cpu").mkdir(parents=True)
    (root / "sys/devices/system/node").mkdir(parents=True)
    (root / "sys/devices/system/cpu/online").write_text("0-3\n")
    (root / "sys/devices/system/node/online").write_text("0-1\n")
    facts = _environment.host_facts(_environment.SystemReader(str(root)), patches_file=str(tmp_path / "none"))
    assert facts["cpus_online"] == 4 and facts["numa_nodes"] == 2
    (root / "sys/devices/system/cpu/online").write_text("3-1\n")
    with pytest.raises(_validate.ValidationError, match="reversed range"):
        _environment.host_facts(_environment.SystemReader(str(root)), patches_file=str(tmp_path / "none"))
