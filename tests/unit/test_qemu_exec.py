# SPDX-License-Identifier: GPL-3.0-or-later
"""qemu_exec module logic with _qemu.probe_kvm/_qemu.run mocked: accelerator choice, KVM->TCG fallback,
failure on timeout / missing exit status / nonzero rc, rundir rules."""

from __future__ import annotations

import json
from unittest import mock

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.xdplab.testbed.plugins.module_utils.kernel import _qemu_guest as _qemu
from ansible_collections.xdplab.testbed.plugins.modules import qemu_exec


def _result(**kw):
    base = dict(rc=0, stdout="6.1.192-x\n", stderr="", console_log="/r/console.log", timed_out=False, qemu_rc=0,
                duration_s=1.0, argv=["qemu"], boot_stalled=False, qemu_output="")
    base.update(kw)
    return _qemu.GuestResult(**base)


def _run_module(args, probe=(False, "no kvm"), results=(), tmp_path=None):
    calls = []

    def fake_run(spec, timeout, boot_timeout=None, track=None):
        # The module hands the guest runner a tracker that records QEMU in its ledger directory.
        assert track is not None
        calls.append((spec.accel, boot_timeout))
        return results[len(calls) - 1]

    args = {"kernel": "/k/bzImage", "command": "uname -r", "rundir": "/var/lib/xdplab/qemu/h5-unit", **args}
    with patch_module_args(args), \
            mock.patch.object(_qemu, "probe_kvm", return_value=probe), \
            mock.patch.object(_qemu, "run", side_effect=fake_run), \
            mock.patch("ansible.module_utils.basic.AnsibleModule.get_bin_path", return_value="/usr/bin/qemu"), \
            mock.patch("os.path.isfile", return_value=True), \
            mock.patch("os.makedirs") as makedirs, \
            pytest.raises(SystemExit), \
            mock.patch("sys.stdout.write") as out:
        qemu_exec.main()
    text = "".join(c.args[0] for c in out.call_args_list)
    assert makedirs.call_count <= 1
    return json.loads(text), calls


def test_tcg_when_probe_fails(tmp_path):
    res, calls = _run_module({}, probe=(False, "KVM probe did not answer within 3.0s"),
                             results=[_result()], tmp_path=tmp_path)
    assert calls == [("tcg", 180.0)]
    assert res["accel"] == "tcg" and "did not answer" in res["accel_reason"] and res["boot_retried"] is False
    assert res["rc"] == 0 and res["stdout_lines"] == ["6.1.192-x"] and res["changed"] is True


def test_kvm_stall_falls_back_to_tcg(tmp_path):
    res, calls = _run_module({"kvm_boot_timeout": 12}, probe=(True, "a probe guest ran under KVM"),
                             results=[_result(rc=None, boot_stalled=True, qemu_output="qemu: MSR 0x10a\n"),
                                      _result()], tmp_path=tmp_path)
    assert calls == [("kvm", 12.0), ("tcg", 180.0)]
    assert res["accel"] == "tcg" and "fell back to TCG" in res["accel_reason"] and "MSR 0x10a" in res["accel_reason"]


def test_a_stalled_tcg_boot_is_booted_once_more(tmp_path):
    """An emulated boot that stalls before the guest's init (RCU stalls under host load) is killed at
    tcg_boot_timeout and booted again: the command had not started, nothing is repeated."""
    # AnsibleModule.warn goes to the controller's display once controller code is imported (as other
    # tests do in this process): the warning is read where the module gives it
    with mock.patch("ansible.module_utils.basic.AnsibleModule.warn") as warn:
        res, calls = _run_module({"tcg_boot_timeout": 90},
                                 results=[_result(rc=None, boot_stalled=True, duration_s=90.2), _result()],
                                 tmp_path=tmp_path)
    assert calls == [("tcg", 90.0), ("tcg", 90.0)]
    assert res["rc"] == 0 and res["boot_retried"] is True and not res.get("failed"), res
    warn.assert_called_once_with("the TCG guest did not reach its init within 90s (last: an empty console); "
                                 "booted it once more")


def test_a_tcg_boot_that_stalls_twice_fails_naming_it(tmp_path):
    res, calls = _run_module({}, results=[_result(rc=None, boot_stalled=True, duration_s=180.1)] * 2,
                             tmp_path=tmp_path)
    assert len(calls) == 2
    assert res["failed"] and "did not reach its init within 180s, twice" in res["msg"], res


def test_a_guest_that_ends_before_its_init_is_not_booted_again(tmp_path):
    """A kernel that panics (QEMU exits by itself, -no-reboot) is reported as before, booted once."""
    res, calls = _run_module({}, results=[_result(rc=None, boot_stalled=True, duration_s=12.0)], tmp_path=tmp_path)
    assert len(calls) == 1 and res["boot_retried"] is False
    assert res["failed"] and "without running the command to completion" in res["msg"], res


def test_no_tcg_boot_watchdog_with_zero(tmp_path):
    res, calls = _run_module({"tcg_boot_timeout": 0}, results=[_result()], tmp_path=tmp_path)
    assert calls == [("tcg", None)] and res["rc"] == 0


def test_explicit_kvm_does_not_fall_back(tmp_path):
    res, calls = _run_module({"accel": "kvm"}, results=[_result(rc=None, boot_stalled=True)], tmp_path=tmp_path)
    assert calls == [("kvm", 30.0)]
    assert res["failed"] and "without running the command" in res["msg"]


@pytest.mark.parametrize(
    ("result", "args", "needle"),
    [
        (_result(rc=None, timed_out=True), {"timeout": 7}, "did not finish within 7s"),
        (_result(rc=2), {}, "exited with status 2"),
    ],
)
def test_failures(tmp_path, result, args, needle):
    res, _dummy = _run_module(args, results=[result], tmp_path=tmp_path)
    assert res["failed"] is True and needle in res["msg"]


def test_nonzero_rc_allowed(tmp_path):
    res, _dummy = _run_module({"fail_on_rc": False}, results=[_result(rc=2)], tmp_path=tmp_path)
    assert not res.get("failed") and res["rc"] == 2


@pytest.mark.parametrize("rundir", ["/tmp/h5-x", "/run/h5-x", "/tmp", "/var/tmp/h5-x"])
def test_rundir_under_tmpfs_is_refused(tmp_path, rundir):
    res, calls = _run_module({"rundir": rundir}, results=[], tmp_path=tmp_path)
    assert res["failed"] and rundir in res["msg"] and calls == []


def test_ledger_tracker_records_the_guest_while_it_runs(tmp_path):
    ledger_dir = tmp_path / "ledger"
    untrack = qemu_exec.ledger_tracker(str(ledger_dir))(4242, ["qemu-system-x86_64", "-kernel", "k"])
    entries = [json.loads(p.read_text()) for p in ledger_dir.glob("*.json")]
    assert len(entries) == 1 and entries[0]["kind"] == "qemu" and entries[0]["key"]["pid"] == 4242
    untrack()
    assert list(ledger_dir.glob("*.json")) == []
