# SPDX-License-Identifier: GPL-3.0-or-later
"""kernel_patch on a real slice of Debian's linux-source-6.12 (Makefile, net/core/pktgen.c,
Documentation/networking/pktgen.rst) with the project's fixture series: real patch(1) and git am -3,
idempotence, extend/reset, and every bad-input path leaving the tree byte-for-byte as before."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ANSIBLE = REPO / ".venv" / "bin" / "ansible"
TARBALL = Path("/usr/src/linux-source-6.12.tar.xz")
FIXTURE = sorted((REPO / "files" / "patches" / "fixture").glob("*.patch"))
MEMBERS = ["Makefile", "net/core/pktgen.c", "Documentation/networking/pktgen.rst"]
MARKER = "xdplab-fixture: pgctrl-marker=1"

# linux-source-6.12 comes from requirements-apt.txt: a missing tarball fails these tests, never skips them.


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    root = tmp_path_factory.mktemp("h5src")
    subprocess.run(["tar", "-xf", str(TARBALL), "-C", str(root), "--strip-components=1",
                    *[f"linux-source-6.12/{m}" for m in MEMBERS]], check=True)
    return root


@pytest.fixture
def tree(pristine, tmp_path):
    dst = tmp_path / "tree"
    shutil.copytree(pristine, dst)
    return dst


@pytest.fixture
def gittree(tree):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    for argv in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "base"]):
        subprocess.run(argv, cwd=tree, check=True, env=env)
    return tree


def snapshot(root: Path) -> dict[str, str]:
    """sha256 of every file outside .git and the module's own state directory."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and not rel.startswith((".git/", ".xdplab/")):
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def kernel_patch(src: Path, patches: list[dict], check: bool = False, **extra) -> dict:
    args = {"src": str(src), "patches": patches, **extra}
    argv = [str(ANSIBLE), "localhost", "-m", "xdplab.testbed.kernel_patch", "-a", json.dumps(args)]
    if check:
        argv.append("--check")
    cp = subprocess.run(argv, capture_output=True, text=True, cwd=REPO,
                        env={**os.environ, "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
                             "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1", "ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.json"},
                        check=False)
    data = json.loads(cp.stdout)
    return data["plays"][0]["tasks"][0]["hosts"]["localhost"]


def fx(*idx: int) -> list[dict]:
    return [{"path": str(FIXTURE[i])} for i in idx]


def bad_patch(tmp_path: Path) -> Path:
    """Fixture patch 1 with its context changed so it cannot apply."""
    text = FIXTURE[0].read_text().replace(" \tseq_puts(seq, version);\n", " \tseq_puts(seq, no_such_context);\n")
    text = text.replace("pktgen: show an xdplab fixture marker in pgctrl", "pktgen: a patch that does not apply")
    path = tmp_path / "9999-bad.patch"
    path.write_text(text)
    return path


def test_patch_tree_apply_idempotent_and_check_mode(tree):
    before = snapshot(tree)
    res = kernel_patch(tree, fx(0, 1), check=True)
    assert res["changed"] is True and res["applied"] == [
        "pktgen: show an xdplab fixture marker in pgctrl", "docs: pktgen: mention the xdplab fixture marker"]
    assert snapshot(tree) == before, "check mode touched the tree"

    res = kernel_patch(tree, fx(0, 1))
    assert res["changed"] is True and res["method"] == "patch"
    assert MARKER in (tree / "net/core/pktgen.c").read_text()
    assert "xdplab-fixture:" in (tree / "Documentation/networking/pktgen.rst").read_text()
    record = json.loads((tree / ".xdplab" / "series.json").read_text())
    assert [p["subject"] for p in record["patches"]] == res["applied"]
    assert all(len(p["patch_id"]) == 40 for p in record["patches"])

    after = snapshot(tree)
    res2 = kernel_patch(tree, fx(0, 1))
    assert res2["changed"] is False and res2["applied"] == []
    assert snapshot(tree) == after


def test_patch_tree_extend_then_reset(tree):
    kernel_patch(tree, fx(0))
    res = kernel_patch(tree, fx(0, 1))
    assert res["changed"] and res["applied"] == ["docs: pktgen: mention the xdplab fixture marker"]
    assert res["reverted"] == []
    res = kernel_patch(tree, fx(1))
    assert res["changed"] and len(res["reverted"]) == 2 and res["applied"] == [
        "docs: pktgen: mention the xdplab fixture marker"]
    assert MARKER not in (tree / "net/core/pktgen.c").read_text()
    assert "xdplab-fixture:" in (tree / "Documentation/networking/pktgen.rst").read_text()


def test_patch_tree_conflict_names_patch_and_file_and_rolls_back(tree, tmp_path):
    kernel_patch(tree, fx(1))  # a recorded series that the failing run must leave intact
    before = snapshot(tree)
    res = kernel_patch(tree, [*fx(0, 1), {"path": str(bad_patch(tmp_path))}])
    assert res.get("failed") is True
    assert "9999-bad.patch" in res["msg"] and "net/core/pktgen.c" in res["msg"]
    assert res["files"] == ["net/core/pktgen.c"]
    assert snapshot(tree) == before


def test_git_tree_am_idempotent_and_conflict(gittree, tmp_path):
    res = kernel_patch(gittree, fx(0, 1))
    assert res["changed"] and res["method"] == "git"
    log = subprocess.run(["git", "log", "--format=%s", "-3"], cwd=gittree, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert log == ["docs: pktgen: mention the xdplab fixture marker",
                   "pktgen: show an xdplab fixture marker in pgctrl", "base"]
    assert kernel_patch(gittree, fx(0, 1))["changed"] is False

    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=gittree, capture_output=True, text=True, check=False).stdout
    before = snapshot(gittree)
    res = kernel_patch(gittree, [*fx(0, 1), {"path": str(bad_patch(tmp_path))}])
    assert res.get("failed") is True and "9999-bad.patch" in res["msg"] and "net/core/pktgen.c" in res["msg"]
    assert subprocess.run(["git", "rev-parse", "HEAD"], cwd=gittree, capture_output=True,
                          text=True, check=False).stdout == head
    assert not (gittree / ".git" / "rebase-apply").exists()
    assert snapshot(gittree) == before


def test_bad_input_leaves_tree_unchanged(tree, tmp_path):
    before = snapshot(tree)
    wrong = "0" * 64
    res = kernel_patch(tree, [{"path": str(FIXTURE[0]), "sha256": wrong}])
    assert res.get("failed") and "sha256 mismatch" in res["msg"] and FIXTURE[0].name in res["msg"]
    # a URL needs a sha256 (refused before it is fetched) unless waived for that patch
    res = kernel_patch(tree, [{"url": "http://127.0.0.1:9/h5-nothing.patch"}], timeout=5)
    assert res.get("failed") and "needs a sha256" in res["msg"] and "h5-nothing.patch" in res["msg"]
    res = kernel_patch(tree, [{"url": "http://127.0.0.1:9/h5-nothing.patch", "sha256_waived": True}], timeout=5)
    assert res.get("failed") and "unreachable" in res["msg"] and "h5-nothing.patch" in res["msg"]
    res = kernel_patch(tree, [{"path": str(tmp_path / "missing.patch")}])
    assert res.get("failed") and "missing.patch" in res["msg"]
    empty = tmp_path / "empty.patch"
    empty.write_text("Subject: nothing here\n\njust words\n")
    res = kernel_patch(tree, [{"path": str(empty)}])
    assert res.get("failed") and "contains no diff" in res["msg"]
    res = kernel_patch(tmp_path, fx(0))
    assert res.get("failed") and "not a kernel source tree" in res["msg"]
    assert snapshot(tree) == before
    assert not (tree / ".xdplab").exists()


def test_sha256_match_is_accepted(tree):
    digest = hashlib.sha256(FIXTURE[0].read_bytes()).hexdigest()
    res = kernel_patch(tree, [{"path": str(FIXTURE[0]), "sha256": digest}])
    assert res["changed"] and res["applied"] == ["pktgen: show an xdplab fixture marker in pgctrl"]


def test_mbox_series_is_split(tree, tmp_path):
    mbox = tmp_path / "series.mbox"
    mbox.write_text("".join(p.read_text() for p in FIXTURE))
    res = kernel_patch(tree, [{"path": str(mbox)}])
    assert res["changed"] and len(res["applied"]) == 2
    assert [p["name"] for p in res["patches"]] == ["series.mbox#1", "series.mbox#2"]


def test_empty_series_on_a_fresh_tree_reports_a_record(tree):
    before = snapshot(tree)
    res = kernel_patch(tree, [], source={"type": "debian"})
    assert res["changed"] is False
    assert res["series"]["schema"] == "xdplab.kernel-series/v1" and res["series"]["patches"] == []
    assert res["series"]["series_id"] == hashlib.sha256(b"").hexdigest()
    assert res["series"]["source"] == {"type": "debian"}
    assert snapshot(tree) == before and not (tree / ".xdplab").exists()


# ------------------------------------------------------------------ as an unprivileged build user
BUILD_USER = "nobody"  # every Debian system has it; the kernel role makes its own xdplab-build


@pytest.fixture
def user_tree(pristine, request):
    """The fixture tree owned by the build user, under a directory it can reach (pytest's tmp_path is
    0700 root's), and a root-owned state directory beside it."""
    import pwd
    import tempfile

    top = Path(tempfile.mkdtemp(prefix="xdplab-h16-", dir="/var/tmp"))  # noqa: S108 - removed below
    request.addfinalizer(lambda: shutil.rmtree(top, ignore_errors=True))
    top.chmod(0o755)
    tree = top / "src"
    shutil.copytree(pristine, tree)
    if request.param == "git":
        env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
        for argv in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "base"]):
            subprocess.run(argv, cwd=tree, check=True, env=env)
    entry = pwd.getpwnam(BUILD_USER)
    for path in [tree, *tree.rglob("*")]:
        os.lchown(path, entry.pw_uid, entry.pw_gid)
    return tree, top / "series", entry.pw_uid


@pytest.mark.parametrize("user_tree", ["patch", "git"], indirect=True)
def test_patches_are_applied_by_the_build_user_and_recorded_by_root_outside_the_tree(user_tree):
    tree, state, uid = user_tree
    pristine_files = snapshot(tree)
    res = kernel_patch(tree, fx(0, 1), build_user=BUILD_USER, state_dir=str(state))
    assert res["changed"] is True, res.get("msg")
    assert MARKER in (tree / "net/core/pktgen.c").read_text()
    # patch(1) writes a new file and git checks one out: made by the build user, so owned by it
    assert (tree / "net/core/pktgen.c").stat().st_uid == uid
    assert res["state_file"] == str(state / "series.json")
    assert (state / "series.json").stat().st_uid == 0 and not (tree / ".xdplab").exists()
    assert not (tree / ".git" / "xdplab").exists()
    assert [p["subject"] for p in json.loads((state / "series.json").read_text())["patches"]] == res["applied"]
    # nothing in the tree is root's after the series went in
    assert [p for p in tree.rglob("*") if p.lstat().st_uid != uid] == []
    assert kernel_patch(tree, fx(0, 1), build_user=BUILD_USER, state_dir=str(state))["changed"] is False
    if res["method"] == "patch":
        gone = kernel_patch(tree, [], state="absent", build_user=BUILD_USER, state_dir=str(state))
        assert gone["changed"] is True and snapshot(tree) == pristine_files


@pytest.mark.parametrize("user_tree", ["patch"], indirect=True)
def test_a_build_user_that_cannot_own_the_change_is_refused_before_anything(user_tree, tree):
    utree, state, _uid = user_tree
    before, ubefore = snapshot(tree), snapshot(utree)
    cases = [
        (dict(src=tree, build_user=BUILD_USER, state_dir=str(state)), f"src {str(tree)!r} is not build user"),
        (dict(src=utree, build_user=BUILD_USER), "needs state_dir"),
        (dict(src=utree, build_user=BUILD_USER, state_dir=str(utree / "rec")), "is inside src"),
        (dict(src=utree, build_user="root", state_dir=str(state)), "is root (uid 0)"),
        (dict(src=utree, build_user="no-such-xdplab-user", state_dir=str(state)),
         "'no-such-xdplab-user' does not exist"),
    ]
    for args, words in cases:
        src = args.pop("src")
        res = kernel_patch(src, fx(0, 1), **args)
        assert res.get("failed") is True and words in res["msg"], (args, res.get("msg"))
    assert snapshot(tree) == before and snapshot(utree) == ubefore and not state.exists()
