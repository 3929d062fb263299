# SPDX-License-Identifier: GPL-3.0-or-later
"""Fault-injection suite helpers: run bench.yml / teardown.yml for real, break things, read the host back.

The suite drives the default virtual test bed (namespaces xdplab-gen/dut/sink), so it must not run
beside another bench.yml run: every playbook run first waits for the run lock (/run/xdplab/run.lock)
to be free - a held lock is the lock working, not a failure.
"""

from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from ansible_collections.xdplab.testbed.plugins.module_utils.results._record_files import load_record
from ansible_collections.xdplab.testbed.plugins.module_utils.state._ledger import read_lock, release

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = ROOT / ".venv" / "bin"
LEDGER = "/var/lib/xdplab/ledger"
TUNING = "/var/lib/xdplab/tuning"
LOCK = "/run/xdplab/run.lock"
XDPGEN = "/var/lib/xdplab/bin/xdpgen"
OUR_NETNS = ("xdplab-gen", "xdplab-dut", "xdplab-sink")
NFT_TABLE = "xdplab_bench"
# Small runs: sampler=snapshot (DUT counter read before/after each repetition) so that a burst split
# by a scheduling stall on the shared 2-core machine cannot fail an unrelated run.
SMALL = {"bench_repetitions": 2, "bench_duration": 2, "bench_sampler": "snapshot"}
PLAY_TIMEOUT = 300


def sh(argv: list[str], netns: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    if netns:
        argv = ["ip", "netns", "exec", netns, *argv]
    return subprocess.run(argv, capture_output=True, text=True, check=check,  # noqa: S603 - argv list, no shell
                          env=dict(os.environ, LC_ALL="C"))


def sh_json(argv: list[str], netns: str | None = None) -> object:
    out = sh(argv, netns).stdout.strip()
    return json.loads(out) if out else []


def netns_names() -> set[str]:
    return {n["name"] for n in sh_json(["ip", "-j", "netns", "list"])}


def host_links() -> set[str]:
    return {link["ifname"] for link in sh_json(["ip", "-j", "link", "show"])}


def xdp_attachments(netns: str | None = None) -> list[dict]:
    data = sh_json(["bpftool", "-j", "net", "show"], netns)
    return [x for block in data for x in block.get("xdp", [])]


def tc_filters(netns: str | None = None) -> list[dict]:
    data = sh_json(["bpftool", "-j", "net", "show"], netns)
    return [x for block in data for x in block.get("tc", [])]


def clsact_qdiscs(netns: str | None = None) -> set[str]:
    return {q["dev"] for q in sh_json(["tc", "-j", "qdisc", "show"], netns) if q.get("kind") == "clsact"}


def nft_tables(netns: str | None = None) -> set[tuple[str, str]]:
    data = sh_json(["nft", "-j", "list", "tables"], netns)
    return {(t["table"]["family"], t["table"]["name"]) for t in data.get("nftables", []) if "table" in t}


def our_ledger_entries() -> list[str]:
    """Ledger entries of the xdplab-* test bed (other tests on the machine share the default ledger dir)."""
    out = []
    for name in listing(LEDGER):
        try:
            with open(os.path.join(LEDGER, name), encoding="utf-8") as fh:
                entry = json.load(fh)
        except (OSError, ValueError):
            out.append(f"{name} (unreadable)")
            continue
        if entry.get("netns") in OUR_NETNS or entry.get("key", {}).get("name") in OUR_NETNS \
                or entry.get("kind") in ("tuning", "nft", "tc") and entry.get("netns") is None:
            out.append(f"{name} {entry.get('kind')} {entry.get('key')} netns={entry.get('netns')}")
    return out


def listing(path: str) -> list[str]:
    return sorted(os.listdir(path)) if os.path.isdir(path) else []


def xdpgen_pids(netns: str = "xdplab-gen") -> set[int]:
    """Generator processes inside our generator namespace."""
    res = sh(["ip", "netns", "pids", netns], check=False)
    pids = set()
    for pid in res.stdout.split() if res.returncode == 0 else []:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if fh.read().split(b"\0")[0].decode() == XDPGEN:
                    pids.add(int(pid))
        except (FileNotFoundError, ProcessLookupError):
            continue
    return pids


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def session_pids(sid: int) -> list[int]:
    """Live processes of a session (ansible-playbook runs as a session leader here)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            out.append(int(entry))
    return out


def wait_until(pred, timeout: float, what: str, proc: subprocess.Popen | None = None, step: float = 0.2):
    """Poll pred() until truthy; fail naming `what` (and the run's end) on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"the playbook ended (rc={proc.returncode}) before {what}")
        time.sleep(step)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")


def wait_lock_free(timeout: float = 900) -> None:
    """Another run holding the lock: wait for it (that is the lock working), then go."""
    def free() -> bool:
        holder = read_lock(LOCK)
        return holder is None or not alive(holder.pid)
    wait_until(free, timeout, "the run lock to be free")


class Run:
    """One ansible-playbook process, its log and its results root."""

    def __init__(self, playbook: str, log: Path, results_root: Path | None, extra: dict | None = None,
                 args: tuple[str, ...] = ()):
        self.log_path = log
        self.results_root = results_root
        argv = [str(VENV_BIN / "ansible-playbook"), playbook, *args]
        extra = dict(extra or {})
        if results_root is not None:
            extra["xdplab_results_root"] = str(results_root)
        if extra:
            argv += ["-e", json.dumps(extra)]
        self.argv = argv
        wait_lock_free()
        self._log = open(log, "w", encoding="utf-8")  # noqa: SIM115 - closed in wait()/kill()
        # A module SIGKILLed mid-task leaves ansible-core's payload directory (ansible_<module>_payload_*)
        # in its TMPDIR: each run gets its own, inside the test's temporary directory.
        tmpdir = log.parent / f"{log.stem}.tmp"
        tmpdir.mkdir(exist_ok=True)
        env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", TMPDIR=str(tmpdir),
                   PATH=f"{VENV_BIN}:{os.environ.get('PATH', '')}")
        self.proc = subprocess.Popen(argv, cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT,  # noqa: S603 - argv list, no shell
                                     env=env, start_new_session=True)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait(self, timeout: float = PLAY_TIMEOUT) -> int:
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill_all()
            pytest.fail(f"{self.argv} did not finish in {timeout} s; log {self.log_path}")
        self._log.close()
        return rc

    def kill_all(self) -> None:
        """Last-resort cleanup of the whole session (a test that failed half-way)."""
        for pid in session_pids(self.proc.pid) or [self.proc.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait(30)
        self._log.close()

    def text(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def run_dirs(self) -> list[str]:
        return sorted(glob.glob(f"{self.results_root}/*/"))

    def records(self) -> list[str]:
        return sorted(p for p in glob.glob(f"{self.results_root}/*/*.json")
                      if os.path.basename(p) != "run.json")


def sigkill_playbook(run: Run) -> None:
    """SIGKILL ansible-playbook itself (nothing of its always: runs), then wait for the orphans it leaves
    (workers, generators) to finish their step and exit; the whole session is killed if they do not."""
    try:
        os.kill(run.pid, signal.SIGKILL)
        run.proc.wait(30)
        wait_until(lambda: not session_pids(run.pid), 120, "the killed run's orphaned processes to exit")
    finally:
        if run.proc.poll() is None or session_pids(run.pid):
            run.kill_all()


def bench(tmp: Path, name: str, scenarios: list[str], **extra) -> Run:
    params = dict(SMALL, bench_scenarios=scenarios, **extra)
    return Run("bench.yml", tmp / f"{name}.log", tmp / f"{name}-results", params)


def teardown(tmp: Path, name: str = "teardown") -> Run:
    return Run("playbooks/teardown.yml", tmp / f"{name}.log", None)


def snapshot_host() -> dict:
    """What the host holds outside our namespaces, to compare after a fault."""
    return {
        "links": host_links(),
        "xdp": {(x.get("devname"), x.get("id")) for x in xdp_attachments()},
        "tc": {(x.get("devname"), x.get("id")) for x in tc_filters()},
        "clsact": clsact_qdiscs(),
        "nft": nft_tables(),
    }


def leftovers(before: dict) -> list[str]:
    """Everything of ours still on the host; [] when nothing is left behind."""
    out = []
    ours = netns_names() & set(OUR_NETNS)
    if ours:
        out.append(f"namespaces {sorted(ours)}")
    now = snapshot_host()
    new_links = {n for n in now["links"] - before["links"] if n.startswith(("veth", "xdplab", "h8"))}
    if new_links:
        out.append(f"host links {sorted(new_links)}")
    for key in ("xdp", "tc", "clsact"):
        extra = now[key] - before[key]
        if extra:
            out.append(f"host {key} {sorted(map(str, extra))}")
    tables = set(now["nft"] - before["nft"]) | {t for t in now["nft"] if t[1] == NFT_TABLE}
    if tables:
        out.append(f"nftables tables {sorted(tables)}")
    mine = our_ledger_entries()
    if mine:
        out.append(f"ledger entries {mine}")
    if listing(TUNING):
        out.append(f"tuning snapshots {listing(TUNING)}")
    holder = read_lock(LOCK)
    if holder is not None:
        out.append(f"run lock still held: {holder.describe()}")
    procs = list(xdpgen_orphans())
    if procs:
        out.append(f"xdpgen processes of ours still running: {procs}")
    return out


_SEEN_XDPGEN: set[int] = set()


def note_xdpgen(pids: set[int]) -> set[int]:
    _SEEN_XDPGEN.update(pids)
    return pids


def xdpgen_orphans() -> list[int]:
    return sorted(p for p in _SEEN_XDPGEN if alive(p))


def assert_records_intact(run: Run, expect_scenarios: set[str], incomplete: bool) -> list[dict]:
    """Every record on disk loads as record v1 and its stored summary equals the one recomputed from
    its samples; exactly the expected scenarios have records; the INCOMPLETE marker is as expected."""
    dirs = run.run_dirs()
    assert len(dirs) == 1, f"expected one run directory under {run.results_root}, got {dirs}"
    marker = os.path.exists(os.path.join(dirs[0], "INCOMPLETE"))
    assert marker == incomplete, f"{dirs[0]}: INCOMPLETE marker present={marker}, expected {incomplete}"
    leftovers_tmp = [f for f in os.listdir(dirs[0]) if f.startswith(".")]
    assert not leftovers_tmp, f"half-written temp files in {dirs[0]}: {leftovers_tmp}"
    records = []
    for path in run.records():
        with open(path, encoding="utf-8") as fh:
            stored = json.load(fh)
        rec = load_record(path)  # raises RecordError on anything not a valid record v1
        for field in ("n", "mean", "stdev", "ns_per_packet"):
            assert rec["summary"][field] == pytest.approx(stored["summary"][field], rel=1e-9), (
                f"{path}: stored summary.{field} {stored['summary'][field]} != recomputed {rec['summary'][field]}")
        assert all(s > 0 for s in rec["samples"]), f"{path}: non-positive sample in {rec['samples']}"
        assert rec["summary"]["n"] == SMALL["bench_repetitions"], f"{path}: n={rec['summary']['n']}"
        records.append(rec)
    got = {r["scenario"] for r in records}
    assert got == expect_scenarios, f"records for {sorted(got)}, expected exactly {sorted(expect_scenarios)}"
    return records


def force_clean(tmp: Path) -> list[str]:
    """After a case: bring the host back so that one failed case cannot fail the next ones. Runs
    playbooks/teardown.yml, then removes by hand whatever of ours it left; returns what was left
    before the hand cleanup (the case itself has already asserted there was nothing)."""
    holder = read_lock(LOCK)
    if holder is not None and holder.pid == os.getpid():
        release(LOCK, os.getpid())
    teardown(tmp, "final-teardown").wait()
    remaining = leftovers(snapshot_host())
    for ns in netns_names() & set(OUR_NETNS):
        sh(["ip", "netns", "delete", ns], check=False)
    for name in listing(TUNING):
        if name.startswith(tuple(f"nic-{ns}-" for ns in OUR_NETNS)):
            os.unlink(os.path.join(TUNING, name))
    for pid in xdpgen_orphans():
        os.kill(pid, signal.SIGKILL)
    return remaining


@pytest.fixture
def host_before(tmp_path):
    """The host before the case (taken once no other run holds the lock); cleaned up after the case."""
    wait_lock_free(300)
    # A run that does not take the lock (an older playbook) may still be tearing down: a short grace.
    wait_until(lambda: not netns_names() & set(OUR_NETNS), 60, "xdplab-gen/dut/sink to be gone")
    wait_lock_free(300)
    yield snapshot_host()
    left = force_clean(tmp_path)
    if left:
        print(f"after the case, teardown.yml left {left}; removed by hand")
