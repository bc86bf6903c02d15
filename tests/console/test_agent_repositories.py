"""The Agent page's Repository access (Configuration tab, #agent-repositories): the choices come
from the GitHub App driver (loopback fake), saving is ``agent_update`` of the bindings, audited;
a repeated repository is a field error; an unavailable driver keeps the saved bindings shown."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from occ.models import Agent, AuditEvent
from tests.console.conftest import fragment_root
from tests.console.test_agent_detail import html, make_world, toasts, url
from tests.fakes.fake_github import FakeGitHub, serving


@pytest.fixture
def github(settings) -> Iterator[FakeGitHub]:
    yield from serving(settings)


@pytest.fixture
def world(ready_namespace, console_actor, fake_compute):
    return make_world(ready_namespace, console_actor)


def rows(*pairs: tuple[str, str], count: int = 3) -> dict[str, str]:
    data = {f"{kind}_{row}": "" for row in range(1, count + 1) for kind in ("repository", "profile")}
    for row, (ref, profile) in enumerate(pairs, start=1):
        data[f"repository_{row}"], data[f"profile_{row}"] = ref, profile
    return data


def test_the_configuration_tab_offers_the_installations_repositories(console, world, github):
    text = html(console.get(url(world.agent) + "?tab=configuration"))
    assert '<section id="agent-repositories"' in text
    assert "None: the Agent reaches no repository." in text
    assert '<option value="acme/widgets">acme/widgets</option>' in text
    assert 'id="repositories-repository-3"' in text


def test_save_replaces_the_bindings_and_audits(console, world, github):
    response = console.hx_post(url(world.agent, "agent-repositories"),
                               rows(("acme/widgets", "git-read"), ("", "git-read"), ("acme/docs", "git-full")))
    assert response.status_code == 200
    text = html(response)
    assert fragment_root(text) == "section#agent-repositories"
    assert "<code>acme/widgets</code> — Read-only (git-read)" in text
    assert Agent.objects.get(id=world.agent.id).repository_bindings == [
        {"repositoryRef": "acme/widgets", "profile": "git-read"}, {"repositoryRef": "acme/docs", "profile": "git-full"}]
    assert toasts(response) == ["Repository access saved: 2 repositories. The next deploy gives the Agent this "
                                "access."]
    event = AuditEvent.objects.filter(action="openclaw.agents.update").latest("occurred_at")
    assert event.details["repositoryBindings"] == ["acme/widgets:git-read", "acme/docs:git-full"]
    cleared = console.hx_post(url(world.agent, "agent-repositories"), rows())
    assert "None: the Agent reaches no repository." in html(cleared)
    assert Agent.objects.get(id=world.agent.id).repository_bindings == []


def test_a_repeated_repository_is_a_field_error_that_saves_nothing(console, world, github):
    response = console.hx_post(url(world.agent, "agent-repositories"),
                               rows(("acme/widgets", "git-read"), ("acme/widgets", "git-full")))
    assert response.status_code == 200
    text = html(response)
    assert fragment_root(text) == "section#agent-repositories"
    assert "Each repository can be bound once" in text
    assert Agent.objects.get(id=world.agent.id).repository_bindings == []


def test_an_unavailable_driver_keeps_the_saved_bindings_and_disables_saving(console, world, github, settings):
    Agent.objects.filter(id=world.agent.id).update(
        repository_bindings=[{"repositoryRef": "acme/widgets", "profile": "git-write"}])
    github.revoke()
    text = html(console.get(url(world.agent) + "?tab=configuration"))
    assert "<code>acme/widgets</code> — Contributor, issues off (git-write)" in text
    assert "Repository choices are unavailable: The GitHub App installation no longer grants" in text
    refused = console.hx_post(url(world.agent, "agent-repositories"), rows())
    assert Agent.objects.get(id=world.agent.id).repository_bindings == [
        {"repositoryRef": "acme/widgets", "profile": "git-write"}]
    assert "Repository choices are unavailable" in html(refused)


def test_without_a_driver_the_section_says_so(console, world, settings):
    settings.OCC_REPOSITORY_DRIVER = ""
    text = html(console.get(url(world.agent) + "?tab=configuration"))
    assert "This installation has no repository driver" in text
