# SPDX-License-Identifier: GPL-3.0-or-later
"""Ready to paste: the cover-letter text and the Markdown fit in 100 columns, with no absolute path;
a long kernel command line is shortened there and kept whole in the data (JSON)."""

from __future__ import annotations

import json

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.common._atomic_files import write_json_atomic
from ansible_collections.xdplab.testbed.plugins.module_utils.results import _report
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_schema import build_record, record_filename

CMDLINE = ("BOOT_IMAGE=/boot/vmlinuz-6.18.44-xdplab root=UUID=0b8c7c3e-5f7e-4c1a-9d1e-7a2f3b4c5d6e ro quiet "
           + " ".join(f"isolcpus=managed_irq,domain,{i}-{i + 1} nohz_full={i}-{i + 1} rcu_nocbs={i}-{i + 1}"
                      for i in range(0, 12, 2)))
ENV = {"cpu_model": "Intel(R) Xeon(R) Gold 6338N CPU @ 2.20GHz", "cpu_mhz": 2200.0, "cpus_online": 64,
       "kernel": "6.18.44-xdplab", "kernel_cmdline": CMDLINE, "governor": "performance",
       "nic": {"ens1f0np0": {"driver": "mlx5_core", "version": "6.18.44", "firmware": "22.39.1002 (MT_0000000359)",
                             "bus": "0000:17:00.0", "speed_mbps": 100000, "mtu": 1500}},
       "ethtool": {f"ens1f{i}np{i}": {"ring": {"rx": 8192, "tx": 8192}, "channels": {"combined": 63},
                                      "features": {"rx-gro": True}} for i in range(4)},
       "netfilter_modules": ["nf_tables", "nf_conntrack", "nft_chain_nat", "nf_nat", "nf_defrag_ipv4"]}
PARAMS = {"pkt_size": 64, "duration": 10, "sample": "dut_steady_rate", "burst": 64, "flows": 1024,
          "xdpgen_mode": "packet", "server": "xsksink"}
WARN = ("xdpgen sent from an AF_PACKET socket: the generator's kernel refuses BPF_PROG_RUN live frames; the rate "
        "is not that of live frames, and the record pairs only with records of the same xdpgen mode")


def _put(d, scenario, variant, pkt, shift=0.0, env=None):
    ns = [100.0 + shift, 101.0 + shift, 99.0 + shift]
    r = build_record(run_id="20261129T215000Z-aaaaaa", scenario=scenario, variant=variant, tool="xdpgen",
                     params=dict(PARAMS, pkt_size=pkt), samples=[1e9 / x for x in ns], environment=env or ENV,
                     started="2026-11-29T21:50:00Z", duration_s=30.0,
                     extra={"warnings": [WARN], "bound": "generator-bound",
                            "reps": [{"loss": -0.03, "dut_cost": {"ns_per_packet": 40.0 + i + shift}}
                                     for i in range(3)]})
    d.mkdir(parents=True, exist_ok=True)
    write_json_atomic(str(d / record_filename(scenario, variant, r["params"])), r)


@pytest.fixture
def reports(tmp_path):
    for i, scen in enumerate(("xdp_drop", "xdp_tx", "xdp_redirect_cpumap", "tc_drop", "nft_drop")):
        _put(tmp_path / "run", scen, "baseline", 64)
        for k, pkt in enumerate((64, 128, 256, 512, 1024, 1500)):
            _put(tmp_path / "a", scen, "baseline", pkt)
            _put(tmp_path / "b", scen, "patched", pkt, shift=(3.0 if (i, k) == (0, 0) else 0.0),
                 env=dict(ENV, kernel="6.18.44-xdplab-patched-with-a-long-local-version-string"))
    _put(tmp_path / "sweep", "xdp_drop", "baseline", 64)
    _put(tmp_path / "sweep", "xdp_drop", "baseline", 1500)
    return {"scenarios": _report.build([str(tmp_path / "run")]),
            "sweep": _report.build([str(tmp_path / "sweep")]),
            "ab": _report.build([str(tmp_path / "a"), str(tmp_path / "b")])}, tmp_path


@pytest.mark.parametrize("kind", ["scenarios", "sweep", "ab"])
@pytest.mark.parametrize("markdown", [False, True])
def test_text_and_markdown_fit_100_columns_without_absolute_paths(reports, kind, markdown):
    built, tmp_path = reports
    text = _report.render_text(built[kind], markdown=markdown)
    wide = [ln for ln in text.splitlines() if len(ln) > 100]
    assert not wide, "\n".join(wide)
    assert str(tmp_path) not in text
    assert CMDLINE not in text and f"({len(CMDLINE)} chars, whole in the records)" in text
    # the data keeps the command line whole
    assert json.loads(json.dumps(built[kind]["environment"]))["kernel_cmdline"] == CMDLINE
