# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The xdplab.testbed.netns connection through ansible-playbook with a temporary inventory: commands,
fact gathering, copy and slurp run inside namespaces this test creates (h3c<pid>-*), and a host whose
namespace does not exist is reported unreachable, naming it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import playbook_run
import pytest

pytestmark = pytest.mark.root

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
TAG = f"h3c{os.getpid() % 100000}"

if os.geteuid() != 0:  # pragma: no cover
    pytest.fail("tests/integration/test_netns_connection.py needs root (namespaces)", pytrace=False)

PLAYBOOK = textwrap.dedent("""
    - name: Inside the namespaces
      hosts: bed
      gather_facts: false
      tasks:
        - name: Links
          ansible.builtin.command: ip -j link
          register: links
          changed_when: false
        - name: Which network namespace
          ansible.builtin.command: stat -L -c %i /proc/self/ns/net
          register: nsinode
          changed_when: false
        - name: Sysfs
          ansible.builtin.command: ls /sys/class/net
          register: sysfs
          changed_when: false
        - name: Facts
          ansible.builtin.setup:
            gather_subset: [network]
        - name: Interfaces seen by facts
          ansible.builtin.debug:
            var: ansible_facts.interfaces
        - name: Copy
          ansible.builtin.copy:
            content: "written in {{ inventory_hostname }}\\n"
            dest: "{{ workdir }}/{{ inventory_hostname }}.txt"
            mode: "0600"
        - name: Slurp
          ansible.builtin.slurp:
            src: "{{ workdir }}/{{ inventory_hostname }}.txt"
          register: slurped
        - name: Slurped
          ansible.builtin.debug:
            msg: "{{ slurped.content | b64decode }}"
""")


@pytest.fixture(scope="module")
def bed():
    a, b, gone = f"{TAG}-a", f"{TAG}-b", f"{TAG}-gone"
    ifa, ifb = f"{TAG}x", f"{TAG}y"
    workdir = tempfile.mkdtemp(prefix=f"{TAG}-")
    try:
        for ns in (a, b):
            subprocess.run(["ip", "netns", "add", ns], check=True)
        subprocess.run(["ip", "-n", a, "link", "add", ifa, "type", "veth", "peer", "name", ifb, "netns", b],
                       check=True)
        yield {"a": a, "b": b, "gone": gone, "ifa": ifa, "ifb": ifb, "workdir": workdir}
    finally:
        for ns in (a, b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
        shutil.rmtree(workdir, ignore_errors=True)


def run(bed: dict) -> tuple[subprocess.CompletedProcess, dict]:
    inventory = {
        "all": {
            "children": {"bed": {"hosts": {
                "hosta": {"xdplab_netns": bed["a"]},
                "hostb": {"ansible_netns": bed["b"]},
                "hostgone": {"xdplab_netns": bed["gone"]},
            }}},
            "vars": {"ansible_connection": "xdplab.testbed.netns", "ansible_python_interpreter": sys.executable,
                     "workdir": bed["workdir"]},
        }
    }
    inv = Path(bed["workdir"]) / "hosts.json"
    inv.write_text(json.dumps(inventory))
    play = Path(bed["workdir"]) / "play.yml"
    play.write_text(PLAYBOOK)
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
               ANSIBLE_CALLBACKS_ENABLED="ansible.posix.json", ANSIBLE_NOCOLOR="1")
    proc = playbook_run.run([str(BIN / "ansible-playbook"), "-i", str(inv), str(play)], capture_output=True, text=True,
                            cwd=ROOT, env=env, timeout=300, check=False)
    data = json.loads(proc.stdout)
    results = {t["task"]["name"]: t["hosts"] for t in data["plays"][0]["tasks"]}
    return proc, {"results": results, "stats": data["stats"]}


@pytest.fixture(scope="module")
def played(bed):
    """One playbook run (about 10 s of CPU) serves every test of this file."""
    return run(bed)


def test_tasks_run_inside_the_namespace(bed, played):
    proc, out = played
    res, stats = out["results"], out["stats"]
    assert stats["hosta"]["failures"] == 0 and stats["hostb"]["failures"] == 0, proc.stdout[-4000:]

    # commands: `ip -j link` lists only the namespace's own links
    for host, ns, own in (("hosta", bed["a"], bed["ifa"]), ("hostb", bed["b"], bed["ifb"])):
        names = sorted(link["ifname"] for link in json.loads(res["Links"][host]["stdout"]))
        assert names == sorted(["lo", own]), (host, names)
        # the process really was in that namespace: same nsfs inode as /run/netns/<ns>
        assert int(res["Which network namespace"][host]["stdout"]) == os.stat(f"/run/netns/{ns}").st_ino
        # sysfs is the namespace's one (ip netns exec remounts it)
        assert sorted(res["Sysfs"][host]["stdout"].split()) == sorted(["lo", own])
        # setup/gather_facts works and sees the namespace's interfaces
        assert sorted(res["Interfaces seen by facts"][host]["ansible_facts.interfaces"]) == sorted(["lo", own])
        # copy and slurp: files on the shared filesystem
        assert res["Slurped"][host]["msg"] == f"written in {host}\n"
        assert (Path(bed["workdir"]) / f"{host}.txt").read_text() == f"written in {host}\n"
    assert res["Copy"]["hosta"]["changed"] is True


def test_missing_namespace_is_unreachable_naming_it(bed, played):
    proc, out = played
    assert proc.returncode != 0
    assert out["stats"]["hostgone"]["unreachable"] == 1
    msg = out["results"]["Links"]["hostgone"]["msg"]
    assert f"'{bed['gone']}' does not exist" in msg, msg
    assert not os.path.lexists(f"/run/netns/{bed['gone']}"), "the connection created the namespace"
