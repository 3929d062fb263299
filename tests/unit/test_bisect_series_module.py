# SPDX-License-Identifier: GPL-3.0-or-later
"""bisect_series: a b4 am mbox (tests/unit/fixtures/b4) cut into one file per patch with git's own
mailsplit and patch-ids, unchanged files not written again, check mode writing nothing, bad entries
refused by name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args
from ansible_collections.xdplab.testbed.plugins.modules import bisect_series
from test_kernel_mbox import IDS, SUBJECTS, _fixture


class Done(BaseException):  # past any "except Exception"
    def __init__(self, result):
        super().__init__(result.get("msg"))
        self.result = result


def _raise(exc: BaseException):
    raise exc


def run(monkeypatch, args, check=False):
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", lambda self, **kw: _raise(Done(kw)))
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", lambda self, **kw: _raise(Done(dict(kw, failed=True))))
    with patch_module_args(dict(args, _ansible_check_mode=check)), pytest.raises(Done) as done:
        bisect_series.main()
    return done.value.result


def test_a_b4_mbox_becomes_one_file_per_patch(tmp_path, monkeypatch):
    mbox = tmp_path / "v1_lib.mbx"
    mbox.write_text(_fixture("b4-am.mbx"))
    dest = tmp_path / "series"
    dry = run(monkeypatch, {"patches": [{"path": str(mbox)}], "dest": str(dest)}, check=True)
    assert dry["changed"] is True and not dest.exists()
    res = run(monkeypatch, {"patches": [{"path": str(mbox)}], "dest": str(dest)})
    assert res["changed"] is True and not res.get("failed")
    assert [p["subject"] for p in res["patches"]] == SUBJECTS
    assert [p["patch_id"] for p in res["patches"]] == IDS
    assert [Path(p["path"]).name for p in res["patches"]] == [f"{i:04d}-{pid[:12]}.patch"
                                                              for i, pid in enumerate(IDS, start=1)]
    assert all(p["entry"] == {"path": p["path"]} for p in res["patches"])
    assert "Reviewed-by: Rita Reviewer" in Path(res["patches"][1]["path"]).read_text()
    again = run(monkeypatch, {"patches": [{"path": str(mbox)}], "dest": str(dest)})
    assert again["changed"] is False and again["patches"] == res["patches"]


@pytest.mark.parametrize("patches, message", [
    ([], "a bisection needs a series of at least one patch"),
    ([{"url": "https://example.org/x.mbx", "sha256": "0" * 64}], r"patches\[0\] must be \{path: <file>\}"),
    ([{"path": "/nonexistent/x.patch"}], "patch '/nonexistent/x.patch' cannot be read"),
])
def test_bad_entries_are_refused_by_name(tmp_path, monkeypatch, patches, message):
    res = run(monkeypatch, {"patches": patches, "dest": str(tmp_path / "s")})
    assert res.get("failed") and re.search(message, res["msg"]), res


def test_the_same_change_twice_is_refused(tmp_path, monkeypatch):
    mbox = tmp_path / "v1_lib.mbx"
    mbox.write_text(_fixture("b4-am.mbx"))
    res = run(monkeypatch, {"patches": [{"path": str(mbox)}, {"path": str(mbox)}], "dest": str(tmp_path / "s")})
    assert res.get("failed") and f"the same change twice (patch-id {IDS[0]})" in res["msg"], res
