from __future__ import annotations

from typing import Any

from django.http import JsonResponse
from ninja import Router

from occ.api.auth import ApiRequest
from occ.api.envelope import respond
from occ.api.plugins_wire import plugin_capabilities_wire
from occ.api.schemas import ResponseSchema, envelope_of
from occ.drivers.channels import channel_drivers
from occ.models import Installation
from occ.selectors.installation import installation_get
from occ.services.plugins import plugin_capabilities
from occ.timestamps import rfc3339

router = Router(tags=["installation"])


class InstallationOut(ResponseSchema):
    id: str
    name: str
    createdAt: str
    capabilities: dict[str, Any]


def installation_wire(installation: Installation) -> dict[str, Any]:
    return {
        "id": installation.id,
        "name": installation.name,
        "createdAt": rfc3339(installation.created_at),
        "capabilities": {"agentProvisioning": {"executionModes": ["embedded"], "channels": sorted(channel_drivers())},
                         **plugin_capabilities_wire(plugin_capabilities())},
    }


@router.get("/installation", response={200: envelope_of(InstallationOut, "InstallationEnvelope")})
def get_installation(request: ApiRequest) -> JsonResponse:
    return respond(installation_wire(installation_get(actor=request.auth)))
