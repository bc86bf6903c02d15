"""The Sessions page, an Agent's Sessions tab, a transcript with its search, and the approvals
inbox, each the full page and its htmx fragment, against loopback stand-ins of the Agents'
gateway RPC (real WebSockets). A person without ``read_conversations`` sees none of it."""

from __future__ import annotations

import re
import time

import pytest

from occ.models import AuditEvent
from occ.services.agent_sessions import TRANSCRIPT_READ, agent_sessions_refresh
from occ.services.approvals import DECIDED
from tests.console.conftest import ConsoleClient, fragment_root, is_error_toast
from tests.factories import grant, human
from tests.fakes.fake_gateway_rpc import FakeGateway, fake_gateways, running_agent  # noqa: F401

PASSWORD = "stand-in-gateway-password-console"
CANARY = "sk-console-canary-31f0"
NOW_MS = int(time.time() * 1000)


@pytest.fixture
def fleet(ready_namespace, fake_compute, fake_gateways):  # noqa: F811
    one = FakeGateway(PASSWORD, sessions=[
        {"key": "agent:main:main", "channel": "webchat", "displayName": "Trip planning", "updatedAt": NOW_MS,
         "totalTokens": 321, "origin": {"label": "Grace"}},
        {"key": "agent:main:slack:dm:u9", "channel": "slack", "updatedAt": NOW_MS - 5000}],
        histories={"agent:main:main": [
            {"role": "user", "content": "Plan a trip to Lisbon"},
            {"role": "assistant", "content": [{"type": "text", "text": "Checking flights."},
                                              {"type": "toolCall", "name": "search", "arguments": {"q": "LIS"}}]},
            {"role": "assistant", "content": "Found three flights to Lisbon."}]},
        approvals={"exec": [{"id": "ex-1", "createdAtMs": NOW_MS, "expiresAtMs": NOW_MS + 90_000,
                             "request": {"command": "bash deploy.sh", "sessionKey": "agent:main:main"}}],
                   "plugin": []}).start()
    fake_gateways.append(one)
    agent = running_agent(ready_namespace, one, fake_compute, name="travel-bot")
    agent_sessions_refresh(agent_id=agent.id)
    return {"agent": agent, "gateway": one}


def test_the_sessions_page_and_its_fragment(console, fleet):
    page = console.get("/console/sessions")
    assert page.status_code == 200
    html = page.content.decode()
    assert '<form id="session-filter"' in html
    assert "Trip planning" in html
    assert "travel-bot" in html
    assert "Grace" in html
    assert 'aria-current="page"' in html
    assert "Sessions" in html
    fragment = console.hx_get("/console/sessions", {"channel": "slack"})
    assert fragment_root(fragment.content.decode()) == "div#session-results"
    assert "agent:main:slack:dm:u9" in fragment.content.decode()
    assert "Trip planning" not in fragment.content.decode()


def test_the_agent_sessions_tab(console, fleet):
    agent = fleet["agent"]
    url = f"/console/namespaces/{agent.namespace_id}/agents/{agent.id}"
    tab = console.hx_get(url, {"tab": "sessions"}).content.decode()
    assert fragment_root(tab) == "div#agent-tabs"
    assert 'id="agent-sessions"' in tab
    assert "Trip planning" in tab


def test_a_transcript_its_search_and_its_export_links(console, fleet):
    agent = fleet["agent"]
    page = console.get("/console/sessions").content.decode()
    url = re.search(r'href="(/console/namespaces/[^"]+/sessions/ses_[^"]+)"', page).group(1)
    assert agent.id in url
    html = console.get(url).content.decode()
    assert "Plan a trip to Lisbon" in html
    assert "{&quot;q&quot;:&quot;LIS&quot;}" in html
    searched = console.hx_get(url, {"q": "three flights"})
    assert fragment_root(searched.content.decode()) == "div#transcript-entries"
    assert "Found three flights" in searched.content.decode()
    assert "Plan a trip" not in searched.content.decode()
    assert AuditEvent.objects.filter(action=TRANSCRIPT_READ, resource_id=agent.id).count() == 2
    markdown = re.search(r'href="([^"]+format=markdown)"', html).group(1)
    export = console.get(markdown)  # the API, signed in by the console's session
    assert export.status_code == 200
    assert "Plan a trip to Lisbon" in export.content.decode()


def test_without_the_permission_nothing_is_shown(fleet, ready_namespace):
    person = human("chat-only")
    grant(person, "read:namespace", "read:agent", "invoke:agent", namespace=ready_namespace)
    client = ConsoleClient()
    client.sign_in("chat-only", "a-long-test-password")
    html = client.get("/console/sessions").content.decode()
    assert "Trip planning" not in html
    assert "No conversations to read" in html
    agent = fleet["agent"]
    tab = client.hx_get(f"/console/namespaces/{agent.namespace_id}/agents/{agent.id}", {"tab": "sessions"})
    assert "You may not read this Agent&#x27;s conversations" in tab.content.decode()
    assert "Approve once" not in client.get("/console/approvals").content.decode()


def test_the_approvals_inbox_decides_once(console, fleet):
    agent = fleet["agent"]
    page = console.get("/console/approvals").content.decode()
    assert "bash deploy.sh" in page
    assert "Approve once" in page
    url = f"/console/namespaces/{agent.namespace_id}/agents/{agent.id}/approvals/exec/ex-1"
    decided = console.hx_post(url, {"decision": "approve"})
    assert decided.status_code == 200
    assert fragment_root(decided.content.decode()) == "div#approval-list"
    assert "bash deploy.sh" not in decided.content.decode()
    again = console.hx_post(url, {"decision": "deny"})
    assert again.status_code == 409
    assert is_error_toast(again)
    assert fleet["gateway"].calls("exec.approval.resolve") == [{"id": "ex-1", "decision": "allow-once"}]
    assert AuditEvent.objects.filter(action=DECIDED).count() == 1
    refreshed = console.hx_get("/console/approvals")
    assert fragment_root(refreshed.content.decode()) == "div#approval-list"
