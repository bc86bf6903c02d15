"""Pure validators shared by services: they raise InvalidRequest with a JSON pointer."""

from __future__ import annotations

from occ.commands.common import NAME_MAX_CODE_POINTS, name_problem
from occ.errors import DetailCode, InvalidRequest, NotFound
from occ.models import Namespace
from occ.services.locks import held_row


def check_name(value: str, *, path: str = "/name", what: str = "Name") -> None:
    problem = name_problem(value)
    if problem is None:
        return
    code = DetailCode.TOO_LONG if len(value) > NAME_MAX_CODE_POINTS else DetailCode.INVALID_FORMAT
    raise InvalidRequest.at(path, code, f"{what} {problem}.")


def get_live_namespace(namespace_id: str, *, for_update: bool = False) -> Namespace:
    """The Namespace, or NotFound when missing or tombstoned (existence is not revealed).
    Inside ``holding`` it is the lent instance, already locked by the caller."""
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
