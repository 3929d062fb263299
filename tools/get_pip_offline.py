# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Offline stand-in for the get-pip script ansible-test downloads to bootstrap pip in its venvs.

ansible-test runs the cached ``~/.ansible/test/cache/get_pip_<version>.py`` as ``__main__`` with
pip's install options and packages (``pip==<version>``, ``--no-setuptools``, ``--no-wheel``).
Where its download host is unreachable, `make sanity` places this file there: it installs the
pip that ships with Python (ensurepip), then lets that pip install the requested packages from
the configured package index.
"""

from __future__ import annotations

import subprocess
import sys

# get-pip options that pip install does not know.
GET_PIP_ONLY = ("--no-setuptools", "--no-wheel")


def main() -> int:
    # In a child: ensurepip switches pip's configuration off in its own process's environment,
    # and the install below needs it (index, certificates).
    rc = subprocess.call([sys.executable, "-m", "ensurepip", "--upgrade"])
    if rc:
        return rc
    args = [a for a in sys.argv[1:] if a not in GET_PIP_ONLY]
    return subprocess.call([sys.executable, "-m", "pip", "install", *args])


if __name__ == "__main__":
    sys.exit(main())
