# SPDX-License-Identifier: GPL-3.0-or-later
"""env_facts on the live host: a real veth pair in an own namespace with a real
clang-compiled XDP program attached natively; the module runs inside the
namespace (as the netns connection does) and must report driver, channels and
the program's name and tag as the kernel has them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ANSIBLE = REPO / ".venv" / "bin" / "ansible"
XDP_C = """
#include <linux/bpf.h>
#define SEC(n) __attribute__((section(n), used))
SEC("xdp") int h4_envpass(struct xdp_md *ctx) { return XDP_PASS; }
char _license[] SEC("license") = "GPL";
"""

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for netns/XDP"),
]


def run(*argv, **kw):
    return subprocess.run(list(argv), check=True, capture_output=True, text=True, **kw)


@pytest.fixture
def netns_xdp(tmp_path):
    ns = f"h4ef{os.getpid()}"
    obj = tmp_path / "pass.o"
    (tmp_path / "pass.c").write_text(XDP_C)
    run(shutil.which("clang") or "clang", "-O2", "-g", "-target", "bpf",
        "-I/usr/include/x86_64-linux-gnu", "-c", str(tmp_path / "pass.c"), "-o", str(obj))
    run("ip", "netns", "add", ns)
    try:
        run("ip", "-n", ns, "link", "add", "h4e0", "type", "veth", "peer", "name", "h4e1")
        for dev in ("h4e0", "h4e1"):
            run("ip", "-n", ns, "link", "set", dev, "up")
        run("ip", "-n", ns, "link", "set", "dev", "h4e0", "xdpdrv", "obj", str(obj), "sec", "xdp")
        yield ns
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)


def env_facts(ns, *args):
    cp = subprocess.run(["ip", "netns", "exec", ns, str(ANSIBLE), "localhost", "-m",
                         "xdplab.testbed.env_facts", *args],
                        capture_output=True, text=True, cwd=REPO,
                        env={**os.environ, "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
                             "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1"}, check=False)
    return cp


def test_env_facts_live_veth_xdp(netns_xdp):
    cp = env_facts(netns_xdp, "-a", "interfaces=h4e0,h4e1")
    assert cp.returncode == 0, cp.stdout + cp.stderr
    # profile_tasks (ansible.cfg) prints a timing line before the JSON document
    out, _dummy = json.JSONDecoder().raw_decode(cp.stdout[cp.stdout.index("{"):])
    env = out["plays"][0]["tasks"][0]["hosts"]["localhost"]["environment"]
    assert env["kernel"] == os.uname().release
    assert env["cpus_online"] == os.cpu_count()
    assert env["nic"]["h4e0"]["driver"] == "veth"
    assert env["ethtool"]["h4e0"]["channels"]["rx"] >= 1
    xdp = env["xdp"]["h4e0"]
    assert xdp["mode"] == "native" and xdp["program"] == "h4_envpass"
    show = json.loads(run("bpftool", "prog", "show", "id", str(xdp["prog_id"]), "--json").stdout)
    assert xdp["tag"] == show["tag"]
    assert "h4e1" not in env.get("xdp", {})


def test_env_facts_unknown_interface_fails(netns_xdp):
    cp = env_facts(netns_xdp, "-a", "interfaces=nosuch0")
    assert cp.returncode != 0
    assert "interface 'nosuch0' does not exist" in cp.stdout
