# SPDX-License-Identifier: GPL-3.0-or-later
"""The kernel role's bad-input paths, for real (ansible-playbook on localhost, own work/state dirs):
unknown git ref, unreachable tarball URL, sha256 mismatch, a patch that does not apply, a config option
that cannot be set, no space for the build. Each fails with a message naming the problem, builds
nothing and leaves the source tree as it was."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import playbook_run
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
PLAYBOOK = REPO / ".venv" / "bin" / "ansible-playbook"
TARBALL = Path("/usr/src/linux-source-6.12.tar.xz")
FIXTURE = sorted((REPO / "files" / "patches" / "fixture").glob("*.patch"))

pytestmark = [pytest.mark.root, pytest.mark.skipif(os.geteuid() != 0, reason="the role installs packages")]


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    root = Path(f"/var/cache/xdplab/h5-roletest-{os.getpid()}")
    root.mkdir(parents=True, exist_ok=True)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def play(tmp_path: Path, base: Path, **role_vars) -> tuple[int, str]:
    vars_ = {"kernel_workdir": str(base / "work"), "kernel_statedir": str(base / "state"),
             "kernel_ccache_dir": str(base / "ccache"), "kernel_qemu_verify_enabled": False, **role_vars}
    pb = tmp_path / "play.yml"
    pb.write_text(yaml.safe_dump([{"name": "h5 role test", "hosts": "localhost", "gather_facts": False,
                                   "roles": [{"role": "xdplab.testbed.kernel", "vars": vars_}]}]))
    cp = playbook_run.run([str(PLAYBOOK), "-i", "localhost,", "-c", "local", "-e",
                           "ansible_python_interpreter={{ ansible_playbook_python }}", str(pb)],
                          capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "ANSIBLE_NOCOLOR": "1",
                               "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.default"}, check=False)
    return cp.returncode, cp.stdout + cp.stderr


def builds(base: Path) -> list[Path]:
    return list((base / "work").glob("variants/*/build-*"))


def test_unknown_git_ref(tmp_path, base):
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@x"}
    (repo / "Makefile").write_text("all:\n")
    for argv in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"], ["git", "commit", "-qm", "x"]):
        subprocess.run(argv, cwd=repo, check=True, env=env)
    rc, out = play(tmp_path, base, kernel_source_type="git", kernel_source_git_url=f"file://{repo}",
                   kernel_source_git_ref="h5-no-such-ref")
    assert rc != 0 and "h5-no-such-ref" in out
    assert not builds(base)


def test_unreachable_tarball_url(tmp_path, base):
    rc, out = play(tmp_path, base, kernel_source_type="tarball",
                   kernel_source_tarball_url="http://127.0.0.1:9/h5-linux.tar.xz",
                   kernel_source_tarball_sha256="0" * 64)
    assert rc != 0 and "127.0.0.1:9" in out and "Connection refused" in out
    assert not builds(base)


def test_tarball_sha256_mismatch(tmp_path, base):
    rc, out = play(tmp_path, base, kernel_source_type="tarball", kernel_source_tarball_url=f"file://{TARBALL}",
                   kernel_source_tarball_sha256="ab" * 32)
    assert rc != 0 and "checksum" in out.lower() and "ab" * 32 in out
    assert not builds(base) and not list((base / "work").glob("variants/*/src/Makefile"))


def _snapshot(tree: Path) -> dict[str, float]:
    return {str(p): p.stat().st_mtime for p in (tree / "net" / "core").glob("*.c")}


def test_patch_config_and_space_errors(tmp_path, base):
    bad = tmp_path / "9999-bad.patch"
    bad.write_text(FIXTURE[0].read_text().replace(" \tseq_puts(seq, version);\n", " \tseq_puts(seq, nope);\n"))
    variants = [{"name": "h5bad", "patches": [{"path": str(FIXTURE[0])}, {"path": str(bad)}]}]
    rc, out = play(tmp_path, base, kernel_variants=variants)
    tree = base / "work" / "variants" / "h5bad" / "src"
    assert rc != 0 and "9999-bad.patch" in out and "net/core/pktgen.c" in out
    assert "xdplab-fixture" not in (tree / "net" / "core" / "pktgen.c").read_text()
    assert not (tree / ".xdplab").exists()
    before = _snapshot(tree)

    rc, out = play(tmp_path, base, kernel_variants=[{"name": "h5bad", "patches": []}],
                   kernel_min_free_mb=10**9)
    assert rc != 0 and "no space left for the build" in out
    assert not builds(base)
    assert _snapshot(tree) == before and not (tree / ".xdplab").exists()

    variants = [{"name": "h5bad", "patches": [], "config_options": {"H5_NO_SUCH_OPTION": True}}]
    rc, out = play(tmp_path, base, kernel_variants=variants)
    assert rc != 0 and "CONFIG_H5_NO_SUCH_OPTION" in out and "did not stand" in out
    assert "H5_NO_SUCH" not in (base / "state" / "h5bad" / "config").read_text()
    assert _snapshot(tree) == before
    assert not builds(base)


def small_source(tmp_path: Path, name: str = "small", extra: str = "") -> Path:
    """A tarball of the two files of the 6.12 source that the series and the role's first steps read (the
    top Makefile and net/core/pktgen.c): a source the role unpacks and patches in a second, then fails to
    configure (it has no Kconfig). ``extra`` goes into a file of its own, to make another source."""
    top = "linux-source-6.12"
    subprocess.run(["tar", "-xJf", str(TARBALL), "-C", str(tmp_path), f"{top}/Makefile",
                    f"{top}/net/core/pktgen.c"], check=True)
    if extra:
        (tmp_path / top / "EXTRA").write_text(extra)
    small = tmp_path / f"{name}.tar.xz"
    subprocess.run(["tar", "-cJf", str(small), "-C", str(tmp_path), top], check=True)
    return small


def test_a_tree_unpacked_from_a_new_source_gets_the_series_again(tmp_path, base):
    """A variant whose source changed (linux-source-6.1 to 6.12 on a machine that built both; here one small
    tarball to another): its tree is unpacked afresh, and the series record of the old tree must not stop
    the series going into the new one. (Small trees: unpacking the whole Debian source twice took a
    minute; molecule/kernel builds from that source.)"""
    variants = [{"name": "h5resrc", "patches": [{"path": str(FIXTURE[0])}]}]
    vdir = base / "work" / "variants" / "h5resrc"
    pktgen = vdir / "src" / "net" / "core" / "pktgen.c"
    small = small_source(tmp_path)
    # The old tree: patched, with its series record, then the role stops at the config (no Kconfig).
    rc, out = play(tmp_path, base, kernel_variants=variants, kernel_source_type="tarball",
                   kernel_source_tarball_url=f"file://{small}",
                   kernel_source_tarball_sha256=hashlib.sha256(small.read_bytes()).hexdigest())
    assert rc != 0 and "Generate and check the variant's config" in out, out[-3000:]
    assert (vdir / "source-id").read_text().startswith("tarball:") and (vdir / "series").exists()
    assert "xdplab-fixture: pgctrl-marker=1" in pktgen.read_text(), "the small tree was left unpatched"
    assert not (vdir / "src" / "Kconfig").exists()
    # The new source: another tree, patched again; the run stops at the config again, before any build.
    new = small_source(tmp_path, "new", extra="another source\n")
    new_sha = hashlib.sha256(new.read_bytes()).hexdigest()
    rc, out = play(tmp_path, base, kernel_variants=variants, kernel_source_type="tarball",
                   kernel_source_tarball_url=f"file://{new}", kernel_source_tarball_sha256=new_sha)
    assert rc != 0 and "Generate and check the variant's config" in out, out[-3000:]
    assert (vdir / "source-id").read_text().strip() == f"tarball:{new_sha}" and (vdir / "src" / "EXTRA").exists()
    assert "xdplab-fixture: pgctrl-marker=1" in pktgen.read_text(), "the new tree was left unpatched"
    assert not builds(base)


GRUB_CFG = """\
menuentry 'Debian GNU/Linux' --class debian --class gnu-linux $menuentry_id_option 'gnulinux-simple-c0ffee' {
\tlinux /boot/vmlinuz-6.1.0-28-amd64 root=UUID=c0ffee ro quiet
}
submenu 'Advanced options for Debian GNU/Linux' $menuentry_id_option 'gnulinux-advanced-c0ffee' {
\tmenuentry 'Debian GNU/Linux, with Linux 6.12.118-patchedX' --class debian $menuentry_id_option \
'gnulinux-6.12.118-patchedX-advanced-c0ffee' {
\t}
\tmenuentry 'Debian GNU/Linux, with Linux 6.12.118-patched (recovery mode)' $menuentry_id_option \
'gnulinux-6.12.118-patched-recovery-c0ffee' {
\t}
\tmenuentry 'Debian GNU/Linux, with Linux 6.12.118-patched' --class debian $menuentry_id_option \
'gnulinux-6.12.118-patched-advanced-c0ffee' {
\t}
}
"""


@pytest.mark.parametrize(
    ("release", "expected"),
    [("6.12.118-patched", "gnulinux-advanced-c0ffee>gnulinux-6.12.118-patched-advanced-c0ffee"),
     ("6.12.118-patchedX", "gnulinux-advanced-c0ffee>gnulinux-6.12.118-patchedX-advanced-c0ffee"),
     ("6.12.118-absent", "")],
)
def test_grub_entry_lookup(tmp_path, release, expected):
    """The entry grub-reboot/grub-set-default get, from a Debian-shaped grub.cfg (tasks/grub_entry.yml)."""
    cfg = tmp_path / "grub.cfg"
    cfg.write_text(GRUB_CFG)
    pb = tmp_path / "grub.yml"
    pb.write_text(yaml.safe_dump([{
        "name": "h5 grub", "hosts": "localhost", "gather_facts": False,
        "vars": {"__kernel_grub_cfg": str(cfg), "__kernel_inst": {"release": release}},
        "tasks": [{"name": "lookup", "ansible.builtin.include_role": {"name": "xdplab.testbed.kernel",
                                                                      "tasks_from": "grub_entry.yml"}},
                  {"name": "show", "ansible.builtin.debug": {"msg": "ENTRY=[{{ __kernel_grub_entry }}]"}}]}]))
    cp = playbook_run.run([str(PLAYBOOK), "-i", "localhost,", "-c", "local", "-e",
                           "ansible_python_interpreter={{ ansible_playbook_python }}", str(pb)],
                          capture_output=True, text=True, cwd=REPO, env={**os.environ, "ANSIBLE_NOCOLOR": "1"},
                          check=False)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert f"ENTRY=[{expected}]" in cp.stdout
