"""Agent provisioning: admit a create-and-deploy job, read its status, retry it (spec §2.10).

``workId`` is the work key, ``agent:<agentId>:provisioned``: its colons are ordinary path
characters (Django's default converter matches anything but ``/``).
"""

from __future__ import annotations

from typing import Any

from django.http import JsonResponse
from ninja import Router

from occ.api.auth import ApiRequest
from occ.api.envelope import respond
from occ.api.routers.deployments import require_no_body
from occ.api.schemas import ResponseSchema, envelope_of
from occ.commands.provisioning import ProvisionCommand
from occ.models import AgentProvisioningWork
from occ.services.provisioning import (
    ProvisioningState,
    provision_admit,
    provisioning_get,
    provisioning_retry,
    provisioning_state,
)
from occ.timestamps import rfc3339

router = Router(tags=["provisioning"])

PROVISION = "/namespaces/{namespace_id}/agents/provision"


class ProvisioningError(ResponseSchema):
    code: str
    message: str


class ProvisioningOut(ResponseSchema):
    workId: str
    status: str
    phase: str
    attemptCount: int
    updatedAt: str
    url: str
    configurationId: str | None = None
    agentId: str | None = None
    revisionId: str | None = None
    error: ProvisioningError | None = None


class ProvisioningAdmitted(ResponseSchema):
    provisioning: ProvisioningOut


ProvisioningEnvelope = envelope_of(ProvisioningOut, "ProvisioningEnvelope")


def provisioning_wire(row: AgentProvisioningWork | ProvisioningState) -> dict[str, Any]:
    """The public provisioning object: result ids only once produced, safe errors only,
    never an input value."""
    state = row if isinstance(row, ProvisioningState) else provisioning_state(row)
    work = state.row.work
    data: dict[str, Any] = {
        "workId": state.row.work_id,
        "status": state.status,
        "phase": state.row.completed_phase,
        "attemptCount": work.attempt_count,
        "updatedAt": rfc3339(max(state.row.updated_at, work.updated_at)),
        "url": f"/namespaces/{state.row.namespace_id}/agents/provision/{state.row.work_id}",
    }
    optional = {"configurationId": state.configuration_id, "agentId": state.agent_id,
                "revisionId": state.revision_id, "error": state.error}
    data.update({key: value for key, value in optional.items() if value is not None})
    return data


@router.post(PROVISION, response={202: envelope_of(ProvisioningAdmitted, "ProvisioningAdmittedEnvelope")})
def provision_agent(request: ApiRequest, namespace_id: str, payload: ProvisionCommand) -> JsonResponse:
    """Queue one provisioning job (no Agent or Configuration yet); a replay returns it again."""
    row, _created = provision_admit(actor=request.auth, namespace_id=namespace_id, command=payload)
    return respond({"provisioning": provisioning_wire(row)}, status=202)


@router.get(PROVISION + "/{work_id}", response={200: ProvisioningEnvelope})
def get_provisioning(request: ApiRequest, namespace_id: str, work_id: str) -> JsonResponse:
    return respond(provisioning_wire(provisioning_get(actor=request.auth, namespace_id=namespace_id,
                                                      work_id=work_id)))


@router.post(PROVISION + "/{work_id}/retry", response={202: ProvisioningEnvelope})
def retry_provisioning(request: ApiRequest, namespace_id: str, work_id: str) -> JsonResponse:
    """Bodyless: requeue failed provisioning with its accepted plan."""
    require_no_body(request)
    return respond(provisioning_wire(provisioning_retry(actor=request.auth, namespace_id=namespace_id,
                                                        work_id=work_id)), status=202)
