"""The JSON editor's syntax check (frontend/src/editor/json-syntax.js) says what the server says.

The browser finds syntax errors itself, before asking the server; for each broken text here, the
scanner run by runtime/node's Node must give the message, line and column that the server's
``parse_document`` (occ/openclaw/positions.py) gives, and nothing for a text that is JSON.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from devtools import assets
from occ.openclaw.positions import parse_document
from tests.console.test_assets import runtime_with_frontend

CASES = [
    pytest.param('{"a": 1 "b": 2}', id="missing-comma"),
    pytest.param('{\n  "agents": {"defaults": {}}\n  "tools": {}\n}', id="missing-comma-next-line"),
    pytest.param('{"a": 1,}', id="trailing-comma-object"),
    pytest.param('{"a": [1, 2,]}', id="trailing-comma-array"),
    pytest.param("{'a': 1}", id="single-quotes"),
    pytest.param('{"a" 1}', id="missing-colon"),
    pytest.param('{"a": }', id="missing-value"),
    pytest.param('{"a": tru}', id="misspelt-literal"),
    pytest.param('{"a": "unterminated}', id="unterminated-string"),
    pytest.param('{"a": "line\nbreak"}', id="control-character"),
    pytest.param('{"a": "\\x"}', id="bad-escape"),
    pytest.param('{"a": "\\u12"}', id="short-unicode-escape"),
    pytest.param('{"a": "\\u12zz"}', id="bad-unicode-escape"),
    pytest.param('{"a": 1} {"b": 2}', id="extra-data"),
    pytest.param('{"a": 01}', id="leading-zero"),
    pytest.param('{"a": -}', id="lone-minus"),
    pytest.param('{"a": 1.}', id="dangling-point"),
    pytest.param('{"a": NaN}', id="nan"),
    pytest.param('{"a": [1, -Infinity]}', id="minus-infinity"),
    pytest.param('{"é": "ü", "😀": 1 "b": 2}', id="characters-beyond-ascii"),
    pytest.param("", id="empty"),
    pytest.param("   ", id="only-whitespace"),
    pytest.param("{", id="open-object"),
    pytest.param('[{"a": 1}', id="open-array"),
    pytest.param("\ufeff{}", id="byte-order-mark"),
]
VALID = ['{"a": [1, 2.5e-3, true, false, null, "x\\u00e9\\n"]}', "[]", "3", '"text"', '{"😀": "\\ud83d\\ude00"}']

SCRIPT = """
import { jsonSyntaxProblem } from "./src/editor/json-syntax.js";
let input = "";
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", () => {
  console.log(JSON.stringify(JSON.parse(input).map((text) => jsonSyntaxProblem(text))));
});
"""


def browser_problems(texts: list[str]) -> list[dict | None]:
    runtime = runtime_with_frontend()
    result = subprocess.run([str(runtime.node_binary()), "--input-type=module", "-e", SCRIPT],
                            cwd=assets.FRONTEND, env=assets.node_env(runtime), input=json.dumps(texts),
                            capture_output=True, text=True, timeout=60, check=True)
    return json.loads(result.stdout)


@pytest.mark.parametrize("text", CASES)
def test_the_browser_places_and_words_a_syntax_error_as_the_server_does(text):
    values, server = parse_document(text)
    assert values is None, "a case the server reads is no syntax case"
    assert server is not None

    [browser] = browser_problems([text])

    assert browser is not None
    assert (browser["message"], browser["line"], browser["column"]) == (server.message, server.line, server.column)
    assert (browser["endLine"], browser["endColumn"]) == (server.end_line, server.end_column)


def test_json_is_no_syntax_error_whatever_its_shape():
    """That the document must be an object is the server's rule, checked by the server."""
    assert browser_problems(VALID) == [None] * len(VALID)
