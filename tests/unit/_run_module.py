# SPDX-License-Identifier: GPL-3.0-or-later
"""Run one of the collection's modules as Ansible runs it: a separate Python reading its arguments as
JSON on stdin, with the collection on its path; returns the JSON it prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_module(name: str, args: dict) -> dict:
    proc = subprocess.run([sys.executable, str(ROOT / "plugins" / "modules" / f"{name}.py")],  # noqa: S603
                          input=json.dumps({"ANSIBLE_MODULE_ARGS": args}), capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT / ".collections")), check=False)
    return json.loads(proc.stdout)
