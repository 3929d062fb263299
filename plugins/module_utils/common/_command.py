# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one way a module runs a program. Private to the xdplab.testbed collection.

``run(module, argv, ...)`` runs an argv list (never a shell string) through the module's
``run_command`` in the C locale, so every tool's messages and numbers are the ones its parser reads;
skips a command that changes the host in check mode; and raises ``CommandError`` carrying ``rc``,
``stdout``, ``stderr`` and ``cmd`` for ``fail_json`` (``exc.fail_kwargs()``), unless the exit status is
one the caller accepts or the tool's message says the object is already gone (an undo that finds
nothing to undo). ``C_LOCALE`` is the environment for the few programs started with ``subprocess``
(background servers), ``c_env()`` that over the module's own.

Why not community.general's ``CmdRunner``: the collection depends on community.general 11, where it
is ``module_utils/cmd_runner.py``, but upstream has since moved it to ``module_utils/_cmd_runner.py``
marked private to community.general ("can have breaking changes at any time; do not use from other
collections"), so importing it would tie every module here to another collection's internals. Its
model (a table of option-to-flag formats filled from ``module.params``) also fits modules whose options
are a tool's flags; ours build argv in pure, unit-tested planners (``module_utils/<step>/``) and need
only the part kept here: argv, locale, check mode and errors that carry what the tool said.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from typing import Any

# LC_ALL overrides LANG and every LC_* (and with it C, gettext ignores LANGUAGE): English messages,
# '.' as the decimal point, byte-wise sorting.
C_LOCALE = {"LC_ALL": "C"}


class CommandError(RuntimeError):
    """A program failed. The message names what was being done, the exit status and what the program
    said (the last lines of stderr, else stdout); ``fail_kwargs()`` is what fail_json reports."""

    def __init__(self, msg: str, rc: int, stdout: str, stderr: str, cmd: Sequence[str] = ()) -> None:
        super().__init__(msg)
        self.rc, self.stdout, self.stderr, self.cmd = rc, stdout, stderr, list(cmd)

    def fail_kwargs(self) -> dict[str, Any]:
        return {"msg": str(self), "rc": self.rc, "stdout": self.stdout, "stderr": self.stderr, "cmd": self.cmd}


def said(out: str, err: str, lines: int = 15) -> str:
    """What a failed program said: the last ``lines`` of its stderr, else of its stdout."""
    text = (err or "").strip() or (out or "").strip()
    return "\n".join(text.splitlines()[-lines:])


def c_env(**extra: str) -> dict[str, str]:
    """This process's environment in the C locale (for subprocess), plus ``extra``."""
    return dict(os.environ, **C_LOCALE, **extra)


def run(module: Any, argv: Sequence[str], *, what: str | None = None, ok: Collection[int] | None = (0,),
        gone: Sequence[str] = (), changes: bool = False, env: dict[str, str] | None = None,
        data: str | bytes | None = None, cwd: str | None = None, binary_data: bool = False) -> tuple[int, str, str]:
    """Run ``argv`` in the C locale (``env`` added to it) and return (rc, stdout, stderr).

    ``ok``: the exit statuses that are not failures (None: any). ``gone``: messages on stderr that mean
    the object is already gone, so a failure saying one is not one. ``changes``: the command changes the
    host, so in check mode it is not run and (0, "", "") is returned. Otherwise a failure raises
    CommandError naming ``what`` (default the program and its first argument)."""
    argv = list(argv)
    if changes and getattr(module, "check_mode", False):
        return 0, "", ""
    kwargs: dict[str, Any] = {"environ_update": dict(C_LOCALE, **(env or {}))}
    if data is not None:
        kwargs.update(data=data, binary_data=binary_data)
    if cwd is not None:
        kwargs["cwd"] = cwd
    rc, out, err = module.run_command(argv, **kwargs)
    if ok is not None and rc not in ok and not any(g in (err or "") for g in gone):
        what = what or " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(argv[:2]))
        raise CommandError(f"{what} failed (rc={rc}): {said(out, err)}", rc, out, err, argv)
    return rc, out, err
