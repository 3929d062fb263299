# SPDX-License-Identifier: GPL-3.0-or-later
"""The collection builds, installs from its tarball with its declared dependencies (taken from the
pinned `ansible` package, offline), and its bench playbook runs from the installed copy under a
minimal install: plain ansible-core at the lowest version meta/runtime.yml supports, the
collection's Python requirements, and the declared collections; no `ansible` package."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import ansible_collections
import playbook_run
import pytest
import yaml
from _netns_runs import run_lock

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

pytestmark = [pytest.mark.root, run_lock]


def run(argv, cwd, env=None, timeout=600):
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert proc.returncode == 0, f"{argv} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


# The pinned `ansible` package's collections: where the declared dependencies come from offline.
BUNDLE = next(Path(p) for p in ansible_collections.__path__ if (Path(p) / "community" / "general").is_dir())


def _collection_tarball(installed_copy: Path, out: Path) -> Path:
    """An installed collection (MANIFEST.json and FILES.json at its top) packed as Galaxy packs one:
    the tarball a user brings from a machine with Galaxy access (`ansible-galaxy collection download`).
    The `ansible` package leaves out some files its FILES.json lists (CI files): the manifest is
    rewritten to the files that are there, with FILES.json's checksum in MANIFEST.json."""
    manifest = json.loads((installed_copy / "MANIFEST.json").read_text())
    files = json.loads((installed_copy / "FILES.json").read_text())
    files["files"] = [f for f in files["files"] if f["name"] == "." or (installed_copy / f["name"]).exists()]
    files_json = json.dumps(files).encode()
    manifest["file_manifest_file"]["chksum_sha256"] = hashlib.sha256(files_json).hexdigest()
    info = manifest["collection_info"]
    tarball = out / f"{info['namespace']}-{info['name']}-{info['version']}.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        for name, data in (("MANIFEST.json", json.dumps(manifest).encode()), ("FILES.json", files_json)):
            member = tarfile.TarInfo(name)
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
        for entry in files["files"]:
            if entry["name"] != ".":
                tar.add(installed_copy / entry["name"], arcname=entry["name"], recursive=False)
    return tarball


@pytest.fixture(scope="module")
def installed(tmp_path_factory, minimal):
    """README's offline install with plain ansible-core: the built tarball and the two dependencies'
    tarballs, `ansible-galaxy collection install --offline` with the minimal venv's ansible-galaxy."""
    tmp = tmp_path_factory.mktemp("collection")
    colls = tmp / "colls"
    # Nothing from the checkout's ansible.cfg: its collections path holds the working tree itself,
    # which galaxy would take for an installed copy and skip the install.
    (tmp / "ansible.cfg").write_text("[defaults]\n")
    env = installed_env(tmp, colls)
    run([str(BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(tmp), str(ROOT)], cwd=tmp, env=env)
    (tarball,) = tmp.glob("xdplab-testbed-*.tar.gz")
    # The dependencies' tarballs, made from the bundle's copies (no Galaxy server is reachable); galaxy
    # resolves them against galaxy.yml's ranges.
    deps = yaml.safe_load((ROOT / "galaxy.yml").read_text())["dependencies"]
    dep_tarballs = [_collection_tarball(BUNDLE / name.replace(".", "/"), tmp) for name in deps]
    run([str(minimal / "ansible-galaxy"), "collection", "install", "--offline", *map(str, dep_tarballs),
         str(tarball), "-p", str(colls)], cwd=tmp, env=env)
    return tmp, colls


@pytest.fixture(scope="module")
def minimal(tmp_path_factory):
    """A venv with ansible-core at the supported minimum and the collection's Python requirements."""
    venv = tmp_path_factory.mktemp("minimal") / "venv"
    floor = yaml.safe_load((ROOT / "meta" / "runtime.yml").read_text())["requires_ansible"].removeprefix(">=")
    pins = re.findall(r"^((?:pyroute2|matplotlib|scipy)==\S+)", (ROOT / "requirements.txt").read_text(), re.M)
    assert len(pins) == 3, pins
    run([sys.executable, "-m", "venv", str(venv)], cwd=venv.parent)
    run([str(venv / "bin" / "pip"), "install", "-q", f"ansible-core=={floor}", *pins], cwd=venv.parent, timeout=900)
    return venv / "bin"


def installed_env(tmp: Path, colls: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env["ANSIBLE_COLLECTIONS_PATH"] = str(colls)
    env["ANSIBLE_CONFIG"] = str(tmp / "ansible.cfg")
    env["PWD"] = str(tmp)  # results/ goes where the user runs the playbook, as a shell sets PWD
    return env


def test_tarball_holds_the_collection_and_no_build_junk(installed):
    _dummy, colls = installed
    base = colls / "ansible_collections" / "xdplab" / "testbed"
    manifest = json.loads((base / "MANIFEST.json").read_text())
    assert manifest["collection_info"]["namespace"] == "xdplab"
    assert manifest["collection_info"]["name"] == "testbed"
    for path in ("meta/runtime.yml", "playbooks/bench.yml", "plugins/connection/netns.py",
                 "plugins/action/bench_run.py", "files/xdpgen/xdpgen.c", "files/xdp/xdp_drop.bpf.c"):
        assert (base / path).is_file(), path
    for junk in (".venv", ".collections", ".git", "results", ".hypothesis"):
        assert not (base / junk).exists(), junk
    for path in ("LICENSE", "LICENSES/GPL-2.0-only.txt", "requirements.yml", "execution-environment.yml"):
        assert (base / path).is_file(), path
    assert manifest["collection_info"]["dependencies"] == yaml.safe_load((ROOT / "galaxy.yml").read_text())[
        "dependencies"]
    for dep in ("community/general", "ansible/posix"):  # installed beside it, from their tarballs
        assert (colls / "ansible_collections" / dep / "MANIFEST.json").is_file(), dep


def test_offline_install_beside_the_ansible_package(installed, tmp_path):
    # README's other offline path: the `ansible` package carries the dependencies, so the tarball alone
    # goes in with --offline --no-deps, and the installed copy finds community.general in the bundle.
    tmp, _colls = installed
    (tarball,) = tmp.glob("xdplab-testbed-*.tar.gz")
    colls = tmp_path / "colls"
    env = {**installed_env(tmp, colls), "ANSIBLE_COLLECTIONS_PATH": str(colls)}
    run([str(BIN / "ansible-galaxy"), "collection", "install", "--offline", "--no-deps", str(tarball),
         "-p", str(colls)], cwd=tmp, env=env)
    assert not (colls / "ansible_collections" / "community").exists()  # --no-deps: nothing but ours
    listed = run([str(BIN / "ansible-galaxy"), "collection", "list", "--format", "json"], cwd=tmp, env=env).stdout
    found = {name for path in json.loads(listed).values() for name in path}
    assert {"xdplab.testbed", "community.general", "ansible.posix"} <= found, sorted(found)


def test_minimal_install_has_no_ansible_package(minimal):
    proc = subprocess.run([str(minimal / "python"), "-c", "import ansible_collections"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode != 0  # no bundle: every collection comes from the install above
    version = run([str(minimal / "ansible"), "--version"], cwd=minimal).stdout.splitlines()[0]
    floor = yaml.safe_load((ROOT / "meta" / "runtime.yml").read_text())["requires_ansible"].removeprefix(">=")
    assert f"[core {floor}]" in version, version


def _netns_names():
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def _virtual_bed_netns() -> set[str]:
    """The namespaces the default bed is made of, as the virtual inventory names them (other tests,
    beside this one in the other worker, name theirs with prefixes of their own)."""
    names = set()

    def walk(group):
        hosts = ((group or {}).get("hosts") or {}).values()
        names.update(h["xdplab_netns"] for h in hosts if "xdplab_netns" in (h or {}))
        for child in ((group or {}).get("children") or {}).values():
            walk(child)
    walk(yaml.safe_load((ROOT / "inventories" / "virtual" / "hosts.yml").read_text())["all"])
    assert names, "the virtual inventory names no namespace"
    return names


def run_playbook(argv, cwd, env, timeout=1200):
    """Run a playbook (through playbook_run: a run whose result thread dies is killed and run once
    more); any failure fails with the whole of stderr."""
    proc = playbook_run.run(argv, cwd=cwd, env=env, timeout=timeout)
    assert proc.returncode == 0, f"{argv} failed ({proc.returncode}, attempt {proc.attempts}):\n" \
        f"{proc.stdout[-3000:]}\n{proc.stderr}"
    return proc.stdout


def test_bench_playbook_runs_from_the_installed_copy(installed, minimal):
    tmp, colls = installed
    before = _netns_names()  # a lab of the developer's (xdplab-vmlab) may be up: not this run's
    stdout = run_playbook([str(minimal / "ansible-playbook"), "xdplab.testbed.bench",
                           "-e", json.dumps({"bench_scenarios": ["xdp_drop"], "bench_repetitions": 2,
                                             "bench_duration": 2, "xdplab_lock_wait": 900})],
                          cwd=tmp, env=installed_env(tmp, colls))
    assert "failed=0" in stdout
    # The newest run: a run stopped by the race above keeps its INCOMPLETE directory.
    run_dir = max((tmp / "results").iterdir(), key=lambda d: d.stat().st_mtime)
    assert not (run_dir / "INCOMPLETE").exists()
    (record_path,) = run_dir.glob("xdp_drop__*.json")
    record = json.loads(record_path.read_text())
    assert record["schema"] == "xdplab.result/v1"
    assert record["summary"]["n"] == 2
    assert record["summary"]["mean"] > 10000
    assert record["environment"]["xdp"]  # the fingerprint names the attached program
    assert (run_dir / "report.txt").read_text().startswith("Environment")
    assert (run_dir / "report.png").read_bytes()[:4] == b"\x89PNG"
    assert (run_dir / "report.html").read_text().count('<tr class="row">') == 1
    left = (_netns_names() - before) & _virtual_bed_netns()
    assert not left, left
