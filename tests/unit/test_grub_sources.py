# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""GRUB_CMDLINE_LINUX edited the way the distribution reads it: /etc/default/grub, then
/etc/default/grub.d/*.cfg, sourced by /bin/sh as grub-mkconfig does; the edit lands where the effective
value comes from (or is refused naming the form); repeated parameters are kept; restore is byte-exact.
Real-world files in fixtures/grub (their origin: fixtures/grub/PROVENANCE)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning import _host_knobs as th

FIXTURES = Path(__file__).parent / "fixtures" / "grub"
SETUPS = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
# What the kernel gets from each setup's GRUB_CMDLINE_LINUX, as /bin/sh computes it.
EFFECTIVE = {
    "debian12": "",
    "debian12-cloud": "console=tty0 console=ttyS0,115200 earlyprintk=ttyS0,115200 consoleblank=0",
    "debian12-dropin": "console=tty0 console=ttyS0,115200n8 net.ifnames=0",
    "ubuntu2404": "",
    "ubuntu2404-cloud": "",
}


def _copy(tmp_path: Path, setup: str) -> Path:
    root = tmp_path / setup
    shutil.copytree(FIXTURES / setup, root)
    return root / "grub"


def _files(grub: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted([grub, *grub.parent.glob("grub.d/*")])}


def _as_grub_mkconfig_reads(grub: Path, var: str = "GRUB_CMDLINE_LINUX") -> str:
    """The variable after sourcing the files as grub-mkconfig (grub-common 2.06) does."""
    script = (f'. "$1"; for x in "$1".d/*.cfg; do if [ -e "$x" ]; then . "$x"; fi; done; '
              f'printf %s "${var}"')
    return subprocess.run(["/bin/sh", "-c", script, "sh", str(grub)], capture_output=True, text=True,  # noqa: S603
                          check=True, env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"}).stdout


def _apply(edit: th.GrubEdit) -> None:
    Path(edit.path).write_text(edit.text, encoding="utf-8", newline="")


def test_every_setup_has_its_effective_value_and_provenance():
    assert set(EFFECTIVE) == set(SETUPS)
    provenance = (FIXTURES / "PROVENANCE").read_text()
    for path in FIXTURES.rglob("*"):
        if path.is_file() and path.name != "PROVENANCE":
            assert f"\n{path.relative_to(FIXTURES)}: " in provenance, f"{path} has no provenance line"


@pytest.mark.parametrize("setup", SETUPS)
def test_edit_lands_where_the_value_comes_from_and_restore_is_byte_exact(tmp_path, setup):
    grub = _copy(tmp_path, setup)
    before = _files(grub)
    assert _as_grub_mkconfig_reads(grub) == EFFECTIVE[setup]
    edit = th.edit_grub_sources(th.read_grub_sources(str(grub)), {"isolcpus": "2-3", "nohz_full": "2-3"}, str(grub))
    assert edit.old == EFFECTIVE[setup]
    _apply(edit)
    got = _as_grub_mkconfig_reads(grub)
    assert got == edit.new == " ".join(filter(None, [EFFECTIVE[setup], "isolcpus=2-3 nohz_full=2-3"])), got
    # only the file the value came from changed, by that one line
    changed = [p for p, data in _files(grub).items() if data != before[p]]
    assert changed == [edit.path]
    # idempotent: a second run finds the value set and changes nothing
    again = th.edit_grub_sources(th.read_grub_sources(str(grub)), {"isolcpus": "2-3", "nohz_full": "2-3"}, str(grub))
    assert again.old == again.new
    Path(edit.path).write_text(th.restore_grub(Path(edit.path).read_text(), edit.saved), encoding="utf-8",
                               newline="")
    assert _files(grub) == before
    assert th.restore_grub(Path(edit.path).read_text(), edit.saved) == Path(edit.path).read_text()  # twice: same


def test_the_grub_d_drop_in_is_edited_not_shadowed():
    """The drop-in's value is the effective one: an edit of /etc/default/grub (or a line appended to it)
    would be overridden by it, and the kernel would not get the parameter."""
    sources = th.read_grub_sources(str(FIXTURES / "debian12-dropin" / "grub"))
    edit = th.edit_grub_sources(sources, {"isolcpus": "1"}, str(FIXTURES / "debian12-dropin" / "grub"))
    assert edit.path.endswith("grub.d/60-image.cfg")


def test_repeated_parameters_are_kept(tmp_path):
    grub = _copy(tmp_path, "debian12-cloud")
    edit = th.edit_grub_sources(th.read_grub_sources(str(grub)), {"isolcpus": "1", "consoleblank": None}, str(grub))
    _apply(edit)
    assert _as_grub_mkconfig_reads(grub) == "console=tty0 console=ttyS0,115200 earlyprintk=ttyS0,115200 isolcpus=1"
    # setting one of the repeated ones: kept when the value is among them, refused otherwise
    same = th.edit_grub_sources(th.read_grub_sources(str(grub)), {"console": "ttyS0,115200"}, str(grub))
    assert same.old == same.new
    with pytest.raises(th.HostTuningError, match=r"console is given 2 times \(console=tty0 console=ttyS0,115200\)"):
        th.edit_grub_sources(th.read_grub_sources(str(grub)), {"console": "ttyS1"}, str(grub))


def test_a_parameter_also_in_grub_cmdline_linux_default_is_refused_naming_it(tmp_path):
    grub = _copy(tmp_path, "ubuntu2404-cloud")
    with pytest.raises(th.HostTuningError, match=r"console is also in GRUB_CMDLINE_LINUX_DEFAULT at .*"
                                                 r"50-cloudimg-settings.cfg:11"):
        th.edit_grub_sources(th.read_grub_sources(str(grub)), {"console": "ttyS1"}, str(grub))


@pytest.mark.parametrize("body, form", [
    ('export GRUB_CMDLINE_LINUX="quiet"\n', None),
    ('  GRUB_CMDLINE_LINUX="quiet" # ours\n', None),
    ('if [ -e /etc/lab ]; then\n    GRUB_CMDLINE_LINUX="quiet"\nfi\n', "conditional"),
    ('[ -e /etc/lab ] && GRUB_CMDLINE_LINUX="quiet"\n', "conditional"),
    ('case "$x" in a) GRUB_CMDLINE_LINUX="quiet";; esac\n', "conditional"),
    ('GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX quiet"\n', "expansion"),
    ('GRUB_CMDLINE_LINUX=`cat /etc/cmdline`\n', "expansion"),
    ('unset GRUB_CMDLINE_LINUX\n', "other"),
])
def test_each_form_is_edited_in_place_or_refused_naming_it(tmp_path, body, form):
    """The drop-in's line is the last one: edited when it is a plain (or exported) assignment, else
    refused naming file, line and form; never overridden by an appended line."""
    grub = _copy(tmp_path, "debian12-dropin")
    cfg = grub.parent / "grub.d" / "70-lab.cfg"
    cfg.write_text(body)
    before = _files(grub)
    sources = th.read_grub_sources(str(grub))
    if form is None:
        edit = th.edit_grub_sources(sources, {"isolcpus": "1"}, str(grub))
        assert edit.path == str(cfg)
        _apply(edit)
        assert _as_grub_mkconfig_reads(grub) == "quiet isolcpus=1"
        assert cfg.read_text().startswith(body[:body.index("GRUB")])  # export / indentation kept
        cfg.write_text(th.restore_grub(cfg.read_text(), edit.saved))
        assert _files(grub) == before
    else:
        with pytest.raises(th.HostTuningError, match=rf"set last at {cfg}:\d+ in a form we cannot safely edit "
                                                     rf"\({form}"):
            th.edit_grub_sources(sources, {"isolcpus": "1"}, str(grub))


def test_a_line_added_to_a_file_without_a_final_newline_is_taken_out_byte_exact(tmp_path):
    grub = tmp_path / "grub"
    grub.write_text("GRUB_DEFAULT=0\nGRUB_TIMEOUT=5")  # no newline at the end
    edit = th.edit_grub_sources(th.read_grub_sources(str(grub)), {"nosmt": True}, str(grub))
    _apply(edit)
    assert grub.read_text() == 'GRUB_DEFAULT=0\nGRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX="nosmt"\n'
    grub.write_text(th.restore_grub(grub.read_text(), edit.saved))
    assert grub.read_text() == "GRUB_DEFAULT=0\nGRUB_TIMEOUT=5"
    grub.write_text("GRUB_DEFAULT=0\n\n\n")  # trailing blank lines stay
    edit = th.edit_grub_sources(th.read_grub_sources(str(grub)), {"nosmt": True}, str(grub))
    _apply(edit)
    grub.write_text(th.restore_grub(grub.read_text(), edit.saved))
    assert grub.read_text() == "GRUB_DEFAULT=0\n\n\n"


def test_a_line_changed_since_the_edit_is_not_restored_blindly(tmp_path):
    grub = _copy(tmp_path, "debian12")
    edit = th.edit_grub_sources(th.read_grub_sources(str(grub)), {"nosmt": True}, str(grub))
    grub.write_text(edit.text.replace('"nosmt"', '"nosmt quiet"'))
    with pytest.raises(th.HostTuningError, match="is gone: restore it by hand"):
        th.restore_grub(grub.read_text(), edit.saved)
