"""What the caller may do, asked before acting (issue 26): the console and clients disable what
the server would refuse. Each answer is :func:`occ.iam.policy.allowed` on the exact resource
the matching endpoint authorizes, so it cannot drift from the engine; the server still refuses
every request it does not allow.

Asking is itself authorized: the Namespace must be readable (``read:namespace``), or the Agent,
Configuration or Secret (``read`` on it), so the answer never tells what exists to someone who
may not see it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed, allowed_in, restricted
from occ.models import Agent, Configuration, SecretBinding
from occ.selectors.agents import agent_get
from occ.selectors.configurations import configuration_get, delivered_secret_ids
from occ.selectors.iam import manages_namespace_access
from occ.selectors.namespaces import namespace_get
from occ.selectors.secrets import secret_get

A, K = Action, Kind

# name -> what the Namespace-level endpoint authorizes (on the Namespace, or its collection).
NAMESPACE_ACTIONS: dict[str, tuple[Action, Kind]] = {
    "read": (A.READ, K.NAMESPACE),
    "delete": (A.DELETE, K.NAMESPACE),
    "create_agent": (A.CREATE, K.AGENT),
    "create_configuration": (A.CREATE, K.CONFIGURATION),
    "create_secret": (A.CREATE, K.SECRET),
    "create_preset": (A.CREATE, K.PRESET),
}
# name -> what the Agent endpoint authorizes on that Agent.
AGENT_ACTIONS: dict[str, tuple[Action, Kind]] = {
    "read": (A.READ, K.AGENT),
    "update": (A.UPDATE, K.AGENT),
    "delete": (A.DELETE, K.AGENT),
    "deploy": (A.DEPLOY, K.AGENT),
    "stop_start": (A.OPERATE, K.AGENT),  # POST .../stop and .../start
    "chat": (A.INVOKE, K.AGENT),
    "administer": (A.ADMINISTER, K.AGENT),
    "read_conversations": (A.READ_CONVERSATIONS, K.AGENT),  # its Sessions tab, a transcript
    "decide_approvals": (A.DECIDE_APPROVALS, K.AGENT),  # the approvals inbox
}

# name -> what the Configuration endpoint authorizes on that Configuration.
CONFIGURATION_ACTIONS: dict[str, tuple[Action, Kind]] = {
    "read": (A.READ, K.CONFIGURATION),
    "update": (A.UPDATE, K.CONFIGURATION),  # PATCH, the console's Edit and Secret bindings
    "delete": (A.DELETE, K.CONFIGURATION),
}
# name -> what the Secret endpoints authorize on that Secret.
SECRET_ACTIONS: dict[str, tuple[Action, Kind]] = {
    "read": (A.READ, K.SECRET),
    "update": (A.UPDATE, K.SECRET),  # PATCH: replace the value
    "delete": (A.DELETE, K.SECRET),
    "use": (A.OPERATE, K.SECRET),  # bind it to a Configuration, give an Agent access to it
}

# What admitting a provisioning needs Namespace-wide (``occ.services.provisioning``): creating the
# Agent and its Configuration, and what the worker does for the caller on them. They do not exist
# yet, so only a Namespace-wide grant can hold it.
PROVISION_WORKER_AUTHORITY: tuple[tuple[Action, Kind], ...] = (
    (A.READ, K.CONFIGURATION), (A.READ, K.AGENT), (A.UPDATE, K.AGENT), (A.OPERATE, K.AGENT), (A.DEPLOY, K.AGENT))
PROVISION_AUTHORITY = ((A.CREATE, K.AGENT), (A.CREATE, K.CONFIGURATION), *PROVISION_WORKER_AUTHORITY)


def may_read_logs(actor: Actor, agent: Agent) -> bool:
    """``read_logs``, or ``administer`` unless a Restriction bars log reads (the log endpoint's rule)."""
    scope = {"namespace_id": agent.namespace_id, "resource_id": agent.id}
    if allowed(actor, Action.READ_LOGS, Kind.AGENT, **scope):
        return True
    return allowed(actor, Action.ADMINISTER, Kind.AGENT, **scope) and not restricted(
        actor, Action.READ_LOGS, Kind.AGENT, **scope)


def namespace_actions(*, actor: Actor, namespace_id: str) -> dict[str, bool]:
    namespace = namespace_get(actor=actor, namespace_id=namespace_id)
    actions = {name: allowed(actor, action, kind, namespace_id=namespace.id)
               for name, (action, kind) in NAMESPACE_ACTIONS.items()}
    # Roles, bindings and service principals of a Namespace: occ.selectors.iam.policy_namespace's rule.
    actions["manage_access"] = actions["read"] and manages_namespace_access(actor, namespace.id)
    return actions


def agent_actions(*, actor: Actor, namespace_id: str, agent_id: str) -> dict[str, bool]:
    return agent_actions_on(actor, agent_get(actor=actor, namespace_id=namespace_id, agent_id=agent_id))


def agent_actions_on(actor: Actor, agent: Agent) -> dict[str, bool]:
    """``agent_actions`` for an Agent the caller has read already (the Agent page's): in memory."""
    actions = {name: allowed(actor, action, kind, namespace_id=agent.namespace_id, resource_id=agent.id)
               for name, (action, kind) in AGENT_ACTIONS.items()}
    actions["read_logs"] = may_read_logs(actor, agent)
    return actions


def deploy_references_refused(actor: Actor, agent: Agent, *, configuration_id: str,
                              secret_ids: Iterable[str]) -> list[str]:
    """What a deploy (or redeploy) of ``agent`` reads beside the Agent that the caller may not:
    ``"configuration"`` without ``read`` on the Configuration, then each Secret id it delivers
    without ``operate`` on it (``occ.services.deploy``; the anchor's rule: a reference needs an
    allow from its own authority, ``deploy`` on the Agent never covers it). A "Can deploy" share
    is exactly ``deploy`` on the Agent, so its holder may still be refused here."""
    scope = {"namespace_id": agent.namespace_id}
    refused = [] if allowed(actor, A.READ, K.CONFIGURATION, resource_id=configuration_id, **scope) else [
        "configuration"]
    return refused + [secret_id for secret_id in sorted(set(secret_ids))
                      if not allowed(actor, A.OPERATE, K.SECRET, resource_id=secret_id, **scope)]


def deploy_references(agent: Agent) -> tuple[str, list[str]]:
    """The Configuration and the Secrets a deploy of the Agent's current settings delivers
    (its Configuration's bindings and its model key), as ``occ.services.deploy`` collects them."""
    bindings = dict(SecretBinding.objects.filter(configuration_id=agent.configuration_id)
                    .values_list("env_name", "secret_id"))
    return agent.configuration_id, sorted(delivered_secret_ids(agent, bindings))


def may_save_as_preset(actor: Actor, agent: Agent) -> bool:
    """Whether the Agent page's "Save as preset" would be admitted (``preset_template_of_agent``
    then ``preset_create``): reading its Configuration and creating a Preset in the Namespace."""
    return (allowed(actor, A.READ, K.CONFIGURATION, namespace_id=agent.namespace_id,
                    resource_id=agent.configuration_id)
            and allowed(actor, A.CREATE, K.PRESET, namespace_id=agent.namespace_id))


def may_provision(actor: Actor, namespace_id: str) -> bool:
    """Whether the console's Create Agent would be admitted (``provision_admit``): creating the
    Agent and its Configuration, and the Namespace-wide authority its worker acts with."""
    return all(allowed(actor, action, kind, namespace_id=namespace_id) for action, kind in PROVISION_AUTHORITY)


def configuration_actions(*, actor: Actor, namespace_id: str, configuration_id: str) -> dict[str, bool]:
    return configuration_actions_on(
        actor, configuration_get(actor=actor, namespace_id=namespace_id, configuration_id=configuration_id))


def configuration_actions_on(actor: Actor, configuration: Configuration) -> dict[str, bool]:
    """``configuration_actions`` for a Configuration the caller has read already: in memory."""
    return {name: allowed(actor, action, kind, namespace_id=configuration.namespace_id, resource_id=configuration.id)
            for name, (action, kind) in CONFIGURATION_ACTIONS.items()}


def secret_actions(*, actor: Actor, namespace_id: str, secret_id: str) -> dict[str, bool]:
    secret = secret_get(actor=actor, namespace_id=namespace_id, secret_id=secret_id)
    return {name: allowed(actor, action, kind, namespace_id=secret.namespace_id, resource_id=secret.id)
            for name, (action, kind) in SECRET_ACTIONS.items()}


@dataclass(frozen=True)
class SecretPermissions:
    """What the Secrets page may offer: creating one, and per Secret replacing or deleting it."""

    create: bool
    update: frozenset[str]
    delete: frozenset[str]


def secret_permissions(*, actor: Actor, namespace_id: str, secret_ids: Iterable[str]) -> SecretPermissions:
    """For Secrets the caller has read already (the list's): decided per Secret, in memory."""
    ids = list(secret_ids)
    may_update = allowed_in(actor, A.UPDATE, K.SECRET, namespace_id=namespace_id)
    may_delete = allowed_in(actor, A.DELETE, K.SECRET, namespace_id=namespace_id)
    return SecretPermissions(create=allowed(actor, A.CREATE, K.SECRET, namespace_id=namespace_id),
                             update=frozenset(i for i in ids if may_update(i)),
                             delete=frozenset(i for i in ids if may_delete(i)))
