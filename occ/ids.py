"""Server-generated, prefixed UUIDv4 identifiers."""

from __future__ import annotations

import re
import uuid
from enum import StrEnum
from functools import partial


class IdPrefix(StrEnum):
    INSTALLATION = "ins"
    NAMESPACE = "ns"
    CONFIGURATION = "cfg"
    SECRET = "sec"
    AGENT = "agt"
    REVISION = "rev"
    AUDIT = "aud"
    REQUEST = "req"
    PRINCIPAL = "prn"
    SERVICE_PRINCIPAL = "sp"
    ROLE = "role"
    BINDING = "bnd"
    RESTRICTION = "rst"
    SERVICE_KEY = "key"
    CONVERSATION = "cnv"
    PRESET = "pre"
    BUDGET = "bud"
    SESSION = "ses"
    APPROVAL_DECISION = "apd"


_UUID4 = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"


def new_id(prefix: IdPrefix) -> str:
    return f"{prefix.value}_{uuid.uuid4()}"


def id_pattern(prefix: IdPrefix) -> re.Pattern[str]:
    return re.compile(rf"^{prefix.value}_{_UUID4}$")


def is_valid_id(value: object, prefix: IdPrefix) -> bool:
    return isinstance(value, str) and bool(id_pattern(prefix).fullmatch(value))


def id_default(prefix: IdPrefix) -> partial[str]:
    """A serializable default for model fields."""
    return partial(new_id, prefix)
