# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""kernel_patch on fetched code: a URL needs a sha256 unless waived for that patch, nothing is fetched
or run before that is settled, and every git command runs with the tree's hooks switched off."""

from __future__ import annotations

import types

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args
from ansible_collections.xdplab.testbed.plugins.modules import kernel_patch


class Fetched(BaseException):
    """Raised by the fake fetch_url: past the module's own error handler."""


class Done(Exception):
    def __init__(self, result):
        super().__init__(result.get("msg"))
        self.result = result


def run(monkeypatch, args):
    calls = []

    def run_command(self, argv, **kw):
        calls.append(list(argv))
        return 0, "", ""

    def fetch(*a, **k):
        calls.append(["fetch_url", a[1]])
        raise Fetched(a[1])
    monkeypatch.setattr(basic.AnsibleModule, "run_command", run_command)
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", lambda self, **kw: (_dummy for _dummy in ()).throw(Done(kw)))
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", lambda self, **kw: (_dummy for _dummy in ()).throw(
        Done(dict(kw, failed=True))))
    monkeypatch.setattr(kernel_patch, "fetch_url", fetch)
    with patch_module_args(args), pytest.raises(Done) as done:
        kernel_patch.main()
    return done.value.result, calls


@pytest.mark.parametrize("patches", [
    [{"url": "https://example.invalid/a.patch"}],
    [{"url": "https://example.invalid/a.patch", "sha256": ""}],
    [{"path": "/dev/null"}, {"url": "https://example.invalid/b.mbox"}],
    [{"url": "https://example.invalid/a.patch", "sha256": "abc"}],
])
def test_url_without_a_good_sha256_is_refused_before_anything(tmp_path, monkeypatch, patches):
    (tmp_path / "Makefile").write_text("VERSION = 6\n")
    result, calls = run(monkeypatch, {"src": str(tmp_path), "patches": patches, "method": "patch"})
    assert result.get("failed") and "sha256" in result["msg"]
    assert not any(c[0] == "fetch_url" for c in calls)


def test_waived_sha256_is_fetched(tmp_path, monkeypatch):
    (tmp_path / "Makefile").write_text("VERSION = 6\n")
    try:
        result, _dummy = run(monkeypatch, {
            "src": str(tmp_path), "method": "patch",
            "patches": [{"url": "https://example.invalid/a.patch", "sha256_waived": True}]})
    except Fetched:
        return
    pytest.fail(f"not fetched: {result.get('msg')}")


@pytest.mark.parametrize("args", ["am -3 x.patch", "reset --hard HEAD", "rev-parse HEAD"])
def test_git_runs_with_hooks_disabled(args):
    argv = args.split()
    calls = []

    class M:
        def run_command(self, argv, **kw):
            calls.append(argv)
            return 0, "", ""
    series = types.SimpleNamespace(git="/usr/bin/git", module=M(), src="/src", as_user=[])
    kernel_patch.Series.run(series, ["/usr/bin/git", *argv])
    assert calls == [["/usr/bin/git", "-c", "core.hooksPath=/dev/null", *argv]]
    # as the build user: the same command behind setpriv, hooks still off
    series.as_user = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--init-groups", "--no-new-privs"]
    kernel_patch.Series.run(series, ["/usr/bin/git", *argv])
    assert calls[1] == [*series.as_user, "/usr/bin/git", "-c", "core.hooksPath=/dev/null", *argv]
