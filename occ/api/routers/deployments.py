"""Deploy an Agent, read a deployment's status, and ask for its runtime diagnostics."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, JsonResponse
from ninja import Header, Router

from occ.api.auth import ApiRequest
from occ.api.envelope import respond
from occ.api.routers.revisions import RevisionEnvelope
from occ.api.schemas import ResponseSchema, envelope_of
from occ.api.wire import deployment_status_wire, diagnostics_wire, revision_wire
from occ.errors import InvalidRequest
from occ.selectors.deployments import deployment_diagnose, deployment_get, deployment_status
from occ.services.deploy import agent_deploy, agent_redeploy
from occ.services.finalization import deployment_finalization_retry

router = Router(tags=["deployments"])

AGENT = "/namespaces/{namespace_id}/agents/{agent_id}"


def require_no_body(request: HttpRequest) -> None:
    """Bodyless POST routes refuse any body, even ``{}``."""
    if request.body:
        raise InvalidRequest("This request does not take a body.")


class DeploymentError(ResponseSchema):
    code: str
    message: str
    data: dict[str, Any] | None = None


class LastAttempt(ResponseSchema):
    at: str
    code: str
    message: str


class DeploymentProgress(ResponseSchema):
    lastAttempt: LastAttempt | None
    nextAttemptAt: str | None


class DeploymentWarning(ResponseSchema):
    code: str
    pluginId: str


class DeploymentOut(ResponseSchema):
    deploymentId: str
    namespaceId: str
    agentId: str
    status: str
    error: DeploymentError | None
    warnings: list[DeploymentWarning]
    progress: DeploymentProgress | None


class DiagnosticCheckOut(ResponseSchema):
    component: str
    check: str
    state: str
    checkedAt: str | None
    code: str | None = None


class DiagnosticsOut(ResponseSchema):
    revisionId: str
    observedAt: str
    checks: list[DiagnosticCheckOut]


@router.post(AGENT + "/deploy", response={202: RevisionEnvelope})
def deploy_agent(request: ApiRequest, namespace_id: str, agent_id: str,
                 idempotency_key: str | None = Header(default=None, alias="Idempotency-Key")) -> JsonResponse:
    """Admit the next immutable revision; ``data.id`` is the deployment id to poll."""
    require_no_body(request)
    revision = agent_deploy(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id,
                            idempotency_key=idempotency_key)
    return respond(revision_wire(revision), status=202)


@router.post(AGENT + "/revisions/{revision_id}/redeploy",
             response={202: RevisionEnvelope})
def redeploy_revision(request: ApiRequest, namespace_id: str, agent_id: str, revision_id: str,
                      idempotency_key: str | None = Header(default=None, alias="Idempotency-Key")) -> JsonResponse:
    """Bodyless: admit the next revision from this revision's snapshot (a rollback), deployed
    like any other (``data.id`` is the deployment to poll; ``data.sourceRevisionId`` names this
    one). Needs ``agent:deploy`` on the Agent, ``agent_revision:read`` on the revision,
    ``configuration:read`` on its Configuration and, for the caller and the Agent,
    ``secret:operate`` on each Secret it delivers (403). 409 when the snapshot can no longer be
    deployed (a Secret it delivers was deleted, its configuration or plugin selections no longer
    pass today's checks), the Agent is being deleted (``AGENT_DELETING``), a provisioning owns it,
    or the Namespace is not ready (``NAMESPACE_NOT_READY``). The same ``Idempotency-Key`` returns
    the revision it admitted. The Agent's own settings are unchanged."""
    require_no_body(request)
    revision = agent_redeploy(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id,
                              revision_id=revision_id, idempotency_key=idempotency_key)
    return respond(revision_wire(revision), status=202)


@router.get(AGENT + "/deployments/{revision_id}",
            response={200: envelope_of(DeploymentOut, "DeploymentEnvelope")})
def get_deployment(request: ApiRequest, namespace_id: str, agent_id: str, revision_id: str) -> JsonResponse:
    status = deployment_get(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id,
                            revision_id=revision_id)
    return respond(deployment_status_wire(status))


@router.post(AGENT + "/deployments/{revision_id}/diagnostics",
             response={200: envelope_of(DiagnosticsOut, "DiagnosticsEnvelope")})
def diagnose_deployment(request: ApiRequest, namespace_id: str, agent_id: str, revision_id: str) -> JsonResponse:
    require_no_body(request)
    diagnostics = deployment_diagnose(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id,
                                      revision_id=revision_id)
    return respond(diagnostics_wire(diagnostics))


@router.post(AGENT + "/deployments/{revision_id}/retry-finalization",
             response={202: envelope_of(DeploymentOut, "DeploymentRetryEnvelope")})
def retry_deployment_finalization(request: ApiRequest, namespace_id: str, agent_id: str,
                                  revision_id: str) -> JsonResponse:
    """Bodyless: requeue the failed work of the Agent's active revision (its activation or
    the predecessor's retirement gave up); the worker finishes it."""
    require_no_body(request)
    revision, work = deployment_finalization_retry(actor=request.auth, namespace_id=namespace_id,
                                                   agent_id=agent_id, revision_id=revision_id)
    return respond(deployment_status_wire(deployment_status(revision, work)), status=202)
