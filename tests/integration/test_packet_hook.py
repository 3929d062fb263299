# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""packet_hook against the real kernel in a namespace of this test: the tc and nftables drop hooks
are recorded in the ledger before they are made, and what was there before (a clsact qdisc with
someone else's filter, a table of the host's firewall) is exactly the same afterwards, whether the
hook is taken away by the module or by the ledger's cleanup after a killed run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.root

ROOT = Path(__file__).resolve().parents[2]
COLLECTIONS = ROOT / ".collections"
SRC = ROOT / "files" / "xdp"
MODULES = ROOT / "plugins" / "modules"

if os.geteuid() != 0:  # pragma: no cover
    pytest.fail("tests/integration/test_packet_hook.py needs root (namespaces, tc, nftables)", pytrace=False)


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, check=check)


@pytest.fixture(scope="module")
def tc_obj(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("hook-xdp-build")
    r = sh("make", "-s", "-C", str(SRC), f"OUT={out}", check=False)
    assert r.returncode == 0, r.stderr
    return str(out / "tc_drop.o")


@pytest.fixture
def ns():
    name = f"hook{os.getpid()}"
    sh("ip", "netns", "add", name)
    sh("ip", "-n", name, "link", "add", "name", "hk0", "type", "veth", "peer", "name", "hk1")
    sh("ip", "-n", name, "link", "set", "hk0", "up")
    yield name
    sh("ip", "netns", "del", name, check=False)


def run(module: str, ns: str, args: dict, check: bool = False) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"ANSIBLE_MODULE_ARGS": {**args, "_ansible_check_mode": check}}, f)
    try:
        env = {**os.environ, "PYTHONPATH": str(COLLECTIONS)}
        r = subprocess.run(["ip", "netns", "exec", ns, sys.executable, str(MODULES / f"{module}.py"), f.name],
                           capture_output=True, text=True, env=env, check=False)
    finally:
        os.unlink(f.name)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    assert lines, f"no JSON: rc={r.returncode} {r.stdout!r} {r.stderr!r}"
    return json.loads(lines[-1])


def tc_view(ns: str) -> dict:
    q = json.loads(sh("ip", "netns", "exec", ns, "tc", "-j", "qdisc", "show", "dev", "hk0").stdout)
    f = json.loads(sh("ip", "netns", "exec", ns, "tc", "-j", "filter", "show", "dev", "hk0", "ingress").stdout
                   or "[]")
    filters = sorted((x.get("pref"), x["options"].get("handle"), x.get("kind")) for x in f if "options" in x)
    return {"qdiscs": sorted(x["kind"] for x in q), "filters": filters}


def nft_ruleset(ns: str) -> str:
    return sh("ip", "netns", "exec", ns, "nft", "list", "ruleset").stdout


def test_tc_hook_keeps_a_foreign_clsact_and_filter(ns, tc_obj, tmp_path):
    ledger = str(tmp_path / "ledger")
    sh("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "hk0", "clsact")
    sh("ip", "netns", "exec", ns, "tc", "filter", "add", "dev", "hk0", "ingress", "pref", "9", "handle", "9",
       "bpf", "da", "obj", tc_obj, "sec", "tc")
    before = tc_view(ns)
    args = {"type": "tc", "interface": "hk0", "object": tc_obj, "ledger_dir": ledger}

    dry = run("packet_hook", ns, args, check=True)
    assert dry["changed"] and dry["created"] == ["filter"] and tc_view(ns) == before
    assert not Path(ledger).exists() or not list(Path(ledger).glob("*.json"))

    made = run("packet_hook", ns, args)
    assert made["changed"] and made["created"] == ["filter"], made
    entry = json.loads(next(Path(ledger).glob("tc-*.json")).read_text())
    assert entry["created_clsact"] is False and entry["pref"] == 1 and entry["netns"] == ns
    assert len(tc_view(ns)["filters"]) == 2
    assert run("packet_hook", ns, args)["changed"] is False  # idempotent

    gone = run("packet_hook", ns, {**args, "state": "absent"})
    assert gone["removed"] == ["filter"], gone
    assert tc_view(ns) == before, "the foreign clsact qdisc or its filter changed"

    # Made again, then the run is killed: the ledger's cleanup takes away exactly ours.
    run("packet_hook", ns, args)
    cleaned = run("ledger", ns, {"state": "cleaned", "dir": ledger})
    assert not cleaned.get("failed"), cleaned
    assert tc_view(ns) == before


def test_tc_hook_on_a_bare_port_removes_the_clsact_it_made(ns, tc_obj, tmp_path):
    ledger = str(tmp_path / "ledger")
    before = tc_view(ns)
    args = {"type": "tc", "interface": "hk0", "object": tc_obj, "ledger_dir": ledger}
    assert run("packet_hook", ns, args)["created"] == ["clsact", "filter"]
    cleaned = run("ledger", ns, {"state": "cleaned", "dir": ledger})
    assert not cleaned.get("failed"), cleaned
    assert tc_view(ns) == before


def test_tc_refuses_someone_elses_filter_at_its_place(ns, tc_obj, tmp_path):
    # Someone else's cls_bpf program (another object file) at the preference and handle we would use.
    other = tmp_path / "their_filter.o"
    other.write_bytes(Path(tc_obj).read_bytes())
    sh("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "hk0", "clsact")
    sh("ip", "netns", "exec", ns, "tc", "filter", "add", "dev", "hk0", "ingress", "pref", "1", "handle", "1",
       "bpf", "da", "obj", str(other), "sec", "tc")
    before = tc_view(ns)
    out = run("packet_hook", ns, {"type": "tc", "interface": "hk0", "object": tc_obj,
                                  "ledger_dir": str(tmp_path / "l")})
    assert out.get("failed") and "did not add" in out["msg"], out
    assert tc_view(ns) == before


def test_nft_hook_never_touches_the_hosts_table(ns, tmp_path):
    ledger = str(tmp_path / "ledger")
    firewall = ("table inet filter {\n\tchain input {\n"
                "\t\ttype filter hook input priority filter; policy accept;\n\t}\n}\n")
    subprocess.run(["ip", "netns", "exec", ns, "nft", "-f", "-"], input=firewall, text=True, check=True)
    before = nft_ruleset(ns)

    # A table of that name that is not ours is refused, and stays as it was.
    clash = run("packet_hook", ns, {"type": "nft", "interface": "hk0", "table": "filter", "ledger_dir": ledger})
    assert clash.get("failed") and "did not make it" in clash["msg"], clash
    assert nft_ruleset(ns) == before

    args = {"type": "nft", "interface": "hk0", "ledger_dir": ledger}
    made = run("packet_hook", ns, args)
    assert made["created"] == ["table"] and "xdplab_dropped" in nft_ruleset(ns), made
    assert run("packet_hook", ns, args)["changed"] is False
    assert run("packet_hook", ns, {**args, "state": "absent"})["removed"] == ["table"]
    assert nft_ruleset(ns) == before

    run("packet_hook", ns, {**args, "hook": "ingress"})
    cleaned = run("ledger", ns, {"state": "cleaned", "dir": ledger})
    assert not cleaned.get("failed"), cleaned
    assert nft_ruleset(ns) == before


@pytest.mark.parametrize(("args", "msg"), [
    ({"interface": 'hk0" drop; flush ruleset; "'}, "must be a network interface name"),
    ({"interface": "veth%d"}, "must be a network interface name"),
    ({"interface": "hk0", "table": "x; flush ruleset"}, "must be an nftables identifier"),
    ({"interface": "hk0", "counter": "c }"}, "must be an nftables identifier"),
])
def test_nft_bad_names_are_refused_before_anything_runs(ns, tmp_path, args, msg):
    before = nft_ruleset(ns)
    out = run("packet_hook", ns, {"type": "nft", "ledger_dir": str(tmp_path / "l"), **args})
    assert out.get("failed") and msg in out["msg"], out
    assert nft_ruleset(ns) == before
    assert not (tmp_path / "l").exists() or not list((tmp_path / "l").glob("*.json"))
