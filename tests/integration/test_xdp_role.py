# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The xdp role for real: compile into a temporary build dir, attach in a namespace of our own,
run again (nothing changes), detach. ansible-playbook runs under `ip netns exec`, connection local."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from _roleplay import run_role
from ansible_collections.xdplab.testbed.plugins.module_utils.xdp import _bpf

pytestmark = pytest.mark.root

ROOT = Path(__file__).resolve().parents[2]


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, check=check)


@pytest.fixture
def ns():
    name = f"h1r{os.getpid()}"
    sh("ip", "netns", "add", name)
    try:
        for a, b in (("h1a", "h1b"), ("h1c", "h1d")):
            sh("ip", "-n", name, "link", "add", a, "type", "veth", "peer", "name", b)
            sh("ip", "-n", name, "link", "set", a, "up")
            sh("ip", "-n", name, "link", "set", b, "up")
        yield name
    finally:
        sh("ip", "netns", "del", name, check=False)


def play(ns: str, tmp_path: Path, extra: dict, check: bool = False) -> dict:
    return run_role("xdp", tmp_path, extra, check=check, netns=ns)


def task_results(out: dict, name_part: str) -> list[dict]:
    found = []
    for p in out["plays"]:
        for t in p["tasks"]:
            if name_part in t["task"]["name"]:
                found.append(t["hosts"]["localhost"])
    return found


def attached(ns: str, iface: str) -> list[dict]:
    r = sh("ip", "netns", "exec", ns, "bpftool", "--json", "net", "show", "dev", iface)
    return json.loads(r.stdout)[0]["xdp"]


def test_role_builds_attaches_idempotently_and_detaches(ns, tmp_path):
    build = tmp_path / "build"
    attach = [
        {"interface": "h1b", "program": "xdp_redirect", "mode": "generic",
         "map_entries": [{"map": "xdplab_redirect", "key": 0, "value": "h1c"}]},
        {"interface": "h1d", "program": "xdp_pass"},
    ]
    extra = {"xdp_install_toolchain": False, "xdp_build_dir": str(build), "xdp_attach": attach}

    check = play(ns, tmp_path, extra, check=True)  # check mode on a fresh host: nothing built or attached
    assert check["rc"] == 0, json.dumps(check["stats"])
    assert not build.exists()
    assert attached(ns, "h1b") == [] and attached(ns, "h1d") == []

    first = play(ns, tmp_path, extra)
    assert first["rc"] == 0, json.dumps(first["stats"])
    assert first["stats"]["localhost"]["changed"] >= 3
    assert sorted(p.name for p in build.glob("*.o")) == sorted(
        f"{s.name.removesuffix('.bpf.c')}.o" for s in (ROOT / "files" / "xdp").glob("*.bpf.c"))
    res = task_results(first, "XDP program attached")[0]["results"]
    red, sink = res
    assert (red["name"], red["mode"], sink["name"], sink["mode"]) == ("xdp_redirect", "generic", "xdp_pass", "native")
    want = {"devname": "h1b", "ifindex": red["ifindex"], "mode": "generic", "id": red["prog_id"]}
    assert attached(ns, "h1b") == [want]
    assert attached(ns, "h1d")[0]["id"] == sink["prog_id"]
    assert "xdplab_redirect" in _bpf.prog_maps(red["prog_id"])

    recheck = play(ns, tmp_path, extra, check=True)  # built and attached: check mode sees nothing to do
    assert recheck["rc"] == 0 and recheck["stats"]["localhost"]["changed"] == 0

    second = play(ns, tmp_path, extra)
    assert second["rc"] == 0
    assert second["stats"]["localhost"]["changed"] == 0, [
        t["task"]["name"] for p in second["plays"] for t in p["tasks"] if t["hosts"]["localhost"].get("changed")]
    assert attached(ns, "h1b")[0]["id"] == red["prog_id"]

    # a changed source is rebuilt (and only then)
    src = build / "src" / "xdp_drop.bpf.c"
    src.write_text(src.read_text() + "\n/* touched */\n")
    third = play(ns, tmp_path, {**extra, "xdp_attach": []})
    assert task_results(third, "Compile what changed")[0]["changed"] is True
    assert task_results(third, "Copy the XDP sources")[0]["changed"] is True  # restored from files/xdp

    gone = play(ns, tmp_path, {**extra, "xdp_state": "detached"})
    assert gone["rc"] == 0
    assert gone["stats"]["localhost"]["changed"] >= 1
    assert attached(ns, "h1b") == [] and attached(ns, "h1d") == []


def test_role_fails_on_unknown_program_and_attaches_nothing(ns, tmp_path):
    extra = {"xdp_install_toolchain": False, "xdp_build_dir": str(tmp_path / "build"),
             "xdp_attach": [{"interface": "h1b", "program": "xdp_h1nope"}]}
    out = play(ns, tmp_path, extra)
    assert out["rc"] != 0
    failed = task_results(out, "XDP program attached")[0]["results"][0]
    assert "xdp_h1nope" in failed["msg"]
    assert attached(ns, "h1b") == []
