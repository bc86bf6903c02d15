"""Pure validators shared by services: they raise InvalidRequest with a JSON pointer."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from django.db import connection

from occ.errors import DetailCode, InvalidRequest, NotFound
from occ.models import Agent, Configuration, Namespace
from occ.wire import NAME_MAX_CODE_POINTS, name_problem


def check_name(value: str, *, path: str = "/name", what: str = "Name") -> None:
    problem = name_problem(value)
    if problem is None:
        return
    code = DetailCode.TOO_LONG if len(value) > NAME_MAX_CODE_POINTS else DetailCode.INVALID_FORMAT
    raise InvalidRequest.at(path, code, f"{what} {problem}.")


# Rows the current transaction holds locked, by model and id (see ``holding``).
HeldRow = Namespace | Agent | Configuration
_held: ContextVar[dict[tuple[type, str], HeldRow] | None] = ContextVar("occ_held_rows", default=None)


@contextmanager
def holding(*rows: HeldRow | None) -> Iterator[None]:
    """Inside a transaction that has locked ``rows`` (``SELECT … FOR UPDATE``, the
    Namespace live) or created them: the services called in the block take these instances
    instead of reading the rows again. No other transaction can change such a row before this
    one ends, and the block must not change them except through these same instances."""
    held = dict(_held.get() or {})
    held.update({(type(row), row.pk): row for row in rows if row is not None})
    token = _held.set(held)
    try:
        yield
    finally:
        _held.reset(token)


def held_row(model: type[HeldRow], pk: str) -> HeldRow | None:
    """The instance ``holding`` lent for this row, while its transaction is still open."""
    held = _held.get()
    if not held or not connection.in_atomic_block:
        return None
    return held.get((model, pk))


def get_live_namespace(namespace_id: str, *, for_update: bool = False) -> Namespace:
    """The Namespace, or NotFound when missing or tombstoned (existence is not revealed)."""
    held = held_row(Namespace, namespace_id)
    if isinstance(held, Namespace):
        return held
    qs = Namespace.objects.live()
    if for_update:
        qs = qs.select_for_update()
    namespace = qs.filter(id=namespace_id).first()
    if namespace is None:
        raise NotFound("The Namespace does not exist.")
    return namespace
