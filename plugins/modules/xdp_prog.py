#!/usr/bin/python
# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: xdp_prog
short_description: Attach an XDP program to an interface, idempotently by program tag
version_added: "0.1.0"
description:
  - Attaches the XDP program of a clang-compiled BPF object to an interface in native, generic or
    offload mode, or detaches whatever XDP program the interface has.
  - Idempotent by program tag and mode. The object is loaded into a private, temporary bpffs (so it
    also works under C(ip netns exec), where /sys/fs/bpf is not mounted), its tag is compared with the
    tag of the program attached in the requested mode, and it is attached only if they differ. The
    temporary pins are removed in every case, the attachment alone holds the program.
  - Map entries (the redirect DEVMAP, the flow table) are written into the maps of the program that
    ends up attached, before it is attached when it is new, and only where they differ.
  - Everything given is checked (interface, object, program, map entries) before anything is loaded or
    attached; a failure names the bad value and leaves nothing attached or pinned.
  - Works on the interfaces of the network namespace the module runs in (with the
    C(xdplab.testbed.netns) connection, the host's namespace).
author:
  - xdplab.testbed contributors (!UNKNOWN)
requirements:
  - pyroute2
  - bpftool
  - root (CAP_SYS_ADMIN, CAP_BPF, CAP_NET_ADMIN)
extends_documentation_fragment:
  - xdplab.testbed.attributes
attributes:
  check_mode:
    support: full
    details: The object is loaded to read its tag (and dropped again); nothing is attached or written.
  diff_mode:
    support: full
options:
  interface:
    description: Interface name in the namespace the module runs in.
    type: str
    required: true
  object:
    description:
      - Path of the BPF ELF object (for example C(/var/lib/xdplab/xdp/xdp_drop.o), built by the
        C(xdplab.testbed.xdp) role). Required with O(state=attached).
    type: path
  program:
    description:
      - Function name of the XDP program in O(object). Without O(program) and O(section), the object
        must hold exactly one program.
    type: str
  section:
    description: ELF section of the program (for example C(xdp)), instead of O(program).
    type: str
  mode:
    description:
      - C(native) (driver, C(xdpdrv)), C(generic) (C(xdpgeneric), skb based, works everywhere) or
        C(offload) (C(xdpoffload), NIC offload; the program is loaded for the device).
      - "With O(state=detached) it is ignored: the programs attached by this collection are detached and what
        was found before is attached again (without a ledger entry, every XDP program of the interface is
        detached, unless O(only_ours))."
    type: str
    choices: [native, generic, offload]
    default: native
  state:
    description: C(attached) attaches the program; C(detached) removes any XDP program from the interface.
    type: str
    choices: [attached, detached]
    default: attached
  ledger_dir:
    description:
      - The state ledger directory. Before the first attach to an interface, the module records there the
        interface and the XDP programs found on it, so that V(detached) and C(xdplab.testbed.ledger
        state=cleaned) put back exactly what was there.
      - A program found in place that this collection did not attach is pinned under O(pin_dir) before it is
        replaced, and attached again afterwards. Where O(pin_dir) is not in a bpffs, replacing it is refused
        (the program would be lost).
    type: path
    default: /var/lib/xdplab/ledger
  pin_dir:
    description: Directory in a bpffs where programs found in place are kept while the interface is ours.
    type: path
    default: /sys/fs/bpf/xdplab
  only_ours:
    description:
      - With O(state=detached), leave the interface alone unless the ledger says this collection attached
        its program (cleanup of interfaces that may carry someone else's program).
    type: bool
    default: false
  run_id:
    description: Run id written into the ledger entry.
    type: str
  map_entries:
    description:
      - Entries to write into maps of the attached program.
      - For C(xdplab_flows) (program C(xdp_flow)), O(map_entries[].key) is a dict C(src), C(dst),
        C(proto) (C(udp), C(tcp), C(icmp), C(icmpv6) or a number), C(sport), C(dport) (default 0) and
        O(map_entries[].value) an action (C(drop), C(pass), C(tx), C(redirect), C(aborted)) or a dict
        C(action) with C(interface) (or C(ifindex)) for C(redirect). Writing an entry resets its counters.
      - For C(xdplab_flow_cfg), key C(0) and the value as for C(xdplab_flows), the action on a miss.
      - For any other map, key and value are integers; a value that is not a number is an interface
        name and stands for its ifindex (for example the C(xdplab_redirect) DEVMAP, key C(0)).
    type: list
    elements: dict
    default: []
    suboptions:
      map:
        description: Map name, as in the object (for example C(xdplab_redirect)).
        type: str
        required: true
      key:
        description: Key (see above).
        type: raw
        required: true
      value:
        description: Value (see above).
        type: raw
        required: true
notes:
  - Veth redirect targets need an XDP program (for example C(xdp_pass)) on their peer for redirected
    frames to be received.
  - Native and generic mode cannot hold programs at the same time; changing mode detaches the program
    of the other mode first.
  - The C(xdplab.testbed.xdp) role compiles files/xdp/*.bpf.c and attaches programs with this module;
    docs/xdp.md in the collection describes the programs and their maps.
"""

EXAMPLES = r"""
- name: Drop everything that arrives on veth0, natively
  xdplab.testbed.xdp_prog:
    interface: veth0
    object: /var/lib/xdplab/xdp/xdp_drop.o
    mode: native

- name: Redirect everything from dut0 to dut1 (dut1's peer runs xdp_pass)
  xdplab.testbed.xdp_prog:
    interface: dut0
    object: /var/lib/xdplab/xdp/xdp_redirect.o
    map_entries:
      - {map: xdplab_redirect, key: 0, value: dut1}

- name: Flow table, drop one UDP flow, pass the rest
  xdplab.testbed.xdp_prog:
    interface: dut0
    object: /var/lib/xdplab/xdp/xdp_flow.o
    mode: generic
    map_entries:
      - map: xdplab_flows
        key: {src: 198.18.0.1, dst: 198.18.0.2, proto: udp, sport: 9, dport: 9}
        value: drop
      - {map: xdplab_flow_cfg, key: 0, value: pass}

- name: Remove any XDP program from veth0
  xdplab.testbed.xdp_prog:
    interface: veth0
    state: detached
"""

RETURN = r"""
interface:
  description: The interface.
  returned: always
  type: str
  sample: veth0
ifindex:
  description: Its ifindex in the module's namespace.
  returned: always
  type: int
  sample: 4
prog_id:
  description: Id of the program attached in O(mode) afterwards (in check mode, the one attached now); null if none.
  returned: always
  type: int
  sample: 212
tag:
  description: Tag of the program (16 hex digits, as bpftool prints it); for O(state=detached), null.
  returned: always
  type: str
  sample: 55bc38b694061edc
name:
  description: Program name (kernel name, at most 15 characters).
  returned: always
  type: str
  sample: xdp_drop
mode:
  description: Mode the program is attached in (native, generic, offload); null when detached.
  returned: always
  type: str
  sample: native
maps:
  description: Maps of the attached program, name to map id (read them with _bpf or C(bpftool map dump id N)).
  returned: always
  type: dict
  sample: {"xdplab_stats": 301}
reason:
  description: Why the program was (or would be) attached, or why nothing changed.
  returned: when O(state=attached)
  type: str
  sample: same program and mode attached
map_entries_changed:
  description: Entries written (or, in check mode, that would be), as map and key in hex.
  returned: always
  type: list
  elements: dict
  sample: [{"map": "xdplab_redirect", "key": "00000000"}]
"""

import os  # noqa: E402
import tempfile  # noqa: E402
import traceback  # noqa: E402
from typing import Any  # noqa: E402

from ansible.module_utils.basic import AnsibleModule, missing_required_lib  # noqa: E402
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _command  # noqa: E402
from ansible_collections.xdplab.testbed.plugins.module_utils.state import _ledger  # noqa: E402
from ansible_collections.xdplab.testbed.plugins.module_utils.tuning._plan_and_snapshots import current_netns_name  # noqa: E402
from ansible_collections.xdplab.testbed.plugins.module_utils.xdp import _bpf  # noqa: E402
from ansible_collections.xdplab.testbed.plugins.module_utils.xdp import _program_objects as _xdp  # noqa: E402

try:
    from pyroute2 import IPRoute
except ImportError:
    IPRoute = None


class XdpProg:
    def __init__(self, module: AnsibleModule, ipr: Any) -> None:
        self.module = module
        self.ipr = ipr
        self.p = module.params
        self.bpftool = module.get_bin_path("bpftool", required=True)

    # -- helpers ---------------------------------------------------------------------------------
    def fail(self, msg: str, **kw: Any) -> None:
        self.module.fail_json(msg=msg, interface=self.p["interface"], **kw)

    def run(self, argv: list[str], what: str) -> str:
        """Run argv (common._command); fail naming the interface, the tool's rc, stdout and stderr."""
        try:
            return _command.run(self.module, argv, what=what)[1]
        except _command.CommandError as exc:
            self.fail(**exc.fail_kwargs())
            raise

    def ifindex_of(self, name: str) -> int:
        found = self.ipr.link_lookup(ifname=name)
        if not found:
            raise _xdp.XdpError(f"interface {name!r} not found in this network namespace")
        return found[0]

    def attached(self, ifindex: int) -> dict[str, dict[str, Any]]:
        """{mode: {prog_id, tag, name}} of every XDP program on the interface."""
        att = _bpf.xdp_attachment(ifindex, self.ipr)
        out = {}
        for mode, pid in att.prog_ids.items():
            info = _bpf.prog_info(pid)
            out[mode] = {"prog_id": pid, "tag": info.tag, "name": info.name, "map_ids": info.map_ids}
        return out

    @staticmethod
    def state_view(current: dict[str, dict[str, Any]], mode: str | None = None) -> dict[str, Any]:
        if mode is None:
            mode = next(iter(current), None)
        have = current.get(mode) if mode else None
        if not have:
            return {"attached": False}
        return {"attached": True, "mode": mode, "name": have["name"], "tag": have["tag"], "prog_id": have["prog_id"]}

    # -- the ledger: what was there before ------------------------------------------------------
    def entry(self) -> dict:
        here = current_netns_name()
        return _ledger.check_entry("xdp", {"interface": self.p["interface"]}, None if here == "host" else here)

    def recorded(self) -> dict | None:
        return _ledger.read(self.p["ledger_dir"], self.entry())

    def pin_path(self, mode: str) -> str:
        entry = self.entry()
        return os.path.join(self.p["pin_dir"], f"{entry['netns'] or 'host'}-{self.p['interface']}-{mode}")

    def keep_previous(self, before: dict[str, dict[str, Any]]) -> None:
        """Record the interface before the first change; pin what was found there so that it survives."""
        if not self.p["ledger_dir"] or self.recorded() is not None:
            return  # not tracked, or ours already: what is attached now is what we attached
        previous = []
        if before:
            if not _xdp.in_bpffs(self.p["pin_dir"]):
                self.fail(f"{self.p['interface']} has XDP program(s) {self._names(before)} that this collection did "
                          f"not attach and could not keep: {self.p['pin_dir']} is not in a bpffs to pin them. "
                          "Detach them first, or mount a bpffs there")
            os.makedirs(self.p["pin_dir"], mode=0o700, exist_ok=True)
            for mode, have in before.items():
                pin = self.pin_path(mode)
                if not os.path.exists(pin):
                    self.run([self.bpftool, "prog", "pin", "id", str(have["prog_id"]), pin],
                             f"pinning the {mode} program {have['name']} found on {self.p['interface']}")
                previous.append({"mode": mode, "prog_id": have["prog_id"], "tag": have["tag"], "name": have["name"],
                                 "pin": pin})
        _ledger.record(self.p["ledger_dir"], self.entry(), self.p["run_id"], previous=previous)  # before acting

    @staticmethod
    def _names(progs: dict[str, dict[str, Any]]) -> str:
        return ", ".join(f"{h['name']} (id {h['prog_id']}, {m})" for m, h in progs.items())

    # -- detached --------------------------------------------------------------------------------
    def detach(self, ifindex: int) -> dict[str, Any]:
        before = self.attached(ifindex)
        entry = self.recorded() if self.p["ledger_dir"] else None
        if entry is None and self.p["only_ours"]:
            before = {}
        previous = (entry or {}).get("previous", [])
        restore = [p for p in previous if before.get(p["mode"], {}).get("prog_id") != p["prog_id"]]
        changed = bool(before) or entry is not None
        if changed and not self.module.check_mode:
            for mode in before:
                self.run([self.bpftool, "net", "detach", _xdp.MODES[mode], "dev", self.p["interface"]],
                         f"detaching the {mode} XDP program of {self.p['interface']}")
            for prev in restore:
                self.run([self.bpftool, "net", "attach", _xdp.MODES[prev["mode"]], "pinned", prev["pin"], "dev",
                          self.p["interface"]],
                         f"attaching again the {prev['mode']} program {prev['name']} found on {self.p['interface']}")
            left = self.attached(ifindex)
            expected = {p["mode"]: p["prog_id"] for p in previous}
            if {m: h["prog_id"] for m, h in left.items()} != expected:
                self.fail(f"{self.p['interface']} has {left or 'nothing'} after detach, expected "
                          f"{expected or 'nothing'}")
            for prev in previous:
                if os.path.exists(prev["pin"]):
                    os.unlink(prev["pin"])
            if entry is not None:
                _ledger.forget(self.p["ledger_dir"], self.entry())
        result = {"changed": changed, "prog_id": None, "tag": None, "name": None, "mode": None, "maps": {},
                  "map_entries_changed": [], "restored": [p["name"] for p in previous]}
        if self.module._diff:
            result["diff"] = {"before": self.state_view(before), "after": {"attached": False}}
        return result

    # -- attached --------------------------------------------------------------------------------
    def attach(self, ifindex: int) -> dict[str, Any]:
        path = self.p["object"]
        mode = self.p["mode"]
        if not os.path.isfile(path):
            raise _xdp.XdpError(f"object file {path!r} not found")
        with open(path, "rb") as f:
            data = f.read()
        prog = _xdp.select_program(_xdp.elf_programs(data, path), path, self.p["program"], self.p["section"])
        for e in self.p["map_entries"]:  # resolve interface names before loading anything
            self._check_entry_interfaces(e)
        before = self.attached(ifindex)

        pin_dir = tempfile.mkdtemp(prefix="xdplab-bpffs-")
        mounted = False
        fd = -1
        writes: list[tuple[int, _xdp.EncodedEntry]] = []
        try:
            self.run(["mount", "-t", "bpf", "xdplab-bpffs", pin_dir], f"mounting a private bpffs on {pin_dir}")
            mounted = True
            # Pin below a subdirectory: bpftool mounts a bpffs on the *parent* of the pin path when
            # that parent is not one (with pin_dir itself it would cover the parent of pin_dir).
            progs_dir = os.path.join(pin_dir, "progs")
            argv = [self.bpftool, "prog", "loadall", path, progs_dir]
            if mode == "offload":
                argv += ["dev", self.p["interface"]]
            self.run(argv, f"loading {path}")
            pinned = os.path.join(progs_dir, prog.name)
            if not os.path.exists(pinned):
                self.fail(f"bpftool did not pin program {prog.name!r} of {path} (pins: {os.listdir(progs_dir)})")
            fd = _bpf.obj_get(pinned)
            new = _bpf.prog_info_fd(fd)
            plan = _xdp.plan_attach(before, mode, new.tag, new.name)
            target_map_ids = new.map_ids if plan.attach else before[mode]["map_ids"]
            writes = self._plan_entries(target_map_ids)
            changed = plan.attach or bool(plan.detach_modes) or bool(writes)
            if changed and not self.module.check_mode:
                self.keep_previous(before)
                for map_fd, enc in writes:
                    _bpf.update(map_fd, enc.key, enc.value)
                for other in plan.detach_modes:
                    self.run([self.bpftool, "net", "detach", _xdp.MODES[other], "dev", self.p["interface"]],
                             f"detaching the {other} XDP program of {self.p['interface']}")
                if plan.attach:
                    self.run([self.bpftool, "net", "attach", _xdp.MODES[mode], "pinned", pinned, "dev",
                              self.p["interface"], "overwrite"],
                             f"attaching {prog.name} to {self.p['interface']} in {mode} mode")
        finally:
            for map_fd, _enc in writes:
                os.close(map_fd)
            if fd >= 0:
                os.close(fd)
            if mounted:
                _command.run(self.module, ["umount", pin_dir], ok=None)
            if not os.path.ismount(pin_dir):
                os.rmdir(pin_dir)

        if self.module.check_mode:
            after = dict(before)
            if changed:
                after = {mode: {"prog_id": None if plan.attach else before[mode]["prog_id"], "tag": new.tag,
                                "name": new.name, "map_ids": target_map_ids}}
        else:
            after = self.attached(ifindex)
            have = after.get(mode)
            if not have or have["tag"] != new.tag:
                self.fail(f"read back after attach: {self.p['interface']} has {after or 'nothing'} in place of "
                          f"{new.name} tag {new.tag} in {mode} mode")
        have = after[mode]
        maps = {}
        for mid in have["map_ids"]:
            maps[_bpf.map_info(mid).name] = mid
        result = {
            "changed": changed,
            "prog_id": have["prog_id"],
            "tag": have["tag"],
            "name": have["name"],
            "mode": mode,
            "maps": maps,
            "map_entries_changed": [{"map": enc.map, "key": enc.key.hex()} for _fd, enc in writes],
            "reason": plan.reason,
        }
        if self.module._diff:
            result["diff"] = {"before": self.state_view(before, mode if mode in before else None),
                              "after": self.state_view(after, mode)}
        return result

    def _check_entry_interfaces(self, entry: dict[str, Any]) -> None:
        value = entry.get("value")
        if isinstance(value, dict) and value.get("interface") is not None:
            self.ifindex_of(str(value["interface"]))

    def _plan_entries(self, map_ids: list[int]) -> list[tuple[int, _xdp.EncodedEntry]]:
        """(map fd, entry) for every map entry that differs from the map's content."""
        if not self.p["map_entries"]:
            return []
        infos = {i.name: i for i in (_bpf.map_info(m) for m in map_ids)}
        writes: list[tuple[int, _xdp.EncodedEntry]] = []
        try:
            for entry in self.p["map_entries"]:
                name = entry["map"]
                info = infos.get(name[:_bpf.BPF_OBJ_NAME_LEN - 1])  # the kernel keeps 15 characters
                if info is None:
                    raise _xdp.XdpError(f"map {name!r} not in the program (maps: {', '.join(sorted(infos))})")
                if info.type_name.startswith("percpu") or info.type_name.startswith("lru_percpu"):
                    raise _xdp.XdpError(f"map {name!r} is per-CPU: map_entries cannot write it")
                enc = _xdp.encode_entry(entry, name, info.key_size, info.value_size, self.ifindex_of)
                map_fd = _bpf.map_fd_by_id(info.id)
                cur = _bpf.lookup(map_fd, enc.key, info.value_size)
                if cur is not None and cur[:enc.compare_len] == enc.value[:enc.compare_len]:
                    os.close(map_fd)
                    continue
                writes.append((map_fd, enc))
        except BaseException:
            for map_fd, _enc in writes:
                os.close(map_fd)
            raise
        return writes


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "interface": {"type": "str", "required": True},
            "object": {"type": "path"},
            "program": {"type": "str"},
            "section": {"type": "str"},
            "mode": {"type": "str", "default": "native", "choices": ["native", "generic", "offload"]},
            "state": {"type": "str", "default": "attached", "choices": ["attached", "detached"]},
            "ledger_dir": {"type": "path", "default": _ledger.DEFAULT_DIR},
            "pin_dir": {"type": "path", "default": "/sys/fs/bpf/xdplab"},
            "only_ours": {"type": "bool", "default": False},
            "run_id": {"type": "str"},
            "map_entries": {
                "type": "list",
                "elements": "dict",
                "default": [],
                "options": {
                    "map": {"type": "str", "required": True},
                    "key": {"type": "raw", "required": True, "no_log": False},
                    "value": {"type": "raw", "required": True},
                },
            },
        },
        required_if=[("state", "attached", ("object",))],
        mutually_exclusive=[("program", "section")],
        supports_check_mode=True,
    )
    if IPRoute is None:
        module.fail_json(msg=missing_required_lib("pyroute2"))
    p = module.params
    try:
        with IPRoute() as ipr:
            found = ipr.link_lookup(ifname=p["interface"])
            if not found:
                module.fail_json(msg=f"interface {p['interface']!r} not found in this network namespace",
                                 interface=p["interface"])
            ifindex = found[0]
            xp = XdpProg(module, ipr)
            try:
                result = xp.detach(ifindex) if p["state"] == "detached" else xp.attach(ifindex)
            except _xdp.XdpError as exc:
                module.fail_json(msg=str(exc), interface=p["interface"])
            except _ledger.LedgerError as exc:
                module.fail_json(msg=f"ledger: {exc}", interface=p["interface"])
            except _bpf.BpfError as exc:
                module.fail_json(msg=f"bpf(2) {exc}", interface=p["interface"], exception=traceback.format_exc())
        module.exit_json(interface=p["interface"], ifindex=ifindex, **result)
    except Exception as exc:  # noqa: BLE001 - one top-level handler, as STYLE.md asks
        module.fail_json(msg=f"xdp_prog on {p['interface']!r}: {exc}", exception=traceback.format_exc())


if __name__ == "__main__":
    main()
