# SPDX-License-Identifier: GPL-3.0-or-later
"""A series as a reviewer gets it: a ``b4 am`` mbox (trailers added, ``From git@z`` separators) and a
thread saved from lore (cover letter, patches, replies), cut into its patches by ``git mailsplit``
and :func:`_build_logic.series_mails` (tests/unit/fixtures/b4/, each with its provenance line).
The patch-ids are git's own (``git patch-id --stable`` of the format-patch files the thread was
sent from): trailers do not change them."""

from __future__ import annotations

import mailbox
import subprocess
from pathlib import Path

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.kernel import _build_logic as _kernel
from ansible_collections.xdplab.testbed.plugins.module_utils.kernel import _mailsplit

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "b4"
SUBJECTS = ["lib: give a the value 1", "lib: give b the value 2", "lib: give c the value 3"]
# git patch-id --stable of the three format-patch files the thread was made of
IDS = ["dc4315f442879433067e2c79df8a96118e252c92", "5cd31c8acd93f0f9491e8ca262b6d9a08dfbd7aa",
       "917e6ce7a1f0d8240fee18412f527ed76cd06e4b"]


def _fixture(name: str) -> str:
    first, rest = (FIXTURES / name).read_text().split("\n", 1)
    assert first.startswith("#xdplab-fixture:")
    return rest


def _git_patch_id(text: str) -> str:
    out = subprocess.run(["git", "patch-id", "--stable"], input=text.encode(), capture_output=True,
                         check=True, cwd="/", env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"}).stdout.decode()
    ids = _kernel.parse_patch_ids(out)
    return ids[0] if len(ids) == 1 else ""


def test_a_b4_am_mbox_is_three_patches_in_order_with_git_s_patch_ids():
    items = _kernel.read_series("v1_lib.mbx", _fixture("b4-am.mbx"), _git_patch_id)
    assert [i.subject for i, _t in items] == SUBJECTS
    assert [i.patch_id for i, _t in items] == IDS
    assert [i.name for i, _t in items] == ["v1_lib.mbx#1", "v1_lib.mbx#2", "v1_lib.mbx#3"]
    assert [i.files for i, _t in items] == [["lib.c"]] * 3
    # b4 added the reviewers' trailers; they are in the text kept for the patch
    assert "Reviewed-by: Rita Reviewer <rita@example.org>" in items[1][1]


def test_before_the_split_such_an_mbox_was_one_patch_git_patch_id_refused():
    # what the loop did with it: the whole file fed to git patch-id, which gives 3 ids, not 1
    assert _git_patch_id(_fixture("b4-am.mbx")) == ""


def test_a_lore_thread_leaves_out_the_cover_letter_and_the_replies():
    items = _kernel.read_series("t.mbox", _fixture("thread.mboxrd"), _git_patch_id)
    assert [i.subject for i, _t in items] == SUBJECTS
    assert [i.patch_id for i, _t in items] == IDS
    # mail 1 is the cover letter [PATCH net-next 0/3], 5 and 6 the replies
    assert [i.name for i, _t in items] == ["t.mbox#2", "t.mbox#3", "t.mbox#4"]


def test_git_mailsplit_does_not_cut_at_a_from_line_of_a_commit_message(tmp_path):
    # git format-patch does not quote body lines that start "From "; unquote the fixture's to get that
    mbox = _fixture("thread.mboxrd").replace("\n>From a reader", "\nFrom a reader")
    mails = _mailsplit.mailsplit(mbox)
    assert len(mails) == 6
    assert [_kernel.patch_subject(m, "?") for m in mails[1:4]] == SUBJECTS
    assert all("From a reader's point of view" in m for m in mails[1:4])
    # the stdlib mailbox module cuts at each of those lines: 9 "mails", three of them without headers
    (tmp_path / "t.mbox").write_text(mbox)
    assert len(mailbox.mbox(str(tmp_path / "t.mbox"))) == 9


def test_patches_are_put_in_the_order_of_their_numbers():
    mails = _mailsplit.mailsplit(_fixture("thread.mboxrd"))
    shuffled = [mails[3], mails[0], mails[1], mails[4], mails[2]]
    kept = _kernel.series_mails("t.mbox", shuffled)
    assert [_kernel.patch_subject(t, "?") for _n, t in kept] == SUBJECTS
    assert [n for n, _t in kept] == ["t.mbox#3", "t.mbox#5", "t.mbox#1"]


def test_a_lost_mail_or_two_revisions_in_one_mbox_are_refused_by_name():
    mails = _mailsplit.mailsplit(_fixture("b4-am.mbx"))
    with pytest.raises(_kernel.KernelError, match=r"'x.mbx' lacks patch 2/3 of the series"):
        _kernel.series_mails("x.mbx", [mails[0], mails[2]])
    v2 = mails[1].replace("[PATCH 2/3]", "[PATCH v2 2/3]")
    with pytest.raises(_kernel.KernelError, match=r"two patches numbered 2/3 \(x.mbx#2 and x.mbx#4\)"):
        _kernel.series_mails("x.mbx", mails + [v2])
    other = mails[0].replace("[PATCH 1/3]", "[PATCH 1/4]")
    with pytest.raises(_kernel.KernelError, match=r"mixes series of 3 and 4 patches"):
        _kernel.series_mails("x.mbx", [other] + mails[1:])


def test_a_mail_without_a_diff_that_is_no_cover_letter_nor_reply_is_refused():
    mails = _mailsplit.mailsplit(_fixture("b4-am.mbx"))
    note = "From git@z Thu Jan  1 00:00:00 1970\nSubject: [PATCH 4/3] a note\n\nno diff\n"
    with pytest.raises(_kernel.KernelError, match=r"patch 'x.mbx#4' contains no diff"):
        _kernel.series_mails("x.mbx", mails + [note])
    with pytest.raises(_kernel.KernelError, match=r"'x.mbx' is empty"):
        _kernel.series_mails("x.mbx", [])


def test_a_single_numbered_patch_file_is_kept_as_it_is():
    mails = _mailsplit.mailsplit(_fixture("b4-am.mbx"))
    assert _kernel.series_mails("0002.patch", [mails[1]]) == [("0002.patch", mails[1])]


def test_mailsplit_failure_names_the_file(tmp_path):
    def broken(_text):
        raise _mailsplit.MailsplitError("git is needed to split a patch file")

    with pytest.raises(_kernel.KernelError, match=r"'s.mbx': git is needed"):
        _kernel.read_series("s.mbx", "x", _git_patch_id, split=broken)
    with pytest.raises(_mailsplit.MailsplitError, match=r"git mailsplit could not run .*no-such-git"):
        _mailsplit.mailsplit("x", git=str(tmp_path / "no-such-git"))
    with pytest.raises(_mailsplit.MailsplitError, match=r"git mailsplit failed \(rc=\d+\)"):
        _mailsplit.mailsplit("x", git="/bin/false")
