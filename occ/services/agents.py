"""Agents: create and update the draft that a later deploy freezes into an AgentRevision.

Editing an Agent never queues Compute work and never touches revisions. Until the
topologies and drivers that serve them exist, only the embedded execution mode and API-key
harness authentication are accepted; plugins and repository bindings answer 501.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final

from django.db import IntegrityError, transaction

from occ.errors import Conflict, DetailCode, InvalidRequest, NotFound, NotImplementedYet
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import authorize
from occ.ids import IdPrefix, is_valid_id
from occ.models import (
    Agent,
    AgentStatus,
    Configuration,
    ExecutionMode,
    HarnessAuthMethod,
    Namespace,
    NamespaceStatus,
    Principal,
    PrincipalKind,
    Secret,
)
from occ.services.audit import audit_record
from occ.services.checks import check_name, get_live_namespace, held_or_locked_namespace
from occ.services.provisioning_guards import refuse_while_provisioning


class _Unset(Enum):
    UNSET = "unset"


UNSET: Final = _Unset.UNSET
"""An omitted PATCH field: the stored value is preserved (``None`` clears it)."""

WORKSPACE_FILE_NAMES = frozenset({"AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md"})
WORKSPACE_FILE_MAX_BYTES = 16 * 1024
PLUGIN_APPROVERS_MAX = 64
PLUGIN_APPROVER_FIELD_MAX = 256
REPOSITORY_BINDINGS_MAX = 16
PLUGIN_KEY = re.compile(r"^[A-Za-z0-9._~:@-]{1,253}$")
BACKEND_ID = re.compile(r"^[A-Za-z0-9._~:@-]+$")
BACKEND_ID_MAX = 200
# Documented harnessAuth methods whose topologies or drivers do not exist yet.
UNSUPPORTED_HARNESS_METHODS = frozenset({"codex_pat", "oauth", "credential_source", "runtime"})
CREATABLE_IN = frozenset({NamespaceStatus.PROVISIONING, NamespaceStatus.READY})


@dataclass(frozen=True)
class HarnessAuth:
    """A validated ``harnessAuth``: the method and the same-Namespace Secret it reads."""

    method: str
    secret_id: str


# --- pure validators ----------------------------------------------------------------------


def _is_unicode_text(value: str) -> bool:
    """False for strings holding lone surrogates, which no database can store."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_agent_name(name: object) -> str:
    if not isinstance(name, str):
        raise InvalidRequest.at("/name", DetailCode.INVALID_TYPE, "Name must be a string.")
    check_name(name)
    if not _is_unicode_text(name):
        raise InvalidRequest.at("/name", DetailCode.INVALID_VALUE, "Name must be valid Unicode text.")
    return name


def check_configuration_id(value: object) -> str:
    if not isinstance(value, str):
        raise InvalidRequest.at("/configurationId", DetailCode.INVALID_TYPE, "configurationId must be a string.")
    if not is_valid_id(value, IdPrefix.CONFIGURATION):
        raise InvalidRequest.at("/configurationId", DetailCode.INVALID_FORMAT,
                                "configurationId must be a Configuration id (cfg_...).")
    return value


def check_execution_mode(value: object) -> str:
    if not isinstance(value, str):
        raise InvalidRequest.at("/executionMode", DetailCode.INVALID_TYPE, "executionMode must be a string.")
    if value == ExecutionMode.DEDICATED:
        raise InvalidRequest.at("/executionMode", DetailCode.INVALID_VALUE,
                                "The dedicated execution mode is not supported yet; use embedded.")
    if value != ExecutionMode.EMBEDDED:
        raise InvalidRequest.at("/executionMode", DetailCode.INVALID_VALUE,
                                "executionMode must be embedded.")
    return value


def _check_closed_object(value: object, path: str, allowed: set[str], required: set[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidRequest.at(path, DetailCode.INVALID_TYPE, "Expected an object.")
    for key in value:
        if key not in allowed:
            raise InvalidRequest.at(f"{path}/{_escape(key)}", DetailCode.UNKNOWN_FIELD, "Unknown field.")
    for key in sorted(required):
        if key not in value:
            raise InvalidRequest.at(f"{path}/{key}", DetailCode.REQUIRED, "This field is required.")
    return value


def _escape(key: object) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


def check_harness_auth(value: object, *, namespace_id: str) -> HarnessAuth | None:
    """``null`` or ``{method:"api_key", source:{kind:"secret", namespaceId, id}}``."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InvalidRequest.at("/harnessAuth", DetailCode.INVALID_TYPE, "harnessAuth must be an object or null.")
    method = value.get("method")
    if "method" not in value:
        raise InvalidRequest.at("/harnessAuth/method", DetailCode.REQUIRED, "harnessAuth needs a method.")
    if not isinstance(method, str):
        raise InvalidRequest.at("/harnessAuth/method", DetailCode.INVALID_TYPE, "method must be a string.")
    if method in UNSUPPORTED_HARNESS_METHODS:
        raise InvalidRequest.at("/harnessAuth/method", DetailCode.INVALID_VALUE,
                                "This harnessAuth method is not supported yet; use api_key.")
    if method != HarnessAuthMethod.API_KEY:
        raise InvalidRequest.at("/harnessAuth/method", DetailCode.INVALID_VALUE,
                                "harnessAuth method must be api_key.")
    _check_closed_object(value, "/harnessAuth", {"method", "source"}, {"source"})
    source = _check_closed_object(value["source"], "/harnessAuth/source", {"kind", "namespaceId", "id"},
                                  {"kind", "namespaceId", "id"})
    for key in ("kind", "namespaceId", "id"):
        if not isinstance(source[key], str):
            raise InvalidRequest.at(f"/harnessAuth/source/{key}", DetailCode.INVALID_TYPE, "Expected a string.")
    if source["kind"] != "secret":
        raise InvalidRequest.at("/harnessAuth/source/kind", DetailCode.INVALID_VALUE,
                                "An api_key harnessAuth reads a Secret: kind must be secret.")
    if source["namespaceId"] != namespace_id:
        raise InvalidRequest.at("/harnessAuth/source/namespaceId", DetailCode.INVALID_VALUE,
                                "The Secret must belong to the Agent's Namespace.")
    if not is_valid_id(source["id"], IdPrefix.SECRET):
        raise InvalidRequest.at("/harnessAuth/source/id", DetailCode.INVALID_FORMAT,
                                "id must be a Secret id (sec_...).")
    return HarnessAuth(method=method, secret_id=source["id"])


def check_backend_id(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidRequest.at("/backendId", DetailCode.INVALID_TYPE, "backendId must be a string or null.")
    if len(value) > BACKEND_ID_MAX:
        raise InvalidRequest.at("/backendId", DetailCode.TOO_LONG,
                                f"backendId must be at most {BACKEND_ID_MAX} characters.")
    if not BACKEND_ID.fullmatch(value):
        raise InvalidRequest.at("/backendId", DetailCode.INVALID_FORMAT,
                                "backendId must be a non-empty Backend id.")
    return value


def check_plugins(value: object) -> dict[str, Any]:
    """An empty map is accepted; plugin selection answers 501 until the plugin driver exists."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidRequest.at("/plugins", DetailCode.INVALID_TYPE, "plugins must be an object.")
    for key in value:
        if not isinstance(key, str) or not PLUGIN_KEY.fullmatch(key):
            raise InvalidRequest.at(f"/plugins/{_escape(key)}", DetailCode.INVALID_FORMAT,
                                    "Plugin keys must be qualified catalog ids.")
    if value:
        raise NotImplementedYet("Plugins are not supported yet; send an empty plugins map.")
    return {}


def check_repository_bindings(value: object) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidRequest.at("/repositoryBindings", DetailCode.INVALID_TYPE,
                                "repositoryBindings must be an array.")
    if len(value) > REPOSITORY_BINDINGS_MAX:
        raise InvalidRequest.at("/repositoryBindings", DetailCode.TOO_LONG,
                                f"At most {REPOSITORY_BINDINGS_MAX} repository bindings are allowed.")
    if value:
        raise NotImplementedYet("Repository bindings are not supported yet; send an empty list.")
    return []


def check_plugin_approvers(value: object) -> list[dict[str, str]]:
    """At most 64 distinct ``{channel, id}`` pairs, stored as given."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidRequest.at("/pluginApprovers", DetailCode.INVALID_TYPE, "pluginApprovers must be an array.")
    if len(value) > PLUGIN_APPROVERS_MAX:
        raise InvalidRequest.at("/pluginApprovers", DetailCode.TOO_LONG,
                                f"At most {PLUGIN_APPROVERS_MAX} plugin approvers are allowed.")
    approvers: list[dict[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for index, item in enumerate(value):
        path = f"/pluginApprovers/{index}"
        _check_closed_object(item, path, {"channel", "id"}, {"channel", "id"})
        for key in ("channel", "id"):
            field_value = item[key]
            if not isinstance(field_value, str):
                raise InvalidRequest.at(f"{path}/{key}", DetailCode.INVALID_TYPE, "Expected a string.")
            if len(field_value) > PLUGIN_APPROVER_FIELD_MAX:
                raise InvalidRequest.at(f"{path}/{key}", DetailCode.TOO_LONG,
                                        f"At most {PLUGIN_APPROVER_FIELD_MAX} characters.")
            if _plain_token_problem(field_value):
                raise InvalidRequest.at(f"{path}/{key}", DetailCode.INVALID_FORMAT,
                                        "Expected a non-empty identifier without spaces or control characters.")
        pair = (item["channel"], item["id"])
        if pair in seen:
            raise InvalidRequest.at(path, DetailCode.INVALID_VALUE, "Plugin approvers must not repeat.")
        seen.add(pair)
        approvers.append({"channel": pair[0], "id": pair[1]})
    return approvers


def _plain_token_problem(value: str) -> str | None:
    """Why ``value`` is not a plain identifier (non-empty, no whitespace or control chars)."""
    if not value:
        return "empty"
    if not _is_unicode_text(value) or any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in value):
        return "not plain"
    return None


def check_initial_workspace_files(value: object) -> dict[str, str]:
    """A partial map of the four workspace files, each UTF-8 text of at most 16 KiB without NUL."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidRequest.at("/initialWorkspaceFiles", DetailCode.INVALID_TYPE,
                                "initialWorkspaceFiles must be an object.")
    files: dict[str, str] = {}
    for name, content in value.items():
        path = f"/initialWorkspaceFiles/{_escape(name)}"
        if name not in WORKSPACE_FILE_NAMES:
            raise InvalidRequest.at(path, DetailCode.UNKNOWN_FIELD,
                                    "Only AGENTS.md, SOUL.md, IDENTITY.md and USER.md can be staged.")
        if not isinstance(content, str):
            raise InvalidRequest.at(path, DetailCode.INVALID_TYPE, "A workspace file must be a string.")
        if not _is_unicode_text(content):
            raise InvalidRequest.at(path, DetailCode.INVALID_VALUE, "A workspace file must be valid UTF-8 text.")
        if len(content.encode("utf-8")) > WORKSPACE_FILE_MAX_BYTES:
            raise InvalidRequest.at(path, DetailCode.TOO_LONG, "A workspace file must be at most 16 KiB.")
        if "\x00" in content:
            raise InvalidRequest.at(path, DetailCode.INVALID_VALUE, "A workspace file must not contain NUL.")
        files[name] = content
    return files


# --- lookups: 404 before 403, one authorization per referenced resource ---------------------


def get_agent(namespace: Namespace, agent_id: str, *, for_update: bool = False) -> Agent:
    """The Agent under its exact Namespace, or NotFound (a mismatched owner is not revealed)."""
    qs = Agent.objects.filter(namespace=namespace, id=agent_id).select_related("service_principal")
    if for_update:
        qs = qs.select_for_update(of=("self",))
    agent = qs.first()
    if agent is None:
        raise NotFound("The Agent does not exist.")
    return agent


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


def agent_create(
    *,
    actor: Actor,
    namespace_id: str,
    name: str,
    configuration_id: str,
    execution_mode: str | None = ExecutionMode.EMBEDDED,
    harness_auth: dict[str, Any] | None = None,
    backend_id: str | None = None,
    plugins: dict[str, Any] | None = None,
    plugin_approvers: list[dict[str, Any]] | None = None,
    repository_bindings: list[Any] | None = None,
    initial_workspace_files: dict[str, str] | None = None,
    agent_id: str | None = None,
    namespace: Namespace | None = None,
    configuration: Configuration | None = None,
) -> Agent:
    """Create a stopped Agent and its service principal; no revision, no workload, no work.

    ``agent_id``: the id an Agent provisioning pre-allocated (never from a request).
    ``namespace``, ``configuration``: rows the caller's transaction already holds (a fenced
    provisioning step locked the Namespace and created the Configuration); otherwise the
    Namespace is locked and the Configuration read here.
    """
    name = check_agent_name(name)
    configuration_id = check_configuration_id(configuration_id)
    execution_mode = check_execution_mode(execution_mode)
    harness = check_harness_auth(harness_auth, namespace_id=namespace_id)
    backend_id = check_backend_id(backend_id)
    approvers = check_plugin_approvers(plugin_approvers)
    files = check_initial_workspace_files(initial_workspace_files)
    check_plugins(plugins)
    check_repository_bindings(repository_bindings)
    with transaction.atomic():
        # Locked so a concurrent Namespace delete sees this Agent or runs before it.
        namespace = held_or_locked_namespace(namespace_id, namespace)
        authorize(actor, Action.CREATE, Kind.AGENT, namespace_id=namespace.id)
        if namespace.status not in CREATABLE_IN:
            raise Conflict("Agents can be created only in a provisioning or ready Namespace.")
        configuration = _readable_configuration(actor, namespace, configuration_id, configuration)
        secret = _operable_harness_secret(actor, namespace, harness.secret_id) if harness else None
        _check_backend_exists(backend_id)
        if Agent.objects.filter(namespace=namespace, name=name).exists():
            raise Conflict("An Agent with this name already exists in the Namespace.")
        try:
            with transaction.atomic():
                agent = Agent.objects.create(
                    namespace=namespace, name=name, configuration=configuration, execution_mode=execution_mode,
                    harness_auth_method=harness.method if harness else None, harness_secret=secret,
                    backend_id=backend_id, plugins={}, plugin_approvers=approvers, repository_bindings=[],
                    initial_workspace_files=files, **({"id": agent_id} if agent_id is not None else {}),
                )
        except IntegrityError as exc:
            raise Conflict("An Agent with this name already exists in the Namespace.") from exc
        principal = Principal.objects.create(kind=PrincipalKind.SERVICE, name=f"agent {agent.name}",
                                             namespace=namespace, agent=agent)
        audit_record(
            actor=actor, action="openclaw.agents.create", namespace_id=namespace.id,
            resource_kind=Kind.AGENT, resource_id=agent.id,
            details={
                "configurationId": configuration.id, "servicePrincipalId": principal.id,
                "executionMode": execution_mode, "harnessAuthMethod": agent.harness_auth_method,
                "harnessSecretId": agent.harness_secret_id, "backendId": backend_id,
                "pluginApproverCount": len(approvers), "initialWorkspaceFiles": sorted(files),
            },
        )
    return agent


def agent_update(
    *,
    actor: Actor,
    namespace_id: str,
    agent_id: str,
    configuration_id: str,
    execution_mode: str | _Unset = UNSET,
    harness_auth: dict[str, Any] | _Unset | None = UNSET,
    backend_id: str | _Unset | None = UNSET,
    plugins: dict[str, Any] | _Unset | None = UNSET,
    plugin_approvers: list[dict[str, Any]] | _Unset | None = UNSET,
    repository_bindings: list[Any] | _Unset | None = UNSET,
) -> Agent:
    """Edit the draft: an omitted field keeps its value, ``None`` clears it.

    Re-checks ``configuration:read`` on the resulting Configuration and ``secret:operate``
    on the resulting harness Secret, including one that was already bound.
    """
    configuration_id = check_configuration_id(configuration_id)
    if execution_mode is not UNSET:
        execution_mode = check_execution_mode(execution_mode)
    harness: HarnessAuth | _Unset | None = UNSET
    if harness_auth is not UNSET:
        harness = check_harness_auth(harness_auth, namespace_id=namespace_id)
    if backend_id is not UNSET:
        backend_id = check_backend_id(backend_id)
    if plugin_approvers is not UNSET:
        plugin_approvers = check_plugin_approvers(plugin_approvers)
    if plugins is not UNSET:
        plugins = check_plugins(plugins)
    if repository_bindings is not UNSET:
        repository_bindings = check_repository_bindings(repository_bindings)
    with transaction.atomic():
        namespace = get_live_namespace(namespace_id)
        agent = get_agent(namespace, agent_id, for_update=True)
        authorize(actor, Action.UPDATE, Kind.AGENT, namespace_id=namespace.id, resource_id=agent.id)
        if agent.status == AgentStatus.DELETING:
            raise Conflict("The Agent is being deleted and can no longer be changed.", code="AGENT_DELETING")
        refuse_while_provisioning(agent)
        agent.configuration = _readable_configuration(actor, namespace, configuration_id)
        if isinstance(harness, HarnessAuth):
            agent.harness_auth_method = harness.method
            agent.harness_secret = _operable_harness_secret(actor, namespace, harness.secret_id)
        elif harness is None:
            agent.harness_auth_method, agent.harness_secret = None, None
        elif agent.harness_secret_id is not None:
            _operable_harness_secret(actor, namespace, agent.harness_secret_id)
        if backend_id is not UNSET:
            _check_backend_exists(backend_id)
            agent.backend_id = backend_id
        if execution_mode is not UNSET:
            agent.execution_mode = execution_mode
        if plugins is not UNSET:
            agent.plugins = plugins
        if plugin_approvers is not UNSET:
            agent.plugin_approvers = plugin_approvers
        if repository_bindings is not UNSET:
            agent.repository_bindings = repository_bindings
        agent.save()
        provided = {"executionMode": execution_mode, "harnessAuth": harness_auth, "backendId": backend_id,
                    "plugins": plugins, "pluginApprovers": plugin_approvers,
                    "repositoryBindings": repository_bindings}
        audit_record(
            actor=actor, action="openclaw.agents.update", namespace_id=namespace.id,
            resource_kind=Kind.AGENT, resource_id=agent.id,
            details={
                "fields": ["configurationId", *sorted(k for k, v in provided.items() if v is not UNSET)],
                "configurationId": agent.configuration_id, "harnessSecretId": agent.harness_secret_id,
                "backendId": agent.backend_id,
            },
        )
    return agent
