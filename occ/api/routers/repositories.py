"""Repository options API: the repositories an Agent may bind and the profiles each allows."""

from __future__ import annotations

from typing import Any

from django.http import JsonResponse
from ninja import Query, Router
from pydantic import Field

from occ.api.auth import ApiRequest
from occ.api.envelope import respond
from occ.api.query import require_known_query
from occ.api.schemas import ResponseSchema, envelope_of
from occ.drivers.repositories import RepositoryOption
from occ.selectors.paging import listed_page
from occ.services.repositories import repository_options

router = Router(tags=["agents"])


class RepositoryOptionOut(ResponseSchema):
    repositoryRef: str = Field(description="owner/name, lowercase: what a binding's repositoryRef names.")
    displayName: str
    allowedProfiles: list[str]
    description: str | None = None


class RepositoryOptionsOut(ResponseSchema):
    repositories: list[RepositoryOptionOut]
    nextCursor: str | None


_CURSOR = Query("", max_length=400, description="A nextCursor from the page before.")
_LIMIT = Query(100, ge=1, le=100)
PAGE_QUERY = frozenset({"cursor", "limit"})


OPTIONS = envelope_of(RepositoryOptionsOut, "RepositoryOptionsEnvelope")


def option_wire(option: RepositoryOption) -> dict[str, Any]:
    wire: dict[str, Any] = {"repositoryRef": option.repository_ref, "displayName": option.display_name,
                            "allowedProfiles": list(option.allowed_profiles)}
    if option.description is not None:
        wire["description"] = option.description
    return wire


@router.get("/namespaces/{namespace_id}/agents/repository-options", response={200: OPTIONS})
def list_repository_options(request: ApiRequest, namespace_id: str, cursor: str = _CURSOR,
                            limit: int = _LIMIT) -> JsonResponse:
    """The repositories a new Agent may bind (``agent:create``), by ``repositoryRef``. Pass
    ``nextCursor`` as ``cursor`` for the next page; it is null on the last. 503
    ``DEPENDENCY_UNAVAILABLE`` when the installation has no repository driver, 503
    ``REPOSITORY_OPTIONS_UNAVAILABLE`` when GitHub cannot be asked (rate limited, revoked
    installation, unreachable)."""
    require_known_query(request, PAGE_QUERY)
    found = repository_options(actor=request.auth, namespace_id=namespace_id)
    return _options_page(found, cursor, limit)


def _options_page(found: list[RepositoryOption], cursor: str, limit: int) -> JsonResponse:
    page, next_cursor = listed_page(found, key=lambda option: option.repository_ref, after=cursor, page_size=limit)
    return respond({"repositories": [option_wire(option) for option in page], "nextCursor": next_cursor})


@router.get("/namespaces/{namespace_id}/agents/{agent_id}/repository-options", response={200: OPTIONS})
def list_agent_repository_options(request: ApiRequest, namespace_id: str, agent_id: str, cursor: str = _CURSOR,
                                  limit: int = _LIMIT) -> JsonResponse:
    """The same, for editing this Agent (``agent:update`` on it)."""
    require_known_query(request, PAGE_QUERY)
    found = repository_options(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id)
    return _options_page(found, cursor, limit)
