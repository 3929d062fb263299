# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Cutting a file of patches into its mails with ``git mailsplit``, the splitter ``git am`` uses, and
``git patch-id --stable`` run from a module.

PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.

Why git's and not a regular expression or :mod:`mailbox`: an mbox separator is a line ``From <who>
<date>``, and a commit message may hold a line that starts ``From `` too ("From a user's point of
view, ..."): git format-patch does not quote such lines, and :class:`mailbox.mbox` cuts a mail at
every one of them (b4 does too: it reads a thread with :mod:`mailbox`). ``git mailsplit`` takes a
line for a separator only when it ends in a date, so it cuts a format-patch mbox, a ``b4 am`` mbox
(``From git@z Thu Jan  1 00:00:00 1970``) and a thread saved from lore where ``git am`` would.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from typing import Any

from ansible_collections.xdplab.testbed.plugins.module_utils.common import _command


class MailsplitError(Exception):
    """git is missing or refused the file; the message says which and why."""


def mailsplit(text: str, git: str | None = None) -> list[str]:
    """The mails of ``text`` in file order, each as written (its ``From `` line kept). A file that
    does not start with an mbox separator (a plain diff, one mail) is one mail; ``\\r\\n`` is kept.
    Text decoded with ``surrogateescape`` comes back byte for byte."""
    git = git or shutil.which("git")
    if not git:
        raise MailsplitError("git is needed to split a patch file into its mails (git mailsplit), and "
                             "it is not on PATH")
    with tempfile.TemporaryDirectory(prefix="xdplab-mailsplit-") as tmp:
        src = os.path.join(tmp, "series.mbox")
        out = os.path.join(tmp, "mails")
        os.mkdir(out)
        with open(src, "wb") as fh:
            fh.write(text.encode("utf-8", "surrogateescape"))
        try:
            proc = subprocess.run(  # noqa: S603 - argv list, git and our own temporary paths
                [git, "mailsplit", "-b", "--keep-cr", f"-o{out}", "--", src],
                capture_output=True, check=False, env=_command.c_env())
        except OSError as exc:
            raise MailsplitError(f"git mailsplit could not run ({git}): {exc.strerror}") from exc
        if proc.returncode != 0:
            raise MailsplitError(f"git mailsplit failed (rc={proc.returncode}): "
                                 f"{proc.stderr.decode('utf-8', 'replace').strip()}")
        mails = []
        for name in sorted(os.listdir(out)):
            with open(os.path.join(out, name), "rb") as fh:
                mails.append(fh.read().decode("utf-8", "surrogateescape"))
        return mails


def module_patch_id(module: Any) -> Callable[[str], str]:
    """``git patch-id --stable`` of one patch through an AnsibleModule's run_command (C locale):
    the patch-id, or "" when git finds no diff in the text; a failing git fails the module with
    rc, stdout and stderr. For :func:`_build_logic.read_series`."""
    from ansible_collections.xdplab.testbed.plugins.module_utils.kernel._build_logic import parse_patch_ids

    git = module.get_bin_path("git", required=True)

    def patch_id(text: str) -> str:
        rc, out, err = module.run_command([git, "patch-id", "--stable"], data=text, binary_data=True, cwd="/",
                                          environ_update=dict(_command.C_LOCALE))
        if rc != 0 or err.strip():
            module.fail_json(msg=f"git patch-id --stable failed (rc={rc})", rc=rc, stdout=out, stderr=err)
        ids = parse_patch_ids(out)
        return ids[0] if len(ids) == 1 else ""

    return patch_id
