"""Stored documents are read by attribute, and wire names stay in the API and the CLI.

The revision spec and the provisioning plan are typed (``occ.documents``); their JSON names are
generated from their fields. Two rules keep it so, checked on the syntax tree of every module of
the server's packages:

- **No string-key read of a document** outside ``occ/documents``: a subscript or a
  ``.get``/``.pop``/``.setdefault`` whose key is one of the documents' field or wire names, applied
  to something named ``snapshot``, ``spec`` or ``plan`` (``revision.snapshot["compute"]``,
  ``row.plan.get("secretIds")``). Those three names are what every reader of these documents
  calls them; a reader of another document with the same words for keys (a Kubernetes manifest's
  ``spec``) reads keys these documents do not have.
- **No camelCase wire key** outside ``occ/api``, the CLI, ``occ/documents`` and ``occ/commands``
  (which declare the names) and ``occ/openclaw`` (the native OpenClaw document, whose own keys are
  camelCase): a string literal equal to a wire name of the documents or of the commands (the
  console's request bodies included: it builds typed commands). Excepted, by where they stand:
  docstrings, and an audit event's details and metadata (a ``details=``/``extra=`` argument, a
  ``details``/``meta`` variable, ``event.details[...]``), which are the audit log's own public
  document. Every other literal belongs to a document this rule does not cover yet and is listed
  below with the reason it stays.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import types
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

import occ.commands
from occ.documents import PluginWarning, ProvisionPlan, PublicRevision, RevisionSpec

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("project", "devtools", "occ", "provisioning", "console")
# Where the wire names are declared or belong; occ/openclaw reads the native OpenClaw document,
# whose own keys are camelCase (``baseUrl``, ``apiKey``) and which a command may mirror.
WIRE_HOMES = ("occ/api/", "occ/documents/", "occ/commands/", "occ/openclaw/")
DOCUMENT_NAMES = re.compile(r"(?:^|_)(?:snapshot|spec|plan)(?:_|$)", re.IGNORECASE)
READ_METHODS = ("get", "pop", "setdefault")
# An audit event's details and metadata (``details=``, ``extra=`` of a denial, ``meta``).
DETAILS = ("details", "extra", "meta")

# Literals that equal a wire name but belong to another document, not typed by this change.
NOT_THESE_KEYS: dict[str, tuple[set[str], str]] = {
    "occ/drivers/compute/local_plugins.py": ({"pluginId"}, "the runtime's own installed-plugin index, read back"),
    "occ/drivers/compute/files.py": ({"agentId"}, "the local driver's own state file (gateway.json)"),
    "occ/selectors/gateways.py": ({"agentId", "namespaceId"}, "GatewayInfo.as_json, the occ_gateway command's output"),
    "occ/management/commands/occ_bootstrap.py": ({"servicePrincipalId"}, "prints the API's service key document"),
    "occ/services/configurations.py": ({"secretBindings"}, "audit evidence spread into an event's details"),
    "occ/selectors/revisions.py": ({"secretBindings"}, "a revision diff section's name (a value of GET …/diff)"),
    "console/pages/agent_revisions.py": ({"secretBindings"}, "a revision diff section's name (a value of GET …/diff)"),
    "occ/selectors/usage.py": ({"agentId"}, "UsageRow.wire: one row shape for GET …/usage and both CSV exports"),
    "occ/services/approvals.py": ({"pluginId"}, "the gateway's own plugin approval request, read"),
    "occ/services/budgets.py": ({"agentId", "namespaceId"}, "the budget webhook's payload (docs/usage.md)"),
}


def _models(roots: list[type[BaseModel]]) -> set[type[BaseModel]]:
    """``roots`` and every model their fields hold, however nested in containers."""
    found: set[type[BaseModel]] = set()
    stack = list(roots)
    while stack:
        model = stack.pop()
        if model in found:
            continue
        found.add(model)
        for field in model.model_fields.values():
            stack.extend(_inner_models(field.annotation))
    return found


def _inner_models(annotation: object) -> Iterator[type[BaseModel]]:
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        yield annotation
    for argument in typing.get_args(annotation):
        yield from _inner_models(argument)
    if isinstance(annotation, types.UnionType):
        for argument in annotation.__args__:
            yield from _inner_models(argument)


def _commands() -> set[type[BaseModel]]:
    commands: set[type[BaseModel]] = set()
    for module in pkgutil.iter_modules(occ.commands.__path__):
        for value in vars(importlib.import_module(f"occ.commands.{module.name}")).values():
            if inspect.isclass(value) and issubclass(value, BaseModel) and value.__module__.startswith("occ.commands"):
                commands.add(value)
    return _models(sorted(commands, key=lambda c: c.__qualname__))


DOCUMENTS = _models([RevisionSpec, PublicRevision, ProvisionPlan, PluginWarning])
DOCUMENT_KEYS = frozenset(name for model in DOCUMENTS for field, info in model.model_fields.items()
                          for name in (field, info.alias or field))
WIRE_NAMES = frozenset(info.alias for model in DOCUMENTS | _commands() for field, info in model.model_fields.items()
                       if info.alias and info.alias != field)


# --- the checks -------------------------------------------------------------------------------------

def _names_a_document(node: ast.AST) -> bool:
    return any(DOCUMENT_NAMES.search(name) for inner in ast.walk(node)
               for name in ((inner.id,) if isinstance(inner, ast.Name) else
                            (inner.attr,) if isinstance(inner, ast.Attribute) else ()))


def _string(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def key_reads(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, key) of every string-key read of a stored document."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            receiver, key = node.value, _string(node.slice)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in READ_METHODS and node.args):
            receiver, key = node.func.value, _string(node.args[0])
        else:
            continue
        if key in DOCUMENT_KEYS and _names_a_document(receiver):
            yield node.lineno, key


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and _string(first.value) is not None:
                found.add(id(first.value))
    return found


def _is_details(node: ast.AST) -> bool:
    return ((isinstance(node, ast.Name) and node.id in DETAILS)
            or (isinstance(node, ast.Attribute) and node.attr in DETAILS))


def _audit_details(tree: ast.AST) -> set[int]:
    """The nodes inside an audit event's details."""
    roots: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg in DETAILS:
            roots.append(node.value)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_is_details(t) or (isinstance(t, ast.Subscript) and _is_details(t.value)) for t in targets):
                roots.append(node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _is_details(node.func.value):
            roots.append(node)  # details.update(...), event.details.get(...)
        elif isinstance(node, ast.Subscript) and _is_details(node.value):
            roots.append(node)  # event.details["..."]
    return {id(inner) for root in roots for inner in ast.walk(root)}


def wire_keys(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, literal) of every camelCase wire name written as a string literal."""
    skipped = _docstrings(tree) | _audit_details(tree)
    for node in ast.walk(tree):
        value = _string(node)
        if value in WIRE_NAMES and id(node) not in skipped:
            yield node.lineno, value


def _modules() -> Iterator[tuple[str, ast.AST]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if "/migrations/" not in relative:
                yield relative, ast.parse(path.read_text(), filename=relative)


# --- the rules --------------------------------------------------------------------------------------

def test_no_stored_document_is_read_by_string_key():
    found = [f"{path}:{line} [{key!r}]" for path, tree in _modules() if not path.startswith("occ/documents/")
             for line, key in key_reads(tree)]
    assert found == [], "read the typed document by attribute (revision.spec, row.accepted_plan)"


def test_no_wire_key_is_written_outside_the_api_and_the_cli():
    found = [f"{path}:{line} {key!r}" for path, tree in _modules()
             if not path.startswith(WIRE_HOMES)
             for line, key in wire_keys(tree) if key not in NOT_THESE_KEYS.get(path, (set(), ""))[0]]
    assert found == [], "name the field in Python; only occ/api and the CLI speak wire names"


def test_the_exceptions_are_still_needed():
    """A literal that no longer offends is struck from the list."""
    trees = dict(_modules())
    unused = sorted(f"{path} {key}" for path, (keys, _) in NOT_THESE_KEYS.items() for key in keys
                    if key not in {value for _, value in wire_keys(trees[path])})
    assert unused == [], "strike these from NOT_THESE_KEYS"


# --- the checker itself -----------------------------------------------------------------------------

@pytest.mark.parametrize("source", [
    pytest.param('revision.snapshot["compute"]', id="subscript"),
    pytest.param('revision.snapshot.get("harnessAuth")', id="get-wire-name"),
    pytest.param('(snapshot.get("harnessAuth") or {}).get("source")', id="nested"),
    pytest.param('row.plan.get("secret_ids", [])', id="get-field-name"),
    pytest.param('old_snapshot.pop("id")', id="pop"),
    pytest.param('spec["plugins"]["plugins"]', id="twice"),
])
def test_the_checker_finds_a_planted_key_read(source):
    assert list(key_reads(ast.parse(source)))


@pytest.mark.parametrize("source", [
    pytest.param('revision.spec.compute.id', id="attribute"),
    pytest.param('manifest["spec"]["replicas"]', id="another-document"),
    pytest.param('spec.get("replicas")', id="not-a-document-key"),
    pytest.param('values["compute"]', id="not-named-a-document"),
    pytest.param('snapshot[key]', id="computed-key"),
])
def test_the_checker_passes_attribute_reads_and_other_documents(source):
    assert list(key_reads(ast.parse(source))) == []


@pytest.mark.parametrize("source", [
    pytest.param('body = {"harnessAuth": auth}', id="dict-key"),
    pytest.param('FIELDS = ("secretBindings", "backendId")', id="name-list"),
    pytest.param('data.get("sourceRevisionId")', id="read"),
    pytest.param('payload = {"requestId": request_id}', id="command-name"),
])
def test_the_checker_finds_a_planted_wire_key(source):
    assert list(wire_keys(ast.parse(source)))


@pytest.mark.parametrize("source", [
    pytest.param('def f():\n    """Sets harnessAuth."""', id="docstring"),
    pytest.param('audit_record(action="x", details={"secretBindings": ids})', id="audit-details"),
    pytest.param('details = {"servicePrincipalId": p}\ndetails["roleId"] = r', id="details-variable"),
    pytest.param('event.details.get("servicePrincipalId")', id="details-read"),
    pytest.param('message = "Send harnessAuth."', id="prose"),
])
def test_the_checker_passes_docstrings_audit_details_and_prose(source):
    assert list(wire_keys(ast.parse(source))) == []
