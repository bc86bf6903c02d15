"""Presets: list (keyset pages by name), create, get, patch, delete, render (the one renderer: a
Preset and the values of its variables -> the body of an Agent provisioning request, without its
requestId), and "Save as preset" (a Preset made from an Agent's current draft)."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse, JsonResponse
from ninja import Query, Router

from occ.api.auth import ApiRequest
from occ.api.envelope import no_content, respond
from occ.api.query import require_known_query
from occ.api.schemas import ResponseSchema, envelope_of
from occ.commands.presets import PresetCreate, PresetFromAgent, PresetRender, PresetUpdate
from occ.models import Preset
from occ.selectors.presets import preset_get, preset_page, preset_render
from occ.services.presets import preset_create, preset_create_from_agent, preset_delete, preset_update
from occ.timestamps import rfc3339

router = Router(tags=["presets"])
PRESETS = "/namespaces/{namespace_id}/presets"
PRESET = PRESETS + "/{preset_id}"


class PresetOut(ResponseSchema):
    id: str
    namespaceId: str
    name: str
    template: dict[str, Any]
    createdAt: str
    updatedAt: str


class PresetSummaryOut(ResponseSchema):
    id: str
    name: str
    variables: list[str]
    createdAt: str
    updatedAt: str


class PresetPageOut(ResponseSchema):
    presets: list[PresetSummaryOut]
    nextCursor: str | None


class RenderedOut(ResponseSchema):
    request: dict[str, Any]
    needsCredential: bool
    harnessAuthMethod: str | None


PresetEnvelope = envelope_of(PresetOut, "PresetEnvelope")


def preset_wire(preset: Preset) -> dict[str, Any]:
    return {"id": preset.id, "namespaceId": preset.namespace_id, "name": preset.name, "template": preset.template,
            "createdAt": rfc3339(preset.created_at), "updatedAt": rfc3339(preset.updated_at)}


def _summary_wire(preset: Preset) -> dict[str, Any]:
    return {"id": preset.id, "name": preset.name, "variables": sorted(preset.spec.variables),
            "createdAt": rfc3339(preset.created_at), "updatedAt": rfc3339(preset.updated_at)}


@router.get(PRESETS, response={200: envelope_of(PresetPageOut, "PresetPageEnvelope")})
def list_presets(request: ApiRequest, namespace_id: str,
                 cursor: str = Query("", max_length=400, description="A nextCursor from the page before."),
                 limit: int = Query(50, ge=1, le=100)) -> JsonResponse:
    """The Namespace's Presets the caller may read (``preset:read`` on each, and
    ``namespace:read``), by name. Pass ``nextCursor`` as ``cursor`` for the next page; it is
    null on the last."""
    require_known_query(request, frozenset({"cursor", "limit"}))
    page = preset_page(actor=request.auth, namespace_id=namespace_id, after=cursor, page_size=limit)
    return respond({"presets": [_summary_wire(p) for p in page.rows], "nextCursor": page.next_cursor})


@router.post(PRESETS, response={201: PresetEnvelope})
def create_preset(request: ApiRequest, namespace_id: str, payload: PresetCreate) -> JsonResponse:
    """A template may leave out the Namespace of the Secrets it names (this one is filled in);
    a password variable stands only for ``agent.harnessAuth.secret``, never a credential."""
    preset = preset_create(actor=request.auth, namespace_id=namespace_id, command=payload)
    return respond(preset_wire(preset), status=201)


@router.get(PRESET, response={200: PresetEnvelope})
def get_preset(request: ApiRequest, namespace_id: str, preset_id: str) -> JsonResponse:
    return respond(preset_wire(preset_get(actor=request.auth, namespace_id=namespace_id, preset_id=preset_id)))


@router.patch(PRESET, response={200: PresetEnvelope})
def patch_preset(request: ApiRequest, namespace_id: str, preset_id: str, payload: PresetUpdate) -> JsonResponse:
    """An omitted field keeps its value; a supplied template replaces the whole template."""
    preset = preset_update(actor=request.auth, namespace_id=namespace_id, preset_id=preset_id, command=payload)
    return respond(preset_wire(preset))


@router.delete(PRESET, response={204: None})
def delete_preset(request: ApiRequest, namespace_id: str, preset_id: str) -> HttpResponse:
    """Agents, Configurations and Secrets made from the Preset stay."""
    preset_delete(actor=request.auth, namespace_id=namespace_id, preset_id=preset_id)
    return no_content()


@router.post(PRESET + "/render", response={200: envelope_of(RenderedOut, "PresetRenderEnvelope")})
def render_preset(request: ApiRequest, namespace_id: str, preset_id: str, payload: PresetRender) -> JsonResponse:
    """Render the Preset (``preset:read``): ``variables`` fill its variables (omitted: their
    defaults), ``credentials`` name the Secret of each password variable. The answer's
    ``request`` is the body of ``POST …/agents/provisioning`` without ``requestId``; when
    ``needsCredential`` is true it lacks ``harnessAuth`` (add one with ``harnessAuthMethod``).
    Rendering creates and checks nothing else: the provisioning API judges the result."""
    launch = preset_render(actor=request.auth, namespace_id=namespace_id, preset_id=preset_id, command=payload)
    return respond({"request": launch.request(), "needsCredential": launch.needs_credential,
                    "harnessAuthMethod": launch.harness_auth.method if launch.harness_auth else None})


@router.post("/namespaces/{namespace_id}/agents/{agent_id}/save-as-preset", response={201: PresetEnvelope})
def save_agent_as_preset(request: ApiRequest, namespace_id: str, agent_id: str,
                         payload: PresetFromAgent) -> JsonResponse:
    """Save the Agent as a Preset named ``name`` (the console's "Save as preset"): its
    Configuration's values and Secret bindings, its model credential's Secret, execution mode and
    plugins, no variables. Needs read on the Agent and its Configuration and ``preset:create``; a
    Secret's value is never read, and nothing made from the Preset refers back to the Agent."""
    preset = preset_create_from_agent(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id,
                                      command=payload)
    return respond(preset_wire(preset), status=201)
