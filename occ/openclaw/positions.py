"""Where each problem of a Configuration document sits in the text a person typed.

``document_problems`` reads the text as the console's form does (a JSON object, no NaN or
Infinity), then runs the same ``configuration_values_problems`` the services refuse with and
places each problem's JSON pointer in the text: line and column (1-based, in characters) of
the start and the end of what to look at.

- a key that is not allowed (``UNKNOWN_FIELD``, a prototype key) points at the key;
- a scalar points at its value, an object or array at its key (or its opening bracket);
- a pointer to something not in the text (a required key that is missing) points at the
  nearest enclosing value that is.

The source map is built with the standard library's own JSON scanner (``raw_decode`` for keys
and scalars) rather than the ``json-source-map`` package: that package builds
pointers from a key's raw text, neither decoding escapes nor escaping ``/`` and ``~`` (RFC 6901),
so a key such as ``"openai/gpt-5"`` (a model id) would be placed wrongly.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import re
from dataclasses import dataclass

from occ.errors import DetailCode
from occ.openclaw.validation import configuration_values_problems, pointer

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_SCALARS = json.JSONDecoder()
# Keys whose problem is the key itself: what to remove or rename.
_KEY_CODES = frozenset({"UNKNOWN_FIELD"})
INVALID_JSON_CODE = "INVALID_JSON"
# Python's messages that end where its own text puts the position ("Unterminated string starting
# at"); ours give the position apart. The JSON editor words them the same (editor/json-syntax.js).
_TRAILING_AT = re.compile(r"( starting)? at$")


@dataclass(frozen=True)
class Span:
    """A node of the document: the offsets of its key (None for the root and array items) and
    of its value, ``(start, end)`` with ``end`` exclusive."""

    key: tuple[int, int] | None
    value: tuple[int, int]
    container: bool


@dataclass(frozen=True)
class PlacedProblem:
    pointer: str  # into the document ("" is the whole document)
    code: str  # a DetailCode, or INVALID_JSON for a syntax error
    message: str
    line: int
    column: int
    end_line: int
    end_column: int

    def as_json(self) -> dict[str, object]:
        return {"pointer": self.pointer, "code": self.code, "message": self.message, "line": self.line,
                "column": self.column, "endLine": self.end_line, "endColumn": self.end_column}

    @property
    def where(self) -> str:
        return f"Line {self.line}, column {self.column}"


class _Lines:
    """Offset to (line, column), both 1-based; lines end at ``\\n`` as Python's JSON errors count them."""

    def __init__(self, text: str) -> None:
        self.starts = [0] + [match.end() for match in re.finditer("\n", text)]

    def at(self, offset: int) -> tuple[int, int]:
        index = bisect.bisect_right(self.starts, offset) - 1
        return index + 1, offset - self.starts[index] + 1


def source_map(text: str) -> dict[str, Span]:
    """Every node of a valid JSON text by its JSON pointer (a duplicated key: its last occurrence,
    the one ``json.loads`` keeps). Deeper than the interpreter allows: the nodes found so far."""
    spans: dict[str, Span] = {}
    with contextlib.suppress(RecursionError):
        _node(text, 0, "", None, spans)
    return spans


def _skip(text: str, index: int) -> int:
    match = _WHITESPACE.match(text, index)
    assert match is not None  # the pattern matches the empty string
    return match.end()


def _node(text: str, index: int, at: str, key: tuple[int, int] | None, spans: dict[str, Span]) -> int:
    start = index = _skip(text, index)
    opening = text[index]
    if opening == "{":
        index = _skip(text, index + 1)
        while text[index] != "}":
            key_start = index
            name, key_end = _SCALARS.raw_decode(text, index)  # the key: a JSON string
            index = _skip(text, key_end) + 1  # past the ":"
            index = _skip(text, _node(text, index, at + pointer(name), (key_start, key_end), spans))
            if text[index] == ",":
                index = _skip(text, index + 1)
    elif opening == "[":
        index = _skip(text, index + 1)
        item = 0
        while text[index] != "]":
            index = _skip(text, _node(text, index, at + pointer(item), None, spans))
            item += 1
            if text[index] == ",":
                index = _skip(text, index + 1)
    else:
        _, end = _SCALARS.raw_decode(text, index)
        spans[at] = Span(key, (start, end), container=False)
        return end
    spans[at] = Span(key, (start, index + 1), container=True)
    return index + 1


def _place(spans: dict[str, Span], at: str, code: str) -> tuple[int, int]:
    """The offsets to show for a problem at ``at``: the node itself, else its nearest ancestor."""
    probe = at
    while probe not in spans and probe:
        probe = probe[:probe.rfind("/")]
    span = spans.get(probe)
    if span is None:
        return 0, 0
    if span.key is not None and (probe != at or code in _KEY_CODES or span.container):
        return span.key
    if span.container:
        return span.value[0], span.value[0] + 1
    return span.value


def parse_document(text: str) -> tuple[dict[str, object] | None, PlacedProblem | None]:
    """The JSON object the text holds, or the syntax problem at its line and column."""
    lines = _Lines(text)
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        line, column = exc.lineno, exc.colno
        return None, PlacedProblem("", INVALID_JSON_CODE, f"Not valid JSON: {_TRAILING_AT.sub('', exc.msg)}.",
                                   line, column, line, column + 1)
    except _NotJson as exc:
        start, end = _constant_at(text, str(exc))
        (line, column), (end_line, end_column) = lines.at(start), lines.at(end)
        return None, PlacedProblem("", INVALID_JSON_CODE, f"Not valid JSON: {exc} is not a JSON value.",
                                   line, column, end_line, end_column)
    except RecursionError:
        return None, PlacedProblem("", DetailCode.TOO_DEEP, "The document nests too deeply to read.", 1, 1, 1, 2)
    if not isinstance(value, dict):
        end_line, end_column = lines.at(len(text.rstrip()))
        start_line, start_column = lines.at(_skip(text, 0))
        return None, PlacedProblem("", DetailCode.INVALID_TYPE, "The document must be a JSON object: {…}.",
                                   start_line, start_column, end_line, end_column)
    return value, None


def document_problems(text: str) -> list[PlacedProblem]:
    """A syntax problem, or every problem the services would refuse the document for, placed."""
    values, syntax = parse_document(text)
    if syntax is not None:
        return [syntax]
    problems = configuration_values_problems(values, path="")
    if not problems:
        return []
    spans, lines = source_map(text), _Lines(text)
    placed = []
    for problem in problems:
        start, end = _place(spans, problem.path, problem.code)
        (line, column), (end_line, end_column) = lines.at(start), lines.at(end)
        placed.append(PlacedProblem(problem.path, problem.code, problem.message, line, column, end_line, end_column))
    return placed


class _NotJson(ValueError):
    """NaN, Infinity or -Infinity: Python's JSON reads them, JSON does not have them."""


def _refuse_constant(name: str) -> None:
    raise _NotJson(name)


def _constant_at(text: str, name: str) -> tuple[int, int]:
    """Where the first such constant is: the source map reads them (Python's scanner does)."""
    for span in source_map(text).values():
        start, end = span.value
        if not span.container and text[start:end] == name:
            return start, end
    return 0, 0
