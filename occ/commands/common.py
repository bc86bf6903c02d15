"""Field types shared by commands: names, ids and Secret references."""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated, Any, Literal

from confusable_homoglyphs import confusables
from pydantic import AfterValidator, Field, field_validator
from pydantic.json_schema import SkipJsonSchema

from occ.commands.base import Command, build, one_of, problem
from occ.errors import DetailCode
from occ.ids import IdPrefix, id_pattern, is_valid_id

INLINE_VALUE_MESSAGE = ("Inline Secret values are not accepted. Save each value through the Secrets API "
                        "and send its reference.")
REQUEST_LOCAL_MESSAGE = ("Request-local provisioning-secret references are not accepted. Save the value as a "
                         "Secret and reference it.")
NAME_MAX_CODE_POINTS = 200
_CONTROL = re.compile(r"[\u0000-\u001f\u007f]")
# Characters that draw nothing or reorder what follows, so that one name can look like another
# in the console: zero-width space, non-joiner and joiner, the byte order mark; the bidirectional
# embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069) and the direction marks.
INVISIBLE = re.compile(r"[\u200b-\u200f\u202a-\u202e\u2066-\u2069\u061c\ufeff]")
# More that draw nothing and that no normal form removes: the combining grapheme joiner, the
# Hangul fillers, the Khmer inherent vowels, the variation selectors and the braille blank.
# (Every format character, general category Cf, is refused as well: the soft hyphen, the word
# joiner and invisible operators, the tag characters, the Mongolian vowel separator ...)
_BLANK = re.compile("[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180d\u2800\u3164\uffa0"
                    "\ufe00-\ufe0f\U000e0100-\U000e01ef]")


def is_invisible(value: str) -> bool:
    return bool(INVISIBLE.search(value) or _BLANK.search(value)
                or any(unicodedata.category(char) == "Cf" for char in value))


def normal_name(value: str) -> str:
    """The form a name is kept in: Unicode NFC, so that "café" is one name however it was typed."""
    return unicodedata.normalize("NFC", value)


def name_problem(value: str) -> str | None:
    """Why ``value`` is not a valid resource name, or None. Names are never stripped; a name is
    checked in its NFC form (``normal_name``). One rule for the API, the console and the CLI
    (both of which send names through the API)."""
    if len(value) == 0:
        return "must not be empty"
    if len(value) > NAME_MAX_CODE_POINTS:
        return f"must be at most {NAME_MAX_CODE_POINTS} characters"
    if value != value.strip():
        return "must not start or end with whitespace"
    if _CONTROL.search(value):
        return "must not contain control characters"
    if is_invisible(value):
        return "must not contain invisible or text-direction characters (such as U+200B or U+202E)"
    if not is_unicode_text(value):
        return None  # refused by the caller in its own words
    value = normal_name(value)
    if unicodedata.normalize("NFKC", value) != value:
        return ("must not contain compatibility characters such as fullwidth letters or ligatures; "
                f"write {unicodedata.normalize('NFKC', value)!r} instead")
    if confusables.is_dangerous(value):
        return ("must not mix scripts with letters that look alike (such as a Cyrillic a "
                "among Latin letters); write it in one script")
    return None


def is_unicode_text(value: str) -> bool:
    """False for strings holding lone surrogates, which no database can store."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_name(value: str) -> str:
    found = name_problem(value)
    if found is not None:
        code = DetailCode.TOO_LONG if len(value) > NAME_MAX_CODE_POINTS else DetailCode.INVALID_FORMAT
        raise problem(code, f"Name {found}.")
    if not is_unicode_text(value):
        raise problem(DetailCode.INVALID_VALUE, "Name must be valid Unicode text.")
    return normal_name(value)


def _id_of(prefix: IdPrefix, message: str) -> Any:
    def check(value: str) -> str:
        if not is_valid_id(value, prefix):
            raise problem(DetailCode.INVALID_FORMAT, message)
        return value
    return AfterValidator(check)


# A resource name: 1..200 code points in NFC, no surrounding whitespace, no control characters,
# nothing invisible or reordering, no compatibility forms, no mixed-script look-alikes.
Name = Annotated[str, AfterValidator(_check_name),
                 Field(json_schema_extra={"minLength": 1, "maxLength": NAME_MAX_CODE_POINTS})]
ConfigurationId = Annotated[str, _id_of(IdPrefix.CONFIGURATION,
                                        "configurationId must be a Configuration id (cfg_...)."),
                            Field(json_schema_extra={"pattern": id_pattern(IdPrefix.CONFIGURATION).pattern})]
SecretId = Annotated[str, _id_of(IdPrefix.SECRET, "id must be a Secret id (sec_...)."),
                     Field(json_schema_extra={"pattern": id_pattern(IdPrefix.SECRET).pattern})]


class SecretRef(Command):
    """A reference to an ordinary Secret of the caller's Namespace, never its value."""

    kind: Annotated[Literal["secret"], one_of("secret", message='A Secret reference\'s kind must be "secret".')]
    namespace_id: str
    id: SecretId
    # Not part of the shape: named only to refuse it with the rule's own words.
    value: SkipJsonSchema[Any] = Field(default=None, exclude=True)

    @classmethod
    def to(cls, namespace_id: str, secret_id: str) -> SecretRef:
        """The reference to ``secret_id`` of ``namespace_id`` (``InvalidRequest`` when it is not a
        Secret id)."""
        return build(cls, kind="secret", namespace_id=namespace_id, id=secret_id)

    @field_validator("kind", mode="before")
    @classmethod
    def _request_local(cls, value: object) -> object:
        if value == "provisioning-secret":
            raise problem(DetailCode.INVALID_VALUE, REQUEST_LOCAL_MESSAGE)
        return value

    @field_validator("value", mode="before")
    @classmethod
    def _no_value(cls, value: object) -> object:
        raise problem(DetailCode.UNKNOWN_FIELD, INLINE_VALUE_MESSAGE)
