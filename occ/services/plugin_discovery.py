"""Plugin discovery: catalog pages and entry details for the Create Agent form and for an
existing Agent's Plugins tab, through the installation's PluginDriver. Nothing is stored.

Order, per the deployment flow (seed 001):

- **Create Agent**: ``agent:create`` on the Namespace; for a ``secretRef``, the Secret exists
  in that Namespace and the caller holds ``secret:operate`` on it; then the driver's support
  (none selected: 501, read no Secret); then the credential: the typed ``accessToken``, or the
  Secret's value read inside the SecretDriver's ``with_value`` for that one call.
- **Existing Agent**: ``agent:read`` and ``agent:update`` on that Agent, which must be active;
  then the driver's support; a driver that needs a credential uses the Agent's bound
  ``codex_pat`` Secret: the caller and the Agent's service principal both need
  ``secret:operate`` on it, and inside ``with_value`` the binding and both grants are checked
  again against fresh rows before the value goes anywhere (a rotation or a revoked grant
  between the check and the read is caught). A driver that needs none reads no Secret.

Each Secret read is recorded first as one ``access`` audit event (the Secret's id and name,
never its value). The reads are not transactional: a value rotated meanwhile may be used once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.db import transaction

from occ.commands.plugin_discovery import (
    AgentPluginDetailsDiscovery,
    AgentPluginDiscovery,
    PluginDetailsDiscovery,
    PluginDiscovery,
)
from occ.drivers.plugins.base import (
    CatalogEntry,
    CatalogPage,
    DiscoveryCredential,
    DiscoveryQuery,
    PluginDriver,
    PolicyCapabilities,
)
from occ.drivers.plugins.registry import plugin_driver, require_plugin_driver
from occ.errors import Conflict, Denial, DetailCode, Forbidden, InvalidRequest
from occ.iam.actor import Actor, Source
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed, authorize, load_with_policies
from occ.models import Agent, AgentStatus, AuditKind, Namespace, Secret
from occ.selectors.agents import get_agent
from occ.selectors.namespaces import get_live_namespace
from occ.selectors.secrets import get_user_secret
from occ.services.audit import audit_record
from occ.services.secrets import secret_value_use

T = TypeVar("T")

SECRET_USE_ACTION = "openclaw.secrets.value.use"
CODEX_PAT = "codex_pat"
NOT_NEEDED = "This installation's plugin catalog needs no credential; send neither accessToken nor secretRef."
NEEDED = "This installation's plugin catalog needs a credential: send accessToken or secretRef."


class PluginCredentialMissing(Conflict):
    default_message = ("The Agent has no bound service account token (codex_pat) to browse plugins with. "
                       "Set the Agent's credential first; saved selections can still be edited.")

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message, code="PLUGIN_DISCOVERY_CREDENTIAL_MISSING")


def installation_plugin_capabilities() -> PolicyCapabilities | None:
    """The selected driver's capabilities (what ``GET /installation`` shows), or None."""
    driver = plugin_driver()
    return None if driver is None else driver.capabilities()


def installation_known_plugins(selection_ids: list[str]) -> dict[str, CatalogEntry]:
    """The entries of saved selections that the selected driver knows without a credential
    or a remote call (a curated catalog's names, for the picker's Configured view). Reads no
    Secret, calls nothing outside, stores nothing; empty without a driver."""
    driver = plugin_driver()
    return {} if driver is None else dict(driver.known_entries(selection_ids[:200]))


# --- create time -------------------------------------------------------------------------------


def plugins_discover(*, actor: Actor, namespace_id: str, command: PluginDiscovery) -> CatalogPage:
    """A catalog page for the Create Agent form."""
    query = DiscoveryQuery(q=command.q, cursor=command.cursor)
    return _create_time(actor, namespace_id, command, lambda driver, cred: driver.discover(query, cred))


def plugin_details_discover(*, actor: Actor, namespace_id: str, command: PluginDetailsDiscovery) -> CatalogEntry:
    """One entry with its tools, for the Create Agent form."""
    return _create_time(actor, namespace_id, command, lambda driver, cred: driver.details(command.plugin_id, cred))


def _create_time(actor: Actor, namespace_id: str, command: PluginDiscovery | PluginDetailsDiscovery,
                 call: Callable[[PluginDriver, DiscoveryCredential | None], T]) -> T:
    command.check_namespace(namespace_id)
    namespace = get_live_namespace(namespace_id)
    authorize(actor, Action.CREATE, Kind.AGENT, namespace_id=namespace.id)
    secret = None
    if command.secret_ref is not None:
        secret = get_user_secret(namespace, command.secret_ref.id)
        authorize(actor, Action.OPERATE, Kind.SECRET, namespace_id=namespace.id, resource_id=secret.id)
    driver = require_plugin_driver()  # 501 before any Secret is read
    needs = driver.capabilities().discovery_credential == "required"
    given = "/accessToken" if command.access_token is not None else "/secretRef" if secret is not None else None
    if not needs:
        if given is not None:
            raise InvalidRequest.at(given, DetailCode.INVALID_VALUE, NOT_NEEDED)
        return call(driver, None)
    if command.access_token is not None:
        return call(driver, DiscoveryCredential(command.access_token.strip()))
    if secret is None:
        raise InvalidRequest.at("/accessToken", DetailCode.REQUIRED, NEEDED)
    _audit_use(actor, secret, agent_id=None)
    return secret_value_use(secret=secret, consumer=lambda value: call(driver, DiscoveryCredential(value.strip())))


# --- an existing Agent -------------------------------------------------------------------------


def agent_plugin_capabilities(*, actor: Actor, namespace_id: str, agent_id: str) -> PolicyCapabilities:
    """The policy controls an editor of this Agent's selections gets (501 without a driver)."""
    _editable_agent(actor, namespace_id, agent_id)
    return require_plugin_driver().capabilities()


def agent_plugins_discover(*, actor: Actor, namespace_id: str, agent_id: str,
                           command: AgentPluginDiscovery) -> CatalogPage:
    query = DiscoveryQuery(q=command.q, cursor=command.cursor)
    return _agent_time(actor, namespace_id, agent_id, lambda driver, cred: driver.discover(query, cred))


def agent_plugin_details_discover(*, actor: Actor, namespace_id: str, agent_id: str,
                                  command: AgentPluginDetailsDiscovery) -> CatalogEntry:
    return _agent_time(actor, namespace_id, agent_id,
                       lambda driver, cred: driver.details(command.plugin_id, cred))


def _editable_agent(actor: Actor, namespace_id: str, agent_id: str) -> tuple[Namespace, Agent]:
    namespace = get_live_namespace(namespace_id)
    agent = get_agent(namespace, agent_id)
    authorize(actor, Action.READ, Kind.AGENT, namespace_id=namespace.id, resource_id=agent.id)
    authorize(actor, Action.UPDATE, Kind.AGENT, namespace_id=namespace.id, resource_id=agent.id)
    if agent.status != AgentStatus.ACTIVE:
        raise Conflict("The Agent is being deleted; its plugins can no longer change.", code="AGENT_DELETING")
    return namespace, agent


def _agent_time(actor: Actor, namespace_id: str, agent_id: str,
                call: Callable[[PluginDriver, DiscoveryCredential | None], T]) -> T:
    namespace, agent = _editable_agent(actor, namespace_id, agent_id)
    driver = require_plugin_driver()
    if driver.capabilities().discovery_credential != "required":
        return call(driver, None)  # a curated catalog: no Secret is read
    secret = _bound_secret(namespace, agent)
    _authorize_both(actor, agent, secret)
    _audit_use(actor, secret, agent_id=agent.id)

    def consume(value: str) -> T:
        _recheck(actor, agent, secret)
        return call(driver, DiscoveryCredential(value.strip()))

    return secret_value_use(secret=secret, consumer=consume)


def _bound_secret(namespace: Namespace, agent: Agent) -> Secret:
    if agent.harness_auth_method != CODEX_PAT or agent.harness_secret_id is None:
        raise PluginCredentialMissing()
    return get_user_secret(namespace, agent.harness_secret_id)


def _authorize_both(actor: Actor, agent: Agent, secret: Secret) -> None:
    authorize(actor, Action.OPERATE, Kind.SECRET, namespace_id=agent.namespace_id, resource_id=secret.id)
    _, loaded = load_with_policies(None, agent_id=agent.id)
    agent_actor = None if loaded is None else Actor(principal=loaded[0], source=Source.API, _policy=loaded[1])
    if agent_actor is None or not allowed(agent_actor, Action.OPERATE, Kind.SECRET,
                                          namespace_id=agent.namespace_id, resource_id=secret.id):
        raise Forbidden(
            "The Agent's service principal may not use its bound Secret. Grant the Agent access to its "
            "credential on the Credentials tab, then browse again.",
            denial=Denial(actor_id=actor.id, action=Action.OPERATE.value, resource_kind=Kind.SECRET.value,
                          namespace_id=agent.namespace_id, resource_id=secret.id,
                          reason="agent_principal_lacks_grant", extra={"agentId": agent.id}),
        )


def _recheck(actor: Actor, agent: Agent, secret: Secret) -> None:
    """Inside ``with_value``: the binding and both grants, from fresh rows."""
    current = Agent.objects.filter(id=agent.id, namespace_id=agent.namespace_id).values(
        "status", "harness_auth_method", "harness_secret_id").first()
    if (current is None or current["status"] != AgentStatus.ACTIVE or current["harness_auth_method"] != CODEX_PAT
            or current["harness_secret_id"] != secret.id):
        raise PluginCredentialMissing("The Agent's credential changed while browsing. Reload and try again.")
    mine, of_agent = load_with_policies(actor.id, agent_id=agent.id)
    for loaded, who in ((mine, "caller"), (of_agent, "agent")):
        fresh = None if loaded is None else Actor(principal=loaded[0], source=actor.source, key_id=actor.key_id,
                                                    key_namespace_id=actor.key_namespace_id, _policy=loaded[1])
        if fresh is None or not allowed(fresh, Action.OPERATE, Kind.SECRET, namespace_id=agent.namespace_id,
                                        resource_id=secret.id):
            raise Forbidden(
                "Access to the Agent's bound Secret was withdrawn. Ask for access, then browse again.",
                denial=Denial(actor_id=actor.id, action=Action.OPERATE.value, resource_kind=Kind.SECRET.value,
                              namespace_id=agent.namespace_id, resource_id=secret.id,
                              reason="grant_withdrawn", extra={"agentId": agent.id, "subject": who}),
            )


def _audit_use(actor: Actor, secret: Secret, *, agent_id: str | None) -> None:
    details = {"name": secret.name, "purpose": "plugin_discovery"}
    if agent_id is not None:
        details["agentId"] = agent_id
    with transaction.atomic():
        audit_record(actor=actor, kind=AuditKind.ACCESS, action=SECRET_USE_ACTION, namespace_id=secret.namespace_id,
                     resource_kind=Kind.SECRET, resource_id=secret.id, details=details)
