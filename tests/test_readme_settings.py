"""The README's settings table says what the code reads.

Both ways: every environment variable the server reads (its settings module and every module of
the server's packages; the command line's variables have their own README section) is a row,
and every row is read somewhere in the code or the test suite. A setting the code accepts only
a fixed set of values for (a driver registry, or a ``not in {…}`` check in the settings module)
lists exactly those values, first in its Meaning: "`a`, `b` or empty: …". The checker is tried
on planted tables too, so a missing row, a stale row or a wrong value list is known to fail.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import tomllib
from collections.abc import Iterable
from pathlib import Path

import pytest

from occ.drivers import compute
from occ.drivers.plugins import registry as plugin_registry
from occ.drivers.secrets import base as secrets

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# The command line reads OCC_URL, OCC_API_KEY… documented in the README's section on `occ`.
NOT_SERVER = {"occ_cli"}

# django-environ's typed readers (``env.str("X")``) and os.environ's.
_ENV_METHODS = {"str", "bool", "int", "float", "list", "dict", "tuple", "json", "url", "db_url", "path",
                "get_value"}

# Settings whose values are the ids of a driver registry.
REGISTRIES: dict[str, Iterable[str]] = {
    "OCC_COMPUTE_DRIVER": compute.COMPUTE_DRIVERS.ids(),
    "OCC_SECRET_DRIVER": secrets.SECRET_DRIVERS.ids(),
    "OCC_PLUGIN_DRIVER": plugin_registry.PLUGIN_DRIVERS.ids(),
}


def env_reads(source: str) -> set[str]:
    """The environment variables ``source`` reads by a literal name."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and node.args and _is_str(node.args[0]) and _reads_env(node.func):
            names.add(node.args[0].value)
        elif (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and _is_environ(node.value)
              and _is_str(node.slice)):
            names.add(node.slice.value)
    return names


def _is_str(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _is_environ(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "environ"


def _reads_env(func: ast.expr) -> bool:
    if isinstance(func, ast.Name):
        return func.id == "env"
    if not isinstance(func, ast.Attribute):
        return False
    if isinstance(func.value, ast.Name) and func.value.id == "env":
        return func.attr in _ENV_METHODS
    return (func.attr == "get" and _is_environ(func.value)) or func.attr == "getenv"


def accepted_values(source: str) -> dict[str, set[str]]:
    """Settings the settings module refuses outside a literal set: ``if X not in {"a", "b"}``,
    where ``X = env.str("X", …)``, by their variable's name."""
    variables: dict[str, str] = {}
    accepted: dict[str, set[str]] = {}
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Call) and _reads_env(node.value.func) and node.value.args
                and isinstance(name := node.value.args[0], ast.Constant) and isinstance(name.value, str)):
            variables[node.targets[0].id] = name.value
        if (isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and len(node.ops) == 1
                and isinstance(node.ops[0], ast.NotIn) and isinstance(node.comparators[0], ast.Set)):
            accepted[node.left.id] = {element.value for element in node.comparators[0].elts
                                      if isinstance(element, ast.Constant) and isinstance(element.value, str)}
    return {variables[name]: values for name, values in accepted.items() if name in variables}


def settings_table(readme: str) -> dict[str, str]:
    """The rows of the README's "## Settings" table: variable -> its Meaning."""
    section = readme.split("\n## Settings\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue  # prose, the header and its rule
        cells = [cell.strip() for cell in line.strip().removeprefix("|").removesuffix("|").split("|")]
        if len(cells) != 3:
            raise ValueError(f"a settings row needs three cells (Variable, Default, Meaning): {line}")
        rows[cells[0].strip("`")] = cells[2]
    return rows


_VALUE = r"(?:`[^`]+`|empty)"
_LEADING_VALUES = re.compile(rf"{_VALUE}(?:(?:, | or ){_VALUE})*")


def listed_values(meaning: str) -> set[str]:
    """The values a Meaning lists first ("`a`, `b` or empty: …"), "empty" as ""."""
    found = _LEADING_VALUES.match(meaning)
    if found is None:
        return set()
    return {"" if value == "empty" else value.strip("`") for value in re.findall(_VALUE, found.group())}


def problems(table: dict[str, str], *, server_reads: set[str], all_reads: set[str],
             choices: dict[str, set[str]]) -> list[str]:
    """What makes the table untrue: each as a sentence that says what to do."""
    found = [f"{name} is read by the server but has no row in the README's settings table"
             for name in sorted(server_reads - table.keys())]
    found += [f"{name} has a row in the README's settings table but nothing reads it"
              for name in sorted(table.keys() - all_reads)]
    for name, values in sorted(choices.items()):
        listed = listed_values(table.get(name, ""))
        if name in table and listed != values:
            shown = ", ".join(repr(value) for value in sorted(values))
            found.append(f"{name}'s Meaning must begin with the values the code accepts ({shown}); "
                         f"it lists {sorted(listed)}")
    return found


# --- what the code reads ----------------------------------------------------------------------

def _settings_module() -> Path:
    """The file of the settings module the suite runs with (pytest-django names it)."""
    spec = importlib.util.find_spec(os.environ["DJANGO_SETTINGS_MODULE"])
    assert spec is not None
    assert spec.origin is not None
    return Path(spec.origin)


def _server_files() -> set[Path]:
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["root_packages"]
    files = {_settings_module()}
    for package in set(packages) - NOT_SERVER:
        files |= set((ROOT / package).rglob("*.py"))
    return files


def _reads(files: Iterable[Path]) -> set[str]:
    return set().union(*(env_reads(path.read_text()) for path in files))


def _choices() -> dict[str, set[str]]:
    choices = accepted_values(_settings_module().read_text())
    for name, registry in REGISTRIES.items():
        # A setting may also accept "" (no driver), which no registry holds.
        choices[name] = set(registry) | (choices.get(name, set()) & {""})
    return choices


def test_the_readme_settings_table_is_what_the_code_reads():
    server = _reads(_server_files())
    everything = server | _reads((ROOT / "tests").rglob("*.py"))

    found = problems(settings_table(README.read_text()), server_reads=server, all_reads=everything,
                     choices=_choices())

    assert not found, "\n".join(found)


def test_the_settings_module_accepts_exactly_the_registered_drivers():
    accepted = accepted_values(_settings_module().read_text())
    for name, registry in REGISTRIES.items():
        if name in accepted:
            assert accepted[name] - {""} == set(registry), name


def test_the_scan_finds_the_settings_every_way_the_code_reads_them():
    source = '''
import os
A = env.str("OCC_A", default="x")
B = env("OCC_B")
C = os.environ.get("OCC_C", "2")
D = os.getenv("OCC_D")
E = os.environ["OCC_E"]
os.environ["OCC_WRITTEN"] = "1"
child = {"PATH": "/bin"}
child.get("PATH")
if A not in {"one", "two"}:
    raise ValueError
'''
    assert env_reads(source) == {"OCC_A", "OCC_B", "OCC_C", "OCC_D", "OCC_E"}
    assert accepted_values(source) == {"OCC_A": {"one", "two"}}


# --- the checker on planted tables ------------------------------------------------------------

PLANTED = """# Project

## Settings

| Variable | Default | Meaning |
| --- | --- | --- |
| `OCC_DRIVER` | `a` | `a`, `b` or empty: which driver. `a` is the first. |
| `OCC_PORT` | `8000` | The port. |

## Layout
"""
PLANTED_READS = {"OCC_DRIVER", "OCC_PORT"}
PLANTED_CHOICES = {"OCC_DRIVER": {"a", "b", ""}}


def _planted_problems(readme: str, *, server_reads: set[str] = PLANTED_READS) -> list[str]:
    return problems(settings_table(readme), server_reads=server_reads, all_reads=server_reads | {"OCC_TESTS"},
                    choices=PLANTED_CHOICES)


def test_a_true_planted_table_passes():
    assert settings_table(PLANTED) == {
        "OCC_DRIVER": "`a`, `b` or empty: which driver. `a` is the first.", "OCC_PORT": "The port."}
    assert _planted_problems(PLANTED) == []


@pytest.mark.parametrize(("readme", "reads", "expected"), [
    pytest.param(PLANTED.replace("| `OCC_PORT` | `8000` | The port. |\n", ""), PLANTED_READS,
                 "OCC_PORT is read by the server but has no row", id="missing-row"),
    pytest.param(PLANTED, PLANTED_READS | {"OCC_NEW"}, "OCC_NEW is read by the server but has no row",
                 id="new-setting"),
    pytest.param(PLANTED.replace("| `OCC_PORT`", "| `OCC_GONE` | | Stale. |\n| `OCC_PORT`"), PLANTED_READS,
                 "OCC_GONE has a row in the README's settings table but nothing reads it", id="stale-row"),
    pytest.param(PLANTED.replace("`a`, `b` or empty:", "`a` or empty:"), PLANTED_READS,
                 "OCC_DRIVER's Meaning must begin with the values", id="value-missing"),
    pytest.param(PLANTED.replace("`a`, `b` or empty:", "`a`, `b`, `c` or empty:"), PLANTED_READS,
                 "OCC_DRIVER's Meaning must begin with the values", id="value-not-registered"),
    pytest.param(PLANTED.replace("`a`, `b` or empty:", "Which driver: `a`, `b` or empty."), PLANTED_READS,
                 "OCC_DRIVER's Meaning must begin with the values", id="values-not-first"),
])
def test_the_checker_refuses_an_untrue_planted_table(readme, reads, expected):
    found = _planted_problems(readme, server_reads=reads)

    assert len(found) == 1, found
    assert found[0].startswith(expected), found


def test_a_row_that_is_not_three_cells_is_refused():
    with pytest.raises(ValueError, match="three cells"):
        settings_table(PLANTED.replace("| `8000` | The port. |", "| The port. |"))


def test_a_row_read_only_by_the_tests_is_read():
    readme = PLANTED.replace("| `OCC_PORT`", "| `OCC_TESTS` | | Tests only. |\n| `OCC_PORT`")

    assert _planted_problems(readme) == []
