#!/usr/bin/python
# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
---
module: kernel_config
short_description: Build a kernel .config from a base plus fragments and check every requested option stands
description:
  - Generates a kernel configuration from a base (V(tinyconfig), V(defconfig), V(running) = the running kernel's
    config, or a V(file)) plus Kconfig fragments and single options, merged with the kernel's own
    C(scripts/kconfig/merge_config.sh) and completed with C(make olddefconfig), in a scratch directory.
  - Then checks that every option requested by the fragments and O(options) stands in the final config as asked;
    otherwise fails listing each dropped option and, when the tree's Kconfig tells, why (unmet dependencies,
    select-only symbol, unknown symbol). Nothing is written to O(dest) in that case.
  - Writes O(dest) only when the result differs from what is there (idempotent), and returns a build key hashing
    the final config with O(key_inputs).
version_added: "0.1.0"
author:
  - xdplab.testbed contributors (!UNKNOWN)
options:
  src:
    description: Kernel source tree.
    type: path
    required: true
  dest:
    description: Where the final .config is written.
    type: path
    required: true
  base:
    description: Starting configuration.
    type: str
    choices: [tinyconfig, defconfig, running, file]
    default: tinyconfig
  base_file:
    description: Config file used when O(base=file).
    type: path
  fragments:
    description: Kconfig fragment files (C(CONFIG_X=y) lines), merged in order.
    type: list
    elements: path
    default: []
  options:
    description:
      - 'Single options merged last, as C({BPF_JIT: true, NR_CPUS: 8, PKTGEN: m}).'
      - C(false) means "is not set".
    type: dict
    default: {}
  key_inputs:
    description: Other inputs of the build (source id, patch-ids, variant, targets) hashed with the final config.
    type: list
    elements: str
    default: []
  build_user:
    description:
      - Run the source's C(make) and C(merge_config.sh) as this unprivileged user (util-linux C(setpriv),
        no_new_privs), in a scratch directory of its own, not as root. Unset runs them as the caller.
    type: str
extends_documentation_fragment:
  - xdplab.testbed.attributes
attributes:
  check_mode:
    support: full
    details: The config is generated and checked in a scratch directory; O(dest) is not written.
  diff_mode:
    support: full
    details: Shows the change to O(dest).
requirements:
  - make, gcc, flex, bison (the kernel's kconfig tools)
"""

EXAMPLES = r"""
- name: Tinyconfig plus the collection's VM, BPF/XDP and pktgen fragments
  xdplab.testbed.kernel_config:
    src: /var/cache/xdplab/kernel/variants/patched/src
    dest: /var/lib/xdplab/kernel/patched/config
    base: tinyconfig
    fragments:
      - "{{ role_path }}/../../files/kconfig/vm.config"
      - "{{ role_path }}/../../files/kconfig/bpf-xdp.config"
    options:
      NR_CPUS: 8
"""

RETURN = r"""
config_sha256:
  description: sha256 of the final .config.
  returned: always
  type: str
  sample: 3f0c...
build_key:
  description: sha256 over key_inputs and the final config; equal keys mean equal builds.
  returned: always
  type: str
  sample: 9a1b...
requested:
  description: Number of options requested by fragments and options.
  returned: always
  type: int
  sample: 82
renamed:
  description:
    - Requested options this tree knows under a newer name (upstream renamed them), each with C(option) and C(as);
      the new name was requested with the same value and checked instead.
  returned: success
  type: list
  elements: dict
  sample: [{"option": "CONFIG_PROC_SYSCTL", "as": "CONFIG_SYSCTL"}]
dropped:
  description: Requested options that did not stand, each with option, requested, final and reason (on failure).
  returned: on failure
  type: list
  elements: dict
  sample: [{"option": "CONFIG_BPF_JIT", "requested": "y", "final": "n", "reason": "unmet dependencies: MODULES=n"}]
"""

import hashlib
import os
import shutil
import tempfile
import traceback

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _command
from ansible_collections.xdplab.testbed.plugins.module_utils.kernel import _build_logic as _kernel


def running_config() -> str:
    release = os.uname().release
    for path in (f"/boot/config-{release}", "/proc/config.gz"):
        if os.path.exists(path):
            if path.endswith(".gz"):
                import gzip

                with gzip.open(path, "rt") as fh:
                    return fh.read()
            with open(path) as fh:
                return fh.read()
    raise _kernel.KernelError(f"no config for the running kernel {release} (/boot/config-{release}, /proc/config.gz)")


ARGUMENT_SPEC = dict(
    src=dict(type="path", required=True),
    dest=dict(type="path", required=True),
    base=dict(type="str", choices=["tinyconfig", "defconfig", "running", "file"], default="tinyconfig"),
    base_file=dict(type="path"),
    fragments=dict(type="list", elements="path", default=[]),
    options=dict(type="dict", default={}),
    key_inputs=dict(type="list", elements="str", default=[], no_log=False),
    build_user=dict(type="str"),
)


def _give(as_user: list[str], path: str) -> None:
    """The fetched source's make and scripts run as the build user: its files are the user's."""
    if as_user:
        os.chown(path, int(as_user[1].split("=")[1]), int(as_user[2].split("=")[1]))


def _requested(module: AnsibleModule, p: dict) -> tuple[dict[str, str], list[str], dict[str, str], list[dict]]:
    """What the fragments and options ask for: (every requested option, fragment paths, the options alone,
    the options this tree knows under a newer name, followed)."""
    requested: dict[str, str] = {}
    fragments: list[str] = []
    for frag in p["fragments"]:
        try:
            with open(frag) as fh:
                text = fh.read()
        except OSError as exc:
            module.fail_json(msg=f"config fragment {frag!r} cannot be read: {exc.strerror}")
        opts = _kernel.parse_config(text)
        if not opts:
            module.fail_json(msg=f"config fragment {frag!r} sets no CONFIG_ option")
        requested.update(opts)
        fragments.append(frag)
    try:
        extra = _kernel.normalize_options(p["options"])
    except _kernel.KernelError as exc:
        module.fail_json(msg=str(exc))
    requested.update(extra)
    renamed: list[dict] = []
    if set(requested) & set(_kernel.RENAMED):
        requested, renamed = _kernel.follow_renames(requested, _kernel.kconfig_symbols(p["src"]))
        # The new names go in last (the options fragment), so they stand whatever the fragments set.
        extra.update({item["as"]: requested[item["as"]] for item in renamed})
    return requested, fragments, extra, renamed


def _stage(as_user: list[str], scratch: str, fragments: list[str], extra: dict[str, str]) -> tuple[str, list[str]]:
    """The options as a fragment of their own, the fragments where the build user can read them (a
    collection under /root), and an empty build directory. Returns (build directory, fragments)."""
    _give(as_user, scratch)
    fragments = list(fragments)
    if extra:
        extra_path = os.path.join(scratch, "options.config")
        with open(extra_path, "w") as fh:
            fh.write(_kernel.fragment_text(extra))
        _give(as_user, extra_path)
        fragments.append(extra_path)
    if as_user:
        copies = []
        for i, frag in enumerate(fragments):
            copy = os.path.join(scratch, f"fragment-{i}.config")
            shutil.copyfile(frag, copy)
            _give(as_user, copy)
            copies.append(copy)
        fragments = copies
    build = os.path.join(scratch, "o")
    os.makedirs(build)
    _give(as_user, build)
    return build, fragments


def _base_config(module: AnsibleModule, p: dict, as_user: list[str], make: str, build: str) -> None:
    """The starting .config: make tinyconfig/defconfig, or a copy of the running kernel's or a file's."""
    if p["base"] in ("tinyconfig", "defconfig"):
        _command.run(module, [*as_user, make, "-s", f"O={build}", p["base"]], cwd=p["src"])
        return
    if p["base"] == "file":
        try:
            with open(p["base_file"]) as fh:
                base_text = fh.read()
        except OSError as exc:
            module.fail_json(msg=f"base_file {p['base_file']!r} cannot be read: {exc.strerror}")
    else:
        base_text = running_config()
    with open(os.path.join(build, ".config"), "w") as fh:
        fh.write(base_text)
    _give(as_user, os.path.join(build, ".config"))


def _final_config(module: AnsibleModule, p: dict, as_user: list[str], make: str, build: str, merge: str,
                  fragments: list[str], requested: dict[str, str]) -> str:
    """Merge the fragments, let olddefconfig settle the rest; fail naming each requested option that
    did not stand and why. Returns the final .config text."""
    if fragments:
        # merge_config.sh makes its temporary file in the current directory: the scratch one
        _command.run(module, [*as_user, "/bin/sh", merge, "-m", "-O", build, os.path.join(build, ".config"),
                              *fragments], cwd=build)
    _command.run(module, [*as_user, make, "-s", f"O={build}", "olddefconfig"], cwd=p["src"])
    with open(os.path.join(build, ".config")) as fh:
        final_text = fh.read()
    final = _kernel.parse_config(final_text)
    dropped = _kernel.dropped_options(requested, final)
    if dropped:
        dropped = _kernel.kconfig_reasons(p["src"], dropped, final)
        lines = "; ".join(f"{d['option']}={d['requested']} became {d['final']}: {d['reason']}" for d in dropped)
        module.fail_json(msg=f"{len(dropped)} requested config option(s) did not stand: {lines}",
                         dropped=dropped, requested=len(requested))
    return final_text


def _install(module: AnsibleModule, p: dict, final_text: str, requested: int, renamed: list[dict]) -> None:
    """Write dest when it differs (diff, check mode), and exit with the config's digest and build key."""
    try:
        with open(p["dest"]) as fh:
            current = fh.read()
    except FileNotFoundError:
        current = None
    changed = current != final_text
    result = dict(
        changed=changed,
        config_sha256=hashlib.sha256(final_text.encode()).hexdigest(),
        build_key=_kernel.build_key("\n".join(p["key_inputs"]), [], final_text, "", []),
        requested=requested,
        renamed=renamed,
        dest=p["dest"],
    )
    if changed and module._diff:
        result["diff"] = dict(before=current or "", after=final_text, before_header=p["dest"],
                              after_header=p["dest"])
    if changed and not module.check_mode:
        os.makedirs(os.path.dirname(p["dest"]) or ".", exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(p["dest"]) or ".", prefix=".config.")
        with os.fdopen(fd, "w") as fh:
            fh.write(final_text)
        module.atomic_move(tmp, p["dest"])
    module.exit_json(**result)


def main() -> None:
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        required_if=[("base", "file", ["base_file"])],
        supports_check_mode=True,
    )
    p = module.params
    scratch = None
    try:
        src = p["src"]
        merge = os.path.join(src, "scripts", "kconfig", "merge_config.sh")
        if not os.path.isfile(merge):
            module.fail_json(msg=f"src {src!r} is not a kernel source tree (no scripts/kconfig/merge_config.sh)")
        make = module.get_bin_path("make", required=True)
        try:
            as_user = _kernel.drop_privileges_argv(p["build_user"], module.get_bin_path("setpriv", required=True)
                                                   if p["build_user"] else "setpriv")
        except _kernel.KernelError as exc:
            module.fail_json(msg=str(exc))
        requested, fragments, extra, renamed = _requested(module, p)
        # The build user works in it: in /tmp, not under the caller's TMPDIR (often private to root).
        scratch = tempfile.mkdtemp(prefix="xdplab-kconfig-", dir="/tmp" if as_user else None)  # noqa: S108
        build, fragments = _stage(as_user, scratch, fragments, extra)
        _base_config(module, p, as_user, make, build)
        final_text = _final_config(module, p, as_user, make, build, merge, fragments, requested)
        _install(module, p, final_text, len(requested), renamed)
    except _kernel.KernelError as exc:
        module.fail_json(msg=str(exc))
    except _command.CommandError as exc:
        module.fail_json(**exc.fail_kwargs())
    except Exception as exc:  # noqa: BLE001 - one top-level handler
        module.fail_json(msg=f"kernel_config failed: {exc}", exception=traceback.format_exc())
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
