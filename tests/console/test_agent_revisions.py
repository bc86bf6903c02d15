"""The Agent page's Revisions tab: the list (paged, who deployed, which is active), the diff of a
revision against the one before, and Redeploy this revision (a rollback through the API's
``agent_redeploy``), each by htmx and as a whole page. Every response is checked for the
Secret canaries (``html``)."""

from __future__ import annotations

import re

import pytest

from console.pages import agent_revisions
from occ.commands.agents import AgentSecretAccess
from occ.commands.configurations import ConfigurationUpdate
from occ.commands.secrets import SecretCreate
from occ.models import AgentRevision, AuditEvent, Configuration
from occ.models.work import revision_reconcile_key
from occ.services.agent_secret_access import agent_secret_access_grant
from occ.services.configurations import configuration_update
from occ.services.secrets import secret_create
from tests.console.conftest import ConsoleClient, fragment_root
from tests.console.keyset import REFUSED_NOTE, TAMPERED
from tests.console.test_agent_detail import World, deploy, html, make_world, toasts, triggers, url
from tests.factories import grant, human
from tests.fakes.compute import run_work

OTHER_CANARY = "sk-canary-other-tool-77e1a0"


@pytest.fixture
def world(ready_namespace, console_actor, fake_compute) -> World:
    return make_world(ready_namespace, console_actor)


def redeploy_url(agent, revision) -> str:
    return f"{url(agent)}/revisions/{revision.id}/redeploy"


def second_settings(world, actor) -> str:
    """Change the model and point TOOL_TOKEN at another Secret: v2 differs from v1 in both."""
    other = secret_create(actor=actor, namespace_id=world.namespace.id,
                          command=SecretCreate(name="other-token", value=OTHER_CANARY))
    agent_secret_access_grant(actor=actor, namespace_id=world.namespace.id, agent_id=world.agent.id,
                              command=AgentSecretAccess(secret_ids=[other.id]))
    configuration = Configuration.objects.get(id=world.agent.configuration_id)
    values = {"agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "openai/gpt-5-mini"}}}}
    configuration_update(
        actor=actor, namespace_id=world.namespace.id, configuration_id=configuration.id,
        command=ConfigurationUpdate(values=values, secret_bindings={
            "TOOL_TOKEN": {"source": {"kind": "secret", "namespaceId": world.namespace.id, "id": other.id}}}),
        expected_generation=configuration.generation)
    return other.id


def two_revisions(world, actor) -> tuple[AgentRevision, AgentRevision, str]:
    first = deploy(world, actor)
    run_work(revision_reconcile_key(first.id))
    other = second_settings(world, actor)
    second = deploy(world, actor)
    run_work(revision_reconcile_key(second.id))
    return first, second, other


def no_canary(text: str) -> str:
    assert OTHER_CANARY not in text, "a Secret value reached the browser"
    return text


def test_list_shows_who_deployed_status_and_the_active_one(console, console_actor, world):
    first, second, _ = two_revisions(world, console_actor)
    text = html(console.hx_get(url(world.agent), {"tab": "revisions"}))
    assert fragment_root(text) == "div#agent-tabs"
    rows = re.findall(r"<tr>.*?</tr>|<tr aria-current.*?</tr>", text.split("<tbody>")[1], re.S)
    assert len(rows) == 2
    assert 'aria-label="View version v2"' in rows[0]
    assert "data-active-revision" in rows[0]
    assert 'aria-label="View version v1"' in rows[1]
    assert "data-active-revision" not in rows[1]
    for row, revision in zip(rows, (second, first), strict=True):
        assert f'title="{revision.id}"' in row, "short id with the full id"
        assert 'data-status="succeeded">Succeeded</span>' in row
        assert "<time " in row
        assert ">admin<" in row, "who deployed it, by name"


def test_diff_against_the_one_before_keyed_by_json_path(console, console_actor, world):
    first, second, other = two_revisions(world, console_actor)
    response = console.hx_get(url(world.agent), {"tab": "revisions", "revision": second.id})
    text = no_canary(html(response))
    assert fragment_root(text) == "div#agent-tabs"
    diff = text.split('id="revision-diff"')[1].split("</section>")[0]
    assert re.search(r"Changes from <a href=\"[^\"]*revision=" + first.id + r"\">v1</a>", diff)
    changed = re.search(r'<li class="diff-change diff-changed" data-op="changed">.*?'
                        r"/configuration/agents/defaults/model/primary</code>(.*?)</li>", diff, re.S)
    assert changed, "the model change, at its JSON pointer"
    assert "&quot;openai/gpt-5&quot;" in changed.group(1)
    assert "&quot;openai/gpt-5-mini&quot;" in changed.group(1)
    assert changed.group(1).index("gpt-5&quot;") < changed.group(1).index("→") < changed.group(1).index("mini")
    binding = re.search(r"/secretBindings/TOOL_TOKEN/source/id</code>(.*?)</li>", diff, re.S)
    assert binding, "the binding change, in its own section"
    assert 'data-section="secretBindings"' in diff
    assert binding.group(1).index("tool-token") < binding.group(1).index("→") < binding.group(1).index("other-token")
    assert f'title="{other}"' in binding.group(1)
    assert "Redeploy this revision" not in text, "v2 is active: nothing to redeploy"


def test_first_revision_lists_everything_as_added(console, console_actor, world):
    first = deploy(world, console_actor)
    text = html(console.hx_get(url(world.agent), {"tab": "revisions", "revision": first.id}))
    diff = text.split('id="revision-diff"')[1].split("</section>")[0]
    assert "First version: everything it deploys" in diff
    assert 'data-op="added"' in diff
    assert 'data-op="changed"' not in diff
    assert "/configuration" in diff


def test_diff_of_a_revision_whose_predecessor_is_unreadable_is_refused_and_audited(console, console_actor, world):
    _first, second, _ = two_revisions(world, console_actor)
    reader = human("reader")
    grant(reader, "read:namespace", "read:agent", "read:secret", namespace=world.namespace)
    grant(reader, "read:agent_revision", namespace=world.namespace, resource_kind="agent_revision",
          resource_id=second.id)
    client = ConsoleClient()
    client.sign_in("reader", "a-long-test-password")
    text = html(client.hx_get(url(world.agent), {"tab": "revisions", "revision": second.id}))
    assert "You cannot read version v1, the one before v2" in text
    assert "gpt-5-mini" not in text
    assert AuditEvent.objects.filter(kind="authorization_denial", actor_id=reader.id,
                                     details__permission="read:agent_revision").exists()


def pager_link(text: str, label: str) -> str | None:
    found = re.search(rf'<a class="button" rel="\w+" href="([^"]+)">{label}</a>', text)
    return found.group(1).replace("&amp;", "&") if found else None


def test_revisions_are_keyset_paged_newest_first(console, console_actor, world, monkeypatch):
    monkeypatch.setattr(agent_revisions, "PAGE_SIZE", 2)
    for _ in range(3):
        deploy(world, console_actor)
    first_page = html(console.hx_get(url(world.agent), {"tab": "revisions"}))
    assert "View version v3" in first_page
    assert "View version v2" in first_page
    assert "View version v1" not in first_page
    assert pager_link(first_page, "Newest") is None, "the first page has no Newest"
    older = pager_link(first_page, "Older")
    assert older is not None
    assert "tab=revisions" in older
    deploy(world, console_actor)  # v4, newer than every page the cursor leads to

    second_page = html(console.hx_get(older))

    assert fragment_root(second_page) == "div#agent-tabs"
    assert "View version v1" in second_page
    assert "View version v3" not in second_page
    assert "View version v4" not in second_page, "the cursor keeps its place"
    assert pager_link(second_page, "Older") is None
    newest = pager_link(second_page, "Newest")
    assert newest is not None
    assert "View version v4" in html(console.hx_get(newest))


@pytest.mark.parametrize("cursor", TAMPERED, ids=["not-base64", "no-id", "no-such-moment", "too-long"])
def test_a_revisions_cursor_that_is_not_ours_shows_the_newest_page_with_a_note(console, console_actor, world,
                                                                                monkeypatch, cursor):
    monkeypatch.setattr(agent_revisions, "PAGE_SIZE", 2)
    for _ in range(3):
        deploy(world, console_actor)

    for get in (console.get, console.hx_get):
        response = get(url(world.agent), {"tab": "revisions", "after": cursor})
        assert response.status_code == 200
        text = html(response)
        assert "View version v3" in text
        assert "View version v1" not in text
        assert REFUSED_NOTE in text
        assert pager_link(text, "Older") is not None


def test_redeploy_confirmation_is_a_dialog_that_focuses_cancel(console, console_actor, world):
    first, _, _ = two_revisions(world, console_actor)
    selected = html(console.hx_get(url(world.agent), {"tab": "revisions", "revision": first.id}))
    button = re.search(r'<button type="submit" hx-get="([^"]+)" hx-target="#modal-root"[^>]*>.*?'
                       r"Redeploy this revision</button>", selected, re.S)
    assert button
    assert button.group(1) == redeploy_url(world.agent, first)
    response = console.hx_get(redeploy_url(world.agent, first))
    text = no_canary(html(response))
    assert fragment_root(text) == "dialog#redeploy-agent-dialog"
    assert "Redeploy version v1 of Support bot?" in text
    assert '<button type="button" data-close-modal autofocus>Cancel</button>' in text
    assert f'hx-post="{redeploy_url(world.agent, first)}"' in text
    page = html(console.get(redeploy_url(world.agent, first)))
    assert 'id="redeploy-agent-page"' in page, "without script, the confirmation's own page"
    assert f"?tab=revisions&amp;revision={first.id}\" autofocus>Cancel</a>" in page
    assert 'name="idempotency_key" value="console-' in page


def test_redeploy_admits_a_revision_from_the_snapshot_audited_once_per_key(console, console_actor, world):
    first, _second, _ = two_revisions(world, console_actor)
    response = console.hx_post(redeploy_url(world.agent, first), {"idempotency_key": "console-redeploy-1"})
    assert response.status_code == 200
    text = no_canary(html(response))
    assert fragment_root(text) == "div#agent-header"
    events = triggers(response)
    assert "occ:deployment-changed" in events
    assert "occ:close-modal" in events
    assert toasts(response) == ["Version v3 admitted from v1. Status: Running."]
    third = AgentRevision.objects.get(agent=world.agent, number=3)
    assert third.snapshot["sourceRevisionId"] == first.id
    assert third.snapshot["configuration"] == first.snapshot["configuration"]
    again = console.hx_post(redeploy_url(world.agent, first), {"idempotency_key": "console-redeploy-1"})
    assert again.status_code == 200
    assert AgentRevision.objects.filter(agent=world.agent).count() == 3, "the same key admits one revision"
    audit = AuditEvent.objects.filter(action="openclaw.agents.redeploy", resource_id=world.agent.id)
    assert audit.count() == 1
    assert audit.get().details["sourceRevisionId"] == first.id
    # The deployment panel follows the new revision; once it succeeds it is the active one.
    panel = html(console.hx_get(url(world.agent, "agent-deployment")))
    assert "Most recent deployment · v3" in panel
    run_work(revision_reconcile_key(third.id))
    world.agent.refresh_from_db()
    assert world.agent.active_revision_id == third.id
    listing = html(console.hx_get(url(world.agent), {"tab": "revisions"}))
    row = re.search(r"<tr>.*?View version v3.*?</tr>", listing, re.S)
    assert row
    assert "data-active-revision" in row.group(0)
    assert "from v1" in row.group(0)


def test_redeploy_without_deploy_is_refused_audited_and_not_offered(console, console_actor, world):
    first, _, _ = two_revisions(world, console_actor)
    reader = human("reader")
    grant(reader, "read:namespace", "read:agent", "read:agent_revision", "read:configuration",
          namespace=world.namespace)
    client = ConsoleClient()
    client.sign_in("reader", "a-long-test-password")
    text = html(client.hx_get(url(world.agent), {"tab": "revisions", "revision": first.id}))
    assert 'id="revision-diff"' in text
    assert "You can see this Agent but not deploy it." in text  # Redeploy disabled with its reason
    assert "/redeploy\"" not in text
    response = client.hx_post(redeploy_url(world.agent, first), {"idempotency_key": "k"})
    assert response.status_code == 403
    assert fragment_root(html(response)) == "div#agent-header"
    assert AgentRevision.objects.filter(agent=world.agent).count() == 2
    denial = AuditEvent.objects.get(kind="authorization_denial", actor_id=reader.id)
    assert denial.details["permission"] == "deploy:agent"
    assert denial.resource_id == world.agent.id


@pytest.mark.parametrize("tab_params", [{"tab": "revisions"}, {"tab": "revisions", "page": "2"}])
def test_no_secret_value_on_the_revision_diff_page(console, console_actor, world, tab_params):
    """The leak canary over the diff page: every revision's diff, its snapshot and the dialog."""
    revisions = two_revisions(world, console_actor)[:2]
    no_canary(html(console.get(url(world.agent), tab_params)))
    for revision in revisions:
        for response in (console.get(url(world.agent), {"tab": "revisions", "revision": revision.id}),
                         console.hx_get(url(world.agent), {"tab": "revisions", "revision": revision.id}),
                         console.hx_get(redeploy_url(world.agent, revision))):
            text = no_canary(html(response))
            assert response.status_code == 200
    assert 'id="revision-diff"' in text or "redeploy-agent-dialog" in text


def test_after_a_rollback_the_configuration_tab_says_which_generation_runs_and_which_deploys_next(
        console, console_actor, world):
    """Issue 27, item 4: v3 redeploys v1 (generation 1) while the Configuration is at generation
    2; the Configuration tab says so, and each version lists the generation it ran."""
    first, _second, _ = two_revisions(world, console_actor)
    tab = html(console.hx_get(url(world.agent), {"tab": "configuration"}))
    assert 'id="configuration-deploy-notice"' not in tab, "v2 runs what the next deploy would"

    console.hx_post(redeploy_url(world.agent, first), {"idempotency_key": "console-rollback-1"})
    third = AgentRevision.objects.get(agent=world.agent, number=3)
    run_work(revision_reconcile_key(third.id))
    tab = html(console.hx_get(url(world.agent), {"tab": "configuration"}))
    notice = re.search(r'<p class="notice" id="configuration-deploy-notice".*?</p>', tab, re.S)
    assert notice, tab
    words = re.sub(r"<[^>]+>", "", notice.group(0))
    assert ("The running version, v3 (a redeploy of v1), ran generation 1 of this Configuration. "
            "The next Deploy new version uses generation 2 of this one") in words

    listing = html(console.hx_get(url(world.agent), {"tab": "revisions"}))
    generations = re.findall(r'aria-label="View version v(\d)".*?<td data-label="Configuration">generation (\d)',
                             listing, re.S)
    assert generations == [("3", "1"), ("2", "2"), ("1", "1")]
