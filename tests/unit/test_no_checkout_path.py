# SPDX-License-Identifier: GPL-3.0-or-later
"""No tracked file names the directory the collection is checked out in: commands in docs, comments and
capture notes say 'from the checkout' or use paths relative to it, so they are true in every clone."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_no_file_names_this_checkout():
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout  # noqa: S607
    here = str(ROOT).encode()
    named = [name.decode() for name in files.split(b"\0") if name and (ROOT / name.decode()).is_file()
             and here in (ROOT / name.decode()).read_bytes()]
    assert named == []
