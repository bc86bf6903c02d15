"""The base of every command, and the one mapping from a pydantic error to ``InvalidRequest``.

A command is the typed input of one service: closed (``extra="forbid"``), strict (nothing is
coerced) and immutable. Its fields are snake_case in Python and camelCase on the wire (the
API's request schemas are these models), so a service never sees a wire dict.

Rules that need no database live on the models: a refused value raises a ``Problem`` (a
``PydanticCustomError`` whose type is one of ``DetailCode``) with a message of ours. Every
entry point turns the resulting ``ValidationError`` into ``InvalidRequest`` with one JSON
pointer per problem through ``invalid_request``.
"""

from __future__ import annotations

import itertools
import math
import types
from collections.abc import Iterable, Iterator, Mapping
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, ValidationInfo, model_validator
from pydantic.alias_generators import to_camel
from pydantic_core import ErrorDetails, InitErrorDetails, PydanticCustomError

from occ.errors import Detail, DetailCode, InvalidRequest, fit_message

C = TypeVar("C", bound=BaseModel)
# A place in a request, as pydantic names it: keys and list indexes from the body's root.
Loc = tuple[str | int, ...]

MAX_DETAILS = 32
GENERIC_MESSAGE = "The request body is not valid."
_OURS = frozenset({DetailCode.REQUIRED, DetailCode.UNKNOWN_FIELD, DetailCode.INVALID_TYPE,
                   DetailCode.INVALID_FORMAT, DetailCode.INVALID_VALUE, DetailCode.TOO_LONG, DetailCode.TOO_DEEP})
_CODE_MESSAGES = {
    DetailCode.REQUIRED: "A required field is missing.",
    DetailCode.UNKNOWN_FIELD: "The request has a field OCC does not accept.",
    DetailCode.INVALID_TYPE: "A field has the wrong type.",
    DetailCode.TOO_LONG: "A field is too long.",
}
# The validation context of wire-shaped input (see ``Command._wire_names_only``).
WIRE: Mapping[str, Any] = {"wire": True}
_TYPE_ERRORS = ("_type", "model_attributes_type", "is_instance_of", "dataclass_type")
NUL_MESSAGE = "Text must not contain NUL characters (U+0000); OCC cannot store them."
SURROGATE_MESSAGE = "Text must be valid Unicode; it holds an unpaired surrogate (U+D800 to U+DFFF)."
NOT_FINITE_MESSAGE = "A number is out of range; OCC stores finite numbers only."


def _text_problem(text: str) -> tuple[str, str] | None:
    if "\x00" in text:
        return DetailCode.INVALID_VALUE, NUL_MESSAGE
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return DetailCode.INVALID_VALUE, SURROGATE_MESSAGE
    return None


def unstorable(value: Any) -> Iterator[tuple[tuple[str | int, ...], str, str]]:
    """``(location, detail code, message)`` for every text or number inside ``value`` that no database can
    store and no JSON can carry: a NUL, a lone surrogate (in a key: the object's location), a
    float that is not finite (``1e400`` reads as infinity). A walk with its own stack, so any depth is safe."""
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), value)]
    while stack:
        loc, item = stack.pop()
        if isinstance(item, str):
            found = _text_problem(item)
            if found:
                yield (loc, *found)
        elif isinstance(item, float):
            if not math.isfinite(item):
                yield loc, DetailCode.INVALID_VALUE, NOT_FINITE_MESSAGE
        elif isinstance(item, Mapping):
            for key, child in reversed(list(item.items())):
                if isinstance(key, str):
                    found = _text_problem(key)
                    if found:  # pointed at the object: the key itself is not fit to echo
                        yield (*loc, "[key]"), found[0], found[1].replace("Text", "A key", 1)
                        continue
                stack.append(((*loc, key), child))
        elif isinstance(item, list | tuple):
            stack.extend(((*loc, index), child) for index, child in reversed(list(enumerate(item))))


class Command(BaseModel):
    # hide_input_in_errors: a refused Secret value must not reach a log through an error's text.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, alias_generator=to_camel,
                              populate_by_name=True, hide_input_in_errors=True)

    @model_validator(mode="before")
    @classmethod
    def _storable(cls, data: Any) -> Any:
        """Every command refuses, at its place, what no database stores (``unstorable``): a
        NUL in a Configuration's values would otherwise reach PostgreSQL and fail there."""
        if isinstance(data, Mapping):
            lines: list[InitErrorDetails] = [
                {"type": PydanticCustomError(code, message), "loc": loc, "input": None}
                for loc, code, message in itertools.islice(unstorable(data), MAX_DETAILS)]
            if lines:
                raise ValidationError.from_exception_data("command", lines)
        return data

    @model_validator(mode="before")
    @classmethod
    def _wire_names_only(cls, data: Any, info: ValidationInfo) -> Any:
        """On the wire (an API body, which django-ninja validates with a context, or ``parse``) a
        field goes by its camelCase name only: its Python name is an unknown field there, as it
        was before the commands became the request schemas. Python callers may use either."""
        if info.context is None or not isinstance(data, Mapping):
            return data
        for name, field in cls.model_fields.items():
            if field.alias and field.alias != name and name in data:
                raise located((name,), "extra_forbidden", "Extra inputs are not permitted", data[name])
        return data

    def sent(self, field: str) -> bool:
        """Whether the caller gave ``field`` (PATCH: an omitted field keeps its value)."""
        return field in self.model_fields_set

    def refused(self, field: str, message: str, code: str = DetailCode.INVALID_VALUE) -> InvalidRequest:
        """The 400 for a rule a service checked against the database (a referenced row does
        not exist), at ``field``: the service names the Python field, the detail its wire place."""
        return refusal((type(self).model_fields[field].alias or field,), code, message)


def problem(code: str, message: str) -> PydanticCustomError:
    """A refused value with our own message; raise it inside a validator."""
    return PydanticCustomError(code, message)


def one_of(*allowed: str, message: str) -> BeforeValidator:
    """For a ``Literal`` field: a string outside ``allowed`` is refused with ``message``
    (INVALID_VALUE), anything but a string as INVALID_TYPE."""
    def check(value: object) -> object:
        if not isinstance(value, str):
            raise problem(DetailCode.INVALID_TYPE, "Expected a string.")
        if value not in allowed:
            raise problem(DetailCode.INVALID_VALUE, message)
        return value
    return BeforeValidator(check)


def detail_code(error: ErrorDetails | Mapping[str, Any]) -> str:
    error_type = str(error.get("type", ""))
    if error_type in _OURS:
        return error_type
    if error_type == "missing":
        return DetailCode.REQUIRED
    if error_type == "extra_forbidden":
        return DetailCode.UNKNOWN_FIELD
    if error_type in ("string_too_long", "too_long", "list_too_long", "dict_too_long"):
        return DetailCode.TOO_LONG
    if error_type in ("string_pattern_mismatch", "string_too_short", "too_short"):
        return DetailCode.INVALID_FORMAT
    if error_type.endswith(_TYPE_ERRORS) or error_type in ("dict_type", "list_type", "model_type", "none_required"):
        return DetailCode.INVALID_TYPE
    return DetailCode.INVALID_VALUE


def pointer(loc: Iterable[str | int]) -> str:
    """A JSON pointer (RFC 6901) from a pydantic location (``[key]`` marks a dict key's own error)."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in loc if p != "[key]")


def _held_model(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
    """The model a field holds, and whether it holds it in a map or a list (its key or index
    comes first in a location); ``(None, False)`` for anything else."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _held_model(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        held = [_held_model(arg) for arg in get_args(annotation) if arg is not type(None)]
        return next((found for found in held if found[0] is not None), (None, False))
    if origin in (dict, list):
        return _held_model(get_args(annotation)[-1])[0], True
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    return None, False


def place(command: type[BaseModel], path: str) -> Loc:
    """Where a refusal's JSON pointer lands in ``command``, in Python names (the inverse of
    ``pointer``): a field's wire name becomes its Python name, down through the commands it
    holds; a map's keys, a list's indexes and what lies inside a plain value stay as sent."""
    model: type[BaseModel] | None = command
    keyed = False  # the next part is a key (or an index) of the map (or list) ``model`` is held in
    found: list[str | int] = []
    for part in (p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]):
        names = {} if model is None or keyed else {f.alias or n: n for n, f in model.model_fields.items()}
        name = names.get(part) or (part if part in names.values() else None)
        found.append(name or part)
        if keyed:
            keyed = False
        elif model is not None and name is not None:
            model, keyed = _held_model(model.model_fields[name].annotation)
        else:
            model = None
    return tuple(found)


def invalid_request(errors: Iterable[ErrorDetails | Mapping[str, Any]], *, skip: int = 0) -> InvalidRequest:
    """The documented 400: one detail per problem; the message is the first problem's when it is
    ours, else a generic one (pydantic's own texts are not the wire's). ``skip`` drops leading
    location parts that are not the body's (a framework's ``("body", "payload")``)."""
    errors = list(errors)
    details = [Detail(detail_code(e), pointer(tuple(e.get("loc", ()))[skip:])) for e in errors]
    first = errors[0] if errors else {}
    if first.get("type") in _OURS:
        message = str(first.get("msg"))
    else:
        message = _CODE_MESSAGES.get(details[0].code, GENERIC_MESSAGE) if details else GENERIC_MESSAGE
    if len(errors) > 1:
        message = f"The request has {len(errors)} problems; see details. First: {message}"
    return InvalidRequest(fit_message(message), details=details[:MAX_DETAILS])


def parse(command: type[C], data: Any) -> C:
    """``command`` from wire-shaped ``data`` (camelCase), or ``InvalidRequest``: for entry points
    that hold a dict (a form, a stored plan) rather than a validated body."""
    try:
        return command.model_validate(data, context=WIRE)
    except ValidationError as exc:
        raise invalid_request(exc.errors()) from None


def build(command: type[C], **fields: Any) -> C:
    """``command`` from Python field values, or ``InvalidRequest`` (for a form's input). The
    details point at the wire names, as for the same input sent to the API."""
    known = command.model_fields
    return parse(command, {(known[name].alias or name) if name in known else name: value
                           for name, value in fields.items()})


def details_at(locs: Iterable[Loc], code: str) -> list[Detail]:
    """Details naming places in a command (a rule that needed the database, such as a
    referenced Secret that does not exist)."""
    return [Detail(code, pointer(loc)) for loc in locs]


def located(loc: Loc, code: str, message: str, value: Any = None) -> ValidationError:
    """Raise inside a validator to refuse a part of the value (pydantic prefixes the location
    with the field's own)."""
    line: InitErrorDetails = {"type": PydanticCustomError(code, message), "loc": loc, "input": value}
    return ValidationError.from_exception_data("command", [line])


def refusal(loc: tuple[str | int, ...], code: str, message: str) -> InvalidRequest:
    """The 400 for a rule checked after parsing (one that compares the command with the route),
    mapped like every other problem."""
    return invalid_request([{"type": code, "loc": loc, "msg": message}])
