"""Agents: create and update the draft that a later deploy freezes into an AgentRevision.

Editing an Agent never queues Compute work and never touches revisions. Until the
topologies and drivers that serve them exist, only the embedded execution mode and API-key
harness authentication are accepted. Repository bindings are checked by the installation's
RepositoryDriver before the write transaction (``occ.services.repositories``). Plugin selections are
checked by the installation's PluginDriver (``occ.services.plugins``; 501 without one) and
stored as they were sent: the Configuration and the running workload are untouched.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from pydantic.alias_generators import to_camel

from occ.commands.agents import AgentCreate, AgentUpdate, smoke_documents
from occ.commands.plugins import PluginApprover
from occ.commands.repositories import binding_documents
from occ.errors import Conflict, NotFound
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed, authorize
from occ.iam.roles import OWNER_ROLE
from occ.models import (
    AccessBinding,
    Agent,
    AgentStatus,
    Configuration,
    Namespace,
    NamespaceStatus,
    Principal,
    PrincipalKind,
    Role,
    Secret,
)
from occ.selectors.agents import get_agent
from occ.selectors.namespaces import get_live_namespace
from occ.services.audit import audit_record
from occ.services.checks import held_or_locked_namespace
from occ.services.plugins import check_commands, check_selections, stored_approvers, stored_selections
from occ.services.provisioning_guards import refuse_while_provisioning
from occ.services.repositories import bindings_audit, check_repository_bindings, stored_bindings

CREATABLE_IN = frozenset({NamespaceStatus.PROVISIONING, NamespaceStatus.READY})


def _approvers(approvers: list[PluginApprover] | None) -> list[dict[str, str]]:
    return [{"channel": a.channel, "id": a.id} for a in approvers or []]


# --- lookups: 404 before 403, one authorization per referenced resource ---------------------


def held_or_locked_agent(namespace: Namespace, agent_id: str, held: Agent | None) -> Agent:
    """``held``, the Agent that the caller's transaction has already locked (or created), or
    else the Agent locked ``FOR UPDATE`` now."""
    if held is None:
        return get_agent(namespace, agent_id, for_update=True)
    if held.id != agent_id or held.namespace_id != namespace.id or not transaction.get_connection().in_atomic_block:
        raise ValueError("a held Agent belongs to the caller's open transaction and to this Namespace")
    return held


def _readable_configuration(actor: Actor, namespace: Namespace, configuration_id: str,
                            held: Configuration | None = None) -> Configuration:
    if held is not None and (held.id, held.namespace_id) != (configuration_id, namespace.id):
        raise ValueError("a held Configuration is the one named, in this Namespace")
    configuration = held or Configuration.objects.filter(namespace=namespace, id=configuration_id).first()
    if configuration is None:
        raise NotFound("The Configuration does not exist in this Namespace.")
    authorize(actor, Action.READ, Kind.CONFIGURATION, namespace_id=namespace.id, resource_id=configuration.id)
    return configuration


def _operable_harness_secret(actor: Actor, namespace: Namespace, secret_id: str) -> Secret:
    # Driver-owned runtime credentials are not Secrets a caller can bind.
    secret = Secret.objects.filter(namespace=namespace, id=secret_id, owner_agent__isnull=True).first()
    if secret is None:
        raise NotFound("The harness Secret does not exist in this Namespace.")
    authorize(actor, Action.OPERATE, Kind.SECRET, namespace_id=namespace.id, resource_id=secret.id)
    return secret


def _check_backend_exists(backend_id: str | None) -> None:
    if backend_id is not None:
        # No Backends are configured in this release, so every id is unknown.
        raise NotFound("The Backend does not exist.")


# --- writes ---------------------------------------------------------------------------------


def agent_create(*, actor: Actor, namespace_id: str, command: AgentCreate, agent_id: str | None = None,
                 namespace: Namespace | None = None, configuration: Configuration | None = None) -> Agent:
    """Create a stopped Agent and its service principal; no revision, no workload, no work.

    ``agent_id``: the id an Agent provisioning pre-allocated (never from a request).
    ``namespace``, ``configuration``: rows the caller's transaction already holds (a fenced
    provisioning step locked the Namespace and created the Configuration); otherwise the
    Namespace is locked and the Configuration read here.
    """
    command.check_namespace(namespace_id)
    plugins = check_commands(command.plugins, command.plugin_approvers)
    repositories = binding_documents(command.repository_bindings)
    check_repository_bindings(repositories)  # the driver is asked before any lock is taken
    name, harness, backend_id = command.name, command.harness_auth, command.backend_id
    approvers, files = _approvers(command.plugin_approvers), dict(command.initial_workspace_files or {})
    smoke = [conversation.document() for conversation in smoke_documents(command.smoke_conversations)]
    with transaction.atomic():
        # Locked so a concurrent Namespace delete sees this Agent or runs before it.
        namespace = held_or_locked_namespace(namespace_id, namespace)
        authorize(actor, Action.CREATE, Kind.AGENT, namespace_id=namespace.id)
        if namespace.status not in CREATABLE_IN:
            raise Conflict("Agents can be created only in a provisioning or ready Namespace.")
        configuration = _readable_configuration(actor, namespace, command.configuration_id, configuration)
        secret = _operable_harness_secret(actor, namespace, harness.secret_id) if harness else None
        _check_backend_exists(backend_id)
        if Agent.objects.filter(namespace=namespace, name=name).exists():
            raise Conflict("An Agent with this name already exists in the Namespace.")
        try:
            with transaction.atomic():
                agent = Agent.objects.create(
                    namespace=namespace, name=name, configuration=configuration,
                    execution_mode=command.execution_mode,
                    harness_auth_method=harness.method if harness else None, harness_secret=secret,
                    backend_id=backend_id, plugins=plugins, plugin_approvers=approvers,
                    repository_bindings=stored_bindings(repositories),
                    initial_workspace_files=files, smoke_conversations=smoke,
                    rollback_on_failure=command.rollback_on_failure,
                    **({"id": agent_id} if agent_id is not None else {}),
                )
        except IntegrityError as exc:
            raise Conflict("An Agent with this name already exists in the Namespace.") from exc
        principal = Principal.objects.create(kind=PrincipalKind.SERVICE, name=f"agent {agent.name}",
                                             namespace=namespace, agent=agent)
        owner = _bind_owner(actor, namespace, agent)
        audit_record(
            actor=actor, action="openclaw.agents.create", namespace_id=namespace.id,
            resource_kind=Kind.AGENT, resource_id=agent.id,
            details={
                "configurationId": configuration.id, "servicePrincipalId": principal.id,
                "executionMode": command.execution_mode, "harnessAuthMethod": agent.harness_auth_method,
                "harnessSecretId": agent.harness_secret_id, "backendId": backend_id,
                "pluginApproverCount": len(approvers), "initialWorkspaceFiles": sorted(files),
                "plugins": sorted(plugins), "repositoryBindings": bindings_audit(repositories),
                "smokeConversationCount": len(smoke),
                "rollbackOnFailure": command.rollback_on_failure, "ownerBindingId": owner.id if owner else None,
            },
        )
    return agent


def _bind_owner(actor: Actor, namespace: Namespace, agent: Agent) -> AccessBinding | None:
    """Delegation (issue 26): whoever may create Agents in a Namespace owns the ones they create,
    so they can deploy, run and administer exactly those without a wider grant. The owner Role
    (``occ.iam.roles.OWNER_ROLE``) is bound on this one Agent, audited beside the create, unless
    the creator already administers it (an administrator) or the Role was removed."""
    if allowed(actor, Action.ADMINISTER, Kind.AGENT, namespace_id=namespace.id, resource_id=agent.id):
        return None
    role = Role.objects.filter(name=OWNER_ROLE, namespace__isnull=True).first()
    if role is None:
        return None
    binding = AccessBinding.objects.create(principal=actor.principal, role=role, namespace=namespace,
                                           resource_kind=Kind.AGENT.value, resource_id=agent.id)
    audit_record(actor=actor, action="openclaw.iam.access_bindings.create", namespace_id=namespace.id,
                 resource_kind="access_binding", resource_id=binding.id,
                 details={"subjectId": actor.principal.id, "roleId": role.id, "reason": "agent_owner",
                          "target": {"resourceKind": Kind.AGENT.value, "resourceId": agent.id}})
    actor.forget_policy()  # the rest of this request or job acts as the owner
    return binding


def agent_update(*, actor: Actor, namespace_id: str, agent_id: str, command: AgentUpdate) -> Agent:
    """Edit the draft: an omitted field keeps its value, ``None`` clears it.

    Re-checks ``configuration:read`` on the resulting Configuration and ``secret:operate``
    on the resulting harness Secret, including one that was already bound.
    """
    command.check_namespace(namespace_id)
    sent = command.sent
    # Omitted keeps the map, {} clears it, a non-empty map replaces it whole.
    plugins = check_commands(command.plugins, command.plugin_approvers) if sent("plugins") else None
    # The same for repository bindings: omitted keeps them, [] clears, a list replaces them.
    repositories = binding_documents(command.repository_bindings) if sent("repository_bindings") else None
    if repositories:
        check_repository_bindings(repositories)  # the driver is asked before any lock is taken
    with transaction.atomic():
        namespace = get_live_namespace(namespace_id)
        agent = get_agent(namespace, agent_id, for_update=True)
        authorize(actor, Action.UPDATE, Kind.AGENT, namespace_id=namespace.id, resource_id=agent.id)
        if agent.status == AgentStatus.DELETING:
            raise Conflict("The Agent is being deleted and can no longer be changed.", code="AGENT_DELETING")
        refuse_while_provisioning(agent)
        agent.configuration = _readable_configuration(actor, namespace, command.configuration_id)
        harness = command.harness_auth
        if sent("harness_auth") and harness is not None:
            agent.harness_auth_method = harness.method
            agent.harness_secret = _operable_harness_secret(actor, namespace, harness.secret_id)
        elif sent("harness_auth"):
            agent.harness_auth_method, agent.harness_secret = None, None
        elif agent.harness_secret_id is not None:
            _operable_harness_secret(actor, namespace, agent.harness_secret_id)
        if sent("backend_id"):
            _check_backend_exists(command.backend_id)
            agent.backend_id = command.backend_id
        if sent("execution_mode"):
            agent.execution_mode = command.execution_mode
        if sent("plugin_approvers"):
            agent.plugin_approvers = _approvers(command.plugin_approvers)
        if plugins is not None:
            agent.plugins = plugins
        elif sent("plugin_approvers") and agent.plugins:
            # New default approvers are checked against the kept selections.
            check_selections(stored_selections(agent.plugins), stored_approvers(agent.plugin_approvers))
        if repositories is not None:
            agent.repository_bindings = stored_bindings(repositories)
        if sent("rollback_on_failure"):
            agent.rollback_on_failure = command.rollback_on_failure
        if sent("smoke_conversations"):
            agent.smoke_conversations = [conversation.document()
                                         for conversation in smoke_documents(command.smoke_conversations)]
        agent.save()
        changed = sorted(to_camel(field) for field in command.model_fields_set - {"configuration_id"})
        audit_record(
            actor=actor, action="openclaw.agents.update", namespace_id=namespace.id,
            resource_kind=Kind.AGENT, resource_id=agent.id,
            details={
                "fields": ["configurationId", *changed],
                "configurationId": agent.configuration_id, "harnessSecretId": agent.harness_secret_id,
                "backendId": agent.backend_id,
                **({"plugins": sorted(plugins)} if plugins is not None else {}),
                **({"repositoryBindings": bindings_audit(repositories)} if repositories is not None else {}),
                **({"smokeConversationCount": len(agent.smoke_conversations)}
                   if sent("smoke_conversations") else {}),
                **({"rollbackOnFailure": agent.rollback_on_failure} if sent("rollback_on_failure") else {}),
            },
        )
    return agent
