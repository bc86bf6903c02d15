"""The Agent details page (console:agent) and its fragments and writes."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.contrib.messages import get_messages
from django.db import DatabaseError
from django.urls import reverse
from django.utils import timezone

from occ.commands.agents import AgentCreate, AgentSecretAccess
from occ.commands.configurations import ConfigurationCreate, ConfigurationUpdate
from occ.commands.secrets import SecretCreate
from occ.iam.actor import Actor, Source
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed
from occ.models import (
    AccessBinding,
    Agent,
    AgentProvisioningWork,
    AgentRevision,
    AuditEvent,
    Configuration,
    ControllerWork,
    Namespace,
    Secret,
    WorkState,
)
from occ.models.work import agent_deleted_key, revision_reconcile_key
from occ.services.agent_lifecycle import agent_stop
from occ.services.agent_secret_access import agent_secret_access_grant
from occ.services.agents import agent_create
from occ.services.configurations import configuration_create, configuration_update
from occ.services.deploy import agent_deploy
from occ.services.secrets import secret_create
from tests.console.conftest import ConsoleClient, fragment_root
from tests.factories import grant, human, marked_document
from tests.fakes.compute import run_work

MODEL_CANARY = "sk-canary-model-3f9d1c7e55"
TOOL_CANARY = "xoxb-canary-tool-8a1b2c3d"
CANARIES = (MODEL_CANARY, TOOL_CANARY)
VALUES = {"agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "openai/gpt-5"}}}}


@dataclass
class World:
    namespace: Namespace
    agent: Agent
    harness: Secret
    tool: Secret


@pytest.fixture
def world(ready_namespace, console_actor, fake_compute) -> World:
    return make_world(ready_namespace, console_actor)


def make_world(ready_namespace: Namespace, console_actor: Actor) -> World:
    """An Agent as the Create Agent page leaves it: harness Secret, one bound Secret, grants."""
    ns = ready_namespace.id
    harness = secret_create(actor=console_actor, namespace_id=ns,
                            command=SecretCreate(name="model-key", value=MODEL_CANARY))
    tool = secret_create(actor=console_actor, namespace_id=ns,
                         command=SecretCreate(name="tool-token", value=TOOL_CANARY))
    configuration = configuration_create(
        actor=console_actor, namespace_id=ns, command=ConfigurationCreate(
            kind="agent", values=VALUES,
            secret_bindings={"TOOL_TOKEN": {"source": {"kind": "secret", "namespaceId": ns, "id": tool.id}}}))
    agent = agent_create(actor=console_actor, namespace_id=ns,
                         command=AgentCreate(name="Support bot", configuration_id=configuration.id,
                                             harness_auth={"method": "api_key",
                                       "source": {"kind": "secret", "namespaceId": ns, "id": harness.id}}))
    agent_secret_access_grant(actor=console_actor, namespace_id=ns, agent_id=agent.id,
                              command=AgentSecretAccess(secret_ids=[harness.id, tool.id]))
    return World(namespace=ready_namespace, agent=agent, harness=harness, tool=tool)


def url(agent: Agent, name: str = "agent") -> str:
    return reverse(f"console:{name}", args=[agent.namespace_id, agent.id])


def html(response) -> str:
    text = response.content.decode()
    for canary in CANARIES:
        assert canary not in text, "a Secret value reached the browser"
    return text


def triggers(response) -> dict:
    return json.loads(response["HX-Trigger"]) if response.has_header("HX-Trigger") else {}


def toasts(response) -> list[str]:
    return [t["text"] for t in triggers(response).get("occ:toast", {}).get("messages", [])]


def deploy(world: World, actor: Actor) -> AgentRevision:
    return agent_deploy(actor=actor, namespace_id=world.namespace.id, agent_id=world.agent.id)


def set_work(revision: AgentRevision, **fields) -> None:
    """Put the revision's work row where the worker would have left it."""
    assert ControllerWork.objects.filter(pk=revision_reconcile_key(revision.id)).update(**fields) == 1


def finish(revision: AgentRevision, state: str, reason: str, result_data=None) -> None:
    set_work(revision, state=state, reason_code=reason, result_data=result_data, completed_at=timezone.now(),
             claim_token=None, lease_expires_at=None)


def deploy_button(text: str) -> str:
    match = re.search(r"<button[^>]*>(?:<svg .*?</svg>)?Deploy new version</button>", text)
    assert match, "no Deploy new version button"
    return match.group(0)


# --- the page, its tabs and the header ---------------------------------------------------------------


def test_full_page_shows_header_panel_and_tabs(console, world):
    response = console.get(url(world.agent))
    assert response.status_code == 200
    text = html(response)
    assert text.lstrip().lower().startswith("<!doctype html>")
    assert "<h1>Support bot</h1>" in text
    assert world.agent.id in text
    assert "Desired state: <strong>stopped</strong>" in text
    assert "No active revision" in text
    assert 'id="deployment-activity"' in text
    assert "Deployment activity" in text
    assert "Not deployed yet." in text
    for label in ("Deploy new version", "Start", "Delete", "Refresh deployment"):
        assert f">{label}<" in text or f'"when-idle">{label}<' in text
    assert ">Stop</button>" not in text, "a stopped Agent offers Start instead"
    assert re.search(r'<a href="[^"]*\?tab=overview" aria-current="page">Overview</a>', text)
    for label in ("Configuration", "Credentials", "Revisions"):
        assert re.search(rf'<a href="[^"]*\?tab={label.lower()}">{label}</a>', text)


@pytest.mark.parametrize(("tab", "root"), [
    pytest.param("overview", "section#agent-overview", id="overview"),
    pytest.param("configuration", "section#agent-configuration", id="configuration"),
    pytest.param("credentials", "section#agent-credentials", id="credentials"),
    pytest.param("revisions", "section#agent-revisions", id="revisions"),
])
def test_each_tab_as_page_and_as_fragment(console, world, tab, root):
    page = console.get(url(world.agent), {"tab": tab})
    assert page.status_code == 200
    text = html(page)
    assert f'id="{root.split("#")[1]}"' in text
    assert "<h1>Support bot</h1>" in text
    assert re.search(rf'\?tab={tab}" aria-current="page"', text)
    fragment = console.hx_get(url(world.agent), {"tab": tab})
    assert fragment.status_code == 200
    assert fragment_root(html(fragment)) == "div#agent-tabs"
    assert f'id="{root.split("#")[1]}"' in fragment.content.decode()
    assert "<h1>" not in fragment.content.decode()


@pytest.mark.parametrize(("name", "root", "tab"), [
    pytest.param("agent-header", "div#agent-header", None, id="header"),
    pytest.param("agent-configuration", "section#agent-configuration", "configuration", id="configuration"),
    pytest.param("agent-credentials", "section#agent-credentials", "credentials", id="credentials"),
])
def test_read_fragments_with_and_without_htmx(console, world, name, root, tab):
    fragment = console.hx_get(url(world.agent, name))
    assert fragment.status_code == 200
    assert fragment_root(html(fragment)) == root
    page = console.get(url(world.agent, name))
    assert page.status_code == 200
    text = html(page)
    assert "<h1>Support bot</h1>" in text
    assert 'id="deployment-activity"' in text
    if tab:
        assert re.search(rf'\?tab={tab}" aria-current="page"', text)


def test_header_shows_active_and_latest_revision(console, console_actor, world):
    first = deploy(world, console_actor)
    run_work(revision_reconcile_key(first.id))
    second = deploy(world, console_actor)
    text = html(console.hx_get(url(world.agent, "agent-header")))
    assert "Desired state: <strong>running</strong>" in text
    assert f'revision={first.id}">v1</a>' in text
    assert first.id[:12] in text
    assert re.search(
        r'Latest deployment: v2 · <span class="pill pill-progress" data-status="queued">Queued</span>', text
    )
    assert 'hx-trigger="occ:agent-changed from:body"' in text
    assert f"revision={second.id}" not in text, "the active revision links to v1 only"


def test_unknown_agent_is_404_without_leaking(console, world):
    response = console.get(reverse("console:agent", args=[world.namespace.id,
                                                          "agt_00000000-0000-4000-8000-000000000000"]))
    assert response.status_code == 404


# --- the deployment activity panel --------------------------------------------------------------------


def test_panel_before_any_deployment(console, world):
    response = console.hx_get(url(world.agent, "agent-deployment"))
    assert response.status_code == 286, "nothing to poll"
    text = html(response)
    assert fragment_root(text) == "section#deployment-activity"
    assert "Not deployed yet." in text
    assert "every 5s" not in text


def test_panel_while_queued_polls_every_5s(console, console_actor, world):
    revision = deploy(world, console_actor)
    response = console.hx_get(url(world.agent, "agent-deployment"))
    assert response.status_code == 200
    text = html(response)
    assert fragment_root(text) == "section#deployment-activity"
    assert 'hx-trigger="every 5s, occ:deployment-changed from:body"' in text
    assert f'hx-get="{url(world.agent, "agent-deployment")}?since=queued"' in text
    assert "Most recent deployment · v1" in text
    assert revision.id in text
    assert "Status: <span" in text
    assert 'data-status="queued">Queued</span>' in text
    assert re.findall(r'<li class="step (\w+)"', text) == ["complete", "waiting", "waiting"]
    assert "Waiting to start: OCC picks this version up within seconds." in text
    assert "Nothing checked yet" in text
    assert "Next try:" in text
    assert "occ:agent-changed" not in triggers(response)


def test_panel_while_running_shows_the_active_claim_and_last_attempt(console, console_actor, world):
    revision = deploy(world, console_actor)
    now = timezone.now()
    set_work(revision, state=WorkState.CLAIMED, claim_token="t", lease_expires_at=now + timedelta(seconds=60),
             last_attempt_code="REVISION_INCOMPLETE", last_attempt_at=now)
    response = console.hx_get(url(world.agent, "agent-deployment"), {"since": "queued"})
    assert response.status_code == 200
    text = html(response)
    assert re.findall(r'<li class="step (\w+)"', text) == ["complete", "active", "waiting"]
    assert 'aria-current="step"' in text
    assert "Starting the gateway with this version." in text
    assert "Latest check" in text
    assert "Waiting for the runtime to become ready." in text
    assert "<code>REVISION_INCOMPLETE</code>" in text
    assert "every 5s" in text
    assert 'data-status="running">Deploying</span>' in text
    assert "occ:agent-changed" not in triggers(response), "still pending: no header refresh"


def test_panel_when_queued_again_after_an_attempt(console, console_actor, world):
    revision = deploy(world, console_actor)
    now = timezone.now()
    set_work(revision, last_attempt_code="AGENT_GATEWAY_UNAVAILABLE", last_attempt_at=now,
             available_at=now + timedelta(seconds=30))
    text = html(console.hx_get(url(world.agent, "agent-deployment")))
    assert "OCC will try again to start this version. Next try at" in text
    assert "Next try: <time" in text


def test_panel_success_answers_286_and_refreshes_the_header_after_pending(console, console_actor, world):
    revision = deploy(world, console_actor)
    run_work(revision_reconcile_key(revision.id))
    response = console.hx_get(url(world.agent, "agent-deployment"), {"since": "queued"})
    assert response.status_code == 286
    text = html(response)
    assert fragment_root(text) == "section#deployment-activity"
    assert 'data-status="succeeded">Succeeded</span>' in text
    assert "every 5s" not in text
    assert re.findall(r'<li class="step (\w+)"', text) == ["complete", "complete", "complete"]
    assert "This version is serving." in text
    assert "It started without errors." in text
    assert triggers(response) == {"occ:agent-changed": {}}
    quiet = console.hx_get(url(world.agent, "agent-deployment"))
    assert quiet.status_code == 286
    assert "occ:agent-changed" not in triggers(quiet), "no transition seen"
    pressed = console.hx_get(url(world.agent, "agent-deployment"), {"refresh": "1"})
    assert "occ:agent-changed" in triggers(pressed), "Refresh deployment re-reads the header too"


def test_panel_lists_startup_warnings(console, console_actor, world):
    revision = deploy(world, console_actor)
    finish(revision, WorkState.SUCCEEDED, "REVISION_ACTIVATED",
           {"warnings": [{"code": "PLUGIN_AUTH_REQUIRED", "pluginId": "slack"}]})
    text = html(console.hx_get(url(world.agent, "agent-deployment")))
    assert "Startup warnings" in text
    assert "Plugin slack needs authentication" in text


@pytest.mark.parametrize(("code", "result_data", "guidance", "link"), [
    pytest.param("RUNTIME_AUTHENTICATION_FAILED", None, "rejected the Agent&#x27;s credential", "Open Credentials",
                 id="authentication"),
    pytest.param("RUNTIME_MODEL_PROBE_TIMEOUT", None, "did not answer in time", "Open Configuration",
                 id="probe-timeout"),
    pytest.param("AGENT_GATEWAY_UNAUTHORIZED", None, "Enable gateway password access", "Open Configuration",
                 id="gateway-unauthorized"),
    pytest.param("SECRET_UNAVAILABLE", None, "no longer exists", "Open Credentials", id="secret-unavailable"),
    pytest.param("AUTHORIZATION_DENIED", None, "Retry credential access", "Open Credentials", id="denied"),
    pytest.param("CONVERGENCE_DEADLINE_EXCEEDED", {"timeoutMs": 900000}, "did not become ready in time",
                 "Open Configuration", id="deadline"),
    pytest.param("SOME_DRIVER_CODE", None, "ask an operator", None, id="unknown-code"),
])
def test_panel_failure_with_guidance_answers_286(console, console_actor, world, code, result_data, guidance, link):
    revision = deploy(world, console_actor)
    finish(revision, WorkState.FAILED_PERMANENT, code, result_data)
    response = console.hx_get(url(world.agent, "agent-deployment"), {"since": "running"})
    assert response.status_code == 286
    text = html(response)
    assert f"<code>{code}</code>: " in text
    assert guidance in text
    assert 'data-status="failed">Failed</span>' in text
    assert re.findall(r'<li class="step (\w+)"', text) == ["complete", "failed", "failed"]
    if link:
        assert f">{link}</a>" in text
    if result_data:
        assert "Deadline" in text
        assert "900 s" in text
    assert triggers(response) == {"occ:agent-changed": {}}


def test_panel_without_htmx_is_the_full_page(console, console_actor, world):
    deploy(world, console_actor)
    response = console.get(url(world.agent, "agent-deployment"))
    assert response.status_code == 200
    assert "<h1>Support bot</h1>" in html(response)


# --- deploy ---------------------------------------------------------------------------------------------


def test_deploy_admits_a_revision_and_refreshes_header_and_panel(console, world):
    response = console.hx_post(url(world.agent, "agent-deploy"), {"idempotency_key": "console-k1"})
    assert response.status_code == 200
    text = html(response)
    assert fragment_root(text) == "div#agent-header"
    revision = AgentRevision.objects.get(agent=world.agent)
    assert revision.number == 1
    assert ControllerWork.objects.filter(pk=revision_reconcile_key(revision.id), state="queued").exists()
    assert "Desired state: <strong>running</strong>" in text
    assert "Latest deployment: v1" in text
    assert triggers(response)["occ:deployment-changed"] == {}
    assert toasts(response) == ["Version v1 admitted. Status: Starting."]
    key = re.search(r'name="idempotency_key" value="([^"]+)"', text).group(1)
    assert key != "console-k1", "every render carries a fresh key"


def test_a_double_submitted_deploy_admits_one_revision(console, world):
    for _ in range(2):
        assert console.hx_post(url(world.agent, "agent-deploy"), {"idempotency_key": "console-same"}).status_code == 200
    assert AgentRevision.objects.filter(agent=world.agent).count() == 1
    console.hx_post(url(world.agent, "agent-deploy"), {"idempotency_key": "console-other"})
    assert AgentRevision.objects.filter(agent=world.agent).count() == 2


def test_page_renders_a_fresh_idempotency_key_each_time(console, world):
    keys = {re.search(r'name="idempotency_key" value="([^"]+)"', html(console.get(url(world.agent)))).group(1)
            for _ in range(2)}
    assert len(keys) == 2


def test_deploy_without_htmx_redirects_to_the_page(console, world):
    response = console.post(url(world.agent, "agent-deploy"), {"idempotency_key": "console-k2"})
    assert response.status_code == 302
    assert response["Location"] == url(world.agent)
    assert AgentRevision.objects.filter(agent=world.agent).count() == 1


def test_deploy_rejection_is_shown_in_the_header(console, console_actor, world):
    """The Agent's principal lost its grant: a known rejection, shown where the button is."""
    AccessBinding.objects.filter(principal=world.agent.service_principal, resource_id=world.tool.id).delete()
    response = console.hx_post(url(world.agent, "agent-deploy"), {"idempotency_key": "k"})
    assert response.status_code == 403
    text = html(response)
    assert fragment_root(text) == "div#agent-header"
    assert 'id="agent-action-error"' in text
    assert "Grant the Agent access to its Secrets" in text
    assert "disabled" not in deploy_button(text), "a known rejection does not block the next try"
    assert not AgentRevision.objects.filter(agent=world.agent).exists()
    assert "occ:deployment-changed" not in triggers(response)


def test_deploy_with_an_unknown_outcome_disables_writes_until_refresh(console, world, monkeypatch):
    def lost(**kwargs):
        raise DatabaseError("connection lost")

    monkeypatch.setattr("console.views.agent_writes.agent_deploy", lost)
    response = console.hx_post(url(world.agent, "agent-deploy"), {"idempotency_key": "k"})
    assert response.status_code == 503
    text = html(response)
    assert fragment_root(text) == "div#agent-header"
    assert "Outcome unknown" in text
    assert "It was not repeated" in text
    assert "disabled" in deploy_button(text)
    assert "occ:deployment-changed" not in triggers(response)
    # Still disabled on the next read, in the header and on the whole page, until Refresh.
    assert "disabled" in deploy_button(html(console.hx_get(url(world.agent, "agent-header"))))
    assert "disabled" in deploy_button(html(console.get(url(world.agent))))
    refreshed = html(console.get(url(world.agent), {"tab": "overview", "reread": "1"}))
    assert "disabled" not in deploy_button(refreshed)
    assert "Outcome unknown" not in refreshed


def test_deploy_of_a_deleting_agent_is_a_known_conflict(console, console_actor, world):
    from occ.services.agent_lifecycle import agent_delete

    agent_delete(actor=console_actor, namespace_id=world.namespace.id, agent_id=world.agent.id)
    response = console.hx_post(url(world.agent, "agent-deploy"), {"idempotency_key": "k"})
    assert response.status_code == 409
    text = html(response)
    assert "being deleted" in text
    assert 'data-error-code="AGENT_DELETING"' in text
    assert "disabled" in deploy_button(text), "nothing to deploy while deleting"


def test_deploy_while_a_provisioning_owns_the_agent_is_refused(console, console_actor, world):
    now = timezone.now()
    work = ControllerWork.objects.create(
        idempotency_key=f"agent:{world.agent.id}:provisioning:1", job="provision",
        namespace=world.namespace, agent_id=world.agent.id, agent_target="provisioned", actor_id=console_actor.id,
        state="failed_permanent", completed_at=now, available_at=now, created_at=now, updated_at=now)
    provisioning = AgentProvisioningWork.objects.create(
        work=work, namespace=world.namespace, actor_id=console_actor.id, request_id="req_1",
        request_fingerprint="0" * 64, agent_id=world.agent.id,
        configuration_id=world.agent.configuration_id, plan={})
    page = html(console.get(url(world.agent)))
    assert "A provisioning owns this Agent" in page
    assert console.hx_get(url(world.agent, "agent-deployment")).status_code == 286, "a failed one admits nothing"
    ControllerWork.objects.filter(pk=provisioning.pk).update(
        state="claimed", claim_token="claim-test", lease_expires_at=timezone.now() + timedelta(seconds=60),
        completed_at=None)
    panel = console.hx_get(url(world.agent, "agent-deployment"))
    assert panel.status_code == 200, "polls until the provisioning admits the first version"
    assert "every 5s" in html(panel)
    assert "A provisioning is preparing this Agent." in html(panel)
    response = console.hx_post(url(world.agent, "agent-deploy"), {"idempotency_key": "k"})
    assert response.status_code == 409
    assert "Wait for it to finish, or stop the Agent" in html(response)
    assert not AgentRevision.objects.exists()


# --- stop -------------------------------------------------------------------------------------------------


def test_stop_confirmation_as_dialog_and_as_page(console, world):
    dialog = console.hx_get(url(world.agent, "agent-stop"))
    assert dialog.status_code == 200
    text = html(dialog)
    assert fragment_root(text) == "dialog#stop-agent-dialog"
    assert "data-modal" in text
    assert ">Stop Agent</button>" in text
    assert "data-close-modal" in text
    assert f'hx-post="{url(world.agent, "agent-stop")}" hx-target="#agent-header"' in text
    assert '<button type="button" data-close-modal autofocus>Cancel</button>' in text
    page = console.get(url(world.agent, "agent-stop"))
    assert page.status_code == 200
    text = html(page)
    # Without script: the confirmation's own page, a plain form, Cancel back to the Agent.
    assert '<section class="card confirm" id="stop-agent-page"' in text
    assert '<h1 id="stop-agent-title">Stop Support bot?</h1>' in text
    assert ">Stop Agent</button>" in text
    assert f'<form method="post" action="{url(world.agent, "agent-stop")}">' in text
    assert f'<a class="button" href="{url(world.agent)}" autofocus>Cancel</a>' in text


def test_stop_records_desired_state_stopped(console, console_actor, world):
    deploy(world, console_actor)
    response = console.hx_post(url(world.agent, "agent-stop"))
    assert response.status_code == 200
    text = html(response)
    assert fragment_root(text) == "div#agent-header"
    assert "Desired state: <strong>stopped</strong>" in text
    world.agent.refresh_from_db()
    assert world.agent.desired_runtime_state == "stopped"
    assert ControllerWork.objects.filter(agent_id=world.agent.id, agent_target="stopped", state="queued").exists()
    events = triggers(response)
    assert events["occ:close-modal"] == {}
    assert events["occ:deployment-changed"] == {}
    # The stop's work row is queued: the header says Stopping, and so does the toast.
    assert header_status(text) == "Stopping"
    assert toasts(response) == ["Stop requested for Agent Support bot. Status: Stopping."]


def test_stop_without_htmx_redirects(console, world):
    response = console.post(url(world.agent, "agent-stop"))
    assert response.status_code == 302
    assert ControllerWork.objects.filter(agent_id=world.agent.id, agent_target="stopped").count() == 1


# --- delete ------------------------------------------------------------------------------------------------


def test_delete_confirmation_dialog(console, world):
    response = console.hx_get(url(world.agent, "agent-delete"))
    text = html(response)
    assert fragment_root(text) == "dialog#delete-agent-dialog"
    assert ">Permanently delete Agent</button>" in text


def test_delete_then_poll_until_gone_then_back_to_the_list(console, world):
    response = console.hx_post(url(world.agent, "agent-delete"))
    assert response.status_code == 200
    text = html(response)
    assert fragment_root(text) == "div#agent-header"
    world.agent.refresh_from_db()
    assert world.agent.status == "deleting"
    assert re.search(r'id="agent-deletion"[^>]*hx-get="[^"]*/status" hx-trigger="every 2s"', text)
    assert "Deleting…" in text
    assert triggers(response)["occ:close-modal"] == {}

    polling = console.hx_get(url(world.agent, "agent-status"))
    assert polling.status_code == 200
    assert fragment_root(html(polling)) == "p#agent-deletion"
    panel = console.hx_get(url(world.agent, "agent-deployment"))
    assert "every 5s" not in html(panel), "the panel does not poll a deleting Agent"

    run_work(agent_deleted_key(world.agent.id, 1))
    assert not Agent.objects.filter(id=world.agent.id).exists()
    gone = console.hx_get(url(world.agent, "agent-status"))
    agents_url = reverse("console:agents", args=[world.namespace.id])
    assert gone.status_code == 200
    assert gone["HX-Redirect"] == agents_url
    assert [str(m) for m in get_messages(gone.wsgi_request)] == ["Agent Support bot deleted."]


def test_polled_fragments_of_a_vanished_agent_return_to_the_list(console, console_actor, world):
    """Deleted by someone else while this page polls: no failing poll every few seconds."""
    from occ.services.agent_lifecycle import agent_delete

    agent_delete(actor=console_actor, namespace_id=world.namespace.id, agent_id=world.agent.id)
    run_work(agent_deleted_key(world.agent.id, 1))
    agents_url = reverse("console:agents", args=[world.namespace.id])
    for name in ("agent-deployment", "agent-header"):
        response = console.hx_get(url(world.agent, name))
        assert (response.status_code, response["HX-Redirect"]) == (200, agents_url)
        assert {str(m) for m in get_messages(response.wsgi_request)} == {"The Agent no longer exists."}
    assert console.get(url(world.agent)).status_code == 404


def test_status_without_htmx(console, world):
    page = console.get(url(world.agent, "agent-status"))
    assert page.status_code == 200
    assert "<h1>Support bot</h1>" in html(page)
    quiet = console.hx_get(url(world.agent, "agent-status"))
    assert quiet.status_code == 286
    assert "every 2s" not in html(quiet), "nothing is being deleted"
    console.post(url(world.agent, "agent-delete"))
    run_work(agent_deleted_key(world.agent.id, 1))
    gone = console.get(url(world.agent, "agent-status"))
    assert gone.status_code == 302
    assert gone["Location"] == reverse("console:agents", args=[world.namespace.id])


# --- configuration -------------------------------------------------------------------------------------------


def configuration_of(world: World) -> Configuration:
    return Configuration.objects.get(id=world.agent.configuration_id)


def test_configuration_tab_shows_summary_and_editor(console, world):
    text = html(console.hx_get(url(world.agent, "agent-configuration")))
    assert "<code>openai/gpt-5</code>" in text
    assert "Embedded" in text
    assert ('API key · Secret <span class="ref"><span class="ref-name">model-key</span> <span class="id-chip">'
            f'<code title="{world.harness.id}">') in text
    assert '<label for="configuration-json" id="configuration-json-label">Configuration JSON</label>' in text
    assert re.search(r'<input type="hidden" name="generation" value="1"', text)
    # The JSON editor's hooks: its check is the Configuration's own, its problems go below it.
    check = f"/console/namespaces/{world.namespace.id}/configurations/{world.agent.configuration_id}/check"
    assert f'data-json-editor data-check-url="{check}" data-status="configuration-json-status"' in text
    assert '<div id="configuration-json-status" class="editor-status" role="status"' in text
    assert "&quot;primary&quot;: &quot;openai/gpt-5&quot;" in text


def test_configuration_save_bumps_the_generation(console, world):
    values = {"agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "openai/gpt-5-mini"}}}}
    response = console.hx_post(url(world.agent, "agent-configuration"),
                               {"configuration_json": json.dumps(values), "generation": "1"})
    assert response.status_code == 200
    text = html(response)
    assert fragment_root(text) == "section#agent-configuration"
    configuration = configuration_of(world)
    assert (configuration.generation, configuration.values) == (2, values)
    assert re.search(r'<input type="hidden" name="generation" value="2"', text)
    assert toasts(response) == ["Configuration saved (generation 2). Deploy a new version to use it."]
    assert configuration.secret_bindings.count() == 1, "bindings are kept"


@pytest.mark.parametrize("typed", [
    pytest.param("{not json", id="malformed"),
    pytest.param("[1, 2]", id="array"),
    pytest.param('{"a": NaN}', id="nan"),
    pytest.param("[" * 5000, id="deep"),
])
def test_configuration_invalid_json_is_a_field_error_and_saves_nothing(console, world, typed):
    response = console.hx_post(url(world.agent, "agent-configuration"),
                               {"configuration_json": typed, "generation": "1"})
    assert response.status_code == 200
    text = html(response)
    assert fragment_root(text) == "section#agent-configuration"
    assert 'id="configuration-json-error"' in text
    assert "Enter a valid JSON object." in text
    assert 'aria-invalid="true"' in text
    summary = re.search(r'<div id="error-summary"[^>]*data-takes-focus[^>]*>.*?</div>', text, re.S)
    assert summary, "a refused save leads with a focused summary"
    assert '<a href="#configuration-json">Enter a valid JSON object. Line 1, column ' in summary.group(0)
    assert configuration_of(world).generation == 1


def test_configuration_refused_by_the_rules_keeps_the_text(console, world):
    typed = json.dumps({"gateway": {"auth": {"password": "nope"}}})
    response = console.hx_post(url(world.agent, "agent-configuration"),
                               {"configuration_json": typed, "generation": "1"})
    assert response.status_code == 200
    text = html(response)
    assert 'id="configuration-json-error"' in text
    assert "&quot;gateway&quot;" in text, "what the person typed is kept"
    assert configuration_of(world).generation == 1


def test_configuration_stale_generation_is_409_next_to_the_field(console, console_actor, world):
    configuration_update(actor=console_actor, namespace_id=world.namespace.id,
                         configuration_id=world.agent.configuration_id,
                         command=ConfigurationUpdate(values=marked_document({"someone": "else"})))
    typed = json.dumps(marked_document({"mine": True}))
    response = console.hx_post(url(world.agent, "agent-configuration"),
                               {"configuration_json": typed, "generation": "1"})
    assert response.status_code == 409
    text = html(response)
    assert fragment_root(text) == "section#agent-configuration"
    assert ("Someone saved this Configuration after you opened it. Reload to see their changes." in text)
    assert "&quot;mine&quot;: true" in text
    assert re.search(r'<input type="hidden" name="generation" value="1"', text)
    assert configuration_of(world).values == marked_document({"someone": "else"})


def test_configuration_save_with_an_unknown_outcome_keeps_the_text_and_disables_save(console, world, monkeypatch):
    def lost(**kwargs):
        raise DatabaseError("connection lost")

    monkeypatch.setattr("console.views.agent_writes.configuration_update", lost)
    typed = json.dumps(marked_document({"mine": True}))
    response = console.hx_post(url(world.agent, "agent-configuration"),
                               {"configuration_json": typed, "generation": "1"})
    assert response.status_code == 503
    text = html(response)
    assert fragment_root(text) == "section#agent-configuration"
    assert "OCC could not confirm whether this change was recorded" in text
    assert "&quot;mine&quot;: true" in text
    assert re.search(r'<button type="submit" class="primary" disabled>Save Configuration</button>', text)
    assert "disabled" in deploy_button(html(console.get(url(world.agent)))), "every write waits for Refresh"


def test_configuration_save_without_htmx(console, world):
    response = console.post(url(world.agent, "agent-configuration"),
                            {"configuration_json": json.dumps(VALUES), "generation": "1"})
    assert response.status_code == 302
    assert response["Location"].endswith("?tab=configuration")
    assert configuration_of(world).generation == 2
    bad = console.post(url(world.agent, "agent-configuration"), {"configuration_json": "{", "generation": "2"})
    assert bad.status_code == 200
    text = html(bad)
    assert "<h1>Support bot</h1>" in text
    assert "Enter a valid JSON object." in text


# --- credentials -----------------------------------------------------------------------------------------------


def agent_may_use(world: World, secret: Secret) -> bool:
    subject = Actor(principal=world.agent.service_principal, source=Source.API)
    return allowed(subject, Action.OPERATE, Kind.SECRET, namespace_id=world.namespace.id, resource_id=secret.id)


def test_credentials_tab_lists_secrets_and_grants(console, world):
    text = html(console.hx_get(url(world.agent, "agent-credentials")))
    assert ('API key · Secret <span class="ref"><span class="ref-name">model-key</span> <span class="id-chip">'
            f'<code title="{world.harness.id}">') in text
    assert "<code>TOOL_TOKEN</code>" in text
    assert f'<span class="ref-name">tool-token</span> <span class="id-chip"><code title="{world.tool.id}">' in text
    assert "Missing" not in text
    assert "The Agent may use every Secret it needs." in text


def test_retry_credential_access_grants_only_what_is_missing(console, world):
    AccessBinding.objects.filter(principal=world.agent.service_principal, resource_id=world.tool.id).delete()
    before = html(console.hx_get(url(world.agent, "agent-credentials")))
    assert "Missing" in before
    assert ">Retry credential access</button>" in before
    response = console.hx_post(url(world.agent, "agent-credentials-grant"))
    assert response.status_code == 200
    text = html(response)
    assert fragment_root(text) == "section#agent-credentials"
    assert agent_may_use(world, world.tool)
    assert agent_may_use(world, world.harness)
    event = AuditEvent.objects.filter(action="openclaw.agents.secret_access.grant").latest("occurred_at")
    assert event.details["secretIds"] == [world.tool.id]
    assert len(event.details["accessBindingIds"]) == 1
    assert "Missing" not in text
    assert toasts(response) == ["The Agent can now use its Secrets."]
    assert Configuration.objects.get(id=world.agent.configuration_id).generation == 1, "nothing else saved"


def test_retry_credential_access_refused_is_shown_and_audited(console, world):
    reader = human("reader")
    grant(reader, "read:namespace", "read:agent", namespace=world.namespace)
    client = ConsoleClient()
    client.sign_in("reader", "a-long-test-password")
    AccessBinding.objects.filter(principal=world.agent.service_principal, resource_id=world.tool.id).delete()
    response = client.hx_post(url(world.agent, "agent-credentials-grant"))
    assert response.status_code == 403
    text = html(response)
    assert fragment_root(text) == "section#agent-credentials"
    assert "Access denied" in text
    assert not agent_may_use(world, world.tool)
    assert AuditEvent.objects.filter(kind="authorization_denial", actor_id=reader.id,
                                     details__permission="update:agent").count() == 1


def test_retry_credential_access_without_htmx(console, world):
    AccessBinding.objects.filter(principal=world.agent.service_principal, resource_id=world.harness.id).delete()
    response = console.post(url(world.agent, "agent-credentials-grant"))
    assert response.status_code == 302
    assert response["Location"].endswith("?tab=credentials")
    assert agent_may_use(world, world.harness)


# --- revisions ---------------------------------------------------------------------------------------------------


def test_revisions_list_and_read_only_snapshot(console, console_actor, world):
    first = deploy(world, console_actor)
    run_work(revision_reconcile_key(first.id))
    second = deploy(world, console_actor)
    text = html(console.get(url(world.agent), {"tab": "revisions"}))
    assert text.index("View version v2") < text.index("View version v1")
    assert first.id in text
    assert second.id in text
    assert 'data-status="succeeded">Succeeded</span>' in text
    assert 'data-status="queued">Queued</span>' in text
    snapshot = console.hx_get(url(world.agent), {"tab": "revisions", "revision": first.id})
    assert fragment_root(html(snapshot)) == "div#agent-tabs"
    text = html(snapshot)
    assert 'id="revision-snapshot"' in text
    assert "Version v1 (read-only)" in text
    assert re.search(r'<pre class="json"[^>]*>\{\n  &quot;agents&quot;', text), "pretty-printed JSON"
    assert ('API key · Secret <span class="ref"><span class="ref-name">model-key</span> <span class="id-chip">'
            f'<code title="{world.harness.id}">') in text
    assert ('<code>TOOL_TOKEN</code> → Secret <span class="ref"><span class="ref-name">tool-token</span> '
            f'<span class="id-chip"><code title="{world.tool.id}">') in text
    assert "servicePrincipalId" not in text
    assert world.agent.service_principal.id not in text.split("revision-snapshot")[1]


def test_unknown_revision_snapshot(console, world):
    text = html(console.get(url(world.agent), {"tab": "revisions",
                                               "revision": "rev_00000000-0000-4000-8000-000000000000"}))
    assert "This version does not exist." in text


# --- authorization -------------------------------------------------------------------------------------------------


def test_reader_sees_the_page_but_deploy_is_refused_and_audited(console, world):
    reader = human("reader")
    grant(reader, "read:namespace", "read:agent", namespace=world.namespace)
    client = ConsoleClient()
    client.sign_in("reader", "a-long-test-password")
    page = client.get(url(world.agent))
    assert page.status_code == 200
    assert "<h1>Support bot</h1>" in html(page)
    response = client.hx_post(url(world.agent, "agent-deploy"), {"idempotency_key": "k"})
    assert response.status_code == 403
    text = html(response)
    assert fragment_root(text) == "div#agent-header"
    assert "Access denied" in text
    assert not AgentRevision.objects.exists()
    denial = AuditEvent.objects.get(kind="authorization_denial", actor_id=reader.id)
    assert denial.details["permission"] == "deploy:agent"
    assert denial.resource_id == world.agent.id


def test_reader_without_configuration_read_sees_it_unavailable(console, world):
    reader = human("reader")
    grant(reader, "read:namespace", "read:agent", namespace=world.namespace)
    client = ConsoleClient()
    client.sign_in("reader", "a-long-test-password")
    text = html(client.hx_get(url(world.agent, "agent-configuration")))
    assert "You cannot read this Agent&#x27;s Configuration." in text
    assert "openai/gpt-5" not in text


@pytest.mark.parametrize(("permissions", "status"), [
    pytest.param(("read:namespace",), 403, id="namespace-only"),
    pytest.param((), 404, id="nothing"),
])
def test_without_agent_read_nothing_leaks(world, permissions, status):
    outsider = human("outsider")
    if permissions:
        grant(outsider, *permissions, namespace=world.namespace)
    client = ConsoleClient()
    client.sign_in("outsider", "a-long-test-password")
    for name in ("agent", "agent-header", "agent-deployment", "agent-configuration", "agent-credentials"):
        for response in (client.get(url(world.agent, name)), client.hx_get(url(world.agent, name))):
            assert response.status_code == status, name
            text = html(response)
            assert "Support bot" not in text
            assert world.harness.id not in text
    assert client.hx_post(url(world.agent, "agent-deploy"), {"idempotency_key": "k"}).status_code == status
    assert not AgentRevision.objects.exists()


def test_no_secret_value_in_any_page(console, console_actor, world):
    """Every page and fragment, after a deployment: ``html`` asserts no canary on each."""
    revision = deploy(world, console_actor)
    run_work(revision_reconcile_key(revision.id))
    for tab in ("overview", "configuration", "credentials", "revisions"):
        html(console.get(url(world.agent), {"tab": tab, "revision": revision.id}))
    for name in ("agent-header", "agent-deployment", "agent-configuration", "agent-credentials", "agent-stop",
                 "agent-delete"):
        html(console.hx_get(url(world.agent, name)))


@pytest.mark.parametrize(("hx", "budget"), [pytest.param(True, 14, id="tab-swap"),
                                           pytest.param(False, 19, id="whole-page")])
def test_revisions_tab_reads_every_status_in_constant_queries(console, console_actor, world, fake_compute, hx,
                                                              budget):
    """One revision or four: the same number of queries (statuses come in one query), within the
    page's budget (each read of the Agent once), and the compute driver is never asked."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    first = deploy(world, console_actor)
    finish(first, "succeeded", "REVISION_ACTIVATED")
    get = console.hx_get if hx else console.get

    def count() -> tuple[int, str]:
        get(url(world.agent) + "?tab=revisions")  # the session is touched once; count a steady-state request
        with CaptureQueriesContext(connection) as queries:
            response = get(url(world.agent) + "?tab=revisions")
        assert response.status_code == 200
        return len(queries), html(response)

    one, _ = count()
    for _ in range(3):
        deploy(world, console_actor)
    fake_compute.clear_calls()
    four, text = count()
    assert four == one
    # The shell (session, person, policy: bindings and restrictions, Namespaces, the session's
    # save), the Agent, its newest revision, its active one (here an older one), the tab's page of
    # revisions (never all of them), the header's runtime and provisioning (not in the tab's
    # swap), the Secrets a deployment would deliver (the header's Deploy checks them), the
    # deployments of the newest and of the page's rows, who deployed them: a read done twice fails here.
    assert four <= budget, f"{four} queries"
    assert fake_compute.calls_to("observe_runtime") == []
    assert text.count("succeeded") >= 1
    assert text.count("queued") >= 3


def test_read_only_tabs_reread_after_a_change_but_the_editor_does_not(console, console_actor, world):
    """After Stop the header answers at once; the Overview tab re-reads on the events Stop sends,
    while the Configuration editor never re-reads itself (it would wipe what was typed)."""
    deploy(world, console_actor)
    overview = html(console.hx_get(url(world.agent) + "?tab=overview"))
    assert fragment_root(overview) == "div#agent-tabs"
    root = overview[:overview.index(">", overview.index('id="agent-tabs"'))]
    assert 'hx-trigger="occ:agent-changed from:body, occ:deployment-changed from:body"' in root
    assert "tab=overview" in root
    editor = html(console.hx_get(url(world.agent) + "?tab=configuration"))
    assert "hx-trigger" not in editor[:editor.index(">", editor.index('id="agent-tabs"'))]

    assert "occ:deployment-changed" in triggers(console.hx_post(url(world.agent, "agent-stop")))
    reread = html(console.hx_get(url(world.agent) + "?tab=overview"))
    assert "<dt>Desired state</dt><dd>stopped</dd>" in reread


def test_every_page_has_the_shell_navigation_and_namespace_selector(console, world):
    for path in (url(world.agent), f"/console/namespaces/{world.namespace.id}/agents/new"):
        text = html(console.get(path))
        assert 'aria-label="Console"' in text, path
        assert 'id="namespace-select"' in text, path


# --- a write's toast and the status pill beside it ------------------------------------------------------


def header_status(text: str) -> str:
    """The label of the header's status pill."""
    match = re.search(r'<li>Status: <span class="pill [^"]*" data-status="[^"]*">([^<]+)</span></li>', text)
    assert match, "no status pill in the header"
    return match.group(1)


def stopped_after_running(world: World, actor: Actor) -> None:
    revision = deploy(world, actor)
    run_work(revision_reconcile_key(revision.id))
    agent_stop(actor=actor, namespace_id=world.namespace.id, agent_id=world.agent.id)
    run_work(ControllerWork.objects.filter(agent_id=world.agent.id, agent_target="stopped").latest("created_at").pk)


@pytest.mark.parametrize(("action", "before", "done"), [
    pytest.param("agent-deploy", None, "Version v1 admitted.", id="deploy"),
    pytest.param("agent-stop", "deployed", "Stop requested for Agent Support bot.", id="stop"),
    pytest.param("agent-stop", "running", "Stop requested for Agent Support bot.", id="stop-running"),
    pytest.param("agent-start", "stopped", "Start requested for Agent Support bot.", id="start"),
    pytest.param("agent-delete", "running", "Delete requested for Agent Support bot.", id="delete"),
])
def test_a_writes_toast_names_the_status_its_header_shows(console, console_actor, world, action, before, done):
    if before == "deployed":
        deploy(world, console_actor)
    elif before == "running":
        run_work(revision_reconcile_key(deploy(world, console_actor).id))
    elif before == "stopped":
        stopped_after_running(world, console_actor)
    response = console.hx_post(url(world.agent, action), {"idempotency_key": "console-toast"})
    assert response.status_code == 200
    text = html(response)
    assert fragment_root(text) == "div#agent-header"
    shown = header_status(text)
    assert toasts(response) == [f"{done} Status: {shown}."]
    # And the header read again by itself (its occ:agent-changed re-read) still agrees.
    assert header_status(html(console.hx_get(url(world.agent, "agent-header")))) == shown


INTERNAL_WORDS = ("claim", "lease", "worker", "reconcil", "persisted", "Recorded", "Eligible", "fenc")


@pytest.mark.parametrize("state", ["queued", "running", "queued-again", "succeeded"])
def test_deployment_activity_speaks_the_users_words(console, console_actor, world, state):
    """Issue 27 item 7: no control-plane internals ("A worker claim is active") in any state."""
    revision = deploy(world, console_actor)
    now = timezone.now()
    if state == "running":
        set_work(revision, state=WorkState.CLAIMED, claim_token="t", lease_expires_at=now + timedelta(seconds=60),
                 last_attempt_code="REVISION_INCOMPLETE", last_attempt_at=now)
    elif state == "queued-again":
        set_work(revision, last_attempt_code="AGENT_GATEWAY_UNAVAILABLE", last_attempt_at=now,
                 available_at=now + timedelta(seconds=30))
    elif state == "succeeded":
        run_work(revision_reconcile_key(revision.id))
    text = html(console.hx_get(url(world.agent, "agent-deployment")))
    visible = re.sub(r"<[^>]+>", " ", text)
    assert [word for word in INTERNAL_WORDS if word.lower() in visible.lower()] == []


def test_the_header_says_the_first_version_is_starting_not_that_nothing_is_deployed(console, console_actor, world):
    """Issue 27 item 8: while the first revision is starting the header said "Not deployed / No
    active revision"; it says Starting, names the version, and follows it."""
    deploy(world, console_actor)
    text = html(console.hx_get(url(world.agent, "agent-header")))
    assert 'data-status="starting">Starting</span>' in text
    assert "Not deployed" not in text
    assert "No active revision yet: v1 is starting" in text
    assert "every 3s" in text


def test_a_failed_first_version_is_said_in_the_header(console, console_actor, world):
    revision = deploy(world, console_actor)
    finish(revision, WorkState.FAILED_PERMANENT, "RUNTIME_STARTUP_FAILED")
    text = html(console.hx_get(url(world.agent, "agent-header")))
    assert "Not deployed" not in text
    assert 'data-status="failed"' in text
