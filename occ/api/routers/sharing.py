"""``/namespaces/{ns}/agents/{id}/shares``: Share this Agent (issue 26). Who has access to the
Agent and why, give a person or a service principal a level (chat, deploy, administer), revoke
a direct share. Every route needs ``administer:agent`` on the Agent."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse, JsonResponse
from ninja import Query, Router
from pydantic import Field

from occ.api.auth import ApiRequest
from occ.api.envelope import no_content, respond
from occ.api.query import require_known_query
from occ.api.schemas import ResponseSchema, envelope_of
from occ.commands.iam import AgentShare
from occ.models import PrincipalKind
from occ.selectors.agent_sharing import AccessEntry, agent_access_page, agent_share_subject_page, level_of
from occ.services.agent_sharing import agent_share, agent_unshare

router = Router(tags=["sharing"])

SHARES = "/namespaces/{namespace_id}/agents/{agent_id}/shares"


class ShareOut(ResponseSchema):
    bindingId: str
    subjectId: str
    subjectName: str
    subjectKind: str
    roleName: str
    level: str
    source: str
    revocable: bool


def share_wire(entry: AccessEntry) -> dict[str, Any]:
    return {"bindingId": entry.binding_id, "subjectId": entry.principal_id, "subjectName": entry.principal_name,
            "subjectKind": entry.principal_kind, "roleName": entry.role_name, "level": entry.level,
            "source": entry.source, "revocable": entry.revocable}


_CURSOR = Query("", max_length=200, description="A nextCursor from the page before.")
_LIMIT = Query(50, ge=1, le=100)
PAGE_QUERY = frozenset({"cursor", "limit"})


class SharePageOut(ResponseSchema):
    shares: list[ShareOut]
    nextCursor: str | None


@router.get(SHARES, response={200: envelope_of(SharePageOut, "AgentSharePageEnvelope")})
def list_shares(request: ApiRequest, namespace_id: str, agent_id: str, cursor: str = _CURSOR,
                limit: int = _LIMIT) -> JsonResponse:
    """Everyone with access to the Agent and why: ``level`` (``administer``, ``deploy``,
    ``chat``, ``see``) and ``source`` (``direct``: shared on this Agent, revocable here;
    ``namespace``: a Role on its Namespace; ``installation``: an Installation Role). Oldest
    binding first; pass ``nextCursor`` as ``cursor`` for the next page; it is null on the last."""
    require_known_query(request, PAGE_QUERY)
    entries, next_cursor = agent_access_page(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id,
                                             after=cursor, page_size=limit)
    return respond({"shares": [share_wire(entry) for entry in entries], "nextCursor": next_cursor})


class ShareSubjectOut(ResponseSchema):
    id: str
    name: str
    kind: str = Field(description="human (a person) or service (a service principal).")


class ShareSubjectPageOut(ResponseSchema):
    subjects: list[ShareSubjectOut]
    nextCursor: str | None


@router.get(SHARES + "/subjects", response={200: envelope_of(ShareSubjectPageOut, "AgentShareSubjectPageEnvelope")})
def list_share_subjects(request: ApiRequest, namespace_id: str, agent_id: str, cursor: str = _CURSOR,
                        limit: int = _LIMIT) -> JsonResponse:
    """Whom the Agent can be shared with (the Share form's choices): every active person, and
    the service principals of the Installation or of the Agent's Namespace, by name; ``id`` is
    the ``subjectId`` to share with. Pass ``nextCursor`` as ``cursor`` for the next page; it is
    null on the last."""
    require_known_query(request, PAGE_QUERY)
    subjects, next_cursor = agent_share_subject_page(actor=request.auth, namespace_id=namespace_id,
                                                     agent_id=agent_id, after=cursor, page_size=limit)
    return respond({"subjects": [{"id": p.id, "name": p.name,
                                  "kind": "human" if p.kind == PrincipalKind.HUMAN else "service"}
                                 for p in subjects], "nextCursor": next_cursor})


@router.post(SHARES, response={200: envelope_of(ShareOut, "AgentShareEnvelope")})
def create_share(request: ApiRequest, namespace_id: str, agent_id: str, payload: AgentShare) -> JsonResponse:
    """Share the Agent with ``subjectId`` (a person, or a service principal of the Installation or
    this Namespace) at ``level``; a direct share at another level is replaced. Audited."""
    binding = agent_share(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id, command=payload)
    principal = binding.principal
    return respond({"bindingId": binding.id, "subjectId": principal.id, "subjectName": principal.name,
                    "subjectKind": principal.kind, "roleName": binding.role.name,
                    "level": level_of(binding.role.permissions) or payload.level, "source": "direct",
                    "revocable": True})


@router.delete(SHARES + "/{binding_id}", response={204: None})
def delete_share(request: ApiRequest, namespace_id: str, agent_id: str, binding_id: str) -> HttpResponse:
    """Revoke one direct share; access through a Namespace or Installation Role stays. Audited."""
    agent_unshare(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id, binding_id=binding_id)
    return no_content()
