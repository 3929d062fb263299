# SPDX-License-Identifier: GPL-3.0-or-later
"""The xdplab.testbed.run role for real, on the controller only, with a lock, ledger and results
directory of the test's own (no namespace, nothing shared): begin takes the lock, cleans what a
killed run left and makes the results directory with INCOMPLETE; end undoes the ledger, fails naming
what it could not undo and releases the lock whatever happened; when another run holds the lock,
begin fails naming it and end touches nothing of that run's."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import playbook_run
import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.state._ledger import (
    acquire,
    check_entry,
    entries,
    read_lock,
    record,
    release,
)

REPO = Path(__file__).resolve().parents[2]
PLAY = """
- name: A run
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Begin
      ansible.builtin.include_role:
        name: xdplab.testbed.run
        tasks_from: begin
    - name: Body, then end
      block:
        - name: What the body sees
          ansible.builtin.copy:
            dest: "{{ probe }}/body.json"
            content: "{{ {'id': run_current_id, 'dir': run_results_dir, 'hosts': groups['xdplab_generators'],
                          'lock': lookup('ansible.builtin.file', run_lock_path) | from_json} | to_json }}"
            mode: "0600"
        - name: Something that cannot be undone (a snapshot of an unknown kind)
          xdplab.testbed.ledger:
            dir: "{{ run_ledger_dir }}"
            kind: tuning
            key: {state_file: "{{ probe }}/state/bogus-host-x.json"}
          when: leave_bogus | default(false) | bool
        - name: The body fails
          ansible.builtin.fail:
            msg: the body failed
          when: body_fails | default(false) | bool
      always:
        - name: End
          ansible.builtin.include_role:
            name: xdplab.testbed.run
            tasks_from: end
"""


@pytest.fixture
def world(tmp_path):
    for d in ("ledger", "state", "lock", "results"):
        (tmp_path / d).mkdir(mode=0o700)
    (tmp_path / "play.yml").write_text(PLAY)
    (tmp_path / "state" / "bogus-host-x.json").write_text(json.dumps(
        {"schema": "xdplab.tuning-snapshot/v1", "kind": "bogus", "subject": "x", "state": {"a": 1}}))
    return tmp_path


def play(world: Path, **extra) -> subprocess.CompletedProcess:
    ev = {"probe": str(world), "run_ledger_dir": str(world / "ledger"), "run_results_root": str(world / "results"),
          "run_lock_path": str(world / "lock" / "run.lock"), "ansible_connection": "local",
          "ansible_python_interpreter": f"{REPO}/.venv/bin/python", **extra}
    return playbook_run.run([str(REPO / ".venv/bin/ansible-playbook"), str(world / "play.yml"), "-i", "localhost,",
                             "-e", json.dumps(ev)],
                            capture_output=True, text=True, cwd=REPO, timeout=300,
                            env={**os.environ, "ANSIBLE_NOCOLOR": "1",
                                 "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.default"}, check=False)


def plant_stale(world: Path) -> str:
    """An entry a killed run left: a namespace that is long gone."""
    return record(str(world / "ledger"), check_entry("netns", {"name": "h7gone"}), None)[0]


def test_begin_then_end(world):
    stale = plant_stale(world)
    proc = play(world)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    body = json.loads((world / "body.json").read_text())
    # the lock named this run while the body ran; the embedded hosts were added; the directory is the run's
    assert body["lock"]["run_id"] == body["id"] and body["hosts"] == ["gen"]
    assert body["dir"] == str(world / "results" / body["id"])
    assert (world / "results" / body["id"] / "INCOMPLETE").exists()  # the body did not finish it
    assert not os.path.exists(stale), "begin did not clean what the killed run left"
    assert read_lock(str(world / "lock" / "run.lock")) is None and entries(str(world / "ledger")) == []


def test_end_fails_naming_what_it_could_not_undo_and_releases_the_lock(world):
    proc = play(world, leave_bogus=True, body_fails=True)
    out = " ".join(proc.stdout.split())
    assert proc.returncode != 0
    assert "the run could not undo everything" in out and "unknown snapshot kind 'bogus'" in out, out[-3000:]
    assert "the body failed" in out
    assert read_lock(str(world / "lock" / "run.lock")) is None
    [(_path, entry)] = entries(str(world / "ledger"))
    assert entry["key"]["state_file"].endswith("bogus-host-x.json")  # kept for teardown.yml


def test_a_live_run_holding_the_lock_is_named_and_its_ledger_left_alone(world):
    lock = str(world / "lock" / "run.lock")
    acquire(lock, os.getpid(), run_id="20261201T000000Z-abcdef")
    try:
        theirs = plant_stale(world)  # the live run's entry: not ours to clean
        proc = play(world)
        out = " ".join(proc.stdout.split())
        assert proc.returncode != 0 and "20261201T000000Z-abcdef" in out and f"pid {os.getpid()}" in out, out[-3000:]
        assert os.path.exists(theirs) and not (world / "body.json").exists()
        assert read_lock(lock).pid == os.getpid()
    finally:
        release(lock, os.getpid())


def test_a_lock_of_a_clone_is_refused_naming_it_and_taken_over_only_by_its_token(world):
    """A holder this machine cannot judge (here: the same hostname and a free pid, but another machine
    id - a cloned lab VM): the run fails naming it and the token, leaves its ledger alone, and
    run_lock_takeover with that token takes the lock over."""
    lock = str(world / "lock" / "run.lock")
    acquire(lock, 4194001, host=socket.gethostname(), run_id="20261201T000000Z-c10e00", pid_start=7,
            boot_id="00000000-0000-4000-8000-000000000000", machine_id="c" * 32)
    token = read_lock(lock).token()
    theirs = plant_stale(world)
    proc = play(world)
    out = " ".join(proc.stdout.split())
    assert proc.returncode != 0 and f"run_lock_takeover={token}" in out, out[-3000:]
    assert os.path.exists(theirs) and not (world / "body.json").exists()
    proc = play(world, run_lock_takeover=token)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert read_lock(lock) is None and not os.path.exists(theirs)
