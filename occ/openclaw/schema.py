"""The pinned OpenClaw runtime's own config schema, checked in process.

``openclaw config schema`` prints the JSON Schema (draft 07) of ``openclaw.json`` that the
runtime derives from its own validators. ``make runtime`` (``occ_runtime install``) exports
it to ``schema/openclaw-<version>.schema.json`` beside this module, for the version pinned in
``runtime/openclaw/package.json``; the file is committed so that checking a document needs
neither the runtime nor a gateway, and ``occ_runtime check`` (and a test) compare it with
what the installed runtime prints.

Two things are read differently from a plain draft-07 validator, both to refuse exactly what
the runtime refuses:

- the export describes the parsed config, so a key with a ``default`` is listed as
  ``required``; a document the user writes may leave it out (the runtime fills it in);
- ``pattern``/``patternProperties`` are ECMAScript regular expressions (``\\p{Cs}``), matched
  with ``regress`` as the runtime's JavaScript would.

Messages follow the runtime's own wording (``Unrecognized key: "x"``, ``Invalid input:
expected boolean, received string``) and never quote a value of the document.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import regress
from jsonschema import Draft7Validator, FormatChecker, ValidationError, validators
from jsonschema.protocols import Validator

from occ.runtime import OPENCLAW_PACKAGE, Runtime, RuntimeMissing

SCHEMA_DIR = Path(__file__).resolve().parent / "schema"
# The pin is committed with the repository (the installed runtime is checked against it).
PINNED_PROJECT = Path(__file__).resolve().parents[2] / "runtime" / "openclaw"
EXPORT_TIMEOUT_SECONDS = 120


def pinned_version() -> str:
    version = Runtime.pinned(PINNED_PROJECT, OPENCLAW_PACKAGE)
    if version is None:
        raise RuntimeMissing(f"{PINNED_PROJECT / 'package.json'} pins no {OPENCLAW_PACKAGE} version.")
    return version


def schema_path(version: str | None = None) -> Path:
    return SCHEMA_DIR / f"openclaw-{version or pinned_version()}.schema.json"


# --- export (make runtime) ------------------------------------------------------------------


def export_schema(runtime: Runtime) -> dict[str, Any]:
    """What ``openclaw config schema`` of the installed runtime prints, parsed. Run with an
    empty HOME and state folder, so no config of this machine is read."""
    node, entry = runtime.require()
    with tempfile.TemporaryDirectory(prefix="occ-openclaw-schema-") as folder:
        env = {"PATH": runtime.bin_path(), "HOME": folder, "OPENCLAW_STATE_DIR": os.path.join(folder, "state"),
               "OPENCLAW_CONFIG_PATH": os.path.join(folder, "openclaw.json"), "LANG": "C.UTF-8"}
        try:
            result = subprocess.run(  # noqa: S603 - our pinned runtime, fixed arguments
                [str(node), str(entry), "config", "schema"], capture_output=True, text=True, env=env,
                cwd=folder, timeout=EXPORT_TIMEOUT_SECONDS, check=False)
        except subprocess.TimeoutExpired:
            raise RuntimeMissing(f"`openclaw config schema` took longer than {EXPORT_TIMEOUT_SECONDS} s.") from None
    if result.returncode != 0:
        raise RuntimeMissing(f"`openclaw config schema` failed (exit {result.returncode}).")
    try:
        schema = json.loads(result.stdout)
    except ValueError:
        raise RuntimeMissing("`openclaw config schema` did not print a JSON schema.") from None
    if not isinstance(schema, dict):
        raise RuntimeMissing("`openclaw config schema` did not print a JSON object.")
    return schema


def schema_text(schema: Mapping[str, Any]) -> str:
    """The committed form: compact, keys in the runtime's order, one trailing newline."""
    return json.dumps(schema, ensure_ascii=False, separators=(",", ":")) + "\n"


def read_committed_schema(version: str | None = None) -> dict[str, Any]:
    path = schema_path(version)
    try:
        schema = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise RuntimeMissing(f"The OpenClaw config schema {path.name} is missing or unreadable: run `make runtime` "
                             "and commit the file it writes.") from exc
    return schema if isinstance(schema, dict) else {}


def sync_schema(runtime: Runtime) -> tuple[Path, bool]:
    """Export the installed runtime's schema to its committed file; (path, whether it changed)."""
    installed = Runtime.installed(runtime.openclaw_project, OPENCLAW_PACKAGE)
    if installed != pinned_version():
        raise RuntimeMissing(f"openclaw {installed} is installed but {pinned_version()} is pinned: run `make runtime`.")
    text = schema_text(export_schema(runtime))
    path = schema_path(installed)
    try:
        if path.read_text() == text:
            return path, False
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path, True


# --- checking -------------------------------------------------------------------------------


@functools.cache
def _regex(pattern: str) -> regress.Regex:
    return regress.Regex(pattern, "u")


def _pattern(validator: Validator, pattern: str, instance: object,
             schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    if isinstance(instance, str) and _regex(pattern).find(instance) is None:
        yield ValidationError("Invalid string: must match pattern")


def _pattern_properties(validator: Validator, patterns: Mapping[str, Any], instance: object,
                        schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    assert isinstance(instance, Mapping)
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _regex(pattern).find(key) is not None:
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_keys(instance: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    properties = schema.get("properties") or {}
    patterns = schema.get("patternProperties") or {}
    return [key for key in instance
            if key not in properties and not any(_regex(p).find(key) is not None for p in patterns)]


def _additional_properties(validator: Validator, additional: object, instance: object,
                           schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    assert isinstance(instance, Mapping)
    extras = _additional_keys(instance, schema)
    if additional is False:
        for key in extras:
            # One error per key, at the key: the pointer names what to remove.
            yield ValidationError(f'Unrecognized key: "{key}"', path=[key], validator="additionalProperties")
    elif isinstance(additional, dict):
        for key in extras:
            yield from validator.descend(instance[key], additional, path=key)


# ECMAScript regexes, and additional keys reported one by one; everything else is draft 07.
RuntimeSchemaValidator = validators.extend(Draft7Validator, {
    "pattern": _pattern, "patternProperties": _pattern_properties, "additionalProperties": _additional_properties,
})


def input_view(node: object, *, root: bool = True) -> object:
    """The schema of what a user may write: a property with a ``default`` is not required.

    Nested ``$schema`` keys (the channel plugins' schemas declare draft 07 again) are dropped:
    jsonschema would switch to its stock draft-07 validator there, with Python's regexes.
    """
    if isinstance(node, list):
        return [input_view(item, root=False) for item in node]
    if not isinstance(node, dict):
        return node
    view = {key: input_view(value, root=False) if key not in ("properties", "patternProperties", "definitions",
                                                              "$defs") else _each(value)
            for key, value in node.items() if root or key != "$schema" or not isinstance(value, str)}
    required, properties = view.get("required"), view.get("properties")
    if isinstance(required, list) and isinstance(properties, dict):
        view["required"] = [name for name in required
                            if not (isinstance(properties.get(name), dict) and "default" in properties[name])]
    return view


def _each(named: object) -> object:
    """A map of names to subschemas (a name is never a keyword, even one called ``$schema``)."""
    if not isinstance(named, dict):
        return input_view(named, root=False)
    return {name: input_view(subschema, root=False) for name, subschema in named.items()}


def check_schema(schema: Mapping[str, Any]) -> None:
    """The schema is valid draft 07 (its regexes checked as ECMAScript)."""
    formats = FormatChecker()
    formats.checks("regex", raises=regress.RegressError)(lambda text: not isinstance(text, str) or _regex(text))
    Draft7Validator(Draft7Validator.META_SCHEMA, format_checker=formats).validate(schema)


@functools.cache
def runtime_validator() -> Validator:
    """The validator of the pinned version's committed schema (read once per process)."""
    return RuntimeSchemaValidator(input_view(read_committed_schema()))


# --- what the runtime says ------------------------------------------------------------------


@dataclass(frozen=True)
class SchemaProblem:
    location: tuple[str | int, ...]  # inside the document
    code: str  # a DetailCode
    message: str  # the runtime's wording; never a value of the document


_TYPE_NAMES = {"integer": "number"}  # zod says "number" for an int too
_CODES = {"additionalProperties": "UNKNOWN_FIELD", "required": "REQUIRED", "type": "INVALID_TYPE",
          "pattern": "INVALID_FORMAT", "format": "INVALID_FORMAT", "maxLength": "TOO_LONG", "maxItems": "TOO_LONG",
          "maxProperties": "TOO_LONG"}


def _received(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _expected(schema: object) -> str | None:
    kind = schema.get("type") if isinstance(schema, dict) else None
    if isinstance(kind, str):
        return _TYPE_NAMES.get(kind, kind)
    if isinstance(kind, list):
        return "|".join(_TYPE_NAMES.get(str(k), str(k)) for k in kind)
    return None


def _literal(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def _message(error: ValidationError) -> str:
    keyword, limit = error.validator, error.validator_value
    if keyword == "additionalProperties":
        return error.message
    if keyword == "type":
        return f"Invalid input: expected {_expected(error.schema)}, received {_received(error.instance)}"
    if keyword == "enum" and isinstance(limit, list):
        return "Invalid option: expected one of " + "|".join(_literal(v) for v in limit)
    if keyword == "const":
        return f"Invalid input: expected {_literal(limit)}"
    if keyword in ("minimum", "exclusiveMinimum"):
        return f"Too small: expected number to be {'>=' if keyword == 'minimum' else '>'}{limit}"
    if keyword in ("maximum", "exclusiveMaximum"):
        return f"Too big: expected number to be {'<=' if keyword == 'maximum' else '<'}{limit}"
    if keyword in ("minLength", "maxLength"):
        return f"Too {'small' if keyword == 'minLength' else 'big'}: expected string to have " \
               f"{'>=' if keyword == 'minLength' else '<='}{limit} characters"
    if keyword in ("minItems", "maxItems"):
        return f"Too {'small' if keyword == 'minItems' else 'big'}: expected array to have " \
               f"{'>=' if keyword == 'minItems' else '<='}{limit} items"
    if keyword == "pattern":
        return f"Invalid string: must match pattern /{limit}/"
    return "Invalid input"


def _branch_errors(error: ValidationError) -> Sequence[ValidationError] | None:
    """For a failed ``anyOf``/``oneOf``: the errors of the one branch whose type the value has
    (so ``{"primary": 5}`` is reported at ``primary``), else None (``Invalid input`` here)."""
    branches: dict[int, list[ValidationError]] = {}
    for sub in error.context or ():
        index = sub.relative_schema_path[0]
        if isinstance(index, int):
            branches.setdefault(index, []).append(sub)
    matching = [errors for errors in branches.values()
                if not any(e.validator in ("type", "const", "enum") and not e.relative_path for e in errors)]
    return matching[0] if len(matching) == 1 else None


def _problems(errors: Iterator[ValidationError] | Sequence[ValidationError], prefix: tuple[str | int, ...]
              ) -> Iterator[SchemaProblem]:
    for error in errors:
        location = prefix + tuple(error.relative_path)
        if error.validator in ("anyOf", "oneOf"):
            branch = _branch_errors(error)
            if branch is not None:
                yield from _problems(branch, location)
                continue
        if error.validator == "required" and isinstance(error.instance, Mapping):
            properties = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
            for name in error.validator_value:
                if name not in error.instance:
                    expected = _expected(properties.get(name))
                    yield SchemaProblem((*location, name), "REQUIRED",
                                        f"Invalid input: expected {expected}, received undefined"
                                        if expected else "Invalid input")
            continue
        yield SchemaProblem(location, _CODES.get(str(error.validator), "INVALID_VALUE"), _message(error))


def schema_problems(document: Mapping[str, Any]) -> list[SchemaProblem]:
    """What the pinned runtime's schema refuses in ``document``, each once, in document order."""
    seen: dict[tuple[tuple[str | int, ...], str], SchemaProblem] = {}
    errors = sorted(runtime_validator().iter_errors(document), key=lambda e: [str(p) for p in e.absolute_path])
    for problem in _problems(errors, ()):
        seen.setdefault((problem.location, problem.message), problem)
    return list(seen.values())
