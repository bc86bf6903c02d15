"""``occ.openclaw.positions``: each problem of a typed document at its line and column."""

from __future__ import annotations

import json

import pytest

from occ.openclaw.positions import document_problems, parse_document, source_map
from occ.openclaw.validation import configuration_values_problems

DOCUMENT = """{
  "agents": {
    "defaults": {
      "model": {"primary": 5},
      "skipBootstrap": true
    }
  },
  "bogus": true,
  "gateway": {"port": 18789},
  "models": {"providers": {"a/b~c": {"baseUrl": "nope", "api": "x", "models": []}}}
}"""


def placed(text: str) -> dict[str, tuple[int, int, int, int]]:
    return {p.pointer: (p.line, p.column, p.end_line, p.end_column) for p in document_problems(text)}


def test_every_problem_of_the_services_is_placed_once():
    problems = document_problems(DOCUMENT)
    assert sorted(p.pointer for p in problems) == sorted(
        p.path for p in configuration_values_problems(json.loads(DOCUMENT), path=""))
    assert {p.message for p in problems} == {p.message for p in configuration_values_problems(
        json.loads(DOCUMENT), path="")}


@pytest.mark.parametrize(("at", "where"), [
    # A scalar: its value. "primary": 5 is on line 4.
    pytest.param("/agents/defaults/model/primary", (4, 28, 4, 29), id="type-error-at-the-value"),
    # An unknown key: the key itself (what to remove), quotes included.
    pytest.param("/bogus", (8, 3, 8, 10), id="unknown-key-at-the-key"),
    pytest.param("/gateway/port", (9, 23, 9, 28), id="owned-gateway-key-at-its-value"),
    # A key with "/" and "~" is escaped in the pointer (RFC 6901) and still found.
    pytest.param("/models/providers/a~1b~0c/baseUrl", (10, 49, 10, 55), id="escaped-pointer"),
    pytest.param("/models/providers/a~1b~0c/api", (10, 64, 10, 67), id="enum"),
])
def test_a_problem_points_at_what_to_change(at, where):
    assert placed(DOCUMENT)[at] == where


def test_a_missing_required_key_points_at_the_nearest_value_there_is():
    # tools.github needs a profileId: the problem's pointer names a key that is not in the text.
    text = '{\n  "tools": {\n    "github": {}\n  }\n}'
    (missing,) = document_problems(text)
    assert (missing.pointer, missing.code) == ("/tools/github/profileId", "REQUIRED")
    assert (missing.line, missing.column, missing.end_column) == (3, 5, 13)  # the "github" key that lacks it


def test_a_container_points_at_its_key():
    text = '{\n  "agents": {"defaults": {"model": []}}\n}'
    (problem,) = document_problems(text)
    assert problem.pointer == "/agents/defaults/model"
    assert (problem.line, problem.column, problem.end_column) == (2, 27, 34)


def test_escaped_keys_and_duplicates_map_like_json_loads():
    text = '{"a\\u002fb": 1, "x": {"y": 1}, "x": {"z": [true, {"w": null}]}}'
    spans = source_map(text)
    assert text[slice(*spans["/a~1b"].key)] == '"a\\u002fb"'
    assert text[slice(*spans["/x/z/1/w"].value)] == "null"
    assert text[slice(*spans["/x"].value)] == '{"z": [true, {"w": null}]}'  # the last one, as json.loads keeps


def test_columns_count_characters_not_bytes():
    text = '{"agents": {"defaults": {"model": {"primary": "é😀", "x": 1}}}}'
    (problem,) = document_problems(text)
    assert problem.pointer == "/agents/defaults/model/x"
    assert problem.column == text.index('"x"') + 1


@pytest.mark.parametrize(("text", "code", "where", "message"), [
    pytest.param('{\n  "a": 1,\n}', "INVALID_JSON", (3, 1),
                 "Not valid JSON: Expecting property name enclosed in double quotes.", id="trailing-comma"),
    pytest.param('{"a": 1 "b": 2}', "INVALID_JSON", (1, 9), "Not valid JSON: Expecting ',' delimiter.",
                 id="missing-comma"),
    pytest.param('{"a": [1, -Infinity]}', "INVALID_JSON", (1, 11), "Not valid JSON: -Infinity is not a JSON value.",
                 id="infinity"),
    pytest.param('{"a": "NaN", "b": NaN}', "INVALID_JSON", (1, 19), "Not valid JSON: NaN is not a JSON value.",
                 id="nan-after-a-string-saying-nan"),
    pytest.param('  [1, 2]', "INVALID_TYPE", (1, 3), "The document must be a JSON object: {…}.", id="not-an-object"),
    pytest.param("[" * 100_000, "TOO_DEEP", (1, 1), "The document nests too deeply to read.", id="too-deep"),
])
def test_a_text_that_is_not_a_json_object(text, code, where, message):
    values, problem = parse_document(text)
    assert values is None
    assert problem is not None
    assert (problem.code, (problem.line, problem.column), problem.message) == (code, where, message)
    assert document_problems(text) == [problem]


def test_a_valid_document_has_no_problem():
    assert document_problems('{\r\n  "agents": {"defaults": {"skipBootstrap": true}}\r\n}') == []


def test_windows_line_ends_keep_columns():
    text = '{\r\n  "bogus": 1\r\n}'
    (problem,) = document_problems(text)
    assert (problem.line, problem.column) == (2, 3)
