"""The deployment activity panel's model: what the newest readable revision's deployment is
doing, each step's state, and for a failure its code, the runtime's safe details and what to do
next, with Run diagnostics on a failure. Pure presentation of ``occ.selectors.deployments``; no
request, no writes."""

from __future__ import annotations

from typing import Any, Protocol

from django.urls import reverse
from django.utils.dateparse import parse_datetime

from console.pages.refusals import diagnose_refusal
from occ.models import Agent, AgentProvisioningWork, AgentRevision, AgentStatus, ProvisioningStatus
from occ.selectors.deployments import DeploymentStatus, Diagnostics


class DeploymentScreen(Protocol):
    """What the presenter reads of one request's reads of an Agent (``agent_screen.Screen``)."""

    agent: Agent

    @property
    def latest(self) -> AgentRevision | None: ...

    @property
    def latest_deployment(self) -> DeploymentStatus | None: ...

    @property
    def provisioning(self) -> AgentProvisioningWork | None: ...

    @property
    def urls(self) -> dict[str, str]: ...

    @property
    def may(self) -> dict[str, bool]: ...

    def tab_url(self, tab: str, **params: str) -> str: ...


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
    "RUNTIME_CONFIG_REFUSED": (
        "The runtime refused this version's Configuration (see the evidence). The previous version keeps "
        "serving. Fix the Configuration, then deploy a new version.", "configuration"),
    "RUNTIME_START_FAILED": (
        "A test gateway of this version did not start (see the evidence). The previous version keeps serving. "
        "Fix the Configuration, then deploy a new version.", "configuration"),
    "MODEL_CREDENTIAL_REFUSED": (
        "The model provider refused this version's API key. The previous version keeps serving. Replace the "
        "model key Secret (see Credentials), then deploy a new version.", "credentials"),
    "MODEL_UNREACHABLE": (
        "A test gateway of this version got no answer from its model (an unknown model, or the provider is "
        "unreachable). The previous version keeps serving. Check the model in the Configuration.", "configuration"),
    "SMOKE_TEST_FAILED": (
        "A smoke conversation did not get the expected reply (see the evidence). The previous version keeps "
        "serving. Fix the Configuration or the smoke conversation (Configuration tab).", "configuration"),
    "RUNTIME_CRASH_LOOP": (
        "The gateway kept exiting on this version without becoming ready. See its last exit status and log "
        "lines, fix the Configuration, then deploy a new version.", "logs"),
    "ROLLED_BACK": (
        "This version did not come up after it replaced the previous one, so OCC gave the Agent back to the "
        "previous version, which serves again. See the evidence, fix the cause, then deploy a new version.",
        "logs"),
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
TAB_LINKS = {"credentials": "Open Credentials", "configuration": "Open Configuration", "logs": "Open Logs"}


def _time(value: str | None) -> dict[str, str] | None:
    moment = parse_datetime(value) if value else None
    if moment is None:
        return None
    return {"iso": str(value), "text": moment.strftime("%Y-%m-%d %H:%M:%S UTC")}


def _steps(number: int, status: DeploymentStatus) -> list[dict[str, str]]:
    progress = status.progress or {}
    next_attempt = _time(progress.get("nextAttemptAt"))
    if status.status == "queued" and progress.get("lastAttempt"):
        preparing = ("waiting", "OCC will try again to start this version."
                     + (f" Next try at {next_attempt['text']}." if next_attempt else ""))
    elif status.status == "queued":
        preparing = ("waiting", "Waiting to start: OCC picks this version up within seconds.")
    else:
        preparing = {"running": ("active", "Starting the gateway with this version."),
                     "succeeded": ("complete", "The gateway started.")}.get(
            status.status, ("failed", "The gateway did not start."))
    active = {"succeeded": ("complete", "This version is serving."),
              "failed": ("failed", "Not serving: the deployment failed.")}.get(
        status.status, ("waiting", "Not serving yet."))
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
    return rows + _safe_deploy_details(data)


def _safe_deploy_details(data: dict[str, Any]) -> list[tuple[str, str]]:
    """Issue 28's evidence: the check refused before cutover, a crash loop's last exit, a rollback's
    restored revision, and the (redacted) lines the runtime printed."""
    rows: list[tuple[str, str]] = []
    rollback = data.get("rollback") or {}
    if rollback:
        rows += [("Rolled back because", str(rollback.get("reason"))),
                 ("Serving again", f"v{rollback.get('restoredRevision')}")]
    verification, crash = data.get("verification") or {}, data.get("crashLoop") or {}
    if verification:
        rows.append(("Failed check", str(verification.get("check"))))
    if crash:
        status = crash.get("exitStatus")
        rows += [("Last exit status", "unknown" if status is None else str(status)),
                 ("Restarts", str(crash.get("restarts", 0)))]
    lines = (verification or crash).get("evidence") or []
    if lines:
        rows.append(("Evidence", "\n".join(str(line) for line in lines)))
    return rows


def _failure(screen: DeploymentScreen, revision: AgentRevision, status: DeploymentStatus) -> dict[str, Any] | None:
    if status.error is None:
        return None
    code = status.error["code"]
    guidance, tab = FAILURE_GUIDANCE.get(code, DEFAULT_GUIDANCE)
    # Only a failure offers Run diagnostics, so only a failure reads what the caller may do.
    diagnose = {"url": reverse("console:agent-deployment-diagnostics",
                               args=[revision.namespace_id, revision.agent_id, revision.id]),
                "refused": diagnose_refusal(screen.may)}
    return {"code": code, "message": status.error["message"], "guidance": guidance,
            "link": {"url": screen.tab_url(tab), "label": TAB_LINKS[tab]} if tab else None,
            "details": _failure_details(status.error.get("data")), "diagnose": diagnose}


CHECK_STATE_TEXT = {"succeeded": "passed", "failed": "failed", "unknown": "unknown"}
DIAGNOSTICS_UNAVAILABLE = ("The runtime's evidence is unavailable now: the compute backend could not report on "
                           "this deployment. Try again in a moment.")


def diagnostics_view(diagnostics: Diagnostics | None = None, *, refused: str = "",
                     unavailable: bool = False) -> dict[str, Any]:
    """What Run diagnostics found, in words: each check's component, check, state and code; or
    why there is nothing to show (refused, or the driver could not answer)."""
    if diagnostics is None:
        return {"refused": refused, "unavailable": DIAGNOSTICS_UNAVAILABLE if unavailable else ""}
    checks = [{"component": c["component"], "check": c["check"], "state": c["state"],
               "state_text": CHECK_STATE_TEXT[c["state"]], "code": c.get("code") or "",
               "at": _time(c.get("checkedAt"))} for c in diagnostics.checks]
    return {"observed_at": diagnostics.observed_at, "checks": checks,
            "failed": sum(c["state"] == "failed" for c in checks)}


def deployment_view(screen: DeploymentScreen) -> dict[str, Any]:
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
        failure=_failure(screen, latest, status),
        warnings=[WARNING_TEXT.get(w.code, "Plugin {} reported a problem.").format(w.plugin_id)
                  for w in status.warnings],
    )
    return view
