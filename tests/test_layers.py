"""The layers of docs/architecture.md hold: the import-linter contracts in pyproject.toml pass,
every top-level module of ``occ`` is classified for the drivers, and no project module is
imported inside a function (the way a cycle between layers is usually hidden)."""

from __future__ import annotations

import ast
import pkgutil
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import occ
import occ.drivers

ROOT = Path(__file__).resolve().parents[1]
PROJECT_PACKAGES = ("project", "devtools", "occ", "provisioning", "console", "occ_cli")
# Where each package lives: the command line is its own distribution under cli/.
PACKAGE_DIRS = {"occ_cli": ROOT / "cli" / "occ_cli"}
# What a driver may import of OCC besides other drivers (the pyproject comments say why).
DRIVER_ALLOWED = {"drivers", "openclaw", "errors", "ids", "runtime", "upstream", "documents", "driver_registry"}


def _contracts() -> dict[str, dict]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return {contract["id"]: contract for contract in config["tool"]["importlinter"]["contracts"]}


def test_the_import_contracts_are_kept():
    lint_imports = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_top_level_module_is_allowed_or_forbidden_for_drivers():
    forbidden = {name.removeprefix("occ.") for name in _contracts()["pure-drivers"]["forbidden_modules"]
                 if name.startswith("occ.")}
    modules = {module.name for module in pkgutil.iter_modules(occ.__path__)}

    assert modules - forbidden - DRIVER_ALLOWED == set(), "classify the new module in pyproject.toml"
    assert forbidden & DRIVER_ALLOWED == set()


def test_plugins_are_as_pure_as_the_drivers_and_sit_below_them():
    """``occ.drivers.plugins`` may import what a driver may, except the other drivers: every
    other top-level module of ``occ``, every other driver package and every other project
    package is forbidden to it."""
    contracts = _contracts()
    forbidden = set(contracts["pure-plugins"]["forbidden_modules"])
    modules = {f"occ.{module.name}" for module in pkgutil.iter_modules(occ.__path__)} - {"occ.drivers"}
    drivers = {f"occ.drivers.{module.name}" for module in pkgutil.iter_modules(occ.drivers.__path__)
               if module.ispkg} - {"occ.drivers.plugins"}
    allowed = {f"occ.{name}" for name in DRIVER_ALLOWED - {"drivers"}}

    assert modules - forbidden - allowed == set(), "classify the new module for plugins in pyproject.toml"
    assert drivers - forbidden == set(), "a new driver package sits above the plugins: forbid it to them"
    assert forbidden & allowed == set()
    assert {"console", "provisioning", "project", "devtools"} <= forbidden
    layers = contracts["layers"]["layers"]
    driver_layer = next(index for index, layer in enumerate(layers) if layer.startswith("occ.drivers.compute"))
    assert driver_layer < layers.index("occ.drivers.plugins") < layers.index("(occ.openclaw)")
    assert set(layers[driver_layer].split(" : ")) == drivers


def _function_imports(path: Path) -> list[str]:
    """``from occ… import`` / ``import provisioning…`` statements inside a function body."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.ImportFrom) and inner.module and inner.level == 0:
                names = [inner.module]
            elif isinstance(inner, ast.Import):
                names = [alias.name for alias in inner.names]
            else:
                continue
            found.extend(f"{path.relative_to(ROOT)}:{inner.lineno} {name}" for name in names
                         if name.split(".")[0] in PROJECT_PACKAGES)
    return found


def test_no_project_module_is_imported_inside_a_function():
    found = []
    for package in PROJECT_PACKAGES:
        for path in sorted(PACKAGE_DIRS.get(package, ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if "/migrations/" in relative:
                continue
            found.extend(_function_imports(path))

    assert found == [], "import at module level; a cycle means a layer is wrong"



def _top_level_imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
    return names


def test_the_command_line_imports_nothing_of_the_server_nor_django():
    """``occ`` talks to OCC over HTTP only (the cli-over-http contract covers OCC's packages;
    import-linter does not follow external ones such as Django)."""
    contract = _contracts()["cli-over-http"]
    assert set(contract["forbidden_modules"]) == {"project", "devtools", "occ", "provisioning", "console"}
    found = {f"{path.relative_to(ROOT)}: {name}" for path in sorted(PACKAGE_DIRS["occ_cli"].rglob("*.py"))
             for name in _top_level_imports(path) & {"project", "devtools", "occ", "provisioning", "console", "django",
                                                            "ninja", "celery"}}
    assert found == set()


def test_console_views_are_only_views():
    """Every module of ``console/views`` serves URLs of its own (``urlpatterns``): a page model or
    a helper that two views share lives in ``console/pages`` or ``console/forms``, where the
    console-rooms contract places it, never among the views where the independence contract
    would have to look away (``views/agent_screen.py`` was a page model there)."""
    def assigns_urlpatterns(path: Path) -> bool:
        return any(isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "urlpatterns"
                                                        for t in node.targets)
                   for node in ast.parse(path.read_text()).body)

    views = sorted(path for path in (ROOT / "console" / "views").glob("*.py") if path.name != "__init__.py")
    assert len(views) > 10
    assert [path.name for path in views if not assigns_urlpatterns(path)] == []
    contracts = _contracts()
    assert contracts["console-rooms"]["layers"].index("views") < contracts["console-rooms"]["layers"].index("pages")
    assert contracts["console-views-independent"]["modules"] == ["console.views.*"]


# A module past about this many lines says at its top why it is one module (STYLE.md).
LONG_MODULE_LINES = 420
ONE_MODULE_REASON = re.compile(r"\bone module\b", re.IGNORECASE)


def long_modules_without_a_reason(paths: list[Path], root: Path = ROOT) -> list[str]:
    """Modules over ``LONG_MODULE_LINES`` whose docstring does not say why they are one module."""
    found = []
    for path in paths:
        source = path.read_text()
        lines = source.count("\n")
        if lines <= LONG_MODULE_LINES or "migrations" in path.parts:
            continue
        docstring = ast.get_docstring(ast.parse(source, filename=str(path))) or ""
        if not ONE_MODULE_REASON.search(docstring):
            found.append(f"{path.relative_to(root)} ({lines} lines)")
    return found


def test_a_long_module_says_why_it_is_one():
    paths = [path for package in PROJECT_PACKAGES
             for path in sorted(PACKAGE_DIRS.get(package, ROOT / package).rglob("*.py"))]
    paths += sorted((ROOT / "bench").glob("*.py"))

    assert long_modules_without_a_reason(paths) == [], "split the module, or say at its top why it is one"


def test_the_long_module_check_finds_a_long_module_without_a_reason(tmp_path):
    body = "x = 1\n" * (LONG_MODULE_LINES + 1)
    silent, explained = tmp_path / "silent.py", tmp_path / "explained.py"
    silent.write_text('"""Does many things."""\n' + body)
    explained.write_text('"""Does many things.\n\nOne module of ~420 lines: they share one state."""\n' + body)
    short = tmp_path / "short.py"
    short.write_text('"""Short."""\nx = 1\n')

    found = long_modules_without_a_reason([silent, explained, short], root=tmp_path)

    assert found == [f"silent.py ({LONG_MODULE_LINES + 2} lines)"]
