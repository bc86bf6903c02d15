from __future__ import annotations

from occ.iam.actor import Actor, Source
from occ.models import Principal


def actor_for_principal_id(principal_id: str, *, source: Source = Source.WORKER) -> Actor | None:
    """An actor for a frozen principal id (work rows, initiator checks); None if gone."""
    principal = Principal.objects.filter(id=principal_id).first()
    return None if principal is None else Actor(principal=principal, source=source)
