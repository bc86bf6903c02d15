"""Deploy and redeploy an Agent: each one transaction of the new revision + work row + audit.

The worker does the rest (provisioning/jobs). Deploy freezes everything the worker needs into an
immutable AgentRevision; stop, start and delete are in ``occ.services.agent_lifecycle``.
"""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Max

from occ.documents import (
    HarnessAuth,
    HarnessPin,
    PluginApprover,
    RepositoryCredentials,
    RevisionSpec,
    SecretBinding,
    SecretRef,
    SmokeConversation,
    bindings_from_stored,
)
from occ.drivers.compute import ComputeDriver, ComputeError, get_compute_driver
from occ.errors import (
    Conflict,
    Denial,
    DependencyUnavailable,
    Forbidden,
    InvalidRequest,
    NotFound,
    NotImplementedYet,
    fit_message,
)
from occ.iam.actor import Actor, Source
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed, authorize, load_with_policies
from occ.models import (
    BUDGET_EXCEEDED,
    Agent,
    AgentRevision,
    AgentStatus,
    Configuration,
    DeployIdempotencyKey,
    DesiredRuntimeState,
    Namespace,
    NamespaceStatus,
    Secret,
    WorkJob,
    WorkState,
)
from occ.models.work import revision_reconcile_key
from occ.openclaw.validation import check_configuration_values
from occ.selectors.agents import get_agent
from occ.selectors.configurations import delivered_secret_ids
from occ.selectors.namespaces import get_live_namespace
from occ.services.audit import audit_record
from occ.services.budget_guards import refuse_over_budget
from occ.services.checks import check_held_namespace
from occ.services.locks import share_locked
from occ.services.plugins import deploy_plugins_snapshot, stored_selections
from occ.services.provisioning_guards import refuse_while_provisioning
from occ.services.repositories import check_repository_bindings
from occ.services.work import work_enqueue

# The harness every revision runs: the pinned OpenClaw runtime, embedded in the gateway.
HARNESS_ID, HARNESS_MODE = "openclaw", "embedded"
# Printable ASCII, no surrounding spaces, 1..255 characters.
IDEMPOTENCY_KEY = re.compile(r"^[\x21-\x7e](?:[\x20-\x7e]{0,253}[\x21-\x7e])?$")
PENDING_STATES = (WorkState.QUEUED, WorkState.CLAIMED)


def check_idempotency_key(value: object) -> str:
    if not isinstance(value, str) or not IDEMPOTENCY_KEY.fullmatch(value):
        raise InvalidRequest("The Idempotency-Key header must be 1 to 255 printable characters.")
    return value


def refuse_deleting(agent: Agent) -> None:
    if agent.status == AgentStatus.DELETING:
        raise Conflict("The Agent is being deleted and can no longer be changed.", code="AGENT_DELETING")


# --- deploy -------------------------------------------------------------------------------------


def _bound_secrets(agent: Agent, configuration: Configuration) -> tuple[dict[str, Secret], list[Secret]]:
    """The Configuration's bindings (env name -> Secret) and every Secret delivered, locked
    (shared) so a concurrent Secret delete waits for this admission."""
    bindings = {b.env_name: b.secret_id for b in configuration.secret_bindings.all()}
    wanted = delivered_secret_ids(agent, bindings)
    secrets = {s.id: s for s in share_locked(Secret.objects.filter(id__in=wanted).order_by("id"))}
    return {name: secrets[secret_id] for name, secret_id in sorted(bindings.items())}, list(secrets.values())


def authorize_secret_delivery(actor: Actor, agent: Agent, secrets: list[Secret]) -> None:
    """Actor and the Agent's own principal both need ``secret:operate`` on every Secret."""
    for secret in secrets:
        authorize(actor, Action.OPERATE, Kind.SECRET, namespace_id=agent.namespace_id, resource_id=secret.id)
    if not secrets:
        return
    _, loaded = load_with_policies(None, agent_id=agent.id)  # the principal and its policy, one statement
    agent_actor = None if loaded is None else Actor(principal=loaded[0], source=Source.API, _policy=loaded[1])
    if agent_actor is not None:
        Agent.service_principal.related.set_cached_value(agent, agent_actor.principal)  # the snapshot names it
    for secret in secrets:
        if agent_actor is None or not allowed(agent_actor, Action.OPERATE, Kind.SECRET,
                                              namespace_id=agent.namespace_id, resource_id=secret.id):
            raise Forbidden(
                "The Agent's service principal may not use every Secret this deployment needs. "
                "Grant the Agent access to its Secrets, then deploy again.",
                denial=Denial(actor_id=actor.id, action=Action.OPERATE.value, resource_kind=Kind.SECRET.value,
                              namespace_id=agent.namespace_id, resource_id=secret.id,
                              reason="agent_principal_lacks_grant",
                              extra={"agentId": agent.id,
                                     "servicePrincipalId": agent_actor.id if agent_actor else None}),
            )


def _harness_auth(agent: Agent) -> HarnessAuth | None:
    if agent.harness_auth_method is None or agent.harness_secret_id is None:
        return None
    return HarnessAuth.of(agent.harness_auth_method, agent.namespace_id, agent.harness_secret_id)


def _harness(driver: ComputeDriver) -> HarnessPin:
    return HarnessPin(id=HARNESS_ID, version=driver.harness_version, mode=HARNESS_MODE)


def _smoke(conversations: list[SmokeConversation]) -> dict[str, list[SmokeConversation]]:
    """The spec's smoke conversations, set only when there are some (a spec without them keeps
    the fingerprint it always had)."""
    return {"smoke_conversations": conversations} if conversations else {}


def _repositories(credentials: RepositoryCredentials | None) -> dict[str, RepositoryCredentials]:
    """The spec's repository bindings, set only when there are some (a spec without them keeps
    the fingerprint it always had)."""
    return {"repository_credentials": credentials} if credentials is not None else {}


def _snapshot(agent: Agent, configuration: Configuration, bindings: dict[str, Secret],
              driver: ComputeDriver) -> RevisionSpec:
    """The admitted spec: references and ids only, never a value. The repository bindings are
    checked by the RepositoryDriver again here (inside the deploy's transaction, so they are
    exactly the locked Agent's)."""
    approvers = (None if agent.plugin_approvers is None
                 else [PluginApprover.model_validate(approver) for approver in agent.plugin_approvers])
    return RevisionSpec(
        configuration_kind=configuration.kind,
        configuration=configuration.values,
        harness=_harness(driver),
        compute=driver.pin,
        harness_auth=_harness_auth(agent),
        backend_id=agent.backend_id,
        secret_bindings={name: SecretBinding.env(SecretRef.to(secret.namespace_id, secret.id))
                         for name, secret in bindings.items()},
        secret_driver_id=settings.OCC_SECRET_DRIVER,
        plugins=deploy_plugins_snapshot(stored_selections(agent.plugins), approvers),
        plugin_approvers=approvers,
        execution_mode=agent.execution_mode,
        service_principal_id=agent.service_principal.id,
        **_smoke(agent.smoke),
        **_repositories(check_repository_bindings(bindings_from_stored(agent.repository_bindings))),
    )


def _validate_harness(spec: RevisionSpec, driver: ComputeDriver) -> None:
    method = spec.harness_auth_method
    if method is None:
        raise Conflict("The Agent has no harnessAuth. Set its model API key Secret, then deploy.")
    try:
        driver.validate_harness_auth(method=method, spec=spec)
    except ComputeError as exc:
        raise Conflict("The compute backend cannot run this Agent's harnessAuth. Change it, then deploy.") from exc
    except Exception as exc:
        raise DependencyUnavailable("The compute backend could not check the Agent's harnessAuth.") from exc


def _replay(agent: Agent, key: str, fingerprint: str, source: tuple[str, int]) -> AgentRevision | None:
    existing = DeployIdempotencyKey.objects.select_related("revision").filter(agent=agent, key=key).first()
    if existing is None:
        return None
    if (existing.configuration_id, existing.configuration_generation, existing.fingerprint) != (*source, fingerprint):
        raise Conflict("This Idempotency-Key was used for a deployment of different settings. "
                       "Use a new key to deploy the current settings.")
    return existing.revision


def agent_deploy(*, actor: Actor, namespace_id: str, agent_id: str,
                 idempotency_key: str | None = None) -> AgentRevision:
    """Admit the next immutable revision and queue its work (202). Spec §6.2.

    With ``idempotency_key``, a repeat with the same key returns the revision it admitted,
    as long as the admitted settings are unchanged; otherwise 409. While a provisioning owns
    the Agent: 409.
    """
    if idempotency_key is not None:
        idempotency_key = check_idempotency_key(idempotency_key)
    return _deploy(actor=actor, namespace_id=namespace_id, agent_id=agent_id, idempotency_key=idempotency_key)


def agent_deploy_for_provisioning(*, actor: Actor, namespace: Namespace, agent: Agent,
                                  work_key: str) -> AgentRevision:
    """The provisioning handoff (spec §5.4): the same admission as a manual deploy, by the
    provisioning that owns the Agent. Call it in that work's fenced transaction, which holds
    ``namespace`` (shared) and ``agent`` locked; a cancelled provisioning no longer owns the
    Agent and admits nothing (409). The revision work is not nudged here: the provisioning's
    claim keeps the Agent busy until the queue completes it, and nudges it then."""
    check_held_namespace(namespace, agent.namespace_id)
    return _deploy(actor=actor, namespace_id=namespace.id, agent_id=agent.id, idempotency_key=None,
                   provisioning_key=work_key, held=(namespace, agent), nudge=False)


def _deploy(*, actor: Actor, namespace_id: str, agent_id: str, idempotency_key: str | None,
            provisioning_key: str | None = None, held: tuple[Namespace, Agent] | None = None,
            nudge: bool = True) -> AgentRevision:
    with transaction.atomic():
        # The Namespace lock serializes against Namespace deletion and Secret deletes (a
        # provisioning's handoff holds a shared one; see provisioning.jobs.provision).
        if held is None:
            namespace = get_live_namespace(namespace_id, for_update=True)
            agent = get_agent(namespace, agent_id, for_update=True)
        else:
            namespace, agent = held
        authorize(actor, Action.DEPLOY, Kind.AGENT, namespace_id=namespace.id, resource_id=agent.id)
        _refuse_undeployable(namespace, agent, provisioning_key)
        configuration = Configuration.objects.select_for_update().get(id=agent.configuration_id)
        authorize(actor, Action.READ, Kind.CONFIGURATION, namespace_id=namespace.id, resource_id=configuration.id)
        check_configuration_values(configuration.values, path="/configuration/values")
        bindings, secrets = _bound_secrets(agent, configuration)
        authorize_secret_delivery(actor, agent, secrets)
        driver = get_compute_driver()
        spec = _snapshot(agent, configuration, bindings, driver)
        _validate_harness(spec, driver)
        return _admit_once(actor, namespace, agent, (configuration.id, configuration.generation), spec,
                           idempotency_key=idempotency_key, nudge=nudge)


def _refuse_undeployable(namespace: Namespace, agent: Agent, provisioning_key: str | None) -> None:
    refuse_deleting(agent)
    refuse_while_provisioning(agent, owner_key=provisioning_key)
    if namespace.status != NamespaceStatus.READY:
        raise Conflict(f"The Namespace is {namespace.status}; Agents can be deployed only once it is ready.",
                       code="NAMESPACE_NOT_READY")


def _admit_once(actor: Actor, namespace: Namespace, agent: Agent, source: tuple[str, int],
                spec: RevisionSpec, *, idempotency_key: str | None, **admit: Any) -> AgentRevision:
    """``_admit``, unless ``idempotency_key`` already admitted exactly this spec (that
    revision is returned; another spec under the same key is 409)."""
    fingerprint = spec.fingerprint()
    if idempotency_key is not None:
        replayed = _replay(agent, idempotency_key, fingerprint, source)
        if replayed is not None:
            return replayed
    revision = _admit(actor, namespace, agent, source, spec, **admit)
    if idempotency_key is not None:
        DeployIdempotencyKey.objects.create(agent=agent, key=idempotency_key, revision=revision,
                                            configuration_id=source[0], configuration_generation=source[1],
                                            fingerprint=fingerprint)
    return revision


def _admit(actor: Actor, namespace: Namespace, agent: Agent, source: tuple[str, int],
           spec: RevisionSpec, *, nudge: bool = True, action: str = "openclaw.agents.deploy",
           details: dict[str, Any] | None = None) -> AgentRevision:
    """The next revision (``source``: the Configuration id and generation its document came
    from), its work row and its audit event."""
    configuration_id, generation = source
    if agent.stopped_reason == BUDGET_EXCEEDED:
        refuse_over_budget(agent)
    number = (AgentRevision.objects.filter(agent=agent).aggregate(n=Max("number"))["n"] or 0) + 1
    revision = AgentRevision.objects.create(
        namespace=namespace, agent=agent, number=number, configuration_id=configuration_id,
        configuration_generation=generation, snapshot=spec.document(), created_by=actor.id,
    )
    agent.desired_runtime_state, agent.stopped_reason = DesiredRuntimeState.RUNNING, ""
    agent.save(update_fields=["desired_runtime_state", "stopped_reason", "updated_at"])
    work_enqueue(key=revision_reconcile_key(revision.id), job=WorkJob.REVISION, namespace_id=namespace.id,
                 actor_id=actor.id, agent_id=agent.id, revision_id=revision.id, nudge=nudge)
    audit_record(
        actor=actor, action=action, namespace_id=namespace.id, resource_kind=Kind.AGENT,
        resource_id=agent.id,
        details={
            "revisionId": revision.id, "revision": number, "configurationId": configuration_id,
            "configurationGeneration": generation, "computeDriverId": spec.compute_driver_id,
            "harnessSecretId": spec.harness_secret_id, "secretBindings": spec.bound_secret_ids,
            **(details or {}),
        },
    )
    return revision


# --- redeploy -----------------------------------------------------------------------------------


def agent_redeploy(*, actor: Actor, namespace_id: str, agent_id: str, revision_id: str,
                   idempotency_key: str | None = None) -> AgentRevision:
    """Admit the next revision from an earlier revision's snapshot (a rollback), 202 like a
    deploy: the same work row, fencing and activation by the revision job.

    The part of the snapshot the Agent's owners chose is taken as it was (the configuration
    document, Secret bindings, harnessAuth, backend, plugin selections and approvers); the
    installation's part (harness version, compute and Secret drivers) is today's, since the
    new revision runs today. Everything a deploy checks is checked again, and a snapshot that
    can no longer be deployed is refused (409: a Secret it delivers is gone, its document or
    plugin selections no longer pass; 403: the caller or the Agent may not use a Secret). The
    Agent and its Configuration are unchanged: a later deploy deploys their current settings.
    ``idempotency_key`` works as for a deploy.
    """
    if idempotency_key is not None:
        idempotency_key = check_idempotency_key(idempotency_key)
    with transaction.atomic():
        namespace = get_live_namespace(namespace_id, for_update=True)
        agent = get_agent(namespace, agent_id, for_update=True)
        authorize(actor, Action.DEPLOY, Kind.AGENT, namespace_id=namespace.id, resource_id=agent.id)
        source = AgentRevision.objects.filter(namespace=namespace, agent=agent, id=revision_id).first()
        if source is None:
            raise NotFound("The revision does not exist.")
        authorize(actor, Action.READ, Kind.AGENT_REVISION, namespace_id=namespace.id, resource_id=source.id,
                  parent_id=agent.id)
        _refuse_undeployable(namespace, agent, None)
        authorize(actor, Action.READ, Kind.CONFIGURATION, namespace_id=namespace.id,
                  resource_id=source.configuration_id)
        secrets = _delivered_secrets(namespace, source)
        authorize_secret_delivery(actor, agent, secrets)
        driver = get_compute_driver()
        spec = _redeploy_snapshot(agent, source, driver)
        _validate_harness(spec, driver)
        return _admit_once(actor, namespace, agent, (source.configuration_id, source.configuration_generation),
                           spec, idempotency_key=idempotency_key, action="openclaw.agents.redeploy",
                           details={"sourceRevisionId": source.id, "sourceRevision": source.number})


def _not_redeployable(source: AgentRevision, why: str) -> Conflict:
    return Conflict(fit_message(f"Version v{source.number} can no longer be deployed: {why}"))


def _delivered_secrets(namespace: Namespace, source: AgentRevision) -> list[Secret]:
    """The Secrets the snapshot delivers, locked (shared) like a deploy's; 409 naming the
    first one that was deleted."""
    wanted = source.spec.delivered_secret_ids
    found = {s.id: s for s in share_locked(Secret.objects.filter(
        namespace=namespace, id__in=wanted, owner_agent__isnull=True).order_by("id"))}
    missing = [secret_id for secret_id in wanted if secret_id not in found]
    if missing:
        uses = source.spec.bindings_using(missing[0])
        where = f"bound to {', '.join(uses)}" if uses else "its model API key"
        raise _not_redeployable(source, f"the Secret {missing[0]} ({where}) has been deleted. "
                                        "Deploy the Agent's current settings instead.")
    return [found[secret_id] for secret_id in sorted(found)]


def _redeploy_snapshot(agent: Agent, source: AgentRevision, driver: ComputeDriver) -> RevisionSpec:
    """``source``'s spec re-admitted: checked again, on today's drivers."""
    old = source.spec
    try:
        check_configuration_values(old.configuration, path="/configuration")
    except InvalidRequest as exc:
        raise _not_redeployable(source, f"its configuration no longer passes this runtime's checks ({exc.message})"
                                ) from None
    try:
        plugins = deploy_plugins_snapshot(old.plugin_selections, old.plugin_approvers)
    except (InvalidRequest, NotImplementedYet) as exc:
        raise _not_redeployable(source, f"its plugin selections are no longer accepted ({exc.message})") from None
    old_repositories = old.repository_credentials.bindings if old.repository_credentials else []
    try:
        repositories = check_repository_bindings(old_repositories)
    except InvalidRequest as exc:
        raise _not_redeployable(source, f"its repository bindings are no longer allowed ({exc.message})") from None
    return RevisionSpec(
        configuration_kind=old.configuration_kind,
        configuration=old.configuration,
        harness=_harness(driver),
        compute=driver.pin,
        harness_auth=old.harness_auth,
        backend_id=old.backend_id,
        secret_bindings=old.secret_bindings,
        secret_driver_id=settings.OCC_SECRET_DRIVER,
        plugins=plugins,
        plugin_approvers=old.plugin_approvers or [],
        # Internal, as in a deploy's spec; the source is public (the revision's origin).
        execution_mode=agent.execution_mode,
        service_principal_id=agent.service_principal.id,
        source_revision_id=source.id,
        **_smoke(old.smoke_conversations or []),
        **_repositories(repositories),
    )
