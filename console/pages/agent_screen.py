"""One request's view of one Agent and the context its page is rendered from.

``Screen`` does each read of the Agent at most once per request. ``page_context`` is the
whole page's context with every part lazy, so a view that answers htmx with one partial of
``console/agent/page.html`` (``#agent-header``, ``#deployment-activity``, ``#agent-tabs``, a
tab's panel, ``#agent-deletion``) reads only what that partial shows.

A write's outcome, and the page's writes disabled after an unknown one, are
``console.pages.agent_outcome``'s.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from functools import cached_property
from typing import Any
from urllib.parse import urlencode

from django.http import HttpResponse
from django.urls import reverse
from django.utils.functional import SimpleLazyObject

from console.common import ConsoleRequest, current, error_summary, render_page, wants_fragment
from console.forms.configurations import ConfigurationForm
from console.forms.plugin_picker import approvers_text, dump_selections
from console.forms.repositories import RepositoryAccessForm
from console.forms.smoke import SmokeConversationsForm
from console.pages.agent_deployment import deployment_view
from console.pages.agent_outcome import OUTCOME_UNKNOWN_KEY, Failure, audit_refusal
from console.pages.agent_repositories import repositories_context
from console.pages.agent_revisions import next_deploy_notice, redeploy_url, revisions_context, secret_label
from console.pages.agent_runtime import logs_context
from console.pages.agent_sessions import sessions_context
from console.pages.agent_sharing import sharing_context
from console.pages.plugin_picker import picker_context
from console.pages.refusals import (
    SAVE_PRESET_REFUSED,
    agent_refusal,
    agent_refusals,
    configuration_refusal,
    deploy_references_refusal,
)
from occ.errors import Forbidden, NotFound
from occ.iam.actor import Actor, Source
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed
from occ.models import Agent, AgentProvisioningWork, AgentRevision, AgentStatus, Configuration
from occ.openclaw.document import primary_model_ref
from occ.selectors.agents import agent_get
from occ.selectors.configurations import configuration_get, configuration_secret_ids
from occ.selectors.deployments import AgentRuntime, DeploymentStatus, agent_runtime, deployment_statuses
from occ.selectors.permissions import (
    CONFIGURATION_ACTIONS,
    agent_actions_on,
    deploy_references,
    deploy_references_refused,
    may_save_as_preset,
)
from occ.selectors.revisions import agent_revisions_by_id, latest_revision
from occ.selectors.secrets import secret_list
from occ.services.plugin_discovery import installation_plugin_capabilities
from occ.services.provisioning_guards import owning_provisioning

PAGE = "console/agent/page.html"
CONFIRM = "console/agent/confirm.html"
TABS = (("overview", "Overview"), ("chat", "Chat"), ("sessions", "Sessions"), ("logs", "Logs"),
        ("configuration", "Configuration"),
        ("credentials", "Credentials"), ("plugins", "Plugins"), ("revisions", "Revisions"), ("sharing", "Sharing"))
AGENT_CHANGED = "occ:agent-changed"  # the header re-reads itself
DEPLOYMENT_CHANGED = "occ:deployment-changed"  # the deployment panel re-reads itself
DELETING_NAMES_KEY = "occ.console.agent-deleting-names"
HEADER_CONTROLS = ("deploy", "stop_start", "delete")


# --- what the page reads ---------------------------------------------------------------------

class Screen:
    """One request's reads of one Agent, each done at most once."""

    def __init__(self, request: ConsoleRequest, agent: Agent) -> None:
        self.request = request
        self.agent = agent
        self.actor = current(request).actor
        self.namespace = current(request).namespace

    @classmethod
    def load(cls, request: ConsoleRequest, namespace_id: str, agent_id: str) -> Screen:
        return cls(request, agent_get(actor=current(request).actor, namespace_id=namespace_id, agent_id=agent_id))

    def reloaded(self) -> Screen:
        """A fresh read, after a write (every cached read starts over)."""
        return Screen.load(self.request, self.agent.namespace_id, self.agent.id)

    @property
    def ids(self) -> dict[str, str]:
        return {"namespace_id": self.agent.namespace_id, "agent_id": self.agent.id}

    @cached_property
    def urls(self) -> dict[str, str]:
        args = [self.agent.namespace_id, self.agent.id]
        names = ("header", "deployment", "deploy", "stop", "start", "delete", "status", "configuration",
                 "credentials", "credentials-grant", "chat", "chat-new", "runtime", "logs", "smoke",
                 "repositories")
        urls = {name.replace("-", "_"): reverse(f"console:agent-{name}", args=args) for name in names}
        urls["page"] = reverse("console:agent", args=args)
        urls["agents"] = reverse("console:agents", args=[self.agent.namespace_id])
        return urls

    def tab_url(self, tab: str, **params: str) -> str:
        tab = tab if tab in dict(TABS) else "overview"
        return f"{self.urls['page']}?{urlencode({'tab': tab, **params})}"

    @cached_property
    def may(self) -> dict[str, bool]:
        """What the caller may do with the Agent (``occ.selectors.permissions``), in memory."""
        return agent_actions_on(self.actor, self.agent)

    def deploy_refusal(self, configuration_id: str, secret_ids: list[str]) -> str:
        """Why a caller who may deploy the Agent would still be refused a deployment of this
        Configuration and these Secrets ("" when it would be admitted, or deploy is refused anyway)."""
        if not self.may["deploy"]:
            return ""
        refused = deploy_references_refused(self.actor, self.agent, configuration_id=configuration_id,
                                            secret_ids=secret_ids)
        return deploy_references_refusal(refused, self.secret_names) if refused else ""

    @cached_property
    def deploy_now_refusal(self) -> str:
        """``deploy_refusal`` for the Agent's current settings (the header's Deploy)."""
        configuration_id, secret_ids = deploy_references(self.agent)
        return self.deploy_refusal(configuration_id, secret_ids)

    def revisions_by_id(self, revision_ids: Iterable[str | None]) -> dict[str, AgentRevision]:
        """Those of ``revision_ids`` that are this Agent's revisions the actor may read."""
        return agent_revisions_by_id(actor=self.actor, agent=self.agent, revision_ids=revision_ids)

    @cached_property
    def latest(self) -> AgentRevision | None:
        """The newest revision the actor may read (never the whole list: an Agent may hold thousands)."""
        return latest_revision(actor=self.actor, agent=self.agent)

    @cached_property
    def active(self) -> AgentRevision | None:
        """The active revision, if the actor may read it."""
        active_id = self.agent.active_revision_id
        latest = self.latest
        if latest is not None and latest.id == active_id:
            return latest
        return self.revisions_by_id([active_id]).get(active_id or "")

    def deployment(self, revision: AgentRevision) -> DeploymentStatus | None:
        """None when the record cannot be read right now (never a made-up status). ``revision``
        was read through the screen (``latest``, ``active``, the tab's page), already authorized: its work row is
        read straight away, not after a second lookup and check of the same revision."""
        return deployment_statuses([revision]).get(revision.id)

    @cached_property
    def latest_deployment(self) -> DeploymentStatus | None:
        return self.deployment(self.latest) if self.latest else None

    @cached_property
    def deployment_panel(self) -> dict[str, Any]:
        """The deployment activity panel's model (``console.pages.agent_deployment``)."""
        return deployment_view(self)

    @cached_property
    def secret_names(self) -> dict[str, str]:
        """Names of the Namespace's Secrets the actor may read (others show by id only)."""
        return {secret.id: secret.name for secret in secret_list(actor=self.actor,
                                                                 namespace_id=self.agent.namespace_id)}

    @cached_property
    def runtime(self) -> AgentRuntime:
        return agent_runtime(self.agent)

    @property
    def status(self) -> str:
        """The state of the header's status pill (kind ``runtime``). A write's toast names the
        same state (``console.views.agent_writes``), so the two can never disagree."""
        if self.agent.status == AgentStatus.DELETING:
            return "deleting"
        if self.runtime.paused:
            return "paused"
        return "failed" if self.runtime.down else self.runtime.state

    @cached_property
    def outcome_unknown(self) -> bool:
        return self.agent.id in self.request.session.get(OUTCOME_UNKNOWN_KEY, [])

    @cached_property
    def provisioning(self) -> AgentProvisioningWork | None:
        """The provisioning that owns the Agent until its handoff (queued, running or failed)."""
        return owning_provisioning(self.agent.id)

    @property
    def provisioning_owned(self) -> bool:
        return self.provisioning is not None


# --- the page's context ----------------------------------------------------------------------

def _header_context(screen: Screen, failure: Failure | None = None) -> dict[str, Any]:
    agent = screen.agent
    deleting = agent.status == AgentStatus.DELETING
    return {
        "active": screen.active,
        "active_hidden": agent.active_revision_id is not None and screen.active is None,
        "latest": screen.latest,
        "latest_deployment": screen.latest_deployment,
        "runtime": screen.runtime,
        "status": screen.status,
        # A fresh key per render: a double submit of this form admits one revision.
        "idempotency_key": f"console-{uuid.uuid4()}",
        "failure": failure,
        "outcome_unknown": screen.outcome_unknown,
        "provisioning_owned": screen.provisioning_owned,
        "deleting": deleting,
        # The header follows a gateway on its way up or down (a start, a deployment, a stop) by
        # polling, until the runtime settles; a deletion has its own progress line instead.
        "follows": screen.runtime.state in ("starting", "stopping") and not deleting,
        "writes_disabled": screen.outcome_unknown,
        "reread_url": screen.tab_url(screen.request.GET.get("tab", "overview"), reread="1"),
        # A control the caller may not use is disabled with its reason (the server refuses too).
        "may": screen.may,
        "refused": agent_refusals(screen.may, HEADER_CONTROLS) | (
            {"deploy": screen.deploy_now_refusal} if screen.deploy_now_refusal else {}),
        "why_not": " ".join(filter(None, (agent_refusal(screen.may, HEADER_CONTROLS), screen.deploy_now_refusal))),
        "preset_refused": "" if may_save_as_preset(screen.actor, agent) else SAVE_PRESET_REFUSED,
    }


def _base_context(screen: Screen) -> dict[str, Any]:
    return {"agent": screen.agent, "urls": screen.urls, "namespace": screen.namespace, "nav": "agents",
            "request_id": getattr(screen.request, "occ_request_id", "")}


def page_context(screen: Screen, *, tab: str = "overview", header_failure: Failure | None = None,
                 runtime_panel: dict[str, Any] | None = None, diagnostics: dict[str, Any] | None = None,
                 **tab_overrides: Any) -> dict[str, Any]:
    """The whole page's context; each part is read only when a template reaches it."""
    return {
        **_base_context(screen),
        "header": SimpleLazyObject(lambda: _header_context(screen, header_failure)),
        # None: the page carries the Runtime panel's placeholder, which asks for it once loaded
        # (``console.views.agent_runtime``), so no page waits for the compute driver.
        "runtime_panel": runtime_panel,
        "deployment": SimpleLazyObject(lambda: screen.deployment_panel),
        "diagnostics": diagnostics,  # what Run diagnostics found (``console.views.agent_detail``)
        **_tabs_context(screen, tab, **tab_overrides),
        "deleting": screen.agent.status == AgentStatus.DELETING,
    }


def respond(screen: Screen, partial: str, *, status: int = 200, **context: Any) -> HttpResponse:
    """The page, or for an htmx swap its ``partial`` (``console.common.render_page``)."""
    return render_page(screen.request, PAGE, page_context(screen, **context), partial=partial, status=status)


def confirmation(screen: Screen, kind: str, revision: AgentRevision | None = None) -> HttpResponse:
    """Stop, Delete or Redeploy ``revision``: components/confirm_dialog.html as the page
    ``CONFIRM``, or for htmx its ``#<kind>-agent-dialog``. The answer to the POST is the header."""
    agent, urls = screen.agent, screen.urls
    if kind == "redeploy":
        assert revision is not None
        words = {"title": f"Redeploy version v{revision.number} of {agent.name}?",
                 "action": redeploy_url(agent, revision.id), "submit": f"Redeploy v{revision.number}",
                 "submit_class": "primary", "icon": "rotate-ccw",
                 "cancel": screen.tab_url("revisions", revision=revision.id),
                 # A fresh key per render: a double submit of the confirmation admits one revision.
                 "idempotency_key": f"console-{uuid.uuid4()}"}
    elif kind == "stop":
        words = {"title": f"Stop {agent.name}?", "action": urls["stop"], "submit": "Stop Agent", "icon": "square"}
    else:
        words = {"title": f"Delete {agent.name}?", "action": urls["delete"], "submit": "Permanently delete Agent",
                 "icon": "trash-2"}
    context = {**_base_context(screen), "kind": kind, "revision": revision,
               "modal": wants_fragment(screen.request),
               "confirmation": {"id": f"{kind}-agent", "cancel": urls["page"], **words}}
    return render_page(screen.request, CONFIRM, context, partial=f"{kind}-agent-dialog")


def _tabs_context(screen: Screen, tab: str, **overrides: Any) -> dict[str, Any]:
    """The tab links and the current tab's panel (``panel``); an unknown tab is Overview."""
    tab = tab if tab in dict(TABS) else "overview"
    builders: dict[str, Callable[..., dict[str, Any]]] = {
        "overview": _overview_context, "configuration": _configuration_context,
        "credentials": credentials_context, "revisions": revisions_context, "plugins": plugins_context,
        "chat": _chat_context, "logs": logs_context, "sharing": sharing_context, "sessions": sessions_context,
    }
    return {"tab": tab, "panel": SimpleLazyObject(lambda: builders[tab](screen, **overrides)),
            "tabs": [{"id": key, "label": label, "url": screen.tab_url(key), "current": key == tab}
                     for key, label in TABS]}


# --- overview -------------------------------------------------------------------------------------

def _overview_context(screen: Screen) -> dict[str, Any]:
    agent = screen.agent
    return {
        "harness_secret": secret_label(screen, agent.harness_secret_id) if agent.harness_secret_id else None,
        "service_principal_id": agent.service_principal.id,
    }


# --- chat tab -------------------------------------------------------------------------------------

def _chat_context(screen: Screen) -> dict[str, Any]:
    """Whether the person may talk to the Agent and whether anything would answer. The gateway
    itself is asked only when a message is sent (``console.views.agent_chat``)."""
    agent = screen.agent
    may_invoke = screen.may["chat"]
    runtime = screen.runtime
    unavailable = None
    if not may_invoke:
        unavailable = ("You can see this Agent but not chat with it. An administrator can share it with you "
                       "(can chat).")
    elif agent.status == AgentStatus.DELETING:
        unavailable = "This Agent is being deleted."
    elif agent.active_revision_id is None:
        unavailable = "This Agent has not been deployed yet. Deploy it to talk to it."
    elif runtime.state == "stopped":
        unavailable = "This Agent is stopped. Start it to talk to it."
    return {"may_invoke": may_invoke, "runtime": runtime, "unavailable": unavailable,
            "starting": runtime.state == "starting"}


# --- configuration tab ----------------------------------------------------------------------------

def readable_configuration(screen: Screen) -> tuple[Configuration | None, str | None]:
    """The Agent's Configuration, or why it cannot be shown (a refusal is audited)."""
    try:
        return configuration_get(actor=screen.actor, namespace_id=screen.agent.namespace_id,
                                 configuration_id=screen.agent.configuration_id), None
    except Forbidden as exc:
        audit_refusal(screen.request, exc)
        return None, "You cannot read this Agent's Configuration."
    except NotFound:
        return None, "This Agent's Configuration is unavailable."


def _configuration_context(screen: Screen, *, form: ConfigurationForm | None = None,
                           stale: bool = False, smoke_form: SmokeConversationsForm | None = None,
                           repositories_form: RepositoryAccessForm | None = None,
                           repositories_unavailable: str | None = None) -> dict[str, Any]:
    configuration, unavailable = readable_configuration(screen)
    agent = screen.agent
    smoke_form = smoke_form or SmokeConversationsForm.of(agent.smoke, rollback_on_failure=agent.rollback_on_failure)
    context: dict[str, Any] = {
        "configuration": configuration, "unavailable": unavailable,
        "harness_secret": secret_label(screen, agent.harness_secret_id) if agent.harness_secret_id else None,
        "writes_disabled": screen.outcome_unknown, "stale": stale,
        "smoke_form": smoke_form, "smoke_count": len(agent.smoke),
        "smoke_summary": error_summary(smoke_form.errors, smoke_form.field_ids(), fallback_id="smoke-prompt-1"),
        # Saving them changes the Agent (agent_update: update:agent).
        "smoke_why_not": agent_refusal(screen.may, ("update",)),
        "repositories": SimpleLazyObject(lambda: repositories_context(screen, repositories_form,
                                                                      repositories_unavailable)),
    }
    if configuration is not None:
        action, kind = CONFIGURATION_ACTIONS["update"]
        may = {"update": allowed(screen.actor, action, kind, namespace_id=agent.namespace_id,
                                 resource_id=configuration.id)}
        context["why_not"] = configuration_refusal(may, ("update",))
        context["model"] = primary_model_ref(configuration.values)
        context["deploy_notice"] = next_deploy_notice(screen, configuration.id, configuration.generation)
        context["form"] = form or ConfigurationForm.of(configuration.name, configuration.values,
                                                       configuration.generation)
        context["check_url"] = reverse("console:configuration-check", args=[agent.namespace_id, configuration.id])
        context["error_summary"] = error_summary(
            context["form"].errors, {"configuration_json": "configuration-json"}, fallback_id="configuration-json")
    return context


# --- credentials tab ------------------------------------------------------------------------------

def credentials_context(screen: Screen, *, failure: Failure | None = None) -> dict[str, Any]:
    """Each Secret the Agent uses, and whether its own principal holds ``secret:operate`` on it
    (deploy refuses without it: ``occ.services.deploy.authorize_secret_delivery``)."""
    agent = screen.agent
    agent_actor = Actor(principal=agent.service_principal, source=Source.API)

    def entry(secret_id: str) -> dict[str, Any]:
        return {**secret_label(screen, secret_id),
                "granted": allowed(agent_actor, Action.OPERATE, Kind.SECRET, namespace_id=agent.namespace_id,
                                   resource_id=secret_id)}

    harness = entry(agent.harness_secret_id) if agent.harness_secret_id else None
    configuration, unavailable = readable_configuration(screen)
    bindings = []
    if configuration is not None:
        bindings = [{"env": env, **entry(secret_id)}
                    for env, secret_id in configuration_secret_ids(configuration).items()]
    used = ([harness] if harness else []) + bindings
    missing = sorted({item["id"] for item in used if not item["granted"]})
    return {"harness": harness, "bindings": bindings, "bindings_unavailable": unavailable, "missing": missing,
            "uses_secrets": bool(used), "failure": failure, "writes_disabled": screen.outcome_unknown,
            # Granting the Agent its Secrets changes the Agent (update:agent; the server checks each Secret).
            "why_not": agent_refusal(screen.may, ("update",))}


# --- plugins tab ----------------------------------------------------------------------------------

def plugins_context(screen: Screen) -> dict[str, Any]:
    """The picker on the saved selections; without the right to edit them, a read-only view."""
    agent = screen.agent
    editable = screen.may["update"]
    capabilities = installation_plugin_capabilities()
    return picker_context(agent.namespace_id, dump_selections(agent.plugins or {}), agent_id=agent.id,
                          editable=editable and agent.status == AgentStatus.ACTIVE, capabilities=capabilities,
                          plugin_approvers=approvers_text(agent.plugin_approvers))
