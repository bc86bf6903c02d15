"""Model discovery API: the models a key can use, for the Create Agent form. Nothing is stored."""

from __future__ import annotations

from typing import Any

from django.http import JsonResponse
from ninja import Router

from occ.api.auth import ApiRequest
from occ.api.envelope import respond
from occ.api.schemas import ResponseSchema, envelope_of
from occ.commands.model_discovery import ModelDiscovery
from occ.drivers.model_providers import DiscoveredModel
from occ.services.model_discovery import models_discover
from occ.timestamps import rfc3339

router = Router(tags=["models"])


class DiscoveredModelOut(ResponseSchema):
    id: str
    displayName: str | None = None
    createdAt: str | None = None


class ModelListOut(ResponseSchema):
    provider: str
    models: list[DiscoveredModelOut]


def model_wire(model: DiscoveredModel) -> dict[str, Any]:
    wire: dict[str, Any] = {"id": model.id}
    if model.display_name is not None:
        wire["displayName"] = model.display_name
    if model.created_at is not None:
        wire["createdAt"] = rfc3339(model.created_at)
    return wire


@router.post("/namespaces/{namespace_id}/agents/models",
             response={200: envelope_of(ModelListOut, "ModelListEnvelope")})
def discover_models(request: ApiRequest, namespace_id: str, payload: ModelDiscovery) -> JsonResponse:
    found = models_discover(actor=request.auth, namespace_id=namespace_id, command=payload)
    return respond({"provider": found.provider, "models": [model_wire(m) for m in found.models]})
