# SPDX-License-Identifier: GPL-3.0-or-later
"""CONTRIBUTING.md's recipes say how many files each takes and name them: the count is the number of
files named, and every file named exists (a placeholder such as <tool> stands for a new file in a folder
that exists). Recipe 4's count is also shown by a worked example in tests/unit/test_ledger_kinds.py.

The counts of Recipe 1 (generator, Debian package) and Recipe 5 (sweep) are measured on what is there:
the code files that name each generator, package and sweep are counted here and held equal to the
recipe's tables, and a file beyond the recipe's must be named in its table."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest
import yaml
from _python_prose import prose_ids

ROOT = Path(__file__).resolve().parents[2]
TEXT = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
RECIPES = re.findall(r"^## (Recipe \d+: .+?)\n(.*?)(?=^## |\Z)", TEXT, re.MULTILINE | re.DOTALL)
# "Files (7): `a`, `b`, ..." and "Files for <case> (+4): ..." paragraphs (up to a blank line).
FILES = re.compile(r"^Files(?: for [^(]+)? \((\+?\d+)\): (.*?)(?=\n\n|\nFiles|\Z)", re.MULTILINE | re.DOTALL)


def test_every_recipe_counts_its_files():
    assert len(RECIPES) >= 4
    for title, body in RECIPES:
        assert re.search(r"^Files \(\d+\): ", body, re.MULTILINE), f"{title}: no 'Files (N): ...' line"


@pytest.mark.parametrize(("title", "count", "paths"),
                         [(t, c, re.findall(r"`([^`]+)`", p)) for t, body in RECIPES for c, p in FILES.findall(body)],
                         ids=lambda x: x if isinstance(x, str) and x.startswith("Recipe") else None)
def test_the_count_is_the_files_named_and_they_exist(title, count, paths):
    assert int(count.lstrip("+")) == len(paths) == len(set(paths)), f"{title}: says {count}, names {paths}"
    for path in paths:
        fixed = path.split("<")[0]
        target = ROOT / fixed if "<" not in path else (ROOT / fixed).parent if not fixed.endswith("/") else ROOT / fixed
        assert target.exists(), f"{title}: {path} ({target.relative_to(ROOT)}) does not exist"


# Recipe 5's count, measured on the sweeps there are: the code files (roles, playbooks, plugins) that
# name a sweep outside comments, task names and documentation, or by their path. Its table says how many
# each takes and which files go beyond the recipe's; the recipe's own are what the first sweeps take.
def tables(body: str) -> dict[str, dict[str, tuple[int, str]]]:
    """The recipe's tables '| <what> | files | ... |' by their first heading: name -> (count, last column)."""
    out = {}
    for head, rows in re.findall(r"^\| (\w+) \| files \| .+? \|\n\|[-|]+\|\n((?:\|.*\|\n?)+)", body, re.M):
        out[head] = {r[0]: (int(r[1]), r[2]) for r in re.findall(r"^\| ([\w-]+) \| (\d+) \| (.+?) \|$", rows, re.M)}
    return out


SWEEP_RECIPE = next(body for title, body in RECIPES if "sweep" in title)
SWEEP_TABLE = tables(SWEEP_RECIPE)["sweep"]
GENERATOR_RECIPE = next(body for title, body in RECIPES if "generator" in title)
PROSE_KEYS = {"name", "description", "short_description", "msg", "fail_msg", "success_msg"}


def _yaml_words(data) -> list[str]:
    """Keys and string values of a YAML document, without its prose (task names, descriptions, messages)."""
    if isinstance(data, dict):
        return [w for k, v in data.items() if k not in PROSE_KEYS for w in [str(k), *_yaml_words(v)]]
    if isinstance(data, list):
        return [w for v in data for w in _yaml_words(v)]
    return [str(data)] if isinstance(data, str) else []


def _python_words(text: str) -> list[str]:
    """Names and string constants of Python code, without docstrings, documentation blocks and comments."""
    tree = ast.parse(text)
    prose = prose_ids(tree)
    return [node.id if isinstance(node, ast.Name) else node.value for node in ast.walk(tree)
            if isinstance(node, ast.Name) or (isinstance(node, ast.Constant) and isinstance(node.value, str)
                                              and id(node) not in prose)]


@functools.cache
def _code_words(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return _python_words(text) if path.suffix == ".py" else _yaml_words(yaml.safe_load(text))


CODE_FILES = {str(p.relative_to(ROOT)): p for folder in ("roles", "playbooks", "plugins")
              for p in sorted((ROOT / folder).rglob("*")) if p.suffix in (".yml", ".py")}


def files_naming(sweep: str, files: dict | None = None) -> set[str]:
    word = re.compile(rf"(?<![A-Za-z0-9]){re.escape(sweep)}(?![A-Za-z0-9])")
    files = CODE_FILES if files is None else files
    return {rel for rel, path in files.items()
            if word.search(rel) or any(word.search(w) for w in _code_words(path))}


def recipe_files(sweep: str) -> set[str]:
    named = [p for c, p in FILES.findall(SWEEP_RECIPE) for p in re.findall(r"`([^`]+)`", p)]
    return {p.replace("<name>", sweep) for p in named if not p.startswith("tests/")}


def sweeps() -> list[str]:
    specs = yaml.safe_load((ROOT / "roles/scenarios/meta/argument_specs.yml").read_text(encoding="utf-8"))
    return specs["argument_specs"]["main"]["options"]["scenarios_name"]["choices"]


def test_the_sweep_table_names_every_sweep():
    assert sorted(SWEEP_TABLE) == sorted(sweeps())


@pytest.mark.parametrize("sweep", sweeps())
def test_a_sweep_takes_the_files_the_recipe_says(sweep):
    count, beyond = SWEEP_TABLE[sweep]
    found = files_naming(sweep)
    extra = sorted(found - recipe_files(sweep))
    assert len(found) == count, f"{sweep}: CONTRIBUTING says {count} files, it takes {len(found)}: {sorted(found)}"
    assert recipe_files(sweep) <= found | {"roles/scenarios/vars/main.yml"}, sorted(recipe_files(sweep) - found)
    for rel in extra:  # each file beyond the recipe is named in the table (by its path from its role or plugins)
        short = rel.removeprefix("roles/scenarios/").removeprefix("plugins/module_utils/")
        assert f"`{short}`" in beyond or f"`{Path(rel).stem}`" in beyond, f"{sweep}: {rel} is beyond the recipe"
    if beyond.strip() == "none":
        assert not extra, f"{sweep}: beyond the recipe: {extra}"


def test_a_file_naming_a_sweep_is_counted_and_prose_is_not(tmp_path):
    (tmp_path / "a.yml").write_text("- name: my_sweep in a task name\n  when: scenarios_name == 'my_sweep'\n")
    (tmp_path / "b.yml").write_text("# my_sweep in a comment\nx: {description: my_sweep is good}\n")
    (tmp_path / "c.py").write_text('"""my_sweep."""\nDOCUMENTATION = "my_sweep"\n# my_sweep\nX = 1\n')
    (tmp_path / "d.py").write_text('def f():\n    return {"my_sweep_matrix": 1}\n')
    (tmp_path / "point_my_sweep.yml").write_text("[]\n")
    files = {p.name: p for p in tmp_path.iterdir()}
    assert files_naming("my_sweep", files) == {"a.yml", "d.py", "point_my_sweep.yml"}
    assert files_naming("my_swee", files) == set()


# Recipe 1's counts, measured the same way on the generators of the table and their Debian packages.
APT_FILES = ["requirements-apt.txt", "requirements-apt-test.txt", "tests/unit/test_apt_requirements.py",
             *sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("roles/*/defaults/main.yml")),
             *sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("roles/*/meta/argument_specs.yml"))]


def generators() -> list[str]:
    from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._generator_table import GENERATORS
    return sorted(GENERATORS)


def test_the_generator_tables_name_every_generator():
    assert sorted(tables(GENERATOR_RECIPE)["generator"]) == generators()
    assert tables(GENERATOR_RECIPE)["package"]


@pytest.mark.parametrize("generator", generators())
def test_a_generator_takes_the_files_the_recipe_says(generator):
    count, beyond = tables(GENERATOR_RECIPE)["generator"][generator]
    found = {rel for rel in files_naming(generator) if rel.startswith("plugins/")}
    assert len(found) == count, f"{generator}: CONTRIBUTING says {count} files, it takes {len(found)}: {sorted(found)}"
    recipe = {"plugins/module_utils/traffic/_generator_table.py", "plugins/module_utils/traffic/_output_parsers.py"}
    argv = {rel for rel in found if re.fullmatch(r"plugins/module_utils/traffic/_\w+_argv\.py", rel)}
    assert len(argv) == 1, f"{generator}: its argv builder is in {sorted(argv)}"
    for rel in sorted(found - recipe - argv):
        short = rel.removeprefix("plugins/module_utils/").removeprefix("plugins/action/")
        assert f"`{short}`" in beyond, f"{generator}: {rel} is beyond the recipe"
    if beyond.startswith("none"):
        assert found - recipe - argv == set()


@pytest.mark.parametrize("package", sorted(tables(GENERATOR_RECIPE)["package"]))
def test_a_debian_package_takes_the_files_the_recipe_says(package):
    count = tables(GENERATOR_RECIPE)["package"][package][0]
    word = re.compile(rf"(?<![\w-]){re.escape(package)}(?![\w-])")
    found = [rel for rel in APT_FILES
             if (ROOT / rel).exists() and word.search((ROOT / rel).read_text(encoding="utf-8"))]
    assert len(found) == count, f"{package}: CONTRIBUTING says {count} files, it is in {len(found)}: {found}"
    debian_recipe = [p for c, p in FILES.findall(GENERATOR_RECIPE) if c.startswith("+")]
    if package == "netsniff-ng":  # the recipe's own example
        assert sorted(found) == sorted(re.findall(r"`([^`]+)`", debian_recipe[0]))
