# SPDX-License-Identifier: GPL-3.0-or-later
"""The series record of a patch series: subjects and ``git patch-id --stable`` ids (kernel._build_logic),
and the .config diff between two kernels. The patch-ids come from a real capture of git's output on
the project's fixture series (tests/unit/fixtures/git_patch_id/)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.kernel import _build_logic as _kernel

ROOT = Path(__file__).resolve().parents[2]
PATCHES = sorted((ROOT / "files" / "patches" / "fixture").glob("*.patch"))
CAPTURE = ROOT / "tests" / "unit" / "fixtures" / "git_patch_id" / "fixture-series.txt"
SUBJECTS = ["pktgen: show an xdplab fixture marker in pgctrl", "docs: pktgen: mention the xdplab fixture marker"]


def _captured() -> str:
    lines = CAPTURE.read_text().splitlines(keepends=True)
    assert lines[0].startswith("#xdplab-fixture:")
    return "".join(lines[1:])


def test_patch_ids_parsed_from_real_git_output():
    ids = _kernel.parse_patch_ids(_captured())
    assert ids == ["73ecd92b29530f18f161a0b5b40741d36bd9d12a", "9da5ba92546adc45d3320279f8ca60a6abc602b0"]
    assert _kernel.parse_patch_ids("") == []  # git prints nothing for input without a diff


@pytest.mark.parametrize("output", [
    "fatal: not a git repository\n",
    "73ecd92b29530f18f161a0b5b40741d36bd9d12a\n",  # the commit id is missing
    "73ECD92B29530F18F161A0B5B40741D36BD9D12Z 0000000000000000000000000000000000000000\n",
])
def test_foreign_output_is_not_taken_for_a_patch_id(output):
    with pytest.raises(_kernel.KernelError, match="git patch-id output line 1"):
        _kernel.parse_patch_ids(output)


def test_mbox_of_the_series_gives_each_patch_its_subject_and_id():
    mbox = "".join(p.read_text() for p in PATCHES)
    ids = iter(_kernel.parse_patch_ids(_captured()))
    seen = []

    def patch_id(text):
        seen.append(text)
        return next(ids)

    items = _kernel.read_series("series.mbox", mbox, patch_id)
    assert [i.subject for i, _dummy in items] == SUBJECTS
    assert [i.name for i, _dummy in items] == ["series.mbox#1", "series.mbox#2"]
    assert [i.index for i, _dummy in items] == [1, 2]
    assert items[0][0].patch_id.startswith("73ecd92b") and items[1][0].patch_id.startswith("9da5ba92")
    # git patch-id is fed each patch alone, exactly as split from the mbox
    assert seen == [PATCHES[0].read_text(), PATCHES[1].read_text()]
    rec = _kernel.series_record({}, [i for i, _dummy in items])
    assert _kernel.series_patches(rec) == [{"subject": s, "patch_id": i.patch_id}
                                           for s, (i, _dummy) in zip(SUBJECTS, items, strict=True)]


def test_read_series_numbers_on_from_start_and_refuses_a_part_without_diff():
    items = _kernel.read_series("b.patch", PATCHES[1].read_text(), lambda t: "ab" * 20, start=3)
    assert [(i.index, i.name) for i, _dummy in items] == [(3, "b.patch")]
    with pytest.raises(_kernel.KernelError, match="git patch-id found no diff in patch 'b.patch'"):
        _kernel.read_series("b.patch", PATCHES[1].read_text(), lambda t: "")
    with pytest.raises(_kernel.KernelError, match="'oops' is not a git patch-id"):
        _kernel.read_series("b.patch", PATCHES[1].read_text(), lambda t: "oops")
    with pytest.raises(_kernel.KernelError, match="'cover.txt' holds no patch \\(only a cover letter or replies\\)"):
        _kernel.read_series("cover.txt", "Subject: [PATCH 0/2] cover\n\nno diff here\n", lambda t: "ab" * 20)
    with pytest.raises(_kernel.KernelError, match="patch 'notes.txt' contains no diff"):
        _kernel.read_series("notes.txt", "Subject: [PATCH 1/2] notes\n\nno diff here\n", lambda t: "ab" * 20)


def test_encoded_and_folded_subjects_are_decoded():
    # git send-email writes a non-ASCII subject as RFC 2047 encoded words, folded over lines
    text = ("From: a <a@b>\nSubject: [PATCH net-next v2 1/3] =?UTF-8?q?net:=20caf=C3=A9:=20fix?=\n"
            " =?UTF-8?q?_the_na=C3=AFve_path?=\n\n---\n+++ b/x\n")
    assert _kernel.patch_subject(text, "f") == "net: café: fix the naïve path"
    assert _kernel.patch_subject("Subject: [RFC PATCH]  a   b\n\n", "f") == "a b"
    assert _kernel.patch_subject("Subject: =?bogus?q?x?=\n\n", "f") == "=?bogus?q?x?="


def test_series_patches_accepts_a_record_a_list_and_kernel_patches():
    pid = "AB" * 20
    want = [{"subject": "net: x", "patch_id": pid.lower()}]
    assert _kernel.series_patches([{"subject": "net: x", "patch_id": pid, "name": "0001"}]) == want
    assert _kernel.series_patches({"schema": _kernel.SERIES_SCHEMA, "patches": want}) == want
    assert _kernel.series_patches({"variant": "patched", "patches": want}) == want
    assert _kernel.series_patches([]) == []


@pytest.mark.parametrize(("series", "needle"), [
    ({"schema": "other/v1", "patches": []}, "schema is 'other/v1'"),
    ({"patches": "x"}, "a series is a list of patches"),
    (["x"], "series patch 0 must be a dict"),
    ([{"subject": "s", "patch_id": "1234"}], r"series patch 0 \('s'\): patch_id '1234' is not a git patch-id"),
    ([{"subject": "", "patch_id": "ab" * 20}], "has no subject"),
])
def test_series_patches_names_what_is_wrong(series, needle):
    with pytest.raises(_kernel.KernelError, match=needle):
        _kernel.series_patches(series)


def test_config_diff_lists_changed_and_new_options_only():
    a = "CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=m\nCONFIG_HZ=250\n"
    b = "CONFIG_A=y\nCONFIG_C=y\nCONFIG_HZ=1000\nCONFIG_NEW=y\n# CONFIG_GONE is not set\n"
    assert _kernel.config_diff(a, b) == [
        {"option": "CONFIG_C", "baseline": "m", "candidate": "y"},
        {"option": "CONFIG_HZ", "baseline": "250", "candidate": "1000"},
        {"option": "CONFIG_NEW", "baseline": "(absent)", "candidate": "y"},
    ]  # B: "not set" vs absent is no difference; GONE: absent vs "not set" neither
    assert _kernel.config_diff(a, a) == []
