from __future__ import annotations

from occ.errors import NotFound
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import authorize
from occ.models import Installation


def installation_get(*, actor: Actor) -> Installation:
    authorize(actor, Action.READ, Kind.INSTALLATION)
    installation = Installation.objects.first()
    if installation is None:
        raise NotFound("OCC has not been bootstrapped. Run `python manage.py occ_bootstrap`.")
    return installation
