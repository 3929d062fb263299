# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""host_tuning's present/restored with a recorded run_command: the exact argv for netfilter unload
(users first) and reload (reverse), the opt-in gates, the snapshot content, check mode, and the
grub path — knobs this VM cannot exercise for real (no loadable modules, no grub)."""

from __future__ import annotations

import os

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _host_knobs as th
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _plan_and_snapshots as _tuning
from ansible_collections.xdplab.testbed.plugins.modules import host_tuning

PROC_MODULES = """\
nft_chain_nat 16384 3 - Live 0x0
nf_nat 61440 1 nft_chain_nat, Live 0x0
nf_conntrack 184320 1 nf_nat, Live 0x0
nf_tables 339968 1 nft_chain_nat, Live 0x0
virtio_net 69632 0 - Live 0x0
"""


class Failed(Exception):
    pass


class FakeModule:
    def __init__(self, tmp_path, check_mode=False, **params):
        base = {k: None for k in ("tuned_profile", "governor", "turbo", "cpu_dma_latency", "smt", "kernel_cmdline",
                                  "sysctl_snapshot", "snapshot_key")}
        base.update(ledger_dir=str(tmp_path / "ledger"), run_id=None)
        base.update(state="present", allow_smt_change=False, netfilter_unload=False, allow_netfilter_unload=False,
                    grub_file=str(tmp_path / "grub"), on_unsupported="fail", state_dir=str(tmp_path / "state"))
        base.update(params)
        self.params = base
        self.check_mode = check_mode
        self._diff = True
        self.calls: list[list[str]] = []
        self.warnings: list[str] = []

    world: dict | None = None  # the `loaded` fixture's modules: modprobe/rmmod change them, as on a host

    def run_command(self, argv, environ_update=None):
        assert environ_update == {"LC_ALL": "C"}
        self.calls.append(list(argv))
        if self.world is not None and argv[0].endswith("modprobe"):
            self.world["mods"][argv[1]] = []
        elif self.world is not None and argv[0].endswith("rmmod"):
            self.world["mods"].pop(argv[1], None)
        return 0, "", ""

    def get_bin_path(self, name, required=False):
        return {"rmmod": "/usr/sbin/rmmod", "modprobe": "/usr/sbin/modprobe"}.get(name)

    def atomic_move(self, src, dst):
        os.replace(src, dst)

    def warn(self, msg):
        self.warnings.append(msg)

    def fail_json(self, **kw):
        raise Failed(kw["msg"])


@pytest.fixture
def loaded(monkeypatch):
    state = {"mods": th.parse_proc_modules(PROC_MODULES)}
    monkeypatch.setattr(th, "read_modules", lambda root="/": {k: list(v) for k, v in state["mods"].items()})
    monkeypatch.setattr(th, "read_host", lambda root="/": {})
    # The restore reads the modules back before it drops the snapshot: modprobe must load them.
    monkeypatch.setattr(FakeModule, "world", state)
    return state


def run(mod, state="present"):
    store = _tuning.SnapshotStore(mod.params["state_dir"])
    host = host_tuning.make_host(mod)
    fn = host_tuning.present if state == "present" else host_tuning.restored
    return fn(mod, host, store, "host-test-knobs"), store


def test_netfilter_unload_argv_users_first_then_reload_in_reverse(tmp_path, loaded):
    mod = FakeModule(tmp_path, netfilter_unload=True, allow_netfilter_unload=True)
    result, store = run(mod)
    assert result["changed"]
    assert mod.calls == [["/usr/sbin/rmmod", m] for m in ("nft_chain_nat", "nf_nat", "nf_conntrack", "nf_tables")]
    assert store.load("host-test-knobs")["state"]["netfilter_modules"] == [
        "nft_chain_nat", "nf_nat", "nf_conntrack", "nf_tables"]

    loaded["mods"] = th.parse_proc_modules("virtio_net 69632 0 - Live 0x0\n")
    back = FakeModule(tmp_path, state="restored")
    result, store = run(back, "restored")
    assert back.calls == [["/usr/sbin/modprobe", m] for m in ("nf_tables", "nf_conntrack", "nf_nat", "nft_chain_nat")]
    assert result["changes"]["netfilter_modules"]["after"] == ["nft_chain_nat", "nf_nat", "nf_conntrack", "nf_tables"]
    assert store.load("host-test-knobs") is None


def test_netfilter_unload_without_opt_in_runs_nothing(tmp_path, loaded):
    mod = FakeModule(tmp_path, netfilter_unload=True)
    with pytest.raises(th.HostTuningError, match="allow_netfilter_unload"):
        run(mod)
    assert mod.calls == [] and not os.path.exists(tmp_path / "state")


def test_check_mode_plans_but_runs_nothing(tmp_path, loaded):
    mod = FakeModule(tmp_path, check_mode=True, netfilter_unload=True, allow_netfilter_unload=True)
    result, store = run(mod)
    assert result["changed"] and result["changes"]["netfilter_unload"]["before"][0] == "nft_chain_nat"
    assert mod.calls == [] and store.load("host-test-knobs") is None


def test_kernel_cmdline_edit_then_restore(tmp_path, loaded):
    grub = tmp_path / "grub"
    grub.write_text('GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX="console=ttyS0"\n')
    mod = FakeModule(tmp_path, kernel_cmdline={"isolcpus": "2-3", "nohz_full": "2-3"})
    result, _dummy = run(mod)
    assert result["reboot_required"] and result["changes"]["kernel_cmdline"] == {
        "before": "console=ttyS0", "after": "console=ttyS0 isolcpus=2-3 nohz_full=2-3", "file": str(grub)}
    assert 'GRUB_CMDLINE_LINUX="console=ttyS0 isolcpus=2-3 nohz_full=2-3"' in grub.read_text()
    assert any("update-grub not found" in w for w in mod.warnings)
    again, _dummy = run(FakeModule(tmp_path, kernel_cmdline={"isolcpus": "2-3", "nohz_full": "2-3"}))
    assert not again["changed"] and not again["reboot_required"]
    back, _dummy = run(FakeModule(tmp_path, state="restored"), "restored")
    assert back["reboot_required"]
    assert grub.read_text() == 'GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX="console=ttyS0"\n'


def test_unsupported_knobs_fail_before_anything_or_are_skipped(tmp_path, loaded):
    mod = FakeModule(tmp_path, governor="performance", netfilter_unload=True, allow_netfilter_unload=True)
    with pytest.raises(Failed, match="governor: this host has no cpufreq"):
        run(mod)
    assert mod.calls == []
    mod = FakeModule(tmp_path, governor="performance", netfilter_unload=True, allow_netfilter_unload=True,
                     on_unsupported="skip")
    result, _dummy = run(mod)
    assert result["skipped_settings"] == ["governor: this host has no cpufreq scaling_governor"]
    assert mod.calls[0] == ["/usr/sbin/rmmod", "nft_chain_nat"]


def test_kernel_cmdline_in_a_grub_d_drop_in_is_edited_there_and_restored_byte_exact(tmp_path, loaded):
    grub = tmp_path / "grub"
    grub.write_text('GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX=""\n')
    (tmp_path / "grub.d").mkdir()
    cfg = tmp_path / "grub.d" / "50-cloudimg.cfg"
    cfg.write_text('# image\nexport GRUB_CMDLINE_LINUX="console=tty0 console=ttyS0"  # serial\n')
    before = (grub.read_bytes(), cfg.read_bytes())
    result, _dummy = run(FakeModule(tmp_path, kernel_cmdline={"isolcpus": "2-3"}))
    assert result["changes"]["kernel_cmdline"] == {"before": "console=tty0 console=ttyS0",
                                                   "after": "console=tty0 console=ttyS0 isolcpus=2-3", "file": str(cfg)}
    assert grub.read_bytes() == before[0]
    assert 'export GRUB_CMDLINE_LINUX="console=tty0 console=ttyS0 isolcpus=2-3"  # serial' in cfg.read_text()
    run(FakeModule(tmp_path, state="restored"), "restored")
    assert (grub.read_bytes(), cfg.read_bytes()) == before


def test_a_snapshot_naming_a_file_outside_the_grub_sources_is_refused(tmp_path):
    from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _restore

    (tmp_path / "grub").write_text("")
    (tmp_path / "grub.d").mkdir()
    host = _restore.HostWriter(FakeModule(tmp_path), str(tmp_path / "state"), str(tmp_path / "grub"))
    assert host.grub_target(str(tmp_path / "grub.d" / "x.cfg")) == str(tmp_path / "grub.d" / "x.cfg")
    for bad in ("/etc/shadow", str(tmp_path / "grub.d" / "x.sh"), str(tmp_path / "grub.d" / ".." / "grub2.cfg")):
        with pytest.raises(th.HostTuningError, match="is not .* or a [*].cfg file"):
            host.grub_target(bad)
