"""The collection installs like one: declared dependencies that match what the code uses and what
the pinned `ansible` package carries, licence files and SPDX headers, no placeholder URLs, and an
execution environment definition that ansible-builder accepts."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import ansible_collections
import pytest
import yaml
from ansible.module_utils.compat.version import LooseVersion

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
GALAXY = yaml.safe_load((ROOT / "galaxy.yml").read_text())
# The `ansible` package's collections (the pinned bundle in requirements.txt).
BUNDLE = next(Path(p) for p in ansible_collections.__path__ if (Path(p) / "community" / "general").is_dir())
FQCN = re.compile(r"\b(community\.general|ansible\.posix)\.[a-z_]+\b")


def in_range(version: str, spec: str) -> bool:
    ops = {">=": lambda a, b: a >= b, "<": lambda a, b: a < b, ">": lambda a, b: a > b, "<=": lambda a, b: a <= b,
           "==": lambda a, b: a == b}
    for part in spec.split(","):
        op, want = re.match(r"(>=|<=|==|<|>)\s*(\S+)", part.strip()).groups()
        if not ops[op](LooseVersion(version), LooseVersion(want)):
            return False
    return True


def test_dependencies_declared_for_every_collection_the_code_uses():
    used = set()
    for path in [*ROOT.glob("roles/**/*.yml"), *ROOT.glob("playbooks/*.yml"), *ROOT.glob("plugins/**/*.py")]:
        used |= set(FQCN.findall(path.read_text()))
    assert used == {"community.general", "ansible.posix"}
    assert set(GALAXY["dependencies"]) == used


def test_requirements_yml_matches_galaxy_and_the_bundle():
    req = {c["name"]: c["version"] for c in yaml.safe_load((ROOT / "requirements.yml").read_text())["collections"]}
    assert req == GALAXY["dependencies"]
    for name, spec in req.items():
        manifest = json.loads((BUNDLE / name.replace(".", "/") / "MANIFEST.json").read_text())
        assert in_range(manifest["collection_info"]["version"], spec), (name, spec)
    assert not in_range("99.0.0", req["community.general"])  # a range, not a floor


def test_no_placeholder_urls():
    text = (ROOT / "galaxy.yml").read_text()
    assert "example" not in text and "invalid" not in text
    for key in ("repository", "documentation", "homepage", "issues"):
        assert not GALAXY.get(key) or GALAXY[key].startswith("https://"), key


def test_licences_and_spdx_headers():
    assert set(GALAXY["license"]) == {"GPL-3.0-or-later", "GPL-2.0-only"}
    assert "GNU GENERAL PUBLIC LICENSE" in (ROOT / "LICENSE").read_text()
    assert "Version 3" in (ROOT / "LICENSES" / "GPL-3.0-or-later.txt").read_text()[:300]
    assert "Version 2" in (ROOT / "LICENSES" / "GPL-2.0-only.txt").read_text()[:300]
    c_files = [p for p in (ROOT / "files").rglob("*") if p.suffix in (".c", ".h")]
    assert len(c_files) >= 10
    # REUSE-IgnoreStart (the strings the test looks for, not this file's licence)
    for p in c_files:
        assert "SPDX-License-Identifier: GPL-2.0-only" in p.read_text().splitlines()[0], p
    py_files = [*ROOT.glob("plugins/**/*.py"), *ROOT.glob("roles/*/files/*.py"), *ROOT.glob("tools/*.py")]
    for p in py_files:
        assert "# SPDX-License-Identifier: GPL-3.0-or-later\n" in p.read_text()[:600], p
    # REUSE-IgnoreEnd


def test_requires_ansible_is_the_execution_environments_range():
    runtime = yaml.safe_load((ROOT / "meta" / "runtime.yml").read_text())
    ee = yaml.safe_load((ROOT / "execution-environment.yml").read_text())
    floor = runtime["requires_ansible"].removeprefix(">=")
    assert ee["dependencies"]["ansible_core"]["package_pip"] == f"ansible-core>={floor},<2.20"
    pinned = re.search(r"^ansible-core==(\S+)", (ROOT / "requirements.txt").read_text(), re.M).group(1)
    assert in_range(pinned, f">={floor},<2.20")


def test_execution_environment_builds_a_context(tmp_path):
    # The context as `make ee-context` makes it: the collection's tarball under build/ beside the
    # definition, which the image installs offline; the controller's lock and ledger directories made
    # for the image's user.
    builder = BIN / "ansible-builder"
    assert builder.exists(), "ansible-builder is in requirements-test.txt: run make deps-test"
    for name in ("execution-environment.yml", "requirements.yml", "requirements-ee.txt", "bindep.txt"):
        shutil.copy(ROOT / name, tmp_path / name)
    env = {**os.environ, "ANSIBLE_CONFIG": str(tmp_path / "none.cfg")}
    proc = subprocess.run([str(BIN / "ansible-galaxy"), "collection", "build", "--output-path",
                           str(tmp_path / "build"), str(ROOT)], capture_output=True, text=True, timeout=300,
                          env=env, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = subprocess.run([str(builder), "create", "-f", str(tmp_path / "execution-environment.yml"),
                           "-c", str(tmp_path / "ctx")], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    build = tmp_path / "ctx" / "_build"
    assert [p.name for p in (build / "collections").iterdir()] == [f"xdplab-testbed-{GALAXY['version']}.tar.gz"]
    containerfile = next((tmp_path / "ctx").glob("*file")).read_text()
    install = containerfile.index("ansible-galaxy collection install --offline --no-deps")
    assert install < containerfile.rindex("USER 1000")
    assert "install -d -o 1000 -g 0 -m 0755 /run/xdplab /var/lib/xdplab" in containerfile
    assert (build / "bindep.txt").read_text() == (ROOT / "bindep.txt").read_text()
    assert yaml.safe_load((build / "requirements.yml").read_text())["collections"]
    # The introspection the image build runs: bindep and pip requirements parse.
    proc = subprocess.run([sys.executable, str(build / "scripts" / "introspect.py"), "introspect",
                           f"--user-pip={build / 'requirements.txt'}", f"--user-bindep={build / 'bindep.txt'}"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "matplotlib" in proc.stdout and "iproute" in proc.stdout


@pytest.mark.parametrize("spec,version,ok", [(">=11.0.0,<12.0.0", "11.4.2", True),
                                             (">=11.0.0,<12.0.0", "12.0.0", False)])
def test_in_range(spec, version, ok):
    assert in_range(version, spec) is ok


def _release_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def test_version_is_the_latest_release_and_the_changelog_says_so():
    # galaxy.yml's version is at least the newest release antsibull-changelog recorded, CHANGELOG.rst
    # was generated from that record, and no plugin claims a version_added beyond the collection's
    # version (7 modules said 0.2.0 while galaxy.yml said 0.1.0).
    releases = yaml.safe_load((ROOT / "changelogs" / "changelog.yaml").read_text())["releases"]
    latest = max(releases, key=_release_key)
    assert _release_key(GALAXY["version"]) >= _release_key(latest), (GALAXY["version"], latest)
    rst = (ROOT / "CHANGELOG.rst").read_text()
    for version in releases:
        assert f"\nv{version}\n" in rst, f"CHANGELOG.rst lacks v{version}: run antsibull-changelog generate"
    claimed = {m.group(1) for p in ROOT.glob("plugins/*/*.py")
               for m in re.finditer(r"^version_added:\s*\"?([0-9.]+)", p.read_text(), re.M)}
    assert claimed and all(_release_key(v) <= _release_key(GALAXY["version"]) for v in claimed), claimed


def test_changelog_lints():
    proc = subprocess.run([str(BIN / "antsibull-changelog"), "lint"], capture_output=True, text=True, cwd=ROOT,
                          timeout=120, check=False)
    assert proc.returncode == 0 and not proc.stdout.strip(), proc.stdout + proc.stderr


def test_reuse_lint_is_clean():
    # Every file has copyright and licence information (its own SPDX header or REUSE.toml).
    proc = subprocess.run([str(BIN / "reuse"), "lint", "-q"], capture_output=True, text=True, cwd=ROOT,
                          timeout=120, check=False)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
