"""The Agent header shows the runtime's truth: a gateway that is down is never "active"."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from occ.models import Agent
from occ.models.work import revision_reconcile_key
from occ.services.deploy import agent_deploy
from tests.fakes.compute import deployable_agent, healthy_then_failed_activation, run_work


@pytest.fixture
def agent(ready_namespace, fake_compute) -> Agent:
    return deployable_agent(ready_namespace)


def header(console, agent: Agent) -> str:
    return console.get(reverse("console:agent-header", args=[agent.namespace_id, agent.id]),
                       headers={"HX-Request": "true"}).content.decode()


def test_the_header_never_shows_active_for_a_gateway_that_is_down(console, admin_actor, agent, fake_compute):
    healthy_then_failed_activation(admin_actor, agent, fake_compute)
    html = header(console, agent)
    assert 'id="agent-runtime-failed"' in html
    assert "The gateway is not running" in html
    assert "Revision v2 failed to start" in html
    assert "The Agent&#x27;s gateway exited while starting this revision" in html
    assert "GATEWAY_EXITED" in html
    assert '<span class="pill pill-danger" data-status="failed">Not running</span>' in html
    assert not re.search(r'class="pill pill-ok"[^>]*>\s*(Active|Running)', html)
    assert ">active<" not in html


def test_the_header_of_a_healthy_agent_shows_running(console, admin_actor, agent):
    first = agent_deploy(actor=admin_actor, namespace_id=agent.namespace_id, agent_id=agent.id)
    run_work(revision_reconcile_key(first.id))
    html = header(console, agent)
    assert '<span class="pill pill-ok" data-status="running">Running</span>' in html
    assert "agent-runtime-failed" not in html


def test_the_whole_page_of_a_gateway_that_is_down_never_says_status_active(console, admin_actor, agent, fake_compute):
    """The Overview shows the record's lifecycle under its own name, not a second "Status"."""
    healthy_then_failed_activation(admin_actor, agent, fake_compute)
    html = console.get(reverse("console:agent", args=[agent.namespace_id, agent.id])).content.decode()
    assert "The gateway is not running" in html
    assert not re.search(r"<dt>Status</dt>\s*<dd>\s*active", html)
    assert re.search(r"<dt>Lifecycle</dt>\s*<dd>\s*active", html)
