"""Pure validators shared by services: they raise InvalidRequest with a JSON pointer."""

from __future__ import annotations

from django.db import transaction

from occ.commands.common import NAME_MAX_CODE_POINTS, name_problem
from occ.errors import DetailCode, InvalidRequest, NotFound
from occ.models import Namespace


def check_name(value: str, *, path: str = "/name", what: str = "Name") -> None:
    problem = name_problem(value)
    if problem is None:
        return
    code = DetailCode.TOO_LONG if len(value) > NAME_MAX_CODE_POINTS else DetailCode.INVALID_FORMAT
    raise InvalidRequest.at(path, code, f"{what} {problem}.")


def get_live_namespace(namespace_id: str, *, for_update: bool = False) -> Namespace:
    """The Namespace, or NotFound when missing or tombstoned (existence is not revealed);
    ``for_update``: locked exclusively until the transaction ends."""
    qs = Namespace.objects.live()
    if for_update:
        qs = qs.select_for_update()
    namespace = qs.filter(id=namespace_id).first()
    if namespace is None:
        raise NotFound("The Namespace does not exist.")
    return namespace


def held_or_locked_namespace(namespace_id: str, held: Namespace | None) -> Namespace:
    """``held``, the live Namespace that the caller's transaction has already locked (a fenced
    worker step holds it ``FOR SHARE``), or else the Namespace locked ``FOR UPDATE`` now."""
    if held is None:
        return get_live_namespace(namespace_id, for_update=True)
    check_held_namespace(held, namespace_id)
    return held


def check_held_namespace(row: Namespace, namespace_id: str) -> None:
    """A row passed in as held: the caller's transaction is open and it is this Namespace."""
    if row.id != namespace_id or not transaction.get_connection().in_atomic_block:
        raise ValueError("a held row belongs to the caller's open transaction and to this Namespace")
