"""Repository bindings through the JSON API: the options, Agent create and PATCH, deploy and
provisioning admission, with the GitHub App driver speaking HTTP to a loopback fake."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from occ.models import Agent, AgentRevision, AuditEvent
from tests.agents_support import caller, state
from tests.factories import ConfigurationFactory
from tests.fakes.compute import deployable_agent
from tests.fakes.fake_github import FakeGitHub, serving

READ = {"repositoryRef": "acme/widgets", "profile": "git-read"}
FULL = {"repositoryRef": "acme/docs", "profile": "git-full"}


@pytest.fixture
def github(settings) -> Iterator[FakeGitHub]:
    yield from serving(settings)


@pytest.fixture
def cfg(ready_namespace) -> str:
    return ConfigurationFactory(namespace=ready_namespace).id


def agents_url(ns) -> str:
    return f"/namespaces/{ns.id}/agents"


# --- options ------------------------------------------------------------------------------------


def test_options_list_what_the_installation_reaches(api, ready_namespace, github):
    response = api.get(f"{agents_url(ready_namespace)}/repository-options")
    assert response.status == 200, response.body
    repositories = response.data["repositories"]
    assert [r["repositoryRef"] for r in repositories] == ["acme/docs", "acme/secret-plans", "acme/widgets"]
    assert repositories[2] == {"repositoryRef": "acme/widgets", "displayName": "Acme/Widgets",
                               "allowedProfiles": ["git-read", "git-write", "git-full"],
                               "description": "The widget factory"}
    assert "description" not in repositories[0]


def test_options_page_by_repository_ref(api, ready_namespace, github):
    url = f"{agents_url(ready_namespace)}/repository-options"
    first = api.get(f"{url}?limit=2").data
    assert [r["repositoryRef"] for r in first["repositories"]] == ["acme/docs", "acme/secret-plans"]
    rest = api.get(f"{url}?limit=2&cursor={first['nextCursor']}").data
    assert ([r["repositoryRef"] for r in rest["repositories"]], rest["nextCursor"]) == (["acme/widgets"], None)
    assert api.get(url).data["nextCursor"] is None
    for bad in ("not-a-cursor", "limit=0"):
        response = api.get(f"{url}?{bad if '=' in bad else 'cursor=' + bad}")
        assert (response.status, response.error_code) == (400, "INVALID_REQUEST"), bad


def test_options_without_a_driver_are_503_dependency_unavailable(api, ready_namespace, settings):
    settings.OCC_REPOSITORY_DRIVER = ""
    response = api.get(f"{agents_url(ready_namespace)}/repository-options")
    assert (response.status, response.error_code) == (503, "DEPENDENCY_UNAVAILABLE")
    assert "repositoryBindings" in response.body["error"]["message"]


@pytest.mark.parametrize("break_it", [
    pytest.param(lambda fake: fake.revoke(), id="revoked"),
    pytest.param(lambda fake: setattr(fake, "rate_limit", "429"), id="rate-limited"),
])
def test_options_when_github_cannot_answer_are_503_repository_options_unavailable(api, ready_namespace, github,
                                                                                   break_it):
    break_it(github)
    response = api.get(f"{agents_url(ready_namespace)}/repository-options")
    assert (response.status, response.error_code) == (503, "REPOSITORY_OPTIONS_UNAVAILABLE")
    assert "UPSTREAM" not in json.dumps(response.body)


def test_options_need_agent_create(ready_namespace, github):
    _, client = caller("read:agent", namespace=ready_namespace)
    response = client.get(f"{agents_url(ready_namespace)}/repository-options")
    assert response.status == 403
    assert github.requests == []  # nothing asked of GitHub for a caller who may not see it


def test_options_for_one_agent_need_agent_update(ready_namespace, github, cfg):
    agent = deployable_agent(ready_namespace)
    url = f"{agents_url(ready_namespace)}/{agent.id}/repository-options"
    _, reader = caller("read:agent", namespace=ready_namespace)
    assert reader.get(url).status == 403
    _, editor = caller("read:agent", "update:agent", namespace=ready_namespace)
    assert editor.get(url).status == 200


# --- create and update --------------------------------------------------------------------------


def test_create_stores_the_bindings_and_audits_them(api, ready_namespace, github, cfg):
    response = api.post(agents_url(ready_namespace), {"name": "coder", "configurationId": cfg,
                                                       "repositoryBindings": [READ, {**FULL, "repositoryRef":
                                                                                     "ACME/Docs.git"}]})
    assert response.status == 201, response.body
    assert response.data["repositoryBindings"] == [READ, FULL]
    agent = Agent.objects.get(id=response.data["id"])
    assert agent.repository_bindings == [READ, FULL]
    event = AuditEvent.objects.get(action="openclaw.agents.create", resource_id=agent.id)
    assert event.details["repositoryBindings"] == ["acme/widgets:git-read", "acme/docs:git-full"]


@pytest.mark.parametrize(("bindings", "code", "path"), [
    pytest.param([{"repositoryRef": "acme/elsewhere", "profile": "git-read"}], "INVALID_VALUE",
                 "/repositoryBindings/0/repositoryRef", id="unreachable"),
    pytest.param([READ, {**READ, "profile": "git-full"}], "INVALID_VALUE", "/repositoryBindings/1/repositoryRef",
                 id="repeated"),
    pytest.param([{"repositoryRef": "acme/widgets"}], "REQUIRED", "/repositoryBindings/0/profile",
                 id="no-profile"),
    pytest.param([{**READ, "profile": "admin"}], "INVALID_VALUE", "/repositoryBindings/0/profile", id="bad-profile"),
    pytest.param([{**READ, "repositoryRef": "https://github.com/acme/widgets"}], "INVALID_FORMAT",
                 "/repositoryBindings/0/repositoryRef", id="url-not-ref"),
    pytest.param([READ] * 17, "TOO_LONG", "/repositoryBindings", id="too-many"),
])
def test_refused_bindings_name_the_field_and_change_nothing(api, ready_namespace, github, cfg, bindings, code,
                                                            path):
    before = state()
    response = api.post(agents_url(ready_namespace), {"name": "coder", "configurationId": cfg,
                                                       "repositoryBindings": bindings})
    assert (response.status, response.error_code) == (400, "INVALID_REQUEST"), response.body
    assert {"code": code, "path": path} in response.body["error"]["details"]
    assert state() == before


def test_an_unreachable_repository_says_what_to_do(api, ready_namespace, github, cfg):
    response = api.post(agents_url(ready_namespace), {"name": "coder", "configurationId": cfg, "repositoryBindings": [
        {"repositoryRef": "acme/elsewhere", "profile": "git-read"}]})
    message = response.body["error"]["message"]
    assert message.startswith("repositoryBindings[0]: ")
    assert "repository options" in message


def test_create_with_bindings_and_no_driver_is_503(api, ready_namespace, settings, cfg):
    settings.OCC_REPOSITORY_DRIVER = ""
    before = state()
    response = api.post(agents_url(ready_namespace), {"name": "coder", "configurationId": cfg,
                                                       "repositoryBindings": [READ]})
    assert (response.status, response.error_code) == (503, "DEPENDENCY_UNAVAILABLE")
    assert state() == before


def test_create_with_no_bindings_needs_no_driver(api, ready_namespace, settings, cfg):
    settings.OCC_REPOSITORY_DRIVER = ""
    response = api.post(agents_url(ready_namespace), {"name": "coder", "configurationId": cfg,
                                                       "repositoryBindings": []})
    assert response.status == 201


def test_patch_omitted_keeps_empty_clears_a_list_replaces(api, ready_namespace, github, cfg):
    created = api.post(agents_url(ready_namespace), {"name": "coder", "configurationId": cfg,
                                                      "repositoryBindings": [READ]}).data
    url = f"{agents_url(ready_namespace)}/{created['id']}"
    kept = api.patch(url, {"configurationId": cfg})
    assert kept.data["repositoryBindings"] == [READ]
    replaced = api.patch(url, {"configurationId": cfg, "repositoryBindings": [FULL]})
    assert replaced.data["repositoryBindings"] == [FULL]
    event = AuditEvent.objects.filter(action="openclaw.agents.update", resource_id=created["id"]).latest("occurred_at")
    assert event.details["repositoryBindings"] == ["acme/docs:git-full"]
    cleared = api.patch(url, {"configurationId": cfg, "repositoryBindings": []})
    assert cleared.data["repositoryBindings"] == []
    refused = api.patch(url, {"configurationId": cfg, "repositoryBindings": [
        {"repositoryRef": "acme/gone", "profile": "git-read"}]})
    assert refused.status == 400
    assert Agent.objects.get(id=created["id"]).repository_bindings == []


# --- deploy -------------------------------------------------------------------------------------


def test_deploy_freezes_the_bindings_never_a_token(api, ready_namespace, github, fake_compute):
    agent = deployable_agent(ready_namespace, repository_bindings=[READ, FULL])
    response = api.post(f"{agents_url(ready_namespace)}/{agent.id}/deploy")
    assert response.status == 202, response.body
    assert response.data["repositoryCredentials"] == {"driver": {"id": "github_app"}, "bindings": [READ, FULL]}
    revision = AgentRevision.objects.get(id=response.data["id"])
    assert revision.spec.repository_credentials is not None
    assert revision.spec.repository_credentials.refs() == ["acme/widgets", "acme/docs"]
    stored = json.dumps(revision.snapshot)
    assert not any(token in stored for token in github.tokens)
    assert "ghs_" not in stored


def test_deploy_checks_the_bindings_again(api, ready_namespace, github, fake_compute):
    agent = deployable_agent(ready_namespace, repository_bindings=[READ])
    github.repositories = [repo for repo in github.repositories if repo["full_name"] != "Acme/Widgets"]
    before = AgentRevision.objects.count()
    response = api.post(f"{agents_url(ready_namespace)}/{agent.id}/deploy")
    assert (response.status, response.error_code) == (400, "INVALID_REQUEST")
    assert response.body["error"]["details"] == [{"code": "INVALID_VALUE",
                                                  "path": "/repositoryBindings/0/repositoryRef"}]
    assert AgentRevision.objects.count() == before


def test_deploy_without_bindings_records_none(api, ready_namespace, settings, fake_compute):
    settings.OCC_REPOSITORY_DRIVER = ""
    agent = deployable_agent(ready_namespace)
    response = api.post(f"{agents_url(ready_namespace)}/{agent.id}/deploy")
    assert response.status == 202
    assert "repositoryCredentials" not in response.data
