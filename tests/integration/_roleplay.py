# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run one of the collection's roles in a throw-away playbook on localhost (connection local,
optionally under `ip netns exec`), with the JSON stdout callback, and return the parsed result
plus rc and stderr. Shared by the role tests (test_xdp_role, test_xdpgen_role)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import playbook_run

ROOT = Path(__file__).resolve().parents[2]
PLAY = """
- name: {role} role test
  hosts: localhost
  connection: local
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{{{ ansible_playbook_python }}}}"
  roles:
    - role: xdplab.testbed.{role}
"""


def run_role(role: str, tmp_path: Path, extra: dict, check: bool = False, netns: str | None = None) -> dict:
    pb = tmp_path / "play.yml"
    pb.write_text(PLAY.format(role=role))
    vars_file = tmp_path / "vars.json"
    vars_file.write_text(json.dumps(extra))
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_STDOUT_CALLBACK": "json",
           "ANSIBLE_DEPRECATION_WARNINGS": "False"}
    # The inventory goes on the command line: ANSIBLE_INVENTORY is a path list, so "localhost," there
    # splits into "localhost" and "" (the working directory), and ansible would then read the whole
    # checkout as an inventory directory and execute every executable file in it as an inventory script.
    argv = ([*(["ip", "netns", "exec", netns] if netns else []), str(ROOT / ".venv" / "bin" / "ansible-playbook"),
             "-i", "localhost,", str(pb), "-e", f"@{vars_file}"] + (["--check"] if check else []))
    r = playbook_run.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, check=False)  # noqa: S603
    try:
        out, _end = json.JSONDecoder().raw_decode(r.stdout[r.stdout.index("{"):])
    except ValueError:
        raise AssertionError(f"ansible-playbook printed no JSON (rc={r.returncode}): {r.stdout[-2000:]!r} "
                             f"{r.stderr[-2000:]!r}") from None
    out["rc"] = r.returncode
    out["stderr"] = r.stderr
    return out
