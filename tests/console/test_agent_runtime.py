"""The Agent page's Runtime panel, Logs tab and Start (console.views.agent_runtime, agent_writes):
each partial by htmx and the whole page without it, on the fake compute driver. The leak canary:
a secret value the gateway prints never reaches the HTML, only ``[redacted]`` does."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.messages import get_messages
from django.core import signing
from django.urls import reverse

from occ.drivers.compute.base import LOG_REDACTED
from occ.drivers.compute.fake import FAKE_USAGE, error
from occ.models import Agent, AuditEvent, ControllerWork, Restriction, Secret
from occ.models.work import agent_deleted_key
from occ.services.agent_lifecycle import agent_delete, agent_stop
from occ.services.agent_logs import FOLLOW_SALT, LOGS_VIEWED
from tests.console.conftest import ConsoleClient, agent_with_secrets, fragment_root
from tests.factories import grant, human
from tests.fakes.compute import run_work

MODEL_CANARY = "sk-canary-runtime-model-key-5a7c"
TOOL_CANARY = "xoxb-canary-runtime-bot-token-9d2e"


@pytest.fixture
def agent(ready_namespace, console_actor, fake_compute) -> Agent:
    """An Agent whose model key and one bound Secret (a channel token) are canaries."""
    return agent_with_secrets(console_actor, ready_namespace.id, name="Watcher", model_key=MODEL_CANARY,
                              bound={"SLACK_BOT_TOKEN": ("bot-token", TOOL_CANARY)})


@pytest.fixture
def stopped(running, console_actor) -> Agent:
    agent_stop(actor=console_actor, namespace_id=running.namespace_id, agent_id=running.id)
    run_work(ControllerWork.objects.filter(agent_id=running.id, agent_target="stopped").latest("created_at").pk)
    running.refresh_from_db()
    return running


def page(agent: Agent) -> str:
    return f"/console/namespaces/{agent.namespace_id}/agents/{agent.id}"


def views(agent: Agent):
    return AuditEvent.objects.filter(action=LOGS_VIEWED, resource_id=agent.id)


def no_canary(html: str) -> None:
    for canary in (MODEL_CANARY, TOOL_CANARY):
        assert canary not in html
        assert canary[6:20] not in html


def signed_in(username: str) -> ConsoleClient:
    client = ConsoleClient()
    client.sign_in(username, "a-long-test-password")
    return client


# --- the Runtime panel -------------------------------------------------------------------------------


def test_the_runtime_panel_shows_what_the_driver_observes_and_polls(console, running):
    response = console.hx_get(f"{page(running)}/runtime")
    assert response.status_code == 200
    html = response.content.decode()
    assert fragment_root(html) == "section#agent-runtime"
    assert 'data-runtime-state="running"><span class="pill pill-ok" data-status="running">Running' in html
    assert "every 5s" in html
    assert re.search(r"<dt>Serving</dt>\s*<dd><a [^>]*>v1</a>", html)
    assert re.search(r"<dt>Restarts</dt><dd>0</dd>", html)
    assert "256.0\xa0MB" in html
    assert f"{FAKE_USAGE[1]:.1f} %" in html
    assert 'data-poll-visible' in html


def test_usage_a_driver_cannot_measure_is_unknown_not_made_up(console, running, fake_compute):
    """The Kubernetes driver without a metrics API: running, memory and CPU unknown."""
    fake_compute.set_usage(running.id, memory_bytes=None, cpu_percent=None)
    html = console.hx_get(f"{page(running)}/runtime").content.decode()
    assert 'data-runtime-state="running"' in html
    assert re.search(r'<dt>Memory</dt><dd><span class="muted">unknown</span></dd>', html)
    assert re.search(r'<dt>CPU</dt><dd><span class="muted">unknown</span></dd>', html)


def test_the_whole_page_carries_the_panel_as_a_placeholder_that_loads_it(console, running, fake_compute):
    """The page never waits for the driver: its placeholder asks for the panel once loaded, and
    without script links to it (the whole page with the panel filled in)."""
    fake_compute.clear_calls()
    html = console.get(page(running)).content.decode()
    assert fake_compute.calls_to("observe_runtime") == []
    panel = html[html.index('<section id="agent-runtime"'):]
    panel = panel[:panel.index("</section>")]
    assert f'hx-get="{page(running)}/runtime" hx-trigger="load, ' in panel
    assert f'<a href="{page(running)}/runtime">Show the runtime</a>' in panel
    assert "data-runtime-state" not in panel
    assert "console/runtime.js" in html
    assert "<script>" not in html

    linked = console.get(f"{page(running)}/runtime").content.decode()
    assert 'id="agent-header"' in linked
    assert 'data-runtime-state="running"' in linked
    assert "Show the runtime" not in linked
    assert fake_compute.calls_to("observe_runtime") != []


def test_a_stopped_agent_is_stopped_in_the_panel_header_and_list_and_stops_polling(console, stopped):
    response = console.hx_get(f"{page(stopped)}/runtime")
    assert response.status_code == 286, "nothing to watch: htmx stops polling"
    html = response.content.decode()
    assert 'data-runtime-state="stopped"><span class="pill pill-neutral" data-status="stopped">Stopped' in html
    assert "every 5s" not in html
    assert re.search(r"<dt>Last served</dt>\s*<dd><a [^>]*>v1</a>", html)
    header = console.hx_get(f"{page(stopped)}/header").content.decode()
    assert 'data-status="stopped">Stopped' in header
    assert 'id="agent-start"' in header
    assert ">Stop</button>" not in header
    listing = console.get(f"/console/namespaces/{stopped.namespace_id}/agents").content.decode()
    assert '<td data-label="Runtime"><span data-runtime-state="stopped">' in listing


def test_a_deleting_agents_panel_reads_once_and_stops_polling(console, console_actor, running):
    """The header's deletion progress watches a deleting Agent (and returns to the list once it is
    gone); a panel still polling beside it would ask after an Agent about to be gone."""
    agent_delete(actor=console_actor, namespace_id=running.namespace_id, agent_id=running.id)
    response = console.hx_get(f"{page(running)}/runtime")
    assert response.status_code == 286
    html = response.content.decode()
    assert fragment_root(html) == "section#agent-runtime"
    assert "every 5s" not in html


def test_the_panel_and_the_log_follower_of_a_gone_agent_return_to_the_list(console, console_actor, running):
    """Deleted meanwhile, here or by someone else: a poll or an event's re-read answered 404 (seen
    after Delete in tests/browser/test_console_flow.py), and htmx went on asking every few seconds.
    Now they return to the Agents list, as the header and the deployment activity do."""
    agent_delete(actor=console_actor, namespace_id=running.namespace_id, agent_id=running.id)
    run_work(agent_deleted_key(running.id, 1))
    assert not Agent.objects.filter(id=running.id).exists()
    agents_url = reverse("console:agents", args=[running.namespace_id])
    for path, params in ((f"{page(running)}/runtime", {}), (f"{page(running)}/logs", {"follow": "x"})):
        response = console.hx_get(path, params)
        assert (response.status_code, response["HX-Redirect"]) == (200, agents_url), path
    assert {str(m) for m in get_messages(response.wsgi_request)} == {"The Agent no longer exists."}
    plain = console.get(f"{page(running)}/runtime")
    assert (plain.status_code, plain["Location"]) == (302, agents_url)
    assert console.get(f"{page(running)}/logs").status_code == 404


def test_a_crashed_gateway_says_it_will_be_restarted(console, running, fake_compute):
    fake_compute.crash(running.id, restarts=3)
    html = console.hx_get(f"{page(running)}/runtime").content.decode()
    assert 'data-runtime-state="crashed"><span class="pill pill-danger" data-status="crashed">Crashed' in html
    assert re.search(r"<dt>Restarts</dt><dd>3</dd>", html)
    assert "OCC restarts it" in html
    assert "every 5s" in html


def test_a_driver_failure_is_a_fixed_message_and_polling_goes_on(console, running, fake_compute):
    fake_compute.script("observe_runtime", running.id, [error("KUBE_SECRET_DETAIL_xyz")])
    response = console.hx_get(f"{page(running)}/runtime")
    html = response.content.decode()
    assert response.status_code == 200
    assert "could not be asked" in html
    assert "KUBE_SECRET_DETAIL_xyz" not in html
    assert "every 5s" in html


def test_without_operate_the_panel_says_so_and_the_driver_is_not_asked(running, fake_compute):
    reader = human("reader")
    grant(reader, "read:namespace", "read:agent", namespace=running.namespace)
    fake_compute.clear_calls()
    html = signed_in("reader").hx_get(f"{page(running)}/runtime").content.decode()
    assert "needs operate:agent" in html
    assert fake_compute.calls_to("observe_runtime") == []


# --- the Logs tab ------------------------------------------------------------------------------------------


def test_the_logs_tab_shows_redacted_lines_and_audits_the_view(console, running, fake_compute):
    fake_compute.print_log(running.id, f"model key is {MODEL_CANARY}\nslack token={TOOL_CANARY} ok")
    response = console.hx_get(page(running), {"tab": "logs"})
    html = response.content.decode()
    assert fragment_root(html) == "div#agent-tabs"
    assert 'id="agent-logs"' in html
    assert f"model key is {LOG_REDACTED}" in html
    assert f"slack token={LOG_REDACTED} ok" in html
    assert "gateway serving revision" in html
    no_canary(html)
    [audit] = views(running)
    assert (audit.kind, audit.details["activeRevisionId"]) == ("access", running.active_revision_id)
    assert "occ:agent-changed" not in html.split('id="agent-logs"')[0], "the Logs tab must not re-read itself"
    assert 'id="agent-log-follow"' in html
    assert "every 3s" in html
    assert "data-log-pause" in html


def test_follow_appends_only_new_lines_without_a_new_audit(console, running, fake_compute):
    html = console.hx_get(page(running), {"tab": "logs"}).content.decode()
    follow = re.search(r'id="agent-log-follow"[^>]*hx-get="([^"]+)"', html).group(1).replace("&amp;", "&")
    fake_compute.print_log(running.id, f"later line with {TOOL_CANARY}")

    step = console.hx_get(follow)

    text = step.content.decode()
    assert fragment_root(text) == "li", text[:200]
    assert f'<li class="log-line">later line with {LOG_REDACTED}</li>' in text
    assert "gateway serving revision" not in text, "only what was written since"
    assert text.rstrip().endswith("</li>")
    assert 'id="agent-log-follow"' in text, "the next poller replaces this one"
    no_canary(text)
    assert views(running).count() == 1
    nothing = console.hx_get(re.search(r'id="agent-log-follow"[^>]*hx-get="([^"]+)"', text).group(1)
                             .replace("&amp;", "&")).content.decode()
    assert 'class="log-line"' not in nothing


def test_a_forged_follow_token_starts_a_new_audited_view(console, running):
    forged = signing.dumps({"p": "prn_someone_else", "a": running.id, "v": "req_x", "c": "fake:0"},
                           salt=FOLLOW_SALT)
    text = console.hx_get(f"{page(running)}/logs", {"follow": forged}).content.decode()
    assert views(running).count() == 1, "not the caller's token: a new view, audited"
    assert "gateway serving revision" in text
    tampered = console.hx_get(f"{page(running)}/logs", {"follow": "nonsense"})
    assert tampered.status_code == 200
    assert views(running).count() == 2


def test_an_empty_log_says_so(console, agent):
    html = console.hx_get(page(agent), {"tab": "logs"}).content.decode()
    assert "No log lines yet" in html
    assert 'class="log-line"' not in html


def test_lines_printed_while_the_gateway_held_a_deleted_secret_are_withheld(console, running, fake_compute):
    fake_compute.print_log(running.id, f"token {TOOL_CANARY}")
    token = Secret.objects.get(name="bot-token")
    # The value is gone from the SecretDriver (as after a delete): nothing left to redact it with.
    Secret.objects.filter(id=token.id).update(backend_name="gone-" + token.backend_name)
    html = console.hx_get(page(running), {"tab": "logs"}).content.decode()
    assert 'id="agent-log-withheld"' in html
    assert "token " + LOG_REDACTED not in html
    no_canary(html)


def test_a_log_that_cannot_be_read_is_a_fixed_message(console, running, fake_compute):
    fake_compute.script("read_logs", running.id, [error("DRIVER_TEXT_abc")])
    html = console.hx_get(page(running), {"tab": "logs"}).content.decode()
    assert "could not be read right now" in html
    assert "DRIVER_TEXT_abc" not in html
    assert 'id="agent-log-follow"' not in html


def test_logs_need_read_logs_or_administer(running, fake_compute):
    person = human("person")
    grant(person, "read:namespace", "read:agent", "operate:agent", namespace=running.namespace)
    fake_compute.clear_calls()
    client = signed_in("person")
    html = client.hx_get(page(running), {"tab": "logs"}).content.decode()
    assert "You may not read this Agent" in html
    assert fake_compute.calls_to("read_logs") == []
    assert not views(running).exists()
    follow = client.hx_get(f"{page(running)}/logs", {"follow": "x"}).content.decode()
    assert "You may not read this Agent" in follow
    assert fake_compute.calls_to("read_logs") == []

    grant(person, "read_logs:agent", namespace=running.namespace, resource_kind="agent", resource_id=running.id)
    html = client.hx_get(page(running), {"tab": "logs"}).content.decode()
    assert "gateway serving revision" in html
    assert views(running).get().actor_id == person.id


def test_a_read_logs_restriction_bars_administer_based_reads(console, running, fake_compute):
    Restriction.objects.create(action="read_logs", resource_kind="agent", namespace_id=running.namespace_id,
                               resource_id=running.id)
    fake_compute.clear_calls()
    html = console.hx_get(page(running), {"tab": "logs"}).content.decode()
    assert "You may not read this Agent" in html
    assert fake_compute.calls_to("read_logs") == []


# --- Start ---------------------------------------------------------------------------------------------------


def test_start_shows_progress_then_running(console, stopped, fake_compute):
    response = console.hx_post(f"{page(stopped)}/start")
    assert response.status_code == 200
    html = response.content.decode()
    assert fragment_root(html) == "div#agent-header"
    assert 'id="agent-starting"' in html
    assert "Starting v1" in html
    assert "every 3s" in html, "the header follows the start"
    assert ">Stop</button>" in html
    trigger = json.loads(response["HX-Trigger"])
    assert "occ:deployment-changed" in trigger
    assert trigger["occ:toast"]["messages"][0]["text"] == "Start requested for Agent Watcher. Status: Starting."
    assert AuditEvent.objects.filter(action="openclaw.agents.start", resource_id=stopped.id).count() == 1
    panel = console.hx_get(f"{page(stopped)}/runtime")
    assert panel.status_code == 200, "it wants to run: the panel polls"

    run_work(ControllerWork.objects.filter(agent_id=stopped.id, idempotency_key__contains=":start:").get().pk)

    header = console.hx_get(f"{page(stopped)}/header").content.decode()
    assert '<span class="pill pill-ok" data-status="running">Running</span>' in header
    assert "every 3s" not in header
    assert 'data-runtime-state="running"' in console.hx_get(f"{page(stopped)}/runtime").content.decode()


def test_start_without_htmx_redirects_to_the_page(console, stopped):
    response = console.post(f"{page(stopped)}/start")
    assert response.status_code == 302
    assert response["Location"] == page(stopped)


def test_start_of_an_agent_that_never_ran_says_deploy(console, agent):
    response = console.hx_post(f"{page(agent)}/start")
    assert response.status_code == 409
    assert "Deploy it instead" in response.content.decode()


def test_start_needs_operate_and_is_audited_when_refused(stopped):
    reader = human("reader")
    grant(reader, "read:namespace", "read:agent", namespace=stopped.namespace)
    response = signed_in("reader").hx_post(f"{page(stopped)}/start")
    assert response.status_code == 403
    denial = AuditEvent.objects.get(kind="authorization_denial", actor_id=reader.id)
    assert denial.details["permission"] == "operate:agent"
    assert Agent.objects.get(id=stopped.id).desired_runtime_state == "stopped"


def test_a_driver_that_does_not_observe_says_so_and_the_panel_stops_polling(console, running, fake_compute):
    fake_compute.script("observe_runtime", running.id, [error("OBSERVE_UNSUPPORTED", retryable=False)])
    response = console.hx_get(f"{page(running)}/runtime")
    assert response.status_code == 286
    assert "does not report on its gateways" in response.content.decode()
    fake_compute.script("read_logs", running.id, [error("LOGS_UNSUPPORTED", retryable=False)])
    html = console.hx_get(page(running), {"tab": "logs"}).content.decode()
    assert "does not provide its gateways" in html
    assert 'id="agent-log-follow"' not in html


def test_stop_shows_stopping_and_follows_until_the_stop_work_is_done(console, running):
    response = console.hx_post(f"{page(running)}/stop")
    assert response.status_code == 200
    html = response.content.decode()
    assert fragment_root(html) == "div#agent-header"
    assert 'data-status="stopping"' in html
    assert "every 3s" in html, "the header follows the stop"

    run_work(ControllerWork.objects.filter(agent_id=running.id, agent_target="stopped").latest("created_at").pk)

    header = console.hx_get(f"{page(running)}/header").content.decode()
    assert 'data-status="stopped"' in header
    assert "every 3s" not in header, "a settled stop is not polled"
