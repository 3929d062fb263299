#!/usr/bin/python
# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
---
module: kernel_patch
short_description: Apply a patch series to a kernel source tree, idempotently and all-or-nothing
description:
  - Applies a series of patches (single patches, C(git format-patch) mbox files, local or downloaded with an
    optional sha256) to a kernel source tree, with C(git am -3) on git trees and C(patch -p1) otherwise.
  - The applied series (subjects and C(git patch-id --stable) ids) is recorded in the tree; a re-run with the same
    series changes nothing, a longer series applies only the new patches, a different series reverts the recorded
    one first.
  - On a patch that does not apply, the module fails naming the patch and the file(s), and leaves the tree exactly as
    it was before the task (every patch is dry-run first; git trees are reset to their previous HEAD).
  - Bad input (missing file, unreachable URL, sha256 mismatch, no diff in a patch) is detected before the tree is
    touched.
version_added: "0.1.0"
author:
  - xdplab.testbed contributors (!UNKNOWN)
options:
  src:
    description: Root of the kernel source tree.
    type: path
    required: true
  patches:
    description: The series, in order. Each item is a local O(patches[].path) or an O(patches[].url).
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Local patch or mbox file.
        type: path
      url:
        description: URL of a patch or mbox file.
        type: str
      sha256:
        description:
          - Expected sha256 of the file; checked before anything is applied. Required for a
            O(patches[].url) unless O(patches[].sha256_waived) is set for that patch.
        type: str
      sha256_waived:
        description:
          - Apply this downloaded patch without a sha256 (what the URL serves is then trusted as is). Per
            patch, never for the whole series.
        type: bool
        default: false
  method:
    description: V(auto) uses git when O(src) is a git work tree.
    type: str
    choices: [auto, git, patch]
    default: auto
  state:
    description: V(present) makes the recorded series equal O(patches); V(absent) reverts the recorded series.
    type: str
    choices: [present, absent]
    default: present
  source:
    description: Free-form description of the source (type, ref, version) stored in the series record.
    type: dict
    default: {}
  timeout:
    description: Seconds allowed for downloading one URL.
    type: int
    default: 30
  build_user:
    description:
      - Run C(patch) and C(git) on the tree as this unprivileged user (util-linux C(setpriv), no_new_privs),
        not as root. O(src) must be that user's (the kernel role unpacks Debian and tarball sources as
        its build user), and O(state_dir) must be given, outside O(src).
      - Unset runs them as the caller.
    type: str
  state_dir:
    description:
      - Directory for the series record and the stored patches (needed to revert them). Default C(.xdplab)
        in O(src) (C(.git/xdplab) on git trees).
      - With O(build_user), a directory outside O(src) that the build user cannot write, so that the
        record root reads back is root's own.
    type: path
extends_documentation_fragment:
  - xdplab.testbed.attributes
attributes:
  check_mode:
    support: full
    details: Computes the plan (which patches would be applied or reverted) without touching the tree.
  diff_mode:
    support: none
requirements:
  - git (for patch-ids and git trees)
  - patch (GNU patch, for trees without git)
"""

EXAMPLES = r"""
- name: Apply the project's fixture series to the Debian source tree
  xdplab.testbed.kernel_patch:
    src: /var/cache/xdplab/kernel/variants/patched/src
    patches:
      - path: "{{ playbook_dir }}/files/patches/fixture/0001-pktgen-show-an-xdplab-fixture-marker-in-pgctrl.patch"
      - path: "{{ playbook_dir }}/files/patches/fixture/0002-docs-pktgen-mention-the-xdplab-fixture-marker.patch"
  register: series

- name: A series from a mailing-list archive, pinned by hash
  xdplab.testbed.kernel_patch:
    src: /usr/src/linux
    patches:
      - url: https://lore.kernel.org/netdev/some-message-id/t.mbox
        sha256: 8f2c0e0d6c1c2f0b7f7f3c0a4c8b1f1e0a9d3c2b1a0f9e8d7c6b5a4f3e2d1c0b
"""

RETURN = r"""
patches:
  description: The series as now recorded in the tree, in order.
  returned: always
  type: list
  elements: dict
  sample: [{"index": 1, "name": "0001-pktgen.patch", "subject": "pktgen: show an xdplab fixture marker in pgctrl",
            "patch_id": "5e1f...", "files": ["net/core/pktgen.c"]}]
applied:
  description: Subjects of the patches this run applied.
  returned: always
  type: list
  elements: str
  sample: ["pktgen: show an xdplab fixture marker in pgctrl"]
reverted:
  description: Subjects of previously recorded patches this run reverted.
  returned: always
  type: list
  elements: str
  sample: []
method:
  description: git or patch.
  returned: always
  type: str
  sample: patch
series:
  description: Series record (schema xdplab.kernel-series/v1) as written to the tree's state file.
  returned: always
  type: dict
  sample: {"schema": "xdplab.kernel-series/v1", "series_id": "ab12...", "patches": []}
state_file:
  description: Where the series record lives in the tree.
  returned: always
  type: str
  sample: /var/cache/xdplab/kernel/variants/patched/src/.xdplab/series.json
"""

import hashlib
import json
import os
import re
import shutil
import tempfile
import traceback

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import fetch_url
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _command
from ansible_collections.xdplab.testbed.plugins.module_utils.kernel import _build_logic as _kernel

# What git needs beside the C locale (common._command) to commit the series it applies.
GIT_ENV = {"GIT_COMMITTER_NAME": "xdplab.testbed", "GIT_COMMITTER_EMAIL": "xdplab@example.invalid"}


class PatchFailed(Exception):
    def __init__(self, msg: str, **extra):
        super().__init__(msg)
        self.extra = extra


class Series:
    def __init__(self, module: AnsibleModule):
        self.module = module
        self.src = module.params["src"]
        self.git = module.get_bin_path("git", required=True)
        method = module.params["method"]
        if method == "auto":
            method = "git" if os.path.isdir(os.path.join(self.src, ".git")) else "patch"
        self.method = method
        self.patch_bin = module.get_bin_path("patch", required=method == "patch")
        state_dir = os.path.join(self.src, ".git", "xdplab") if method == "git" else os.path.join(self.src, ".xdplab")
        self.state_dir = module.params["state_dir"] or state_dir
        self.state_file = os.path.join(self.state_dir, "series.json")
        self.user = module.params["build_user"]
        self.as_user: list[str] = []
        self.ids: tuple[int, int] | None = None  # the build user's (uid, gid)
        if self.user:
            self.as_user = self.unprivileged(module)

    def unprivileged(self, module: AnsibleModule) -> list[str]:
        """The setpriv prefix for the build user, after checking the tree is that user's and the record
        lives outside it (fail_json naming the user, the tree or the directory otherwise)."""
        try:
            prefix = _kernel.drop_privileges_argv(self.user, module.get_bin_path("setpriv", required=True))
            self.ids = _kernel.build_identity(self.user)
        except _kernel.KernelError as exc:
            module.fail_json(msg=str(exc))
        uid = self.ids[0]
        if os.lstat(self.src).st_uid != uid:
            module.fail_json(msg=f"src {self.src!r} is not build user {self.user!r}'s (uid {uid}): the patches "
                                 "would run as that user on a tree it cannot write; nothing was applied")
        if not module.params["state_dir"]:
            module.fail_json(msg="build_user needs state_dir (outside src): the series record is root's")
        real_state, real_src = os.path.realpath(self.state_dir), os.path.realpath(self.src)
        if real_state == real_src or real_state.startswith(real_src.rstrip("/") + "/"):
            module.fail_json(msg=f"state_dir {self.state_dir!r} is inside src {self.src!r}, which build user "
                                 f"{self.user!r} can write: give a directory outside it")
        return prefix

    # ------------------------------------------------------------ tools
    def run(self, argv: list[str], data: str | None = None, check: bool = True, cwd: str | None = None):
        if argv and argv[0] == self.git:
            # The tree's own hooks (.git/hooks, core.hooksPath) never run: it may be fetched code.
            argv = [self.git, "-c", "core.hooksPath=/dev/null", *argv[1:]]
        argv = self.as_user + argv  # the build user's, when one is given: root never runs them on its tree
        # as the build user, git reads no configuration of root's ($HOME/.gitconfig)
        env = dict(GIT_ENV, HOME="/nonexistent") if self.as_user else GIT_ENV
        try:
            return _command.run(self.module, argv, what=f"{argv[0]} {argv[1]}", ok=(0,) if check else None, env=env,
                                data=data, cwd=cwd or self.src, binary_data=True)
        except _command.CommandError as exc:
            raise PatchFailed(f"{argv[0]} {argv[1]} failed (rc={exc.rc})", rc=exc.rc, stdout=exc.stdout,
                              stderr=exc.stderr, cmd=exc.cmd) from None

    # ------------------------------------------------------------ input
    def load(self) -> list[tuple[_kernel.PatchInfo, str]]:
        items: list[tuple[_kernel.PatchInfo, str]] = []
        # The whole series is checked before any patch is read or fetched.
        for n, spec in enumerate(self.module.params["patches"], start=1):
            if bool(spec.get("path")) == bool(spec.get("url")):
                self.module.fail_json(msg=f"patches[{n - 1}] needs exactly one of path or url, got {spec!r}")
            if spec.get("sha256") is not None and not re.fullmatch(r"[0-9a-fA-F]{64}", str(spec["sha256"])):
                self.module.fail_json(msg=f"patches[{n - 1}] sha256 {spec['sha256']!r} is not a sha256 hex digest")
            if spec.get("url") and not spec.get("sha256") and not spec.get("sha256_waived"):
                self.module.fail_json(msg=f"patches[{n - 1}] url {spec['url']!r} needs a sha256 (or "
                                          "sha256_waived: true for this patch): nothing was applied")
        for n, spec in enumerate(self.module.params["patches"], start=1):
            if spec.get("path"):
                name = os.path.basename(spec["path"])
                try:
                    with open(spec["path"], "rb") as fh:
                        raw = fh.read()
                except OSError as exc:
                    self.module.fail_json(msg=f"patch {spec['path']!r} cannot be read: {exc.strerror}")
            else:
                name = spec["url"].rstrip("/").rsplit("/", 1)[-1] or f"patch-{n}"
                resp, info = fetch_url(self.module, spec["url"], timeout=self.module.params["timeout"])
                if info.get("status") != 200 or resp is None:
                    self.module.fail_json(msg=f"patch URL {spec['url']!r} is unreachable: {info.get('msg')} "
                                          f"(status {info.get('status')})")
                raw = resp.read()
            digest = hashlib.sha256(raw).hexdigest()
            if spec.get("sha256") and spec["sha256"].lower() != digest:
                self.module.fail_json(msg=f"sha256 mismatch for patch {spec.get('path') or spec.get('url')!r}: "
                                      f"expected {spec['sha256']}, got {digest}")
            text = raw.decode("utf-8", errors="surrogateescape")
            try:
                items += _kernel.read_series(name, text, self.patch_id, start=len(items) + 1)
            except _kernel.KernelError as exc:
                self.module.fail_json(msg=str(exc))
        return items

    def patch_id(self, text: str) -> str:
        """``git patch-id --stable`` of one patch ("" when git finds no diff in it)."""
        _dummy, out, _dummy = self.run([self.git, "patch-id", "--stable"], data=text, cwd="/")
        ids = _kernel.parse_patch_ids(out)
        return ids[0] if len(ids) == 1 else ""

    def recorded(self) -> dict:
        try:
            with open(self.state_file) as fh:
                return json.load(fh)
        except FileNotFoundError:
            return {"patches": []}
        except ValueError as exc:
            self.module.fail_json(msg=f"series record {self.state_file} is corrupt: {exc}")

    def stored_patch(self, pid: str) -> str:
        return os.path.join(self.state_dir, "patches", pid + ".patch")

    # ------------------------------------------------------------ patch(1) trees
    def _patch(self, text: str, reverse: bool, dry: bool) -> tuple[int, str]:
        argv = [self.patch_bin, "-p1", "--batch", "--forward" if not reverse else "--reverse",
                "--no-backup-if-mismatch", "--reject-file=-"]
        if dry:
            argv.append("--dry-run")
        rc, out, err = self.run(argv, data=text, check=False)
        return rc, out + err

    def apply_patch_tree(self, texts: list[tuple[_kernel.PatchInfo, str]], revert: list[dict]) -> None:
        done: list[tuple[str, bool]] = []  # (text, reversed) actually performed, for rollback
        try:
            for rec in reversed(revert):
                with open(self.stored_patch(rec["patch_id"])) as fh:
                    text = fh.read()
                rc, out = self._patch(text, reverse=True, dry=True)
                if rc != 0:
                    raise PatchFailed(f"recorded patch {rec['name']!r} ({rec['subject']}) no longer reverts cleanly; "
                                      f"files: {', '.join(_kernel.failed_files_patch(out)) or '?'}", output=out)
                self._patch(text, reverse=True, dry=False)
                done.append((text, True))
            for info, text in texts:
                rc, out = self._patch(text, reverse=False, dry=True)
                if rc != 0:
                    files = _kernel.failed_files_patch(out) or info.files
                    raise PatchFailed(f"patch {info.index} {info.name!r} ({info.subject}) does not apply to "
                                      f"{', '.join(files)}", patch=info.name, files=files, output=out)
                rc, out = self._patch(text, reverse=False, dry=False)
                if rc != 0:
                    raise PatchFailed(f"patch {info.name!r} failed after a clean dry run", output=out)
                done.append((text, False))
        except PatchFailed:
            for text, was_reverse in reversed(done):
                self._patch(text, reverse=not was_reverse, dry=False)
            raise

    # ------------------------------------------------------------ git trees
    def apply_git_tree(self, texts: list[tuple[_kernel.PatchInfo, str]], reset_to: str | None) -> None:
        _dummy, status, _dummy = self.run([self.git, "status", "--porcelain", "--untracked-files=no"])
        if status.strip():
            self.module.fail_json(msg=f"git tree {self.src} has uncommitted changes; refusing to apply a series",
                                  stdout=status)
        _dummy, head, _dummy = self.run([self.git, "rev-parse", "HEAD"])
        head = head.strip()
        tmp = tempfile.mkdtemp(prefix="xdplab-series-")
        try:
            files = []
            for info, text in texts:
                path = os.path.join(tmp, f"{info.index:04d}.patch")
                with open(path, "w", errors="surrogateescape") as fh:
                    fh.write(text)
                files.append(path)
            if self.ids:  # git am runs as the build user: it reads the series, nothing else of root's
                for path in [tmp, *files]:
                    os.chown(path, *self.ids)
            if reset_to:
                self.run([self.git, "reset", "--hard", "--quiet", reset_to])
            if files:
                rc, out, err = self.run([self.git, "am", "-3", "--keep-cr", *files], check=False)
                if rc != 0:
                    _dummy, cur, _dummy = self.run([self.git, "am", "--show-current-patch=diff"], check=False)
                    failed_files = _kernel.failed_files_git(out + err)
                    # which patch: count commits made since the base
                    _dummy, n_new, _dummy = self.run([self.git, "rev-list", "--count", "HEAD",
                                                      f"^{reset_to or head}"], check=False)
                    idx = int(n_new.strip() or 0)
                    info = texts[min(idx, len(texts) - 1)][0]
                    self.run([self.git, "am", "--abort"], check=False)
                    self.run([self.git, "reset", "--hard", "--quiet", head], check=False)
                    raise PatchFailed(f"patch {info.index} {info.name!r} ({info.subject}) does not apply to "
                                      f"{', '.join(failed_files or info.files)}", patch=info.name,
                                      files=failed_files or info.files, output=out + err)
        except PatchFailed:
            self.run([self.git, "reset", "--hard", "--quiet", head], check=False)
            raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def git_head(self) -> str:
        return self.run([self.git, "rev-parse", "HEAD"])[1].strip()

    # ------------------------------------------------------------ state
    def write_state(self, infos: list[_kernel.PatchInfo], texts: dict[str, str], base: str) -> dict:
        record = _kernel.series_record(self.module.params["source"], infos, base=base)
        record["method"] = self.method
        os.makedirs(os.path.join(self.state_dir, "patches"), exist_ok=True)
        for pid, text in texts.items():
            with open(self.stored_patch(pid), "w", errors="surrogateescape") as fh:
                fh.write(text)
        fd, tmp = tempfile.mkstemp(dir=self.state_dir, prefix=".series.")
        with os.fdopen(fd, "w") as fh:
            json.dump(record, fh, indent=2, sort_keys=True)
            fh.write("\n")
        self.module.atomic_move(tmp, self.state_file)
        return record


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            src=dict(type="path", required=True),
            patches=dict(type="list", elements="dict", default=[], options=dict(
                path=dict(type="path"), url=dict(type="str"), sha256=dict(type="str"),
                sha256_waived=dict(type="bool", default=False))),
            method=dict(type="str", choices=["auto", "git", "patch"], default="auto"),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            source=dict(type="dict", default={}),
            timeout=dict(type="int", default=30),
            build_user=dict(type="str"),
            state_dir=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    try:
        src = module.params["src"]
        if not os.path.isdir(src) or not os.path.isfile(os.path.join(src, "Makefile")):
            module.fail_json(msg=f"src {src!r} is not a kernel source tree (no Makefile)")
        series = Series(module)
        items = series.load() if module.params["state"] == "present" else []
        recorded = series.recorded()
        applied_ids = [p["patch_id"] for p in recorded.get("patches", [])]
        wanted_ids = [i.patch_id for i, _dummy in items]
        if len(set(wanted_ids)) != len(wanted_ids):
            dup = next(i for i in wanted_ids if wanted_ids.count(i) > 1)
            module.fail_json(msg=f"the series lists the same change twice (patch-id {dup})")
        action, todo = _kernel.plan_series(applied_ids, wanted_ids)
        revert = recorded.get("patches", []) if action == "reset" else []
        to_apply = [items[i] for i in todo]
        result = dict(
            changed=action != "noop",
            method=series.method,
            patches=[i.as_dict() for i, _dummy in items] if action != "noop" else recorded.get("patches", []),
            applied=[i.subject for i, _dummy in to_apply],
            reverted=[p["subject"] for p in revert],
            state_file=series.state_file,
            series=recorded if action == "noop" else {},
        )
        if action == "noop" and "schema" not in recorded:
            # nothing applied and nothing asked: the record of the empty series, not written to the tree
            result["series"] = dict(_kernel.series_record(module.params["source"], []), method=series.method)
        if action == "noop" or module.check_mode:
            module.exit_json(**result)
        base = recorded.get("base", "")
        try:
            if series.method == "git":
                if not base:
                    base = series.git_head()
                series.apply_git_tree(to_apply, reset_to=base if action == "reset" else None)
            else:
                series.apply_patch_tree(to_apply, revert)
        except PatchFailed as exc:
            module.fail_json(msg=str(exc) + "; the tree was left as it was before the task", **exc.extra)
        record = series.write_state([i for i, _dummy in items], {i.patch_id: t for i, t in items}, base)
        result["series"] = record
        module.exit_json(**result)
    except Exception as exc:  # noqa: BLE001 - one top-level handler
        module.fail_json(msg=f"kernel_patch failed: {exc}", exception=traceback.format_exc())


if __name__ == "__main__":
    main()
