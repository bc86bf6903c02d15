"""Run diagnostics on the Agent page's deployment activity panel (issue 28): offered on a failed
deployment, refused with its reason to someone who may not operate the Agent, and the compute
driver's checks, its refusal or its silence shown in the panel."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from occ.models import AgentRevision, AuditEvent, WorkState
from occ.models.work import revision_reconcile_key
from tests.console.conftest import ConsoleClient, fragment_root
from tests.console.test_agent_detail import World, deploy, finish, html, make_world, url
from tests.factories import grant, human
from tests.fakes.compute import run_work

REFUSED = "You can see this Agent but not run diagnostics on it."


@pytest.fixture
def world(ready_namespace, console_actor, fake_compute) -> World:
    return make_world(ready_namespace, console_actor)


def diagnostics_url(revision: AgentRevision) -> str:
    return reverse("console:agent-deployment-diagnostics", args=[revision.namespace_id, revision.agent_id,
                                                                   revision.id])


def failed(world: World, actor) -> AgentRevision:
    revision = deploy(world, actor)
    finish(revision, WorkState.FAILED_PERMANENT, "RUNTIME_STARTUP_FAILED")
    return revision


def diagnose_button(text: str) -> str:
    match = re.search(r"<button[^>]*>(?:<svg .*?</svg>)?<span class=\"when-idle\">Run diagnostics</span>", text)
    assert match, "no Run diagnostics button"
    return match.group(0)


CHECK = re.compile(r'<dt class="check \w+"><span class="check-component">(.*?)</span> · <span class="check-name">'
                   r'(.*?)</span></dt><dd><span class="check-state">(.*?)</span>(?: · <code>(.*?)</code>)?</dd>')


def check_rows(text: str) -> list[tuple[str, ...]]:
    """Each check shown: component, check, state in words, and its code ("—" without one)."""
    return [(component, check, state, code or "—") for component, check, state, code in CHECK.findall(text)]


def reader_client(world: World, *permissions: str) -> tuple[object, ConsoleClient]:
    person = human("reader")
    grant(person, "read:namespace", "read:agent", "read:agent_revision", *permissions, namespace=world.namespace)
    client = ConsoleClient()
    client.sign_in("reader", "a-long-test-password")
    return person, client


def test_a_failed_deployment_offers_run_diagnostics(console, console_actor, world):
    revision = failed(world, console_actor)
    text = html(console.get(url(world.agent)))
    button = diagnose_button(text)
    assert "disabled" not in button
    assert f'hx-post="{diagnostics_url(revision)}"' in text
    assert 'name="csrfmiddlewaretoken"' in text.split('class="deployment-diagnose"')[1].split("</form>")[0]


@pytest.mark.parametrize("state", [pytest.param("pending", id="queued"), pytest.param("succeeded", id="succeeded")])
def test_no_run_diagnostics_unless_the_deployment_failed(console, console_actor, world, state):
    revision = deploy(world, console_actor)
    if state == "succeeded":
        run_work(revision_reconcile_key(revision.id))
    assert "Run diagnostics" not in html(console.get(url(world.agent)))


def test_run_diagnostics_shows_the_checks_in_the_panel(console, console_actor, world):
    revision = failed(world, console_actor)
    before = AuditEvent.objects.count()
    response = console.hx_post(diagnostics_url(revision))
    assert response.status_code == 200
    text = html(response)
    assert fragment_root(text) == "section#deployment-activity"
    assert check_rows(text) == [("gateway", "process", "failed", "GATEWAY_NOT_RUNNING"),
                                ("gateway", "revision", "failed", "REVISION_NOT_SERVING")]
    assert "2 of 2 checks failed." in text
    assert AuditEvent.objects.count() == before, "a read: nothing is audited"


def test_run_diagnostics_of_a_serving_runtime_passes(console, console_actor, world):
    revision = deploy(world, console_actor)
    run_work(revision_reconcile_key(revision.id))
    text = html(console.hx_post(diagnostics_url(revision)))
    assert check_rows(text) == [("gateway", "process", "passed", "—"), ("gateway", "revision", "passed", "—")]
    assert "every check passed." in text


def test_run_diagnostics_without_htmx_is_the_whole_page(console, console_actor, world):
    revision = failed(world, console_actor)
    response = console.post(diagnostics_url(revision))
    assert response.status_code == 200
    text = html(response)
    assert "<h1>Support bot</h1>" in text
    assert ("gateway", "process", "failed", "GATEWAY_NOT_RUNNING") in check_rows(text)


def test_when_the_runtime_cannot_answer_the_panel_says_try_again(console, console_actor, world, fake_compute):
    revision = failed(world, console_actor)
    fake_compute.script("diagnose", revision.id, ["error:AGENT_GATEWAY_UNAVAILABLE"])
    response = console.hx_post(diagnostics_url(revision))
    assert response.status_code == 503
    text = html(response)
    assert fragment_root(text) == "section#deployment-activity"
    assert "The runtime&#x27;s evidence is unavailable now" in text
    assert "Try again in a moment." in text
    assert "AGENT_GATEWAY_UNAVAILABLE" not in text, "no driver text"
    assert check_rows(text) == []


def test_someone_who_may_not_operate_sees_it_disabled_and_is_refused(console_actor, world, fake_compute):
    revision = failed(world, console_actor)
    person, client = reader_client(world)
    page = html(client.get(url(world.agent)))
    assert "disabled" in diagnose_button(page)
    assert REFUSED in page
    fake_compute.clear_calls()
    response = client.hx_post(diagnostics_url(revision))
    assert response.status_code == 403
    text = html(response)
    assert fragment_root(text) == "section#deployment-activity"
    assert f'<p role="alert">{REFUSED}</p>' in text
    assert fake_compute.calls == [], "the driver is not asked before authorization"
    denial = AuditEvent.objects.get(kind="authorization_denial", actor_id=person.id)
    assert denial.details["permission"] == "operate:agent"


def test_an_operator_of_the_agent_may_run_it(console_actor, world):
    revision = failed(world, console_actor)
    _, client = reader_client(world, "operate:agent")
    assert "disabled" not in diagnose_button(html(client.get(url(world.agent))))
    assert client.hx_post(diagnostics_url(revision)).status_code == 200


def test_run_diagnostics_is_post_only(console, console_actor, world):
    revision = failed(world, console_actor)
    assert console.get(diagnostics_url(revision)).status_code == 405


def test_an_unknown_revision_is_404(console, world):
    revision = AgentRevision(namespace_id=world.namespace.id, agent_id=world.agent.id, id="rev_unknown")
    assert console.hx_post(diagnostics_url(revision)).status_code == 404
