"""The Agent details page: header, deployment activity, four tabs, and the Agent's writes.

``console:agent`` renders the whole page; every part of it is also a URL of its own that
answers htmx with one fragment (one root element with an id) and a plain browser with the
whole page. Writes call one ``occ.services`` function each with the signed-in Actor.

A write whose outcome is unknown (a 5xx answer or a database error) is never repeated by
the page: it marks the Agent in the session and every write button renders disabled until
the person presses Refresh (``?reread=1``), which reads the Agent back. Known rejections
(400/403/404/409/429) show their message where the button was; a 403 is audited.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, TypeVar
from urllib.parse import urlencode

from django.contrib import messages
from django.db import DatabaseError
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from console.common import (
    CLOSE_MODAL_EVENT,
    ConsoleRequest,
    console_view,
    current,
    error_title,
    field_errors,
    is_known_failure,
    known_failure_message,
    redirect_or_hx,
    stop_polling,
    trigger,
    wants_fragment,
)
from occ.commands.base import build
from occ.commands.configurations import ConfigurationUpdate
from occ.errors import Conflict, DependencyUnavailable, Forbidden, InvalidRequest, NotFound, OccError, UnknownOutcome
from occ.iam.actor import Actor, Source
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed
from occ.models import (
    Agent,
    AgentProvisioningWork,
    AgentRevision,
    AgentStatus,
    Configuration,
    ProvisioningStatus,
)
from occ.selectors.agents import agent_get
from occ.selectors.configurations import configuration_get, configuration_secret_bindings
from occ.selectors.deployments import DeploymentStatus, deployment_get, deployment_statuses
from occ.selectors.revisions import revision_get, revision_list, revision_wire
from occ.selectors.secrets import secret_list
from occ.services.agent_secret_access import agent_secret_access_grant
from occ.services.audit import audit_denial
from occ.services.configurations import configuration_update
from occ.services.deploy import agent_delete, agent_deploy, agent_stop
from occ.services.provisioning_guards import owning_provisioning

logger = logging.getLogger(__name__)

T = TypeVar("T")

TABS = (("overview", "Overview"), ("configuration", "Configuration"), ("credentials", "Credentials"),
        ("revisions", "Revisions"))
AGENT_CHANGED = "occ:agent-changed"  # the header re-reads itself
DEPLOYMENT_CHANGED = "occ:deployment-changed"  # the deployment panel re-reads itself
OUTCOME_UNKNOWN_KEY = "occ.console.agent-outcome-unknown"
DELETING_NAMES_KEY = "occ.console.agent-deleting-names"

STALE_CONFIGURATION = "Someone saved this Configuration after you opened it. Reload to see their changes."
INVALID_JSON = "Enter a valid JSON object."


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

    @property
    def ids(self) -> dict[str, str]:
        return {"namespace_id": self.agent.namespace_id, "agent_id": self.agent.id}

    @cached_property
    def urls(self) -> dict[str, str]:
        args = [self.agent.namespace_id, self.agent.id]
        names = ("header", "deployment", "deploy", "stop", "delete", "status", "configuration", "credentials",
                 "credentials-grant")
        urls = {name.replace("-", "_"): reverse(f"console:agent-{name}", args=args) for name in names}
        urls["page"] = reverse("console:agent", args=args)
        urls["agents"] = reverse("console:agents", args=[self.agent.namespace_id])
        return urls

    def tab_url(self, tab: str, **params: str) -> str:
        tab = tab if tab in dict(TABS) else "overview"
        return f"{self.urls['page']}?{urlencode({'tab': tab, **params})}"

    @cached_property
    def revisions(self) -> list[AgentRevision]:
        """Oldest first; only those the actor may read."""
        return revision_list(actor=self.actor, **self.ids)

    @property
    def latest(self) -> AgentRevision | None:
        return self.revisions[-1] if self.revisions else None

    @property
    def active(self) -> AgentRevision | None:
        return next((r for r in self.revisions if r.id == self.agent.active_revision_id), None)

    def deployment(self, revision: AgentRevision) -> DeploymentStatus | None:
        """None when the record cannot be read right now (never a made-up status)."""
        try:
            return deployment_get(actor=self.actor, revision_id=revision.id, **self.ids)
        except DependencyUnavailable:
            return None

    @cached_property
    def latest_deployment(self) -> DeploymentStatus | None:
        return self.deployment(self.latest) if self.latest else None

    @cached_property
    def secret_names(self) -> dict[str, str]:
        """Names of the Namespace's Secrets the actor may read (others show by id only)."""
        return {secret.id: secret.name for secret in secret_list(actor=self.actor,
                                                                 namespace_id=self.agent.namespace_id)}

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


def _mark_outcome_unknown(request: ConsoleRequest, agent_id: str) -> None:
    marked = set(request.session.get(OUTCOME_UNKNOWN_KEY, []))
    request.session[OUTCOME_UNKNOWN_KEY] = sorted(marked | {agent_id})
    # Saved now: SessionMiddleware does not save the session of a 5xx answer, and this one is.
    try:
        request.session.save()
    except DatabaseError:
        logger.warning("could not remember an unknown outcome for agent %s", agent_id)


def _clear_outcome_unknown(request: ConsoleRequest, agent_id: str) -> None:
    marked = set(request.session.get(OUTCOME_UNKNOWN_KEY, []))
    if agent_id in marked:
        request.session[OUTCOME_UNKNOWN_KEY] = sorted(marked - {agent_id})


def _reread(request: ConsoleRequest, agent_id: str) -> None:
    """Refresh (``?reread=1``) is the read-back that re-enables writes after an unknown outcome."""
    if request.GET.get("reread") == "1":
        _clear_outcome_unknown(request, agent_id)


# --- writes: one service call, its outcome classified ------------------------------------------

@dataclass(frozen=True)
class Failure:
    """A write that did not succeed: a known rejection, or an outcome nobody can vouch for."""

    error: OccError
    unknown: bool
    request_id: str

    @property
    def status(self) -> int:
        return 503 if self.unknown else self.error.status

    @property
    def title(self) -> str:
        return "Outcome unknown" if self.unknown else error_title(self.error)

    @property
    def message(self) -> str:
        if self.unknown:
            return ("OCC could not confirm whether this change was recorded. It was not repeated. "
                    "Press Refresh to read the current state before trying again.")
        return known_failure_message(self.error)


def _audit_refusal(request: ConsoleRequest, exc: OccError) -> None:
    denial = getattr(exc, "denial", None)
    if denial is not None:
        audit_denial(denial, actor=current(request).actor)


def _attempt(request: ConsoleRequest, agent_id: str, write: Callable[[], T]) -> tuple[T | None, Failure | None]:
    request_id = getattr(request, "occ_request_id", "")
    try:
        return write(), None
    except OccError as exc:
        if is_known_failure(exc):
            _audit_refusal(request, exc)
            return None, Failure(exc, unknown=False, request_id=request_id)
        failure = Failure(exc, unknown=True, request_id=request_id)
    except DatabaseError:
        logger.exception("console agent write failed in the database")
        failure = Failure(UnknownOutcome(), unknown=True, request_id=request_id)
    _mark_outcome_unknown(request, agent_id)
    return None, failure


# --- rendering --------------------------------------------------------------------------------

def _header_context(screen: Screen, failure: Failure | None = None) -> dict[str, Any]:
    agent = screen.agent
    deleting = agent.status == AgentStatus.DELETING
    return {
        "active": screen.active,
        "active_hidden": agent.active_revision_id is not None and screen.active is None,
        "latest": screen.latest,
        "latest_deployment": screen.latest_deployment,
        # A fresh key per render: a double submit of this form admits one revision.
        "idempotency_key": f"console-{uuid.uuid4()}",
        "failure": failure,
        "outcome_unknown": screen.outcome_unknown,
        "provisioning_owned": screen.provisioning_owned,
        "deleting": deleting,
        "writes_disabled": screen.outcome_unknown,
        "reread_url": screen.tab_url(screen.request.GET.get("tab", "overview"), reread="1"),
    }


def _base_context(screen: Screen) -> dict[str, Any]:
    return {"agent": screen.agent, "urls": screen.urls, "namespace": screen.namespace, "nav": "agents",
            "request_id": getattr(screen.request, "occ_request_id", "")}


def _fragment(request: ConsoleRequest, template: str, context: dict[str, Any], status: int = 200) -> HttpResponse:
    # A refused or unconfirmed write keeps its real status; htmx swaps it (base.html's responseHandling).
    return render(request, template, context, status=status)


def _render_page(screen: Screen, *, tab: str = "overview", status: int = 200, header_failure: Failure | None = None,
                 confirm: str | None = None, **tab_overrides: Any) -> HttpResponse:
    request = screen.request
    context = {
        **_base_context(screen),
        "header": _header_context(screen, header_failure),
        "deployment": deployment_view(screen),
        **_tabs_context(screen, tab, **tab_overrides),
        "confirm": confirm,
    }
    return render(request, "console/agent/page.html", context, status=status)


def _render_header(screen: Screen, failure: Failure | None = None) -> HttpResponse:
    context = {**_base_context(screen), "header": _header_context(screen, failure)}
    return _fragment(screen.request, "console/agent/header.html", context, failure.status if failure else 200)


def _tabs_context(screen: Screen, tab: str, **overrides: Any) -> dict[str, Any]:
    """The tab links and the current tab's panel (``panel``); an unknown tab is Overview."""
    tab = tab if tab in dict(TABS) else "overview"
    builders: dict[str, Callable[..., dict[str, Any]]] = {
        "overview": _overview_context, "configuration": _configuration_context,
        "credentials": _credentials_context, "revisions": _revisions_context,
    }
    return {"tab": tab, "panel": builders[tab](screen, **overrides),
            "tabs": [{"id": key, "label": label, "url": screen.tab_url(key), "current": key == tab}
                     for key, label in TABS]}


# --- the page and its read-only fragments -----------------------------------------------------

@require_GET
@console_view
def agent_page(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    screen = Screen.load(request, namespace_id, agent_id)
    _reread(request, agent_id)
    tab = request.GET.get("tab", "overview")
    # A boosted navigation or a history restore wants the whole page, like a plain browser.
    if wants_fragment(request):
        return render(request, "console/agent/tabs.html", {**_base_context(screen), **_tabs_context(screen, tab)})
    return _render_page(screen, tab=tab)


def _gone(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    """The Agent no longer exists (deleted, maybe by someone else): back to the Agents list,
    instead of a polling fragment that would fail every few seconds."""
    names = dict(request.session.get(DELETING_NAMES_KEY, {}))
    name = names.pop(agent_id, None)
    request.session[DELETING_NAMES_KEY] = names
    _clear_outcome_unknown(request, agent_id)
    messages.success(request, f"Agent {name} deleted." if name else "The Agent no longer exists.")
    return redirect_or_hx(request, reverse("console:agents", args=[namespace_id]))


def _load_polled(request: ConsoleRequest, namespace_id: str, agent_id: str) -> Screen | HttpResponse:
    try:
        return Screen.load(request, namespace_id, agent_id)
    except NotFound:
        return _gone(request, namespace_id, agent_id)


@require_GET
@console_view
def agent_header(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    screen = _load_polled(request, namespace_id, agent_id)
    if isinstance(screen, HttpResponse):
        return screen
    _reread(request, agent_id)
    if not request.htmx:
        return _render_page(screen)
    return _render_header(screen)


@require_GET
@console_view
def deployment_activity(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    """The panel. Answers 286 once there is nothing left to poll; a poll that saw a pending
    deployment become terminal also tells the header to re-read (the active revision moved)."""
    screen = _load_polled(request, namespace_id, agent_id)
    if isinstance(screen, HttpResponse):
        return screen
    if not request.htmx:
        return _render_page(screen)
    view = deployment_view(screen)
    response = render(request, "console/agent/deployment.html", {**_base_context(screen), "deployment": view})
    if request.GET.get("refresh") == "1" or (request.GET.get("since") in PENDING_STATUSES and not view["pending"]):
        trigger(response, AGENT_CHANGED)
    return response if view["pending"] else stop_polling(response)


# --- the deployment activity panel -------------------------------------------------------------

PENDING_STATUSES = frozenset({"queued", "running"})
STEP_STATE_TEXT = {"complete": "done", "waiting": "waiting", "active": "in progress", "failed": "failed"}

# What to do about a failed deployment, per error code: (guidance, tab that fixes it).
FAILURE_GUIDANCE: dict[str, tuple[str, str | None]] = {
    "RUNTIME_AUTHENTICATION_FAILED": (
        "The model provider rejected the Agent's credential. Replace the value of the model API key Secret "
        "(see Credentials), then deploy a new version.", "credentials"),
    "RUNTIME_MODEL_PROBE_FAILED": (
        "The runtime could not use the configured model: the model id, the provider settings or the "
        "provider's reachability are wrong. Check the Configuration, then deploy a new version.", "configuration"),
    "RUNTIME_MODEL_PROBE_TIMEOUT": (
        "The model provider did not answer in time, or could not be reached. Check the provider settings in "
        "the Configuration, then deploy a new version.", "configuration"),
    "AGENT_GATEWAY_UNAUTHORIZED": (
        "The Agent's gateway refused OCC's access. Enable gateway password access in the Configuration, "
        "then deploy a new version.", "configuration"),
    "SECRET_UNAVAILABLE": (
        "A Secret this version delivers no longer exists. Bind an existing Secret (see Credentials and "
        "Configuration), then deploy a new version.", "credentials"),
    "AUTHORIZATION_DENIED": (
        "The person who deployed this version, or the Agent itself, lost a permission the deployment needs "
        "(such as use of a Secret). Restore it (Retry credential access on Credentials), then deploy a new "
        "version.", "credentials"),
    "ACTOR_REVOKED": ("The person who deployed this version no longer exists. Deploy a new version.", None),
    "CONVERGENCE_DEADLINE_EXCEEDED": (
        "The runtime did not become ready in time. Check the Configuration and the model credentials, then "
        "deploy a new version.", "configuration"),
    "RUNTIME_STARTUP_FAILED": (
        "The runtime failed to start with this Configuration. Check the Configuration, then deploy a new "
        "version.", "configuration"),
    "AGENT_GATEWAY_UNAVAILABLE": (
        "The Agent's gateway never became reachable. Deploy a new version; if it happens again, ask an "
        "operator to check the compute backend.", None),
    "REVISION_SUPERSEDED": ("A newer version was deployed before this one finished. Nothing needs fixing.", None),
    "REVISION_STOPPED": (
        "The Agent was stopped while this version was deploying. Deploy a new version to start it again.", None),
    "LEASE_EXPIRED": (
        "The workers handling this deployment repeatedly stopped responding. Deploy a new version; if it "
        "happens again, ask an operator to check the workers.", None),
    "DEPENDENCY_UNAVAILABLE": (
        "A service the deployment depends on stayed unavailable. Deploy a new version later; if it persists, "
        "ask an operator.", None),
    "COMPUTE_DRIVER_CHANGED": (
        "The compute backend changed after this version was admitted. Deploy a new version to use the current "
        "backend.", None),
    "NAMESPACE_NOT_READY": (
        "The Namespace is not ready. Wait until it is ready on the Namespaces page, then deploy a new version.",
        None),
}
DEFAULT_GUIDANCE = ("Check the Configuration and the Credentials, then deploy a new version. If it fails again, "
                    "ask an operator and give them the version id.", None)
WARNING_TEXT = {
    "PLUGIN_INSTALL_FAILED": "Plugin {} could not be installed.",
    "PLUGIN_AUTH_REQUIRED": "Plugin {} needs authentication before it can be used.",
}
TAB_LINKS = {"credentials": "Open Credentials", "configuration": "Open Configuration"}


def _time(value: str | None) -> dict[str, str] | None:
    moment = parse_datetime(value) if value else None
    if moment is None:
        return None
    return {"iso": str(value), "text": moment.strftime("%Y-%m-%d %H:%M:%S UTC")}


def _steps(number: int, status: DeploymentStatus) -> list[dict[str, str]]:
    progress = status.progress or {}
    next_attempt = _time(progress.get("nextAttemptAt"))
    if status.status == "queued" and progress.get("lastAttempt"):
        preparing = ("waiting", "Waiting to continue deployment."
                     + (f" Next attempt at {next_attempt['text']}." if next_attempt else ""))
    elif status.status == "queued":
        preparing = ("waiting", "Waiting for a worker claim.")
    else:
        preparing = {"running": ("active", "A worker claim is active."),
                     "succeeded": ("complete", "The runtime was prepared.")}.get(
            status.status, ("failed", "Preparing the runtime failed."))
    active = {"succeeded": ("complete", "Completion recorded."),
              "failed": ("failed", "Not recorded: the deployment failed.")}.get(
        status.status, ("waiting", "Not recorded yet."))
    steps = [("Queued", ("complete", f"Version v{number} was admitted.")), ("Preparing runtime", preparing),
             ("Active", active)]
    return [{"label": label, "state": state, "state_text": STEP_STATE_TEXT[state], "detail": detail}
            for label, (state, detail) in steps]


def _failure_details(data: dict[str, Any] | None) -> list[tuple[str, str]]:
    data = data or {}
    rows: list[tuple[str, str]] = []
    if isinstance(data.get("timeoutMs"), int):
        rows.append(("Deadline", f"{data['timeoutMs'] / 1000:g} s"))
    failure = data.get("runtimeFailure") or {}
    for key, label in (("component", "Runtime component"), ("check", "Check"), ("code", "Code"),
                       ("cause", "Cause"), ("checkedAt", "Checked")):
        if failure.get(key):
            rows.append((label, str(failure[key])))
    return rows


def _failure(screen: Screen, status: DeploymentStatus) -> dict[str, Any] | None:
    if status.error is None:
        return None
    code = status.error["code"]
    guidance, tab = FAILURE_GUIDANCE.get(code, DEFAULT_GUIDANCE)
    return {"code": code, "message": status.error["message"], "guidance": guidance,
            "link": {"url": screen.tab_url(tab), "label": TAB_LINKS[tab]} if tab else None,
            "details": _failure_details(status.error.get("data"))}


def deployment_view(screen: Screen) -> dict[str, Any]:
    """The panel's model: it tracks the newest revision the actor may read."""
    latest, status = screen.latest, screen.latest_deployment
    live = screen.agent.status != AgentStatus.DELETING
    # Before its handoff a provisioning has admitted nothing yet: keep looking for the first version.
    awaiting_first = live and latest is None and screen.provisioning is not None and screen.provisioning.status in (
        ProvisioningStatus.QUEUED, ProvisioningStatus.RUNNING)
    pending = awaiting_first or (live and status is not None and status.status in PENDING_STATUSES)
    since = status.status if status is not None else "queued"
    view: dict[str, Any] = {
        "revision": latest, "status": status, "pending": pending, "awaiting_first": awaiting_first,
        "hidden": latest is None and screen.agent.active_revision_id is not None,
        "poll_url": screen.urls["deployment"] + (f"?since={since}" if pending else ""),
    }
    if latest is None or status is None:
        return view
    progress = status.progress or {}
    last = progress.get("lastAttempt")
    view.update(
        steps=_steps(latest.number, status),
        last_attempt={"code": last["code"], "message": last["message"], "at": _time(last["at"])} if last else None,
        next_attempt=_time(progress.get("nextAttemptAt")),
        failure=_failure(screen, status),
        warnings=[WARNING_TEXT.get(w["code"], "Plugin {} reported a problem.").format(w["pluginId"])
                  for w in status.warnings],
    )
    return view


# --- deploy, stop, delete ------------------------------------------------------------------------

def _after_write(screen: Screen, *, success: str | None, failure: Failure | None,
                 events: tuple[str, ...] = ()) -> HttpResponse:
    """The header for htmx (with the events and the toast), the page or a redirect otherwise."""
    request = screen.request
    if failure is None and success:
        messages.success(request, success)
    if not request.htmx:
        if failure is None:
            return redirect(screen.urls["page"])
        return _render_page(screen, status=failure.status, header_failure=failure)
    response = _render_header(screen, failure)
    for event in events:
        trigger(response, event)
    return response


@require_POST
@console_view
def deploy_view(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    screen = Screen.load(request, namespace_id, agent_id)
    key = request.POST.get("idempotency_key") or None
    revision, failure = _attempt(request, agent_id, lambda: agent_deploy(
        actor=screen.actor, idempotency_key=key, **screen.ids))
    screen = Screen.load(request, namespace_id, agent_id)  # the header shows the state after the write
    success = f"Version v{revision.number} admitted." if revision is not None else None
    return _after_write(screen, success=success, failure=failure,
                        events=(DEPLOYMENT_CHANGED,) if failure is None else ())


def _confirmation(screen: Screen, which: str) -> HttpResponse:
    if screen.request.htmx:
        context = {**_base_context(screen), "confirm": which, "as_page": False}
        return render(screen.request, "console/agent/confirm.html", context)
    return _render_page(screen, confirm=which)


@require_http_methods(["GET", "POST"])
@console_view
def stop_view(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    """GET: the confirmation (a dialog for htmx). POST: record desired state stopped."""
    screen = Screen.load(request, namespace_id, agent_id)
    if request.method == "GET":
        return _confirmation(screen, "stop")
    agent, failure = _attempt(request, agent_id, lambda: agent_stop(actor=screen.actor, **screen.ids))
    screen = Screen.load(request, namespace_id, agent_id)
    success = f"Agent {screen.agent.name} is stopping." if agent is not None else None
    return _after_write(screen, success=success, failure=failure, events=(CLOSE_MODAL_EVENT, DEPLOYMENT_CHANGED))


@require_http_methods(["GET", "POST"])
@console_view
def delete_view(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    """GET: the confirmation. POST: the Agent becomes ``deleting``; the header then polls
    ``console:agent-status`` until the Agent is gone."""
    screen = Screen.load(request, namespace_id, agent_id)
    if request.method == "GET":
        return _confirmation(screen, "delete")
    agent, failure = _attempt(request, agent_id, lambda: agent_delete(actor=screen.actor, **screen.ids))
    success = None
    if agent is not None:
        names = dict(request.session.get(DELETING_NAMES_KEY, {}))
        names[agent.id] = agent.name
        request.session[DELETING_NAMES_KEY] = names
        success = f"Deleting Agent {agent.name}…"
    screen = Screen.load(request, namespace_id, agent_id)
    return _after_write(screen, success=success, failure=failure, events=(CLOSE_MODAL_EVENT, DEPLOYMENT_CHANGED))


@require_GET
@console_view
def status_view(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    """Deletion progress: polls while ``deleting``; once the Agent is gone, back to the list."""
    screen = _load_polled(request, namespace_id, agent_id)
    if isinstance(screen, HttpResponse):
        return screen
    if not request.htmx:
        return _render_page(screen)
    deleting = screen.agent.status == AgentStatus.DELETING
    response = render(request, "console/agent/deletion.html", {**_base_context(screen), "deleting": deleting})
    return response if deleting else stop_polling(response)


# --- overview -------------------------------------------------------------------------------------

def _secret_label(screen: Screen, secret_id: str) -> dict[str, Any]:
    return {"id": secret_id, "name": screen.secret_names.get(secret_id)}


def _overview_context(screen: Screen) -> dict[str, Any]:
    agent = screen.agent
    return {
        "harness_secret": _secret_label(screen, agent.harness_secret_id) if agent.harness_secret_id else None,
        "service_principal_id": agent.service_principal.id,
    }


# --- configuration tab ----------------------------------------------------------------------------

def _model_of(values: Any) -> str | None:
    defaults = values.get("agents", {}).get("defaults", {}) if isinstance(values, dict) else {}
    model = defaults.get("model") if isinstance(defaults, dict) else None
    if isinstance(model, dict):
        model = model.get("primary")
    return model if isinstance(model, str) and model else None


def _readable_configuration(screen: Screen) -> tuple[Configuration | None, str | None]:
    """The Agent's Configuration, or why it cannot be shown (a refusal is audited)."""
    try:
        return configuration_get(actor=screen.actor, namespace_id=screen.agent.namespace_id,
                                 configuration_id=screen.agent.configuration_id), None
    except Forbidden as exc:
        _audit_refusal(screen.request, exc)
        return None, "You cannot read this Agent's Configuration."
    except NotFound:
        return None, "This Agent's Configuration is unavailable."


def _configuration_context(screen: Screen, *, form: dict[str, Any] | None = None) -> dict[str, Any]:
    configuration, unavailable = _readable_configuration(screen)
    agent = screen.agent
    context: dict[str, Any] = {
        "configuration": configuration, "unavailable": unavailable,
        "harness_secret": _secret_label(screen, agent.harness_secret_id) if agent.harness_secret_id else None,
        "writes_disabled": screen.outcome_unknown,
    }
    if configuration is not None:
        context["model"] = _model_of(configuration.values)
        context["form"] = form or {
            "text": json.dumps(configuration.values, indent=2, ensure_ascii=False),
            "generation": str(configuration.generation), "errors": {},
        }
    return context


def _reject_constant(name: str) -> None:
    raise ValueError(name)


def _parse_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _parse_generation(text: str) -> int | None:
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 12 else None


def _stale(screen: Screen, expected: int) -> bool:
    configuration, _ = _readable_configuration(screen)
    return configuration is not None and configuration.generation != expected


def _save_configuration(screen: Screen, form: dict[str, Any]) -> tuple[int, str | None]:
    """Validate and save; fills ``form["errors"]``. Returns (status, success message)."""
    values = _parse_object(form["text"])
    generation = _parse_generation(form["generation"])
    if values is None or generation is None:
        form["errors"] = {"configuration_json": [INVALID_JSON] if values is None else [
            "This form lost the Configuration generation it was opened at. Reload the page."]}
        return 200, None
    saved, failure = _attempt(screen.request, screen.agent.id, lambda: configuration_update(
        actor=screen.actor, namespace_id=screen.agent.namespace_id, configuration_id=screen.agent.configuration_id,
        command=build(ConfigurationUpdate, values=values), expected_generation=generation))
    if saved is not None:
        return 200, f"Configuration saved (generation {saved.generation}). Deploy a new version to use it."
    assert failure is not None
    if isinstance(failure.error, InvalidRequest):
        # One field holds the whole document: every problem belongs next to it.
        found = field_errors(failure.error, {"/values": "configuration_json"})
        form["errors"] = {"configuration_json": [message for messages_ in found.values() for message in messages_]}
        return 200, None
    if isinstance(failure.error, Conflict) and _stale(screen, generation):
        form["errors"], form["stale"] = {"configuration_json": [STALE_CONFIGURATION]}, True
    else:
        form["errors"] = {"configuration_json": [failure.message]}
        form["failure"] = failure
    return failure.status, None


@require_http_methods(["GET", "POST"])
@console_view
def configuration_view(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    """GET: the Configuration tab. POST: save the JSON guarded by the generation it was read at."""
    screen = Screen.load(request, namespace_id, agent_id)
    form: dict[str, Any] | None = None
    status = 200
    if request.method == "POST":
        form = {"text": request.POST.get("configuration_json", ""),
                "generation": request.POST.get("generation", ""), "errors": {}}
        status, success = _save_configuration(screen, form)
        if success:
            messages.success(request, success)
            if not request.htmx:
                return redirect(screen.tab_url("configuration"))
            form = None  # show what was saved, at its new generation
    if not request.htmx:
        return _render_page(screen, tab="configuration", status=status, form=form)
    context = {**_base_context(screen), "panel": _configuration_context(screen, form=form)}
    return _fragment(request, "console/agent/configuration.html", context, status)


# --- credentials tab ------------------------------------------------------------------------------

def _credentials_context(screen: Screen, *, failure: Failure | None = None) -> dict[str, Any]:
    """Each Secret the Agent uses, and whether its own principal holds ``secret:operate`` on it
    (deploy refuses without it: ``occ.services.deploy._authorize_secrets``)."""
    agent = screen.agent
    agent_actor = Actor(principal=agent.service_principal, source=Source.API)

    def entry(secret_id: str) -> dict[str, Any]:
        return {**_secret_label(screen, secret_id),
                "granted": allowed(agent_actor, Action.OPERATE, Kind.SECRET, namespace_id=agent.namespace_id,
                                   resource_id=secret_id)}

    harness = entry(agent.harness_secret_id) if agent.harness_secret_id else None
    configuration, unavailable = _readable_configuration(screen)
    bindings = []
    if configuration is not None:
        bindings = [{"env": env, **entry(binding["source"]["id"])}
                    for env, binding in configuration_secret_bindings(configuration).items()]
    used = ([harness] if harness else []) + bindings
    missing = sorted({item["id"] for item in used if not item["granted"]})
    return {"harness": harness, "bindings": bindings, "bindings_unavailable": unavailable, "missing": missing,
            "uses_secrets": bool(used), "failure": failure, "writes_disabled": screen.outcome_unknown}


@require_GET
@console_view
def credentials_view(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    screen = Screen.load(request, namespace_id, agent_id)
    if not request.htmx:
        return _render_page(screen, tab="credentials")
    context = {**_base_context(screen), "panel": _credentials_context(screen)}
    return render(request, "console/agent/credentials.html", context)


@require_POST
@console_view
def credentials_grant_view(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    """Retry credential access: only the grant, for the Secrets the Agent's principal lacks."""
    screen = Screen.load(request, namespace_id, agent_id)
    before = _credentials_context(screen)
    wanted = before["missing"] or sorted({item["id"] for item in
                                          ([before["harness"]] if before["harness"] else []) + before["bindings"]})
    failure = None
    if wanted:
        _, failure = _attempt(request, agent_id, lambda: agent_secret_access_grant(
            actor=screen.actor, secret_ids=wanted, **screen.ids))
        if failure is None:
            messages.success(request, "The Agent can now use its Secrets.")
    else:
        messages.info(request, "This Agent uses no Secrets.")
    status = failure.status if failure else 200
    if not request.htmx:
        if failure is None:
            return redirect(screen.tab_url("credentials"))
        return _render_page(screen, tab="credentials", status=status, failure=failure)
    screen = Screen.load(request, namespace_id, agent_id)
    context = {**_base_context(screen), "panel": _credentials_context(screen, failure=failure)}
    return _fragment(request, "console/agent/credentials.html", context, status)


# --- revisions tab --------------------------------------------------------------------------------

def _snapshot_context(screen: Screen, revision_id: str) -> dict[str, Any]:

    try:
        revision = revision_get(actor=screen.actor, revision_id=revision_id, **screen.ids)
    except Forbidden as exc:
        _audit_refusal(screen.request, exc)
        return {"error": "You cannot read this version."}
    except NotFound:
        return {"error": "This version does not exist."}
    wire = revision_wire(revision)
    harness_auth = wire.get("harnessAuth") or {}
    source = harness_auth.get("source") or {}
    return {
        "revision": revision,
        "configuration_json": json.dumps(wire["configuration"], indent=2, ensure_ascii=False),
        "harness_auth": _secret_label(screen, source["id"]) if source.get("id") else None,
        "bindings": [{"env": env, **_secret_label(screen, binding["source"]["id"])}
                     for env, binding in sorted((wire.get("secretBindings") or {}).items())],
        "plugins_json": json.dumps(wire.get("plugins") or {"plugins": {}}, indent=2, ensure_ascii=False),
        "harness": wire.get("harness") or {},
        "compute": wire.get("compute") or {},
    }


def _revisions_context(screen: Screen) -> dict[str, Any]:
    rows = []
    statuses = deployment_statuses(screen.revisions)
    for revision in reversed(screen.revisions):
        status = statuses.get(revision.id)
        rows.append({"revision": revision, "status": status.status if status else None,
                     "active": revision.id == screen.agent.active_revision_id,
                     "url": screen.tab_url("revisions", revision=revision.id)})
    wanted = screen.request.GET.get("revision")
    return {"rows": rows, "snapshot": _snapshot_context(screen, wanted) if wanted else None,
            "hidden": not rows and screen.agent.active_revision_id is not None}


urlpatterns = [
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>", agent_page, name="agent"),
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/header", agent_header, name="agent-header"),
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/deployment", deployment_activity,
         name="agent-deployment"),
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/deploy", deploy_view, name="agent-deploy"),
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/stop", stop_view, name="agent-stop"),
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/delete", delete_view, name="agent-delete"),
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/status", status_view, name="agent-status"),
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/configuration", configuration_view,
         name="agent-configuration"),
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/credentials", credentials_view,
         name="agent-credentials"),
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/credentials/grant", credentials_grant_view,
         name="agent-credentials-grant"),
]
