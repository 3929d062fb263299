# SPDX-License-Identifier: GPL-3.0-or-later
"""Faults in the kernel loop, injected into real runs: a kernel build that fails, a QEMU guest that
never boots, and the playbook SIGKILLed while a guest runs.

These boot and build the kernel molecule/kernel built first (``make test`` runs it before this suite):
a missing guest kernel or baseline tree is a failure here, never a skip.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import os
import shutil
import signal
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, Run, alive, session_pids, wait_until

pytestmark = pytest.mark.root

KERNEL_WORK = Path("/var/cache/xdplab/kernel")
KERNEL_STATE = Path("/var/lib/xdplab/kernel")
LEDGER = Path("/var/lib/xdplab/ledger")
# The guests' run directory (qemu_exec rundir): their QEMU command lines name it.
RUNDIR = Path(f"/var/lib/xdplab/qemu/faults-{os.getpid()}")
GUEST_KERNEL = Path(os.environ.get("XDPLAB_GUEST_KERNEL", KERNEL_STATE / "baseline" / "bzImage"))
FAULT_VARIANT = "xdplabfault"
# The variables molecule/kernel built its baseline with, read from its converge.yml: the same inputs must
# find that build.
_CONVERGE_VARS = yaml.safe_load((ROOT / "molecule" / "kernel" / "converge.yml").read_text())[0]["vars"]
MOLECULE_KERNEL_VARS = {
    **{name: _CONVERGE_VARS[name] for name in ("kernel_source_type", "kernel_source_package", "kernel_config_base",
                                               "kernel_config_fragments", "kernel_build_targets")},
    "kernel_qemu_verify_enabled": False,
}


def playbook(tmp: Path, name: str, tasks: list[dict] | None = None, roles: list[dict] | None = None) -> str:
    play = {"name": f"fault case {name}", "hosts": "localhost", "gather_facts": False,
            "vars": {"ansible_python_interpreter": "{{ ansible_playbook_python }}"}}
    if tasks is not None:
        play["tasks"] = tasks
    if roles is not None:
        play["roles"] = roles
    path = tmp / f"{name}.yml"
    path.write_text(yaml.safe_dump([play], sort_keys=False))
    return str(path)


def run(tmp: Path, name: str, **kw) -> Run:
    return Run(playbook(tmp, name, **kw), tmp / f"{name}.log", None)


def qemu_pids() -> dict[int, str]:
    """Live qemu-system processes of these tests (their command lines name RUNDIR) and their command lines.
    Other guests are not theirs: the lab in a box (molecule/vmlab) may run beside them."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
        except (FileNotFoundError, ProcessLookupError):
            continue
        ours = any(str(RUNDIR).encode() in arg for arg in argv)
        if argv and os.path.basename(argv[0]).startswith(b"qemu-system") and ours and alive(int(entry)):
            out[int(entry)] = b" ".join(argv).decode(errors="replace")
    return out


def parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[1])
    except (FileNotFoundError, ProcessLookupError):
        return None


def ancestors(pid: int) -> list[int]:
    out, cur = [], parent(pid)
    while cur and cur not in out:
        out.append(cur)
        cur = parent(cur)
    return out


def descendants(root: int) -> set[int]:
    """Live processes whose ancestry leads to root (a module may run in a session of its own)."""
    return {int(p) for p in os.listdir("/proc") if p.isdigit() and root in ancestors(int(p))}


def qemu_ledger_entries() -> list[dict]:
    out = []
    for path in sorted(LEDGER.glob("qemu-*.json")) if LEDGER.is_dir() else []:
        out.append(json.loads(path.read_text()))
    return out


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def qemu_task(rundir: Path, command: str, timeout: int, append: str = "") -> dict:
    return {"name": "Run a command in the guest", "xdplab.testbed.qemu_exec": {
        "kernel": str(GUEST_KERNEL), "command": command, "accel": "tcg", "timeout": timeout,
        "append": append, "rundir": str(rundir), "memory": 512}}


@pytest.fixture
def guest_kernel():
    assert GUEST_KERNEL.is_file(), (
        f"no guest kernel at {GUEST_KERNEL}: make test runs molecule/kernel first, which builds it")
    before, entries_before = set(qemu_pids()), set(LEDGER.glob("qemu-*.json"))
    yield GUEST_KERNEL
    # A failed case must not leave a guest, or its ledger entry, to the next one.
    for pid in set(qemu_pids()) - before:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for path in set(LEDGER.glob("qemu-*.json")) - entries_before:
        path.unlink(missing_ok=True)


@pytest.fixture
def rundir():
    path = RUNDIR
    path.mkdir(parents=True, exist_ok=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_qemu_guest_never_boots(tmp_path, guest_kernel, rundir):
    """Breaks: the guest's init is not in its initramfs (rdinit=), so the kernel falls back to a root
    device that never appears and waits for it forever (root=... rootwait): it never reaches an init.

    After: the task fails within its timeout naming it, with the console tail showing where the boot
    stopped; the QEMU process is gone, the ledger holds no QEMU entry; the next guest run works.
    """
    before = set(qemu_pids())
    hung = run(tmp_path, "noboot", tasks=[qemu_task(rundir, "echo never", 15,
                                                    append="rdinit=/xdplab-no-init root=/dev/xdplabnodisk rootwait")])
    assert hung.wait() != 0, f"a guest that never booted passed; log {hung.log_path}"
    text = hung.text()
    assert "guest did not finish within 15s" in text, text[-3000:]
    assert "xdplabnodisk" in text, "the console tail does not show the boot waiting for its root device"
    assert set(qemu_pids()) - before == set(), f"QEMU left running: {qemu_pids()}"
    assert qemu_ledger_entries() == [], f"QEMU ledger entries left: {qemu_ledger_entries()}"
    assert (rundir / "console.log").is_file(), "the console log of the failed boot was not kept"

    again = run(tmp_path, "nextboot", tasks=[qemu_task(rundir, "uname -r", 300)])
    assert again.wait() == 0, f"the next guest run failed; log {again.log_path}"
    assert qemu_ledger_entries() == [] and set(qemu_pids()) - before == set()


def test_playbook_killed_while_a_guest_runs(tmp_path, guest_kernel, rundir):
    """Breaks: ansible-playbook and the module process running the guest are SIGKILLed while the guest
    runs (QEMU has its own session, so it is orphaned, still running).

    After: the ledger names the orphaned QEMU (pid and command-line hash); while its qemu_exec lived,
    a ledger cleanup kept it (a live guest is not left behind, it is in use); teardown.yml kills exactly
    that process, removes the entry, and the next guest run works.
    """
    before = set(qemu_pids())
    live = run(tmp_path, "killed", tasks=[qemu_task(rundir, "sleep 600", 900)])
    try:
        entry = wait_until(qemu_ledger_entries, 120, "the guest's ledger entry", live.proc)[0]
        guest = entry["key"]["pid"]
        # The entry is written before QEMU runs (its pid is a small gate until then), so the pid
        # becomes QEMU shortly after, never another program.
        wait_until(lambda: guest in qemu_pids(), 30, f"the ledger's pid {guest} to be a running QEMU", live.proc)
        assert live.pid in ancestors(entry["key"]["owner"]), "the entry's owner is not the playbook's module process"

        cleaned = run(tmp_path, "clean-live", tasks=[{"name": "Clean the ledger", "xdplab.testbed.ledger":
                                                      {"state": "cleaned"}, "register": "out"},
                                                     {"ansible.builtin.debug": {"var": "out.kept"}}])
        assert cleaned.wait() == 0, f"ledger cleanup failed; log {cleaned.log_path}"
        assert guest in qemu_pids() and qemu_ledger_entries(), "a cleanup killed a guest whose qemu_exec was alive"
        assert "qemu pid" in cleaned.text() or str(guest) in cleaned.text()

        for pid in {*session_pids(live.pid), *descendants(live.pid)} - {guest}:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        live.proc.wait(30)
    finally:
        if live.proc.poll() is None or session_pids(live.pid):
            live.kill_all()
    assert guest in qemu_pids(), "the guest died with the playbook: nothing was orphaned, the case proves nothing"
    assert [e["key"]["pid"] for e in qemu_ledger_entries()] == [guest]

    down = Run("playbooks/teardown.yml", tmp_path / "teardown.log", None)
    assert down.wait() == 0, f"teardown failed; log {down.log_path}"
    wait_until(lambda: guest not in qemu_pids(), 10, f"the orphaned QEMU {guest} to be killed")
    assert qemu_ledger_entries() == [], f"QEMU ledger entries left: {qemu_ledger_entries()}"
    assert set(qemu_pids()) - before == set(), f"QEMU left running: {qemu_pids()}"

    again = run(tmp_path, "nextguest", tasks=[qemu_task(rundir, "uname -r", 300)])
    assert again.wait() == 0, f"the next guest run failed; log {again.log_path}"


@pytest.fixture
def fault_variant():
    """Remove the fault variant's tree and state afterwards (a failed build's tree is kept by the
    role for inspection; here it is the test's to clean)."""
    yield FAULT_VARIANT
    shutil.rmtree(KERNEL_WORK / "variants" / FAULT_VARIANT, ignore_errors=True)
    shutil.rmtree(KERNEL_STATE / FAULT_VARIANT, ignore_errors=True)


def breaking_patch(tmp: Path) -> Path:
    """A patch that applies to molecule/kernel's source (linux-source-6.12) but stops the build: an #error
    in init/version.c, written against the baseline tree molecule/kernel extracted."""
    source = KERNEL_WORK / "variants" / "baseline" / "src" / "init" / "version.c"
    assert source.is_file(), f"no baseline tree ({source}): make test runs molecule/kernel first"
    old = source.read_text().splitlines(True)
    new = ['#error "xdplab fault injection: this patch breaks the build"\n', *old]
    diff = difflib.unified_diff(old, new, "a/init/version.c", "b/init/version.c")
    patch = tmp / "0001-init-break-the-build.patch"
    patch.write_text("From: xdplab faults <faults@example.invalid>\nSubject: [PATCH] init: break the build\n\n"
                     "---\ndiff --git a/init/version.c b/init/version.c\n" + "".join(diff))
    return patch


def test_kernel_build_that_fails(tmp_path, fault_variant):
    """Breaks: a patch that applies but makes the compiler fail (an #error in init/version.c).

    After: the role fails naming the variant and the compiler's error (file and text); nothing is
    published for that variant (no build stamp, no bzImage in its state directory); the baseline build
    is untouched; no make or compiler process is left; the next run of the baseline builds nothing.
    """
    baseline = KERNEL_STATE / "baseline" / "bzImage"
    assert baseline.is_file(), f"no baseline build at {baseline}: make test runs molecule/kernel first"
    baseline_sum, baseline_mtime = sha256(baseline), baseline.stat().st_mtime
    role_vars = dict(MOLECULE_KERNEL_VARS, kernel_build_targets=["bzImage"],
                     kernel_variants=[{"name": fault_variant, "patches": [{"path": str(breaking_patch(tmp_path))}]}])
    broken = run(tmp_path, "badbuild", roles=[{"role": "xdplab.testbed.kernel", "vars": role_vars}])
    rc = broken.wait(timeout=1200)
    text = broken.text()
    assert rc != 0, f"a build with an #error passed; log {broken.log_path}"
    assert f"kernel build of variant {fault_variant} failed" in text, text[-3000:]
    assert "init/version.c" in text and "xdplab fault injection" in text, "the failure does not name the error"
    vdir = KERNEL_WORK / "variants" / fault_variant
    assert not list(vdir.glob("build-*/.xdplab-built")), "the failed build was stamped as built"
    assert not (KERNEL_STATE / fault_variant / "bzImage").exists(), "a bzImage was published for the failed build"
    assert sha256(baseline) == baseline_sum, "the baseline build changed"
    makes = [p for p in map(int, filter(str.isdigit, os.listdir("/proc")))
             if alive(p) and vdir.as_posix().encode() in Path(f"/proc/{p}/cmdline").read_bytes()]
    assert makes == [], f"build processes left running: {makes}"

    again = run(tmp_path, "baseline", roles=[{"role": "xdplab.testbed.kernel", "vars": dict(MOLECULE_KERNEL_VARS)}])
    assert again.wait(timeout=1200) == 0, f"the next run failed; log {again.log_path}"
    assert sha256(baseline) == baseline_sum and baseline.stat().st_mtime == baseline_mtime, (
        "the baseline was rebuilt although its inputs did not change")
    build_tasks = ("Start make", "Run make", "Stamp the build with its key")  # "Run make, ... (... tail -f <log>)"
    assert not [t for t in _changed_tasks(again.text()) if t.startswith(build_tasks)], (
        "the next run of the baseline built something")


def _changed_tasks(text: str) -> set[str]:
    """Task names the default callback printed a `changed:` line for."""
    out, task = set(), None
    for line in text.splitlines():
        if line.startswith("TASK ["):
            task = line.split(" : ", 1)[-1].split("]", 1)[0]
        elif line.startswith("changed:") and task:
            out.add(task)
    return out
