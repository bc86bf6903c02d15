"""Configurations: list (keyset pages), create, get, patch (guarded by an optional If-Match), delete."""

from __future__ import annotations

import re
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from ninja import Query, Router
from pydantic import Field

from occ.api.auth import ApiRequest
from occ.api.envelope import no_content, respond
from occ.api.query import require_known_query
from occ.api.schemas import ResponseSchema, envelope_of
from occ.api.wire import secret_bindings_wire
from occ.commands.configurations import ConfigurationCreate, ConfigurationUpdate
from occ.errors import InvalidRequest
from occ.models import Configuration
from occ.selectors.configurations import ConfigurationPage, configuration_get, configuration_page
from occ.services.configurations import configuration_create, configuration_delete, configuration_update
from occ.timestamps import rfc3339

router = Router(tags=["configurations"])


class SecretBindingSourceOut(ResponseSchema):
    kind: str
    namespaceId: str
    id: str


class SecretBindingDeliveryOut(ResponseSchema):
    type: str


class SecretBindingOut(ResponseSchema):
    source: SecretBindingSourceOut
    delivery: SecretBindingDeliveryOut


class ConfigurationOut(ResponseSchema):
    id: str
    name: str = Field(description="Unique in the Namespace.")
    namespaceId: str
    kind: str
    generation: int
    values: dict[str, Any]
    secretBindings: dict[str, SecretBindingOut]
    createdAt: str
    updatedAt: str


ConfigurationEnvelope = envelope_of(ConfigurationOut, "ConfigurationEnvelope")


class AgentNameOut(ResponseSchema):
    id: str
    name: str


class ConfigurationSummaryOut(ResponseSchema):
    id: str
    name: str
    generation: int
    model: str | None
    agents: list[AgentNameOut]
    hiddenAgents: int
    createdAt: str
    updatedAt: str


class ConfigurationPageOut(ResponseSchema):
    configurations: list[ConfigurationSummaryOut]
    nextCursor: str | None


def configuration_page_wire(page: ConfigurationPage) -> dict[str, Any]:
    return {
        "configurations": [{
            "id": row.id, "name": row.name, "generation": row.generation, "model": row.model,
            "agents": [{"id": agent.id, "name": agent.name} for agent in row.agents],
            "hiddenAgents": row.hidden_agents,
            "createdAt": rfc3339(row.created_at), "updatedAt": rfc3339(row.updated_at),
        } for row in page.rows],
        "nextCursor": page.next_cursor,
    }

_IF_MATCH = re.compile(r'^(?:"(\d{1,10})"|(\d{1,10}))$')


def configuration_wire(configuration: Configuration) -> dict[str, Any]:
    return {
        "id": configuration.id,
        "name": configuration.name,
        "namespaceId": configuration.namespace_id,
        "kind": configuration.kind,
        "generation": configuration.generation,
        "values": configuration.values,
        "secretBindings": secret_bindings_wire(configuration),
        "createdAt": rfc3339(configuration.created_at),
        "updatedAt": rfc3339(configuration.updated_at),
    }


def _respond_with_etag(configuration: Configuration, status: int = 200) -> JsonResponse:
    response = respond(configuration_wire(configuration), status=status)
    response["ETag"] = f'"{configuration.generation}"'
    return response


def _expected_generation(request: HttpRequest) -> int | None:
    """The generation an If-Match header demands: ``"3"`` (or ``3``); ``*`` or none demands nothing."""
    raw = request.headers.get("If-Match")
    if raw is None or raw.strip() == "*":
        return None
    match = _IF_MATCH.fullmatch(raw.strip())
    if match is None:
        raise InvalidRequest('If-Match must be the configuration generation you read, such as "3".')
    return int(match.group(1) or match.group(2))


@router.get("/namespaces/{namespace_id}/configurations",
            response={200: envelope_of(ConfigurationPageOut, "ConfigurationPageEnvelope")})
def list_configurations(request: ApiRequest, namespace_id: str,
                        cursor: str = Query("", max_length=200, description="A nextCursor from the page before."),
                        limit: int = Query(50, ge=1, le=100)) -> JsonResponse:
    """The Namespace's Configurations the caller may read (``configuration:read`` on each, and
    ``namespace:read``), most recently changed first, with the Agents that use each (those the
    caller may read, by name; ``hiddenAgents`` counts the others). Pass ``nextCursor`` as
    ``cursor`` for the next page; it is null on the last."""
    require_known_query(request, frozenset({"cursor", "limit"}))
    page = configuration_page(actor=request.auth, namespace_id=namespace_id, after=cursor, page_size=limit)
    return respond(configuration_page_wire(page))


@router.post("/namespaces/{namespace_id}/configurations", response={201: ConfigurationEnvelope})
def create_configuration(request: ApiRequest, namespace_id: str, payload: ConfigurationCreate) -> JsonResponse:
    configuration = configuration_create(actor=request.auth, namespace_id=namespace_id, command=payload)
    return _respond_with_etag(configuration, status=201)


@router.get("/namespaces/{namespace_id}/configurations/{configuration_id}", response={200: ConfigurationEnvelope})
def get_configuration(request: ApiRequest, namespace_id: str, configuration_id: str) -> JsonResponse:
    return _respond_with_etag(configuration_get(actor=request.auth, namespace_id=namespace_id,
                                                configuration_id=configuration_id))


@router.patch("/namespaces/{namespace_id}/configurations/{configuration_id}", response={200: ConfigurationEnvelope})
def patch_configuration(request: ApiRequest, namespace_id: str, configuration_id: str,
                        payload: ConfigurationUpdate) -> JsonResponse:
    configuration = configuration_update(actor=request.auth, namespace_id=namespace_id,
                                         configuration_id=configuration_id, command=payload,
                                         expected_generation=_expected_generation(request))
    return _respond_with_etag(configuration)


@router.delete("/namespaces/{namespace_id}/configurations/{configuration_id}", response={204: None})
def delete_configuration(request: ApiRequest, namespace_id: str, configuration_id: str) -> HttpResponse:
    configuration_delete(actor=request.auth, namespace_id=namespace_id, configuration_id=configuration_id)
    return no_content()
