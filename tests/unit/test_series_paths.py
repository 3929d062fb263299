# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""series_paths: a series typed on the command line with relative paths names the files where it was typed
(Ansible runs controller modules in the playbook's directory, where they would not be found)."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.filter.series_paths import series_paths


def test_relative_paths_are_joined_to_the_base_and_the_rest_kept():
    series = [{"path": "files/p/0001-a.patch"}, {"path": "/abs/0002-b.patch"}, {"path": "~/0003-c.patch"},
              {"url": "https://example.invalid/0004.patch", "sha256": "0" * 64}, {"path": "../x/./0005.patch"}]
    got = series_paths(series, "/home/dev/linux")
    assert got == [{"path": "/home/dev/linux/files/p/0001-a.patch"}, {"path": "/abs/0002-b.patch"},
                   {"path": "~/0003-c.patch"}, {"url": "https://example.invalid/0004.patch", "sha256": "0" * 64},
                   {"path": "/home/dev/x/0005.patch"}]
    assert series[0] == {"path": "files/p/0001-a.patch"}, "the input was changed"


def test_the_default_base_is_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert series_paths([{"path": "0001.patch"}]) == [{"path": str(tmp_path / "0001.patch")}]
    assert series_paths([]) == []


@pytest.mark.parametrize("bad", ["0001.patch", [["0001.patch"]], [None]])
def test_a_series_that_is_not_a_list_of_entries_is_named(bad):
    with pytest.raises(AnsibleFilterError, match="series_paths:.*0001.patch|series_paths:.*None"):
        series_paths(bad)
