# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the private _kernel helpers: patch parsing, series planning, Kconfig checks, build keys."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from ansible_collections.xdplab.testbed.plugins.module_utils.kernel import _build_logic as _kernel
from ansible_collections.xdplab.testbed.plugins.module_utils.kernel import _mailsplit

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "files" / "patches" / "fixture"


def _fixture_texts():
    return [p.read_text() for p in sorted(FIXTURE.glob("*.patch"))]


def test_fixture_series_subjects_and_files():
    texts = _fixture_texts()
    assert len(texts) == 2
    assert _kernel.patch_subject(texts[0], "x") == "pktgen: show an xdplab fixture marker in pgctrl"
    assert _kernel.patch_subject(texts[1], "x") == "docs: pktgen: mention the xdplab fixture marker"
    assert _kernel.patch_files(texts[0]) == ["net/core/pktgen.c"]
    assert _kernel.patch_files(texts[1]) == ["Documentation/networking/pktgen.rst"]


def test_mailsplit_of_concatenated_series():
    texts = _fixture_texts()
    assert _mailsplit.mailsplit("".join(texts)) == texts
    assert _mailsplit.mailsplit("--- a/x\n+++ b/x\n") == ["--- a/x\n+++ b/x\n"]


def test_subject_folded_and_fallback():
    text = "From: a\nSubject: [PATCH net-next v2 3/7] net: a very\n long subject\n\n--- a/f\n+++ b/f\n"
    assert _kernel.patch_subject(text, "fb") == "net: a very long subject"
    assert _kernel.patch_subject("--- a/f\n+++ b/f\n", "file.diff") == "file.diff"


def test_patch_files_new_and_deleted():
    text = "--- /dev/null\n+++ b/new.c\n--- a/old.c\n+++ /dev/null\n"
    assert _kernel.patch_files(text) == ["new.c", "old.c"]
    with pytest.raises(_kernel.KernelError, match="no diff"):
        _kernel.patch_files("Subject: nothing\n")


@pytest.mark.parametrize(
    ("applied", "wanted", "expected"),
    [
        ([], [], ("noop", [])),
        (["a", "b"], ["a", "b"], ("noop", [])),
        (["a"], ["a", "b", "c"], ("extend", [1, 2])),
        (["a", "b"], ["a"], ("reset", [0])),
        (["b", "a"], ["a", "b"], ("reset", [0, 1])),
        (["a"], [], ("reset", [])),
    ],
)
def test_plan_series(applied, wanted, expected):
    assert _kernel.plan_series(applied, wanted) == expected


def test_failed_files_from_gnu_patch_output():
    out = ("checking file Documentation/networking/pktgen.rst\n"
           "checking file net/core/pktgen.c\nHunk #1 FAILED at 514.\n1 out of 1 hunk FAILED\n")
    out = out.replace("checking file", "patching file")
    assert _kernel.failed_files_patch(out) == ["net/core/pktgen.c"]
    missing = ("can't find file to patch at input line 5\nPerhaps you used the wrong -p or --strip option?\n"
               "|--- a/net/core/nothere.c\n")
    assert _kernel.failed_files_patch(missing) == ["net/core/nothere.c"]


def test_failed_files_from_git_am_output():
    out = ("Applying: pktgen: x\nerror: patch failed: net/core/pktgen.c:514\n"
           "error: net/core/pktgen.c: patch does not apply\nCONFLICT (content): Merge conflict in net/core/dev.c\n")
    assert _kernel.failed_files_git(out) == ["net/core/pktgen.c", "net/core/dev.c"]


def test_parse_config_and_dropped():
    final = _kernel.parse_config("CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=m\nCONFIG_S=\"x y\"\n# comment\n")
    assert final == {"CONFIG_A": "y", "CONFIG_B": "n", "CONFIG_C": "m", "CONFIG_S": '"x y"'}
    req = _kernel.normalize_options({"A": True, "CONFIG_B": True, "C": "y", "D": False, "S": "x y", "N": 4})
    assert req == {"CONFIG_A": "y", "CONFIG_B": "y", "CONFIG_C": "y", "CONFIG_D": "n", "CONFIG_S": '"x y"',
                   "CONFIG_N": "4"}
    dropped = _kernel.dropped_options(req, final)
    assert [d["option"] for d in dropped] == ["CONFIG_B", "CONFIG_C", "CONFIG_N"]
    assert dropped[0] == {"option": "CONFIG_B", "requested": "y", "final": "n"}
    assert dropped[2]["final"] == "absent"
    with pytest.raises(_kernel.KernelError, match="'BAD-NAME'"):
        _kernel.normalize_options({"BAD-NAME": True})


def test_fragment_text_round_trip():
    opts = {"CONFIG_A": "y", "CONFIG_B": "n", "CONFIG_N": "4"}
    assert _kernel.parse_config(_kernel.fragment_text(opts)) == opts


def test_kconfig_reasons_on_a_small_tree(tmp_path):
    (tmp_path / "Kconfig").write_text(
        "config MODULES\n\tbool \"modules\"\n\n"
        "config BPF_JIT\n\tbool \"BPF JIT\"\n\tdepends on BPF\n\tdepends on HAVE_EBPF_JIT || HAVE_CBPF_JIT\n"
        "\tdepends on MODULES\n\n"
        "config HIDDEN\n\tbool\n\n"
        "config FOO\n\ttristate \"foo\"\n"
    )
    final = {"CONFIG_BPF": "y", "CONFIG_HAVE_EBPF_JIT": "y"}
    dropped = [{"option": "CONFIG_BPF_JIT", "requested": "y", "final": "n"},
               {"option": "CONFIG_HIDDEN", "requested": "y", "final": "absent"},
               {"option": "CONFIG_NOPE", "requested": "y", "final": "absent"},
               {"option": "CONFIG_FOO", "requested": "m", "final": "n"}]
    reasons = {r["option"]: r["reason"] for r in _kernel.kconfig_reasons(str(tmp_path), dropped, final)}
    assert reasons["CONFIG_BPF_JIT"].startswith("unmet dependencies: MODULES=n")
    assert "only set by 'select'" in reasons["CONFIG_HIDDEN"]
    assert "no 'config NOPE'" in reasons["CONFIG_NOPE"]
    assert "CONFIG_MODULES is off" in reasons["CONFIG_FOO"]


# The two trees the collection builds, as their Kconfig defines /proc/sys: 6.12 PROC_SYSCTL (selecting SYSCTL),
# 7.3 SYSCTL with the prompt.
KCONFIG_6_12 = ("config PROC_SYSCTL\n\tbool \"Sysctl support (/proc/sys)\" if EXPERT\n\tselect SYSCTL\n\n"
                "config SYSCTL\n\tbool\n")
KCONFIG_7_3 = "config SYSCTL\n\tbool \"Sysctl support (/proc/sys)\" if EXPERT\n\tdepends on PROC_FS\n"


@pytest.mark.parametrize(("kconfig", "expected", "renamed"), [
    (KCONFIG_6_12, {"CONFIG_PROC_SYSCTL": "y", "CONFIG_BPF": "y"}, []),
    (KCONFIG_7_3, {"CONFIG_SYSCTL": "y", "CONFIG_BPF": "y"}, [{"option": "CONFIG_PROC_SYSCTL", "as": "CONFIG_SYSCTL"}]),
    # Neither name: the old one stays requested and fails as a dropped option naming it (no guessing).
    ("config BPF\n\tbool \"bpf\"\n", {"CONFIG_PROC_SYSCTL": "y", "CONFIG_BPF": "y"}, []),
])
def test_a_renamed_option_is_requested_by_the_trees_name(tmp_path, kconfig, expected, renamed):
    (tmp_path / "Kconfig").write_text(kconfig)
    got = _kernel.follow_renames({"CONFIG_PROC_SYSCTL": "y", "CONFIG_BPF": "y"}, _kernel.kconfig_symbols(str(tmp_path)))
    assert got == (expected, renamed)


def test_a_rename_keeps_the_value_asked_under_the_new_name():
    got, renamed = _kernel.follow_renames({"CONFIG_PROC_SYSCTL": "y", "CONFIG_SYSCTL": "n"}, {"SYSCTL"})
    assert got == {"CONFIG_SYSCTL": "n"} and renamed == [{"option": "CONFIG_PROC_SYSCTL", "as": "CONFIG_SYSCTL"}]


def test_build_key_changes_with_every_input():
    base = ("src", ["p1", "p2"], "CONFIG_A=y\n", "patched", ["bzImage"])
    key = _kernel.build_key(*base)
    assert key == _kernel.build_key(*base)
    for i, alt in enumerate(("src2", ["p1"], "CONFIG_A=n\n", "baseline", ["bzImage", "modules"])):
        args = list(base)
        args[i] = alt
        assert _kernel.build_key(*args) != key


def test_localversion_validates():
    assert _kernel.localversion("patched") == "-patched"
    with pytest.raises(_kernel.KernelError, match="'bad name'"):
        _kernel.localversion("bad name")


def test_series_record_shape():
    p = _kernel.PatchInfo(index=1, name="0001.patch", subject="s", files=["f"], patch_id="ab" * 20)
    rec = _kernel.series_record({"type": "debian"}, [p])
    assert rec["schema"] == "xdplab.kernel-series/v1"
    assert rec["series_id"] == _kernel.series_id(["ab" * 20])
    assert rec["patches"][0]["subject"] == "s" and os.sep not in rec["patches"][0]["name"]


def test_the_build_user_is_dropped_to_by_number_and_never_root():
    from types import SimpleNamespace

    from ansible_collections.xdplab.testbed.plugins.module_utils.kernel._build_logic import (
        KernelError,
        drop_privileges_argv,
    )
    users = {"xdplab-build": SimpleNamespace(pw_uid=998, pw_gid=997), "toor": SimpleNamespace(pw_uid=0, pw_gid=0)}
    assert drop_privileges_argv("xdplab-build", "/usr/bin/setpriv", users.__getitem__) == [
        "/usr/bin/setpriv", "--reuid=998", "--regid=997", "--init-groups", "--no-new-privs", "env", "-u", "TMPDIR"]
    assert drop_privileges_argv("", getpwnam=users.__getitem__) == []
    assert drop_privileges_argv(None, getpwnam=users.__getitem__) == []
    with pytest.raises(KernelError, match="'toor' is root"):
        drop_privileges_argv("toor", getpwnam=users.__getitem__)
    with pytest.raises(KernelError, match="build user 'nobody-here' does not exist"):
        drop_privileges_argv("nobody-here", getpwnam=users.__getitem__)


def test_the_role_drops_to_the_build_user_with_the_modules_prefix():
    # The kernel role's make runs through the as_build_user filter: the modules' prefix, with the user
    # named (setpriv resolves it on the build host, where the filter cannot look).
    from ansible.errors import AnsibleFilterError
    from ansible_collections.xdplab.testbed.plugins.filter.as_build_user import as_build_user
    from ansible_collections.xdplab.testbed.plugins.module_utils.kernel._build_logic import drop_privileges_argv

    by_number = drop_privileges_argv("b", getpwnam=lambda _: type("pw", (), {"pw_uid": 5, "pw_gid": 6}))
    by_name = as_build_user("xdplab-build")
    assert by_name[:3] == ["setpriv", "--reuid=xdplab-build", "--regid=xdplab-build"]
    assert by_name[3:] == by_number[3:] and by_number[1:3] == ["--reuid=5", "--regid=6"]
    assert as_build_user("") == []
    with pytest.raises(AnsibleFilterError, match="got None"):
        as_build_user(None)
    role_vars = yaml.safe_load((Path(__file__).parents[2] / "roles" / "kernel" / "vars" / "main.yml").read_text())
    assert "xdplab.testbed.as_build_user" in role_vars["__kernel_as_user"]


def test_the_kernel_builds_share_two_sources_and_one_config():
    # Two cold compiles on a fresh machine, the rest ccache hits: the kernel role's defaults and molecule/kernel
    # build linux-source-6.12 (the fixture series, the QEMU tests' guest kernel); the lab in a box's guest kernel
    # linux-source-7.3 (zero copy upstream). The lab DUT's kernels (kernel_install.yml, ab.yml on
    # inventories/vmlab) take the lab's source from its inventory, so they match the guest kernel's drivers and
    # init. Every build has the same fragments.
    kernel = yaml.safe_load((ROOT / "roles" / "kernel" / "defaults" / "main.yml").read_text())
    vmlab = yaml.safe_load((ROOT / "roles" / "vmlab" / "defaults" / "main.yml").read_text())
    molecule = yaml.safe_load((ROOT / "molecule" / "kernel" / "converge.yml").read_text())[0]["vars"]
    lab_inventory = yaml.safe_load((ROOT / "inventories" / "vmlab" / "group_vars" / "all.yml").read_text())
    assert kernel["kernel_source_package"] == molecule["kernel_source_package"] == "linux-source-6.12"
    assert vmlab["vmlab_kernel_source_package"] == lab_inventory["kernel_source_package"] == "linux-source-7.3"
    fragments = [kernel["kernel_config_fragments"], vmlab["vmlab_kernel_fragments"],
                 molecule["kernel_config_fragments"]]
    assert all(f == fragments[0] for f in fragments), fragments
