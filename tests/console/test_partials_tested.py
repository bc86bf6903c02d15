"""Every console partial has an HTMX view test: the list comes from the templates, so a new
``{% partialdef %}`` without a test fails here with its name.

A partial counts as tested when some test function under ``tests/console/`` sends an htmx
request (``hx_get``/``hx_post`` of the console client, or an ``HX-Request`` header) and names
the partial, or its root element's id as the template writes it (``{{ confirm }}-agent-dialog``
matches ``stop-agent-dialog``), in one of its strings: the fragment-root assertion of
docs/architecture.md's rule "partial name = DOM id = hx-target". A partial that is never
swapped on its own (only ``{% partial %}``-included where it stands) is listed in
``NOT_SWAPPED`` with the reason; a name there that templates target with ``hx-target`` or that
console code renders fails too.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "templates" / "console"
CONSOLE_CODE = ROOT / "console"
TESTS = ROOT / "tests" / "console"

PARTIALDEF = re.compile(r"{%\s*partialdef\s+([\w-]+)[^%]*%}")
ROOT_ID = re.compile(r'<[a-zA-Z][^>]*?\bid="([^"]+)"')
SENDS_HTMX = re.compile(r"\bhx_(?:get|post)\b|HX-Request")
# Test helpers that assert a partial that has no id of its own.
HELPERS = {"is_error_toast": "error-toast"}

NOT_SWAPPED = {
    "secret-ref": "a Secret's name and id, included by the Overview, Configuration, Credentials and Revisions tabs",
    "diff-value": "one side of a revision diff's change (a Secret by name, or the JSON), included where it stands",
    "provider-section": "Create Agent's provider fields, rendered where they stand inside create-agent-form",
    **{f"{name}-message": "a confirmation's words, included by components/confirm_dialog.html#confirm-body only"
       for name in ("key-revoke", "role-delete", "binding-revoke", "configuration-delete", "secret-delete",
                    "namespace-delete", "agent-confirm", "principal-delete")},
    "principal-delete-body": "an Installation service principal's delete form: its POST answers with HX-Redirect to "
                             "the list (a person never is the principal they delete, so no refusal re-renders it)",
    "agent-confirm-dialog": "the Agent's confirmation dialog, rendered as #stop-agent-dialog, #delete-agent-dialog "
                            "or #redeploy-agent-dialog (each tested)",
    "agent-confirm-body": "the Agent's confirmation form: its POST answers with #agent-header, never swapped alone",
}


@dataclass(frozen=True)
class Partial:
    name: str
    template: Path
    root_id: re.Pattern[str] | None  # the root element's id, template variables as wildcards

    def named_in(self, text: str) -> bool:
        if re.search(rf"(?<![\w-]){re.escape(self.name)}(?![\w-])", text):
            return True
        return self.root_id is not None and self.root_id.search(text) is not None


def console_partials() -> list[Partial]:
    found = []
    for template in sorted(TEMPLATES.rglob("*.html")):
        text = template.read_text()
        for match in PARTIALDEF.finditer(text):
            root = ROOT_ID.search(text, match.end(), match.end() + 2000)
            pattern = None
            if root is not None:
                parts = re.split(r"{{.*?}}|{%.*?%}", root.group(1))
                pattern = re.compile(r"(?<![\w-])" + r"[^\s\"'<>]+".join(map(re.escape, parts)) + r"(?![\w-])")
            found.append(Partial(match.group(1), template, pattern))
    return found


def htmx_test_strings() -> dict[str, list[str]]:
    """Each test function that sends an htmx request -> its string constants (f-strings as written),
    plus the partials the helpers it calls assert."""
    tests: dict[str, list[str]] = {}
    for module in sorted(TESTS.glob("test_*.py")):
        source = module.read_text()
        for node in ast.walk(ast.parse(source)):
            if not (isinstance(node, ast.FunctionDef) and node.name.startswith("test_")):
                continue
            if not SENDS_HTMX.search(ast.get_source_segment(source, node) or ""):
                continue
            strings = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
            strings += [ast.unparse(n) for n in ast.walk(node) if isinstance(n, ast.JoinedStr)]
            strings += [HELPERS[n.func.id] for n in ast.walk(node)
                        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in HELPERS]
            tests[f"{module.name}::{node.name}"] = strings
    return tests


def test_the_templates_have_partials_and_the_tests_send_htmx():
    """The derivation finds something (a broken pattern would make the next test pass vacuously)."""
    names = {partial.name for partial in console_partials()}
    assert {"agents-table", "agent-header", "secrets-panel", "create-agent-form"} <= names
    assert len(htmx_test_strings()) > 20


def test_every_swapped_partial_has_an_htmx_view_test():
    tests = htmx_test_strings()
    untested = [f"{partial.name} ({partial.template.relative_to(ROOT)})" for partial in console_partials()
                if partial.name not in NOT_SWAPPED
                and not any(partial.named_in(text) for strings in tests.values() for text in strings)]
    assert not untested, (
        f"console partial(s) without an HTMX view test: {untested}. Add a test under tests/console/ that sends "
        "the htmx request (console.hx_get/hx_post) and asserts the fragment's root (fragment_root(html) == "
        "'<tag>#<partial>'), or, if it is never swapped on its own, list it in NOT_SWAPPED with the reason")


def test_not_swapped_partials_are_really_not_swapped():
    names = {partial.name for partial in console_partials()}
    assert set(NOT_SWAPPED) <= names, f"NOT_SWAPPED names partials that are gone: {set(NOT_SWAPPED) - names}"
    targeted = {target for template in (ROOT / "templates").rglob("*.html")
                for target in re.findall(r'hx-target="#([\w-]+)"', template.read_text())}
    rendered = {node.value for module in CONSOLE_CODE.rglob("*.py") for node in ast.walk(ast.parse(module.read_text()))
                if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    swapped = sorted(name for name in NOT_SWAPPED if name in targeted or name in rendered
                     or any(text.endswith(f"#{name}") for text in rendered))
    assert not swapped, f"{swapped} are swapped (an hx-target or rendered by console code): give them a view test"
