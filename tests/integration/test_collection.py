"""The collection builds, installs with --no-deps, and its bench playbook runs from the installed copy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.root


def run(argv, cwd, env=None, timeout=600):
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert proc.returncode == 0, f"{argv} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("collection")
    colls = tmp / "colls"
    # Nothing from the checkout's ansible.cfg: its collections path holds the working tree itself,
    # which galaxy would take for an installed copy and skip the install.
    (tmp / "ansible.cfg").write_text("[defaults]\n")
    env = installed_env(tmp, colls)
    run([str(BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(tmp), str(ROOT)], cwd=tmp, env=env)
    (tarball,) = tmp.glob("xdplab-testbed-*.tar.gz")
    run([str(BIN / "ansible-galaxy"), "collection", "install", "--no-deps", "-p", str(colls), str(tarball)],
        cwd=tmp, env=env)
    return tmp, colls


def installed_env(tmp: Path, colls: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env["ANSIBLE_COLLECTIONS_PATH"] = str(colls)  # plus the pinned `ansible` package's own collections
    env["ANSIBLE_CONFIG"] = str(tmp / "ansible.cfg")
    env["PWD"] = str(tmp)  # results/ goes where the user runs the playbook, as a shell sets PWD
    return env


def test_tarball_holds_the_collection_and_no_build_junk(installed):
    _, colls = installed
    base = colls / "ansible_collections" / "xdplab" / "testbed"
    manifest = json.loads((base / "MANIFEST.json").read_text())
    assert manifest["collection_info"]["namespace"] == "xdplab"
    assert manifest["collection_info"]["name"] == "testbed"
    for path in ("meta/runtime.yml", "playbooks/bench.yml", "plugins/connection/netns.py",
                 "plugins/action/bench_run.py", "files/xdpgen/xdpgen.c", "files/xdp/xdp_drop.bpf.c"):
        assert (base / path).is_file(), path
    for junk in (".venv", ".collections", ".git", "results", ".hypothesis"):
        assert not (base / junk).exists(), junk


def test_bench_playbook_runs_from_the_installed_copy(installed):
    tmp, colls = installed
    proc = run([str(BIN / "ansible-playbook"), "xdplab.testbed.bench",
                "-e", json.dumps({"bench_scenarios": ["xdp_drop"], "bench_repetitions": 2, "bench_duration": 1})],
               cwd=tmp, env=installed_env(tmp, colls))
    assert "failed=0" in proc.stdout
    (run_dir,) = (tmp / "results").iterdir()
    assert not (run_dir / "INCOMPLETE").exists()
    (record_path,) = run_dir.glob("xdp_drop__*.json")
    record = json.loads(record_path.read_text())
    assert record["schema"] == "xdplab.result/v1"
    assert record["summary"]["n"] == 2
    assert record["summary"]["mean"] > 10000
    assert record["environment"]["xdp"]  # the fingerprint names the attached program
    assert (run_dir / "report.txt").read_text().startswith("Environment")
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    assert "xdplab-" not in netns, netns
