"""Agent provisioning admission, status and retry (spec §2.10, §5.3, §5.5).

Admission stores the accepted plan — references and ids only, never a value — with its
SHA-256 fingerprint and queues one ``controller_work`` row keyed by the pre-allocated Agent
id; it creates no Configuration and no Agent (the worker does, provisioning/jobs). Same
Namespace + actor + ``requestId`` with the same plan returns the same work; a different plan
is a conflict. Status and retry belong to the initiator until the Agent exists, then to
``agent:read`` / ``agent:operate`` on it.

One module of ~520 lines: admission, status and retry are the three operations on one
``AgentProvisioningWork`` row and share its plan checks, its authorization and its locks.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from occ.commands.agents import AgentCreate
from occ.commands.base import Loc, details_at, pointer
from occ.commands.configurations import ConfigurationCreate
from occ.commands.provisioning import ProvisionCommand
from occ.commands.repositories import binding_documents
from occ.documents import HarnessAuth, PlannedConfiguration, PluginApprover, ProvisionPlan, bindings_of
from occ.drivers.channels import SecretReader, channel_checks_needed, channel_drivers, check_channel_credentials
from occ.errors import Conflict, Denial, DetailCode, Forbidden, InvalidRequest, NotFound
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import authorize
from occ.ids import IdPrefix, new_id
from occ.models import (
    Agent,
    AgentProvisioningWork,
    AgentTarget,
    Configuration,
    ControllerWork,
    EffectState,
    ExecutionMode,
    Namespace,
    NamespaceStatus,
    ProvisioningPhase,
    ProvisioningStatus,
    Secret,
    WorkEffect,
    WorkJob,
)
from occ.models.work import provisioning_key
from occ.openclaw.validation import check_configuration_values
from occ.selectors.namespaces import get_live_namespace
from occ.selectors.permissions import PROVISION_WORKER_AUTHORITY
from occ.services.audit import audit_record
from occ.services.locks import advisory_xact_lock, share_locked, share_locked_live_namespace
from occ.services.plugins import check_commands
from occ.services.repositories import check_repository_bindings
from occ.services.secrets import secret_value_use
from occ.services.work import work_enqueue, work_requeue

# What ``GET /installation`` advertises as ``capabilities.agentProvisioning.executionModes``.
PROVISIONING_EXECUTION_MODES = (ExecutionMode.EMBEDDED,)

# Gateway settings provisioning never carries, beyond those every Configuration refuses
# (occ.openclaw.validation.DRIVER_OWNED_GATEWAY_KEYS): the compute driver owns the gateway's
# transport, its credentials and whom it trusts.
PROVISIONING_GATEWAY_KEYS = ("allowRealIpFallback", "customBindHost", "remote", "tls", "tailscale")
# Native keys whose string values are credentials; they may only reference the environment.
CREDENTIAL_KEYS = frozenset({
    "apikey", "token", "bottoken", "apptoken", "usertoken", "accesstoken", "password", "secret",
    "clientsecret", "signingsecret", "webhooksecret",
})
ENV_REFERENCE = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*\}$")
# Where the document and its bindings sit in a provisioning request: as a location for the
# details of a refusal (occ.commands.base.details_at), and as the pointer occ.openclaw's
# validation and the channel drivers speak.
VALUES_LOC: Loc = ("configuration", "values")
BINDINGS_LOC: Loc = ("configuration", PlannedConfiguration.wire_name("secret_bindings"))
VALUES_PATH = pointer(VALUES_LOC)

PHASES_WITH_RESOURCES = frozenset({ProvisioningPhase.CONFIGURATION, ProvisioningPhase.TRANSPORT,
                                   ProvisioningPhase.HANDOFF})
SAFE_CODE = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")
_CONTROL = re.compile(r"[\u0000-\u001f\u007f]")
CANCELLED_CODE = "PROVISIONING_CANCELLED"
RECOVERY_REQUIRED = "RECOVERY_REQUIRED"
ERROR_MESSAGES = {
    CANCELLED_CODE: "Provisioning was cancelled because its Agent was stopped or deleted.",
    RECOVERY_REQUIRED: ("The outcome of a provisioning step is unknown and its target was not found. "
                        "Check the target, then retry."),
    "AUTHORIZATION_DENIED": "Provisioning stopped because its initiator or the Agent lost a required permission.",
    "ACTOR_REVOKED": "Provisioning stopped because its initiator no longer exists.",
    "LEASE_EXPIRED": "Provisioning stopped after its worker repeatedly stopped responding.",
    "NAMESPACE_NOT_READY": "Provisioning stopped because the Namespace is not ready.",
    "CONVERGENCE_DEADLINE_EXCEEDED": "Provisioning did not finish in time.",
    "DEPENDENCY_UNAVAILABLE": "Provisioning stopped because a service it depends on stayed unavailable.",
}
DEFAULT_ERROR_CODE = "PROVISIONING_FAILED"
DEFAULT_ERROR_MESSAGE = "Provisioning failed."


@dataclass(frozen=True)
class Admission:
    """An accepted request: the plan to store (no values) and what admission checks against."""

    request_id: str
    plan: ProvisionPlan
    harness_secret_id: str
    # Where the request names each Secret, for the details of a 404.
    secret_refs: tuple[tuple[Loc, str], ...] = ()

    @property
    def fingerprint(self) -> str:
        return self.plan.fingerprint()

    @property
    def bindings(self) -> dict[str, str]:
        """ENV_NAME -> Secret id."""
        return self.plan.bound_secret_ids

    @property
    def secret_ids(self) -> list[str]:
        return list(self.plan.secret_ids)


# --- the accepted plan ----------------------------------------------------------------------


def _inline_credentials(node: object, loc: Loc) -> Iterator[Loc]:
    """Where credential-named keys hold a literal instead of ``${ENV}`` (request locations)."""
    if isinstance(node, list):
        for index, item in enumerate(node):
            yield from _inline_credentials(item, (*loc, index))
    elif isinstance(node, Mapping):
        for key, item in node.items():
            here = (*loc, str(key))
            if (isinstance(key, str) and key.lower() in CREDENTIAL_KEYS and isinstance(item, str)
                    and item.strip() and not ENV_REFERENCE.fullmatch(item.strip())):
                yield here
            else:
                yield from _inline_credentials(item, here)


def _check_provisioning_values(values: Mapping[str, Any]) -> None:
    """Provisioning's own refusals of a document, located in the request (the command layer
    turns the locations into the details' pointers)."""
    gateway = values.get("gateway")
    if isinstance(gateway, Mapping):
        for key in PROVISIONING_GATEWAY_KEYS:
            if key in gateway:
                raise InvalidRequest(f"gateway.{key} is set by OCC's compute driver; provisioning does "
                                     "not accept gateway credential or trust overrides.",
                                     details=details_at([(*VALUES_LOC, "gateway", key)], DetailCode.INVALID_VALUE))
    # Channels with a driver get its precise CHANNEL_CREDENTIAL_* errors instead.
    checked = set(channel_drivers())
    unchecked = {key: item for key, item in values.items() if key != "channels"}
    channels = values.get("channels")
    if isinstance(channels, Mapping):
        unchecked["channels"] = {name: item for name, item in channels.items() if name not in checked}
    found = list(_inline_credentials(unchecked, VALUES_LOC))
    if found:
        raise InvalidRequest(
            "Inline credentials are not accepted in the configuration. Save each as a Secret, bind it in "
            "secretBindings and write ${ENV_NAME} in its place.",
            details=details_at(found[:32], DetailCode.INVALID_VALUE),
        )


def provision_plan(command: ProvisionCommand, *, namespace_id: str) -> Admission:
    """The normalized plan of a provisioning command (400 / 501, no database). Its JSON shape is
    what the provision job reads and what the fingerprint covers."""
    command.check_namespace(namespace_id)
    configuration, harness = command.configuration, command.harness_auth
    check_configuration_values(configuration.values, path=VALUES_PATH)
    _check_provisioning_values(configuration.values)
    plugins = check_commands(command.plugins, command.plugin_approvers)
    bindings = configuration.bound
    plan = ProvisionPlan(
        name=command.name,
        configuration=PlannedConfiguration(kind=configuration.kind, values=configuration.values,
                                           secret_bindings=bindings_of(namespace_id, bindings)),
        execution_mode=command.execution_mode,
        harness_auth=HarnessAuth.of(harness.method, namespace_id, harness.secret_id),
        backend_id=command.backend_id,
        plugins=plugins,
        plugin_approvers=[PluginApprover(channel=a.channel, id=a.id) for a in command.plugin_approvers or []],
        repository_bindings=binding_documents(command.repository_bindings),
        initial_workspace_files=dict(command.initial_workspace_files or {}),
        secret_ids=sorted(set(bindings.values()) | {harness.secret_id}),
    )
    return Admission(request_id=command.request_id, plan=plan, harness_secret_id=harness.secret_id,
                     secret_refs=tuple(((*loc, "id"), ref.id) for loc, ref in command.secret_refs()))


def planned_configuration(plan: ProvisionPlan) -> ConfigurationCreate:
    """The Configuration an admitted plan creates (the worker's first step)."""
    return ConfigurationCreate.model_validate(plan.configuration.model_dump())


# What the plan holds of the Agent's own choices; one a plan lacks keeps the Agent's default.
PLANNED_AGENT_FIELDS = {"execution_mode", "harness_auth", "backend_id", "plugins", "plugin_approvers",
                        "repository_bindings", "initial_workspace_files"}


def planned_agent(plan: ProvisionPlan, *, configuration_id: str) -> AgentCreate:
    """The Agent an admitted plan creates, on the Configuration created before it."""
    return AgentCreate.model_validate({"name": plan.name, "configuration_id": configuration_id,
                                       **plan.model_dump(include=PLANNED_AGENT_FIELDS, exclude_unset=True)})


# --- admission ------------------------------------------------------------------------------


def _held_secrets(namespace: Namespace, secret_ids: list[str], *, lock: bool = False) -> set[str]:
    qs = Secret.objects.filter(namespace=namespace, id__in=secret_ids, owner_agent__isnull=True)
    if lock:
        return {secret.id for secret in share_locked(qs.only("id"))}
    return set(qs.values_list("id", flat=True))




def _authorize_admission(actor: Actor, namespace: Namespace, plan: Admission, *, lock: bool = False) -> None:
    """Authority, referenced Secrets (404 before 403), readiness: on every request, replays too."""
    authorize(actor, Action.CREATE, Kind.AGENT, namespace_id=namespace.id)
    authorize(actor, Action.CREATE, Kind.CONFIGURATION, namespace_id=namespace.id)
    # What the worker will need on the Configuration and Agent it creates for this actor. They
    # do not exist yet, so only Namespace-wide authority can hold it: refuse now rather than
    # fail in the worker with AUTHORIZATION_DENIED after the Configuration was written.
    for action, kind in PROVISION_WORKER_AUTHORITY:
        authorize(actor, action, kind, namespace_id=namespace.id)
    held = _held_secrets(namespace, plan.secret_ids, lock=lock)
    missing = [secret_id for secret_id in plan.secret_ids if secret_id not in held]
    if missing:
        raise NotFound("A referenced Secret does not exist in this Namespace.",
                       details=details_at([loc for secret_id in missing for loc, ref in plan.secret_refs
                                           if ref == secret_id], DetailCode.INVALID_VALUE))
    for secret_id in plan.secret_ids:
        authorize(actor, Action.OPERATE, Kind.SECRET, namespace_id=namespace.id, resource_id=secret_id)
    if namespace.status != NamespaceStatus.READY:
        raise Conflict(f"The Namespace is {namespace.status}; Agents can be provisioned only once it is ready.",
                       code="NAMESPACE_NOT_READY")
    if plan.plan.backend_id is not None:
        # No Backends are configured in this release, so every id is unknown.
        raise NotFound("The Backend does not exist.")


def _values_pointer(native_pointer: str) -> str:
    """A driver's pointer into the request body (``/configuration/values/...``), also when
    it points into the native document itself (``/channels/...``)."""
    if native_pointer.startswith("/configuration/"):
        return native_pointer
    return VALUES_PATH + ("/" + native_pointer.lstrip("/") if native_pointer else "")


def channel_secret_reader(actor: Actor, namespace: Namespace, bindings: Mapping[str, str]) -> SecretReader:
    """``read_secret(env_name, pointer)`` for the channel drivers: the value of the Secret bound
    to ``env_name``, read only after the caller's ``secret:operate`` on that exact Secret.
    ``pointer`` is where the native document (``values``) refers to the variable."""

    def read_secret(env_name: str, native_pointer: str) -> str:
        secret_id = bindings.get(env_name)
        if secret_id is None:
            raise InvalidRequest.at(_values_pointer(native_pointer), DetailCode.INVALID_VALUE,
                                    f"No secretBinding delivers ${{{env_name}}}; bind a Secret to it.")
        secret = Secret.objects.filter(namespace=namespace, id=secret_id, owner_agent__isnull=True).first()
        if secret is None:
            raise NotFound("A referenced Secret does not exist in this Namespace.",
                           details=details_at([(*BINDINGS_LOC, env_name, "source", "id")], DetailCode.INVALID_VALUE))
        authorize(actor, Action.OPERATE, Kind.SECRET, namespace_id=namespace.id, resource_id=secret.id)
        return secret_value_use(secret=secret, consumer=lambda value: value)

    return read_secret


def _existing(namespace: Namespace, actor: Actor, request_id: str) -> AgentProvisioningWork | None:
    return (AgentProvisioningWork.objects.select_related("work")
            .filter(namespace=namespace, actor_id=actor.id, request_id=request_id).first())


def _replayed(existing: AgentProvisioningWork, fingerprint: str) -> tuple[AgentProvisioningWork, bool]:
    if existing.request_fingerprint != fingerprint:
        raise Conflict("This requestId was already used for a different provisioning request. "
                       "Send the same request again, or use a new requestId.")
    return existing, False


def _refuse_taken_name(namespace: Namespace, actor: Actor, plan: Admission) -> None:
    name = plan.plan.name
    if Agent.objects.filter(namespace=namespace, name=name).exists():
        raise Conflict("An Agent with this name already exists in the Namespace.")
    in_flight = AgentProvisioningWork.objects.filter(AgentProvisioningWork.in_flight(), namespace=namespace,
                                                     plan__name=name)
    # The same request committed meanwhile is a replay, settled by the unique constraint below.
    if in_flight.exclude(actor_id=actor.id, request_id=plan.request_id).exists():
        raise Conflict("An Agent with this name is already being provisioned in the Namespace.")


def _insert(actor: Actor, namespace: Namespace, plan: Admission) -> AgentProvisioningWork:
    agent_id = new_id(IdPrefix.AGENT)
    work = work_enqueue(key=provisioning_key(agent_id), job=WorkJob.PROVISION, namespace_id=namespace.id,
                        actor_id=actor.id, agent_id=agent_id, agent_target=AgentTarget.PROVISIONED)
    return AgentProvisioningWork.objects.create(
        work=work, namespace=namespace, actor_id=actor.id, request_id=plan.request_id,
        request_fingerprint=plan.fingerprint,
        completed_phase=ProvisioningPhase.ADMITTED, agent_id=agent_id,
        configuration_id=new_id(IdPrefix.CONFIGURATION), revision_id=None, plan=plan.plan.document(), progress={},
    )


def _lock_for_admission(namespace_id: str) -> Namespace:
    """The live Namespace, locked for one admission's transaction.

    Admissions of one Namespace exclude each other (an advisory lock), so the same-name check
    sees every earlier admission. The Namespace row is only share-locked, so the workers'
    provisioning steps in it go on meanwhile, while its deletion, and the API's Agent create, which
    lock it exclusively, wait for this admission or run first."""
    advisory_xact_lock(f"occ.provision-admission:{namespace_id}")
    namespace = share_locked_live_namespace(namespace_id)
    if namespace is None:
        raise NotFound("The Namespace does not exist.")
    return namespace


def provision_admit(*, actor: Actor, namespace_id: str,
                    command: ProvisionCommand) -> tuple[AgentProvisioningWork, bool]:
    """Admit one provisioning job (202) or return the one this request already admitted.

    Returns ``(work, created)``. The channel drivers check credentials before the write
    transaction, after the same authorization it repeats; a replay of an admitted request
    skips them. A plan that enables no channel goes straight to the transaction.
    """
    plan = provision_plan(command, namespace_id=namespace_id)
    fingerprint = plan.fingerprint
    configuration = plan.plan.configuration
    repositories = plan.plan.repository_bindings or []
    # Authorized before any Secret is read or the repository driver is asked.
    if channel_checks_needed(configuration.values, configuration.secret_bindings) or repositories:
        namespace = get_live_namespace(namespace_id)
        _authorize_admission(actor, namespace, plan)
        if _existing(namespace, actor, plan.request_id) is None:
            check_repository_bindings(repositories)
            if channel_checks_needed(configuration.values, configuration.secret_bindings):
                check_channel_credentials(values=configuration.values,
                                          secret_bindings=configuration.secret_bindings,
                                          read_secret=channel_secret_reader(actor, namespace, plan.bindings))
    with transaction.atomic():
        namespace = _lock_for_admission(namespace_id)
        _authorize_admission(actor, namespace, plan, lock=True)
        existing = _existing(namespace, actor, plan.request_id)
        if existing is not None:
            return _replayed(existing, fingerprint)
        _refuse_taken_name(namespace, actor, plan)
        try:
            with transaction.atomic():
                row = _insert(actor, namespace, plan)
        except IntegrityError:
            # A concurrent identical request committed first (unique Namespace + actor + requestId).
            existing = _existing(namespace, actor, plan.request_id)
            if existing is None:
                raise
            return _replayed(existing, fingerprint)
        audit_record(
            actor=actor, action="openclaw.agents.provision", namespace_id=namespace.id,
            resource_kind=Kind.AGENT, resource_id=row.agent_id,
            details={
                "workId": row.work_id, "requestId": row.request_id, "requestFingerprint": fingerprint,
                "name": plan.plan.name, "configurationId": row.configuration_id,
                "executionMode": plan.plan.execution_mode, "harnessSecretId": plan.harness_secret_id,
                "secretBindings": plan.bindings, "secretIds": plan.secret_ids,
                "initialWorkspaceFiles": sorted(plan.plan.initial_workspace_files or {}),
            },
        )
    return row, True


# --- status ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProvisioningState:
    """The public view of one provisioning row: status, safe error and the ids produced."""

    row: AgentProvisioningWork
    status: str
    error: dict[str, str] | None
    configuration_id: str | None
    agent_id: str | None
    revision_id: str | None

    @property
    def retryable(self) -> bool:
        return self.row.status == ProvisioningStatus.FAILED


def _safe_error(code: object, message: object) -> dict[str, str]:
    safe_code = code if isinstance(code, str) and SAFE_CODE.fullmatch(code) else DEFAULT_ERROR_CODE
    text = _CONTROL.sub(" ", message).strip()[:256] if isinstance(message, str) else ""
    return {"code": safe_code, "message": text or ERROR_MESSAGES.get(safe_code, DEFAULT_ERROR_MESSAGE)}


def _recorded_error(row: AgentProvisioningWork) -> dict[str, Any]:
    error = row.progress.get("error") if isinstance(row.progress, dict) else None
    return error if isinstance(error, dict) else {}


def provisioning_state(row: AgentProvisioningWork) -> ProvisioningState:
    """The status derived from the work row (``AgentProvisioningWork.status``); internal
    ``cancelled`` is public ``failed``. A failure the job recorded as permanent gives its
    code and message; any other (the sweep's) the work row's code. Result ids appear once
    their resources exist."""
    work = row.work
    status, error = row.status, None
    if status == ProvisioningStatus.CANCELLED:
        status, error = ProvisioningStatus.FAILED, _safe_error(CANCELLED_CODE, None)
    elif status == ProvisioningStatus.FAILED:
        recorded = _recorded_error(row)
        if recorded.get("disposition") != "permanent":
            recorded = {}
        error = _safe_error(recorded.get("code") or work.reason_code, recorded.get("message"))
    produced = row.completed_phase in PHASES_WITH_RESOURCES
    configuration_id = row.configuration_id if produced or Configuration.objects.filter(
        id=row.configuration_id).exists() else None
    agent_id = row.agent_id if produced or Agent.objects.filter(id=row.agent_id).exists() else None
    return ProvisioningState(row=row, status=status, error=error, configuration_id=configuration_id,
                             agent_id=agent_id, revision_id=row.revision_id or None)


def _get_row(namespace: Namespace, work_id: str, *, for_update: bool = False) -> AgentProvisioningWork:
    if for_update:
        # The queue row first, as the worker's fenced transactions lock it.
        ControllerWork.objects.select_for_update().filter(pk=work_id, namespace=namespace).first()
    qs = AgentProvisioningWork.objects.select_related("work").filter(namespace=namespace, work_id=work_id)
    if for_update:
        qs = qs.select_for_update(of=("self",))
    row = qs.first()
    if row is None:
        raise NotFound("The provisioning work does not exist.")
    return row


def _authorize_access(actor: Actor, namespace: Namespace, row: AgentProvisioningWork, action: Action) -> None:
    """``action`` on the Agent once it exists; before that, only the initiator in its Namespace."""
    if Agent.objects.filter(namespace=namespace, id=row.agent_id).exists():
        authorize(actor, action, Kind.AGENT, namespace_id=namespace.id, resource_id=row.agent_id)
        return
    in_scope = actor.scope_namespace_id in (None, namespace.id)
    if actor.id == row.actor_id and in_scope:
        return
    raise Forbidden(
        "Until its Agent exists, only the person who started this provisioning can see or retry it.",
        denial=Denial(actor_id=actor.id, action=action.value, resource_kind=Kind.AGENT.value,
                      namespace_id=namespace.id, resource_id=row.agent_id,
                      reason="not_initiator" if in_scope else "out_of_scope",
                      extra={"workId": row.work_id, "initiatingActorId": row.actor_id}),
    )


def _refuse_deleted_secrets(namespace: Namespace, row: AgentProvisioningWork, *, lock: bool = False) -> None:
    wanted = row.accepted_plan.secret_ids
    held = _held_secrets(namespace, wanted, lock=lock)
    deleted = [secret_id for secret_id in wanted if secret_id not in held]
    if deleted:
        raise Conflict(f"The Secret {deleted[0]} this provisioning uses was deleted. "
                       "Start a new provisioning request with an existing Secret.")


def provisioning_get(*, actor: Actor, namespace_id: str, work_id: str) -> ProvisioningState:
    """The provisioning's public state. Failed work whose Secret was deleted answers 409."""
    namespace = get_live_namespace(namespace_id)
    row = _get_row(namespace, work_id)
    _authorize_access(actor, namespace, row, Action.READ)
    state = provisioning_state(row)
    if state.retryable:
        _refuse_deleted_secrets(namespace, row)
    return state


def _resend_after_recovery(row: AgentProvisioningWork, error_code: str | None) -> list[WorkEffect]:
    """After RECOVERY_REQUIRED an operator has checked the target: begun, unreceipted
    effects may be sent again. Returns those effects."""
    if error_code != RECOVERY_REQUIRED:
        return []
    begun = list(WorkEffect.objects.filter(work_id=row.work_id, state=EffectState.BEGUN).order_by("id"))
    WorkEffect.objects.filter(id__in=[effect.id for effect in begun]).update(resend=True)
    return begun


def provisioning_retry(*, actor: Actor, namespace_id: str, work_id: str) -> ProvisioningState:
    """Requeue failed provisioning (202): the same accepted plan, completed outputs reused."""
    with transaction.atomic():
        # Lock order as in the worker's fenced steps: the queue row, then the Namespace, then
        # the provisioning row (the other order deadlocks with a running step).
        ControllerWork.objects.select_for_update().filter(pk=work_id, namespace_id=namespace_id).first()
        namespace = get_live_namespace(namespace_id, for_update=True)
        row = _get_row(namespace, work_id, for_update=True)
        _authorize_access(actor, namespace, row, Action.OPERATE)
        state = provisioning_state(row)
        if row.cancelled_at is not None:
            raise Conflict("This provisioning was cancelled when its Agent was stopped or deleted; "
                           "it never runs again.")
        if not state.retryable:
            raise Conflict(f"Only failed provisioning can be retried; this one is {state.status}.")
        _refuse_deleted_secrets(namespace, row, lock=True)
        if namespace.status != NamespaceStatus.READY:
            raise Conflict(f"The Namespace is {namespace.status}; provisioning can be retried only once it is ready.",
                           code="NAMESPACE_NOT_READY")
        error_code = state.error["code"] if state.error else None
        # Completed outputs and effect evidence stay; the last error goes.
        row.progress = {k: v for k, v in row.progress.items() if k != "error"}
        row.save(update_fields=["progress", "updated_at"])
        work_requeue(work=row.work)
        resent = [{"kind": effect.kind, "targetId": effect.target_id}
                  for effect in _resend_after_recovery(row, error_code)]
        audit_record(
            actor=actor, action="openclaw.agents.provision.retry", namespace_id=namespace.id,
            resource_kind=Kind.AGENT, resource_id=row.agent_id,
            details={"workId": row.work_id, "previousErrorCode": error_code, "phase": row.completed_phase,
                     "resendEffects": resent, "initiatingActorId": row.actor_id},
        )
    return provisioning_state(row)

