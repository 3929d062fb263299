# SPDX-License-Identifier: GPL-3.0-or-later
"""One spelling per fact: the values plugins/module_utils/common/_testbed_facts.py owns are not copied.

YAML cannot import the table, so a few places carry its value as a literal: the role defaults (and
their argument specs, which tests/unit/test_role_docs.py holds equal to the defaults, so that
``ansible-doc -t role`` shows the real default) and playbooks/vars/run.yml, which the run playbooks
read. Each of these mirrors is checked against the table here. Any other copy of an owned value in a
role default, role vars file, argument spec or playbook fails, naming file and line; so does an owned
number or address written as a literal in the Python code outside the table.
"""

from __future__ import annotations

import ast
import dataclasses
import pathlib
import re

import pytest
import yaml
from _python_prose import prose_ids
from ansible_collections.xdplab.testbed.plugins.module_utils.common import _testbed_facts as T

ROOT = pathlib.Path(__file__).resolve().parents[2]
TABLE = "plugins/module_utils/common/_testbed_facts.py"
RUN_VARS = "playbooks/vars/run.yml"
BENCH = "roles/bench/defaults/main.yml"
SCENARIOS = "roles/scenarios/defaults/main.yml"
TESTBED = "roles/testbed/defaults/main.yml"
RUN_ROLE = "roles/run/defaults/main.yml"


def reads(shared: str, value: str) -> str:
    """A role option's default: the test bed's fact under its one name (set in the inventory), with the
    embedded test bed's value when the inventory sets none."""
    return f"{{{{ {shared} | default('{value}') }}}}"


READS_DUT_PORT = reads("xdplab_dut_interface", T.DUT_INTERFACE)
READS_GEN_ADDRESS = reads("xdplab_gen_address", T.GEN_ADDRESS)
READS_DUT_ADDRESS = reads("xdplab_dut_address", T.DUT_ADDRESS)


def specs(*roles: str) -> dict:
    """Argument specs of these roles: allowed to carry the literal, held equal by test_role_docs."""
    return {f"roles/{role}/meta/argument_specs.yml": [] for role in roles}


@dataclasses.dataclass(frozen=True)
class Fact:
    name: str
    pattern: str          # a literal copy of the value in a YAML line
    mirrors: dict         # file -> [(path of keys in its YAML, the value the table gives)]


FACTS = [
    Fact("results root",
         r"lookup\(\s*'{1,2}ansible\.builtin\.env'{1,2}\s*,\s*'{1,2}PWD'{1,2}\s*\)\s*(?:\}\}|~\s*')\s*/results",
         {RUN_VARS: [(("xdplab_results_root",), T.RESULTS_ROOT)],
          RUN_ROLE: [(("run_results_root",), T.RESULTS_ROOT)], **specs("run")}),
    Fact("role results root", r"\{\{\s*playbook_dir\s*\}\}\s*/results|playbook_dir\s*~\s*'/results",
         {BENCH: [(("bench_results_root",), T.ROLE_RESULTS_ROOT)],
          SCENARIOS: [(("scenarios_results_root",), T.ROLE_RESULTS_ROOT)], **specs("bench", "scenarios")}),
    Fact("generator address", r"(?<![\d.])198\.18\.0\.1(?!\d)",
         {RUN_VARS: [(("__xdplab_gen_address",), T.GEN_ADDRESS)],
          BENCH: [(("bench_src_ip",), READS_GEN_ADDRESS)],
          SCENARIOS: [(("scenarios_src_ip",), READS_GEN_ADDRESS)],
          TESTBED: [(("testbed_links", 0, "a", "address"), f"{T.GEN_ADDRESS}/24")],
          **specs("bench", "scenarios", "testbed")}),
    Fact("DUT address", r"(?<![\d.])198\.18\.0\.2(?!\d)",
         {RUN_VARS: [(("__xdplab_dut_address",), T.DUT_ADDRESS)],
          BENCH: [(("bench_dst_ip",), READS_DUT_ADDRESS)],
          SCENARIOS: [(("scenarios_dst_ip",), READS_DUT_ADDRESS)],
          TESTBED: [(("testbed_links", 0, "b", "address"), f"{T.DUT_ADDRESS}/24")],
          **specs("bench", "scenarios", "testbed")}),
    Fact("test bed port", r"\bveth0\b",
         {RUN_VARS: [(("__xdplab_gen_interface",), T.GEN_INTERFACE), (("__xdplab_dut_interface",), T.DUT_INTERFACE)],
          BENCH: [(("bench_gen_interface",), T.GEN_INTERFACE), (("bench_dut_interface",), READS_DUT_PORT),
                  (("bench_sink_interface",), T.SINK_INTERFACE)],
          SCENARIOS: [(("scenarios_gen_interface",), T.GEN_INTERFACE),
                      (("scenarios_dut_interface",), READS_DUT_PORT)],
          TESTBED: [(("testbed_links", 0, "a", "ifname"), T.GEN_INTERFACE),
                    (("testbed_links", 0, "b", "ifname"), T.DUT_INTERFACE),
                    (("testbed_links", 1, "b", "ifname"), T.SINK_INTERFACE)],
          **specs("bench", "scenarios", "testbed")}),
    Fact("default pkt_size", rf"pkt_size['\"]?:\s*(?:\{{\s*default:\s*)?\[?\s*{T.DEFAULT_PKT_SIZE}(?!\d)",
         {RUN_VARS: [(("__xdplab_pkt_size",), T.DEFAULT_PKT_SIZE)],
          BENCH: [(("bench_pkt_size",), T.DEFAULT_PKT_SIZE)],
          SCENARIOS: [((f"scenarios_{name}_matrix", "pkt_size"), [T.DEFAULT_PKT_SIZE])
                      for name in ("xsk_vs_syscall", "xdp_flow", "pktgen_burst")],
          **specs("bench", "scenarios")}),
    Fact("tools directory", r"/var/lib/xdplab/bin(?![\w-])",
         {RUN_VARS: [(("__xdplab_bin_dir",), T.BIN_DIR)],
          "roles/generator/defaults/main.yml": [(("generator_build_dir",), T.BIN_DIR)],
          SCENARIOS: [(("scenarios_bin_dir",), T.BIN_DIR)],
          BENCH: [(("bench_xdpgen",), f"{T.BIN_DIR}/xdpgen")],
          **specs("generator", "scenarios", "bench")}),
    Fact("XDP objects directory", r"/var/lib/xdplab/xdp(?![\w-])",
         {RUN_VARS: [(("__xdplab_xdp_dir",), T.XDP_DIR)],
          "roles/xdp/defaults/main.yml": [(("xdp_build_dir",), T.XDP_DIR)],
          SCENARIOS: [(("scenarios_xdp_dir",), T.XDP_DIR)],
          BENCH: [(("bench_xdp_dir",), T.XDP_DIR)],
          **specs("xdp", "scenarios", "bench")}),
    Fact("ledger directory", r"/var/lib/xdplab/ledger(?![\w-])",
         {RUN_ROLE: [(("run_ledger_dir",), T.LEDGER_DIR)],
          TESTBED: [(("testbed_ledger_dir",), T.LEDGER_DIR)],
          **specs("run", "testbed")}),
    Fact("tuning snapshots directory", r"/var/lib/xdplab/tuning(?![\w-])",
         {"roles/tuning/defaults/main.yml": [(("tuning_state_dir",), T.TUNING_DIR)], **specs("tuning")}),
    Fact("pkt_size upper bounds",
         rf"(?<!\d)(?:{T.JUMBO_MAX_PKT_SIZE}|{T.SOCKET_MAX_PKT_SIZE}|{T.XDPGEN_MAX_PKT_SIZE})(?!\d)", {}),
]

# Python literals only the table may write (docstrings and module documentation excluded).
OWNED_CONSTANTS = {T.JUMBO_MAX_PKT_SIZE, T.SOCKET_MAX_PKT_SIZE, T.XDPGEN_MAX_PKT_SIZE, 65507,
                   T.GEN_ADDRESS, T.DUT_ADDRESS, T.RESULTS_ROOT, T.ROLE_RESULTS_ROOT, T.BIN_DIR, T.XDP_DIR,
                   T.LEDGER_DIR, T.TUNING_DIR}

# Copies left where another piece of work owns the file; each must still be there (else drop it here).
NOT_YET = {("results root", "playbooks/kselftest.yml"):
           "reads the root through default(); its run envelope comes later"}


def scanned_yaml() -> list[str]:
    globs = ("roles/*/defaults/**/*.yml", "roles/*/vars/**/*.yml", "roles/*/meta/argument_specs.yml",
             "playbooks/**/*.yml")
    return sorted({str(p.relative_to(ROOT)) for g in globs for p in ROOT.glob(g)})


def yaml_copies(fact: Fact, rel: str, text: str) -> list[str]:
    """file:line of each literal copy of the fact in text, comments left out."""
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split(" #", 1)[0] if not line.lstrip().startswith("#") else ""
        if re.search(fact.pattern, code):
            out.append(f"{rel}:{number}: {line.strip()}")
    return out


def drift(files: dict[str, str]) -> list[str]:
    """Every copy of an owned value outside its mirrors, in files (path -> text)."""
    found = []
    for fact in FACTS:
        for rel, text in files.items():
            if rel in fact.mirrors or (fact.name, rel) in NOT_YET:
                continue
            found += [f"{copy}  ({fact.name} is owned by {TABLE})" for copy in yaml_copies(fact, rel, text)]
    return found


def python_copies(rel: str, text: str) -> list[str]:
    tree = ast.parse(text)
    skip = prose_ids(tree)
    return [f"{rel}:{node.lineno}: {node.value!r}" for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and id(node) not in skip and not isinstance(node.value, bool)
            and node.value in OWNED_CONSTANTS]


# One spelling of a test bed's fact. A test bed's inventory sets it under one name (xdplab_*); the roles'
# options default to it (reads(), held above) and the run playbooks fall back to the embedded test bed's
# value (playbooks/vars/run.yml). A variable of another name for the same fact, or an inventory writing
# the fact under a role's name instead of reading the one name, fails naming file and line.
@dataclasses.dataclass(frozen=True)
class Spelling:
    fact: str
    shared: str         # the one name a test bed's inventory sets
    names: str          # a variable name that holds the fact (regex)
    allowed: dict       # the names that may hold it -> why


SPELLINGS = (
    Spelling("DUT port", "xdplab_dut_interface", r"\w*dut_(?:interface|iface|ifname|port|dev|nic|if)", {
        "xdplab_dut_interface": "the test bed's DUT port, set once in its inventory",
        "bench_dut_interface": "the bench role's option; defaults to xdplab_dut_interface",
        "scenarios_dut_interface": "the scenarios role's option; defaults to xdplab_dut_interface",
        "__xdplab_dut_interface": "playbooks/vars/run.yml: the embedded test bed's port, the run playbooks' fallback",
        "__xdplab_check_dut_port": "bench.yml's check mode: the port a run would attach on, read from the above"}),
    Spelling("generator address", "xdplab_gen_address", r"\w+_(?:gen|src)_(?:ip|address|addr|ipv4)", {
        "xdplab_gen_address": "the test bed's generator address, set once in its inventory",
        "bench_src_ip": "the bench role's option; defaults to xdplab_gen_address",
        "scenarios_src_ip": "the scenarios role's option; defaults to xdplab_gen_address",
        "scenarios_gen_address": "the address with its prefix the scenarios role puts on the port; empty by default",
        "__xdplab_gen_address": "playbooks/vars/run.yml: the embedded test bed's, the run playbooks' fallback"}),
    Spelling("DUT address", "xdplab_dut_address", r"\w+_(?:dut|dst)_(?:ip|address|addr|ipv4)", {
        "xdplab_dut_address": "the test bed's DUT address, set once in its inventory",
        "bench_dst_ip": "the bench role's option; defaults to xdplab_dut_address",
        "scenarios_dst_ip": "the scenarios role's option; defaults to xdplab_dut_address",
        "scenarios_dut_address": "the address with its prefix the scenarios role puts on the port; empty by default",
        "__xdplab_dut_address": "playbooks/vars/run.yml: the embedded test bed's, the run playbooks' fallback"}),
)


def second_spellings(files: dict[str, str], spellings=SPELLINGS) -> list[str]:
    """file:line of each variable that spells a test bed's fact a second way, in files (path -> text)."""
    found = []
    for spelling in spellings:
        key = re.compile(rf"^[\s-]*['\"]?({spelling.names})['\"]?\s*:\s*(.*)$")
        for rel, text in files.items():
            for number, line in enumerate(text.splitlines(), 1):
                match = key.match(line.split(" #", 1)[0])
                if not match:
                    continue
                name, value = match.groups()
                if name not in spelling.allowed:
                    found.append(f"{rel}:{number}: {line.strip()}  (a second name for the {spelling.fact}: "
                                 f"read {spelling.shared} or a role's option)")
                elif rel.startswith("inventories/") and name != spelling.shared and spelling.shared not in value:
                    found.append(f"{rel}:{number}: {line.strip()}  (an inventory sets the {spelling.fact} once, "
                                 f"as {spelling.shared}; the roles read it)")
    return found


def spelling_scan() -> list[str]:
    globs = ("inventories/**/*.yml", "molecule/**/*.yml")
    return sorted(set(scanned_yaml()) | {str(p.relative_to(ROOT)) for g in globs for p in ROOT.glob(g)})


def get(data, path):
    for key in path:
        data = data[key]
    return data


def test_there_is_something_to_scan():
    files = scanned_yaml()
    assert RUN_VARS in files and BENCH in files and "playbooks/bench.yml" in files


def test_no_yaml_copy_of_an_owned_value():
    files = {rel: (ROOT / rel).read_text(encoding="utf-8") for rel in scanned_yaml()}
    found = drift(files)
    assert not found, "a value the table owns is written again; read it instead:\n" + "\n".join(found)


def test_a_test_bed_fact_has_one_spelling():
    files = {rel: (ROOT / rel).read_text(encoding="utf-8") for rel in spelling_scan()}
    inventories = "".join(text for rel, text in files.items() if rel.startswith("inventories/"))
    assert all(f"\n{s.shared}: " in inventories for s in SPELLINGS), "the inventories set no fact to check"
    found = second_spellings(files)
    assert not found, "a test bed's fact is spelled a second way:\n" + "\n".join(found)


@pytest.mark.parametrize("fact", FACTS, ids=lambda f: f.name)
def test_mirrors_equal_the_table(fact):
    wrong = []
    for rel, entries in fact.mirrors.items():
        data = yaml.safe_load((ROOT / rel).read_text(encoding="utf-8"))
        wrong += [f"{rel}: {'.'.join(map(str, path))} is {get(data, path)!r}, the table says {value!r}"
                  for path, value in entries if get(data, path) != value]
    assert not wrong, "\n".join(wrong)


def test_exemptions_are_still_needed():
    for fact_name, rel in NOT_YET:
        fact = next(f for f in FACTS if f.name == fact_name)
        assert yaml_copies(fact, rel, (ROOT / rel).read_text(encoding="utf-8")), \
            f"{rel} no longer copies the {fact_name}: remove its NOT_YET entry"


def test_no_python_copy_of_an_owned_value():
    found = []
    for path in sorted((ROOT / "plugins").rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        if rel != TABLE:
            found += python_copies(rel, path.read_text(encoding="utf-8"))
    assert not found, "a value the table owns is written again; import it instead:\n" + "\n".join(found)


# The checks go red on a drifted copy.

def test_a_yaml_copy_is_found_with_file_and_line():
    text = ("---\n# 9014 in a comment is fine\nx_matrix: {pkt_size: [64, 9014]}\n"
            "x_root: \"{{ lookup('ansible.builtin.env', 'PWD') }}/results\"\n")
    found = drift({"playbooks/x.yml": text})
    assert any(f.startswith("playbooks/x.yml:3:") and "upper bounds" in f for f in found)
    assert any(f.startswith("playbooks/x.yml:3:") and "default pkt_size" in f for f in found)
    assert any(f.startswith("playbooks/x.yml:4:") and "results root" in f for f in found)
    assert len(found) == 3


def test_a_mirror_file_still_may_not_copy_another_fact():
    found = drift({BENCH: "bench_duration: 9014\n"})
    assert found and found[0].startswith(f"{BENCH}:1:")


def test_a_python_copy_is_found_but_not_in_docs():
    text = ('"""9014 in a docstring."""\nDOCUMENTATION = "198.18.0.1"\n'
            'def f(p):\n    """198.18.0.2"""\n    return p.get("dst_ip", "198.18.0.2"), 9014\n')
    assert sorted(python_copies("plugins/x.py", text)) == ["plugins/x.py:5: '198.18.0.2'", "plugins/x.py:5: 9014"]


def test_a_second_spelling_of_the_dut_port_is_found():
    # A new role's own name for the port, and an inventory that writes it under the roles' names (as the
    # lab inventory did before xdplab_dut_interface) instead of setting it once.
    found = second_spellings({
        "roles/x/defaults/main.yml": "---\nx_dut_port: veth0  # a comment\nx_dut_egress_interface: veth1\n",
        "inventories/lab/group_vars/all.yml": ("bench_dut_interface: enp1s0\n"
                                               "scenarios_dut_interface: \"{{ bench_dut_interface }}\"\n"
                                               "xdplab_dut_interface: enp1s0\n"),
        "playbooks/x.yml": "    - {name: y, vars: {bench_dut_interface: eth0}}\n      __my_dut_iface: eth0\n"})
    assert [f.split("  (")[0] for f in found] == [
        "roles/x/defaults/main.yml:2: x_dut_port: veth0  # a comment",
        "inventories/lab/group_vars/all.yml:1: bench_dut_interface: enp1s0",
        "inventories/lab/group_vars/all.yml:2: scenarios_dut_interface: \"{{ bench_dut_interface }}\"",
        "playbooks/x.yml:2: __my_dut_iface: eth0"]


def test_a_second_spelling_of_an_address_is_found():
    # The inventories as they were: the roles' names with a literal, and the port's address with its prefix.
    found = second_spellings({
        "inventories/vmlab/group_vars/all.yml": ("bench_src_ip: 198.18.0.1\nbench_dst_ip: 198.18.0.2\n"
                                                 "scenarios_gen_address: 198.18.0.1/24\n"
                                                 "scenarios_dut_address: \"{{ xdplab_dut_address }}/24\"\n"),
        "roles/x/defaults/main.yml": "x_gen_ip: 198.18.0.1\nx_dst_addr: 198.18.0.2\n",
        "playbooks/x.yml": "      src_ip: \"{{ bench_src_ip }}\"\n"})
    assert [f.split("  (")[0] for f in found] == [
        "inventories/vmlab/group_vars/all.yml:1: bench_src_ip: 198.18.0.1",
        "inventories/vmlab/group_vars/all.yml:3: scenarios_gen_address: 198.18.0.1/24",
        "roles/x/defaults/main.yml:1: x_gen_ip: 198.18.0.1",
        "inventories/vmlab/group_vars/all.yml:2: bench_dst_ip: 198.18.0.2",
        "roles/x/defaults/main.yml:2: x_dst_addr: 198.18.0.2"]


def test_bench_report_documents_the_report_formats():
    # The report formats are results/_report.REPORT_FILES; the module's documentation must copy them (a
    # literal for ansible-doc), its argument spec reads them.
    from ansible_collections.xdplab.testbed.plugins.module_utils.results import _report
    from ansible_collections.xdplab.testbed.plugins.modules import bench_report

    doc = yaml.safe_load(bench_report.DOCUMENTATION)
    assert doc["options"]["format"]["choices"] == list(_report.FORMATS)
    assert bench_report.ARGUMENT_SPEC["format"]["choices"] == list(_report.FORMATS)
