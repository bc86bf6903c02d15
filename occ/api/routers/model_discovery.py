"""Model discovery API: the models a key can use, for the Create Agent form. Nothing is stored."""

from __future__ import annotations

from typing import Annotated, Any

from django.http import JsonResponse
from ninja import Router
from pydantic import StringConstraints

from occ.api.auth import ApiRequest
from occ.api.envelope import respond
from occ.api.schemas import RequestSchema, ResponseSchema, SecretRef, envelope_of
from occ.drivers.model_providers import DiscoveredModel
from occ.services.model_discovery import models_discover
from occ.timestamps import rfc3339

router = Router(tags=["models"])


class ModelDiscoveryIn(RequestSchema):
    """``{provider, apiKey}`` or ``{provider, secretRef}``. ``baseUrl`` may only name the
    provider's configured public endpoint: any other address is refused, never contacted."""

    # Any string: an unknown provider gets MODEL_DISCOVERY_UNSUPPORTED_PROVIDER (enter the ID manually).
    provider: Annotated[str, StringConstraints(max_length=64)]
    apiKey: str | None = None
    secretRef: SecretRef | None = None
    baseUrl: Annotated[str, StringConstraints(max_length=2048)] | None = None


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
def discover_models(request: ApiRequest, namespace_id: str, payload: ModelDiscoveryIn) -> JsonResponse:
    found = models_discover(
        actor=request.auth, namespace_id=namespace_id, provider=payload.provider, api_key=payload.apiKey,
        secret_ref=payload.secretRef.model_dump() if payload.secretRef is not None else None,
        base_url=payload.baseUrl,
    )
    return respond({"provider": found.provider, "models": [model_wire(m) for m in found.models]})
