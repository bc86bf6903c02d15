"""Console pages offer only what the caller may do (issue 26): each control the server would
refuse is absent or disabled with its reason, and the server still refuses. The Secrets page
(Viewer, Namespace administrator), the Namespaces page, the Agent page, the Configuration page
and the Agents list / Create Agent entry points (Viewer, Agent user, Developer)."""

from __future__ import annotations

import html

import pytest

from occ.iam.roles import AGENT_USER, DEVELOPER, NAMESPACE_ADMINISTRATOR, VIEWER
from occ.models import AccessBinding, Agent, AgentRevision, Configuration, Preset, Role, Secret, SecretBinding
from tests.console.conftest import ConsoleClient, fragment_root
from tests.factories import AgentFactory, SecretFactory, human


def signed_in_as(role_name: str, namespace) -> ConsoleClient:
    person = human(f"person-{role_name.replace(' ', '-').lower()}")
    AccessBinding.objects.create(principal=person, namespace=namespace,
                                 role=Role.objects.get(name=role_name, namespace__isnull=True))
    client = ConsoleClient()
    client.sign_in(person.user.username, "a-long-test-password")
    return client


def test_a_viewer_sees_secrets_without_controls_it_cannot_use(ready_namespace):
    secret = SecretFactory(namespace=ready_namespace, name="viewer-visible")
    viewer = signed_in_as(VIEWER, ready_namespace)
    page = viewer.get(f"/console/namespaces/{ready_namespace.id}/secrets").content.decode()
    assert "viewer-visible" in page
    assert 'id="create-secret-form"' not in page
    assert 'id="secrets-read-only"' in page
    assert f'id="secret-delete-why-{secret.id}">You may not delete this Secret.' in page
    assert f'aria-describedby="secret-name-{secret.id} secret-delete-why-{secret.id}" title' in page
    assert f"/secrets/{secret.id}/delete" not in page
    # The server refuses all the same.
    refused = viewer.post(f"/console/namespaces/{ready_namespace.id}/secrets/{secret.id}/delete")
    assert refused.status_code == 403
    assert Secret.objects.filter(id=secret.id).exists()


def test_a_namespace_administrator_gets_every_control(ready_namespace):
    secret = SecretFactory(namespace=ready_namespace, name="admin-managed")
    page = signed_in_as(NAMESPACE_ADMINISTRATOR, ready_namespace).get(
        f"/console/namespaces/{ready_namespace.id}/secrets").content.decode()
    assert 'id="create-secret-form"' in page
    assert 'id="secrets-read-only"' not in page
    assert f"/secrets/{secret.id}/delete" in page
    assert f"/secrets/{secret.id}/value" in page
    assert "You may not" not in page


def test_delete_namespace_is_disabled_with_its_reason_unless_allowed(ready_namespace, console):
    viewer = signed_in_as(VIEWER, ready_namespace)
    page = viewer.get("/console/namespaces").content.decode()
    assert f'id="namespace-delete-why-{ready_namespace.id}">You may use this Namespace but not delete it.' in page
    assert f"/console/namespaces/{ready_namespace.id}/delete" not in page
    assert viewer.post(f"/console/namespaces/{ready_namespace.id}/delete").status_code == 403
    administrator = console.get("/console/namespaces").content.decode()  # delete:namespace Installation-wide
    assert f"/console/namespaces/{ready_namespace.id}/delete" in administrator
    assert "not delete it" not in administrator


def _page(client: ConsoleClient, path: str) -> str:
    response = client.get(path)
    assert response.status_code == 200, response.status_code
    return html.unescape(response.content.decode())


# Role -> the sentence under the Agent page's actions (None: every action enabled).
AGENT_HEADER_WHY = {
    VIEWER: "You can see this Agent but not deploy, stop, start or delete it.",
    AGENT_USER: "You can chat with this Agent but not deploy, stop, start or delete it.",
    DEVELOPER: "You can chat with this Agent but not delete it.",
}


@pytest.mark.parametrize("role_name", list(AGENT_HEADER_WHY))
def test_the_agent_page_disables_what_the_role_may_not_do(ready_namespace, role_name):
    agent = AgentFactory(namespace=ready_namespace, name="shared-helpdesk")
    client = signed_in_as(role_name, ready_namespace)
    base = f"/console/namespaces/{ready_namespace.id}/agents/{agent.id}"
    page = _page(client, base)
    why = AGENT_HEADER_WHY[role_name]
    assert 'id="agent-actions-why">' in page
    assert why in page
    deploy_button = page.split("Deploy new version")[0].rsplit("<button", 1)[1]
    assert (" disabled" in deploy_button) == (role_name != DEVELOPER)
    danger = page.split('class="danger"')[1].split(">")[0]  # the Delete button
    assert " disabled" in danger
    assert 'aria-describedby="agent-actions-why"' in danger
    # The server refuses all the same: no deletion, no revision.
    assert client.post(base + "/delete").status_code == 403
    assert Agent.objects.get(id=agent.id).status == "active"
    if role_name != DEVELOPER:
        assert client.post(base + "/deploy", {"idempotency_key": "console-refused"}).status_code == 403
        assert not AgentRevision.objects.filter(agent=agent).exists()


@pytest.mark.parametrize("role_name", [VIEWER, DEVELOPER, NAMESPACE_ADMINISTRATOR])
def test_save_as_preset_is_offered_only_to_who_may_create_presets(ready_namespace, console, role_name):
    agent = AgentFactory(namespace=ready_namespace)
    base = f"/console/namespaces/{ready_namespace.id}/agents/{agent.id}"
    client = signed_in_as(role_name, ready_namespace)
    page = _page(client, base)
    assert f"{base}/save-preset" not in page  # no built-in team Role creates Presets
    button = page.split('id="save-as-preset"')[1].split(">")[0]
    assert " disabled" in button
    assert 'aria-describedby="save-preset-why"' in button
    assert 'id="save-preset-why">' in page
    assert "You cannot save this Agent as a preset" in page
    refused = client.post(base + "/save-preset", {"name": "not-mine"})  # the form says it was refused
    assert "You do not have permission to do this." in html.unescape(refused.content.decode())
    assert not Preset.objects.filter(name="not-mine").exists()
    administrator = _page(console, base)  # the bootstrap administrator holds create:preset
    assert f"{base}/save-preset" in administrator
    assert "save-preset-why" not in administrator


def test_agent_tabs_explain_what_a_viewer_may_not_change(ready_namespace):
    agent = AgentFactory(namespace=ready_namespace)
    client = signed_in_as(VIEWER, ready_namespace)
    base = f"/console/namespaces/{ready_namespace.id}/agents/{agent.id}"
    configuration = _page(client, base + "?tab=configuration")
    assert '<p class="notice" id="configuration-save-why">You can read this Configuration but not change it.</p>' in (
        configuration)
    assert 'id="configuration-form"' not in configuration  # the document, read-only: no editor to save from
    # The smoke conversations beside it: saving them changes the Agent, which a Viewer may not.
    assert '<p class="notice" id="smoke-why">You can see this Agent but not change it.</p>' in configuration
    save_smoke = configuration.split("Save smoke conversations")[0].rsplit("<button", 1)[1]
    assert ' disabled aria-describedby="smoke-why"' in save_smoke
    assert client.post(base + "/smoke", {"rollback_on_failure": "on"}).status_code == 403
    chat = _page(client, base + "?tab=chat")
    assert "You can see this Agent but not chat with it." in chat
    assert "New conversation" not in chat
    refused = client.post(base + "/configuration", {"configuration_json": "{}", "generation": "1"})
    assert refused.status_code == 403
    assert Configuration.objects.get(id=agent.configuration_id).generation == 1


def test_a_developer_edits_the_configuration_and_chats_but_cannot_delete(ready_namespace):
    agent = AgentFactory(namespace=ready_namespace)
    client = signed_in_as(DEVELOPER, ready_namespace)
    base = f"/console/namespaces/{ready_namespace.id}/agents/{agent.id}"
    configuration_tab = _page(client, base + "?tab=configuration")
    assert "configuration-save-why" not in configuration_tab
    assert "smoke-why" not in configuration_tab
    assert "not chat with it" not in _page(client, base + "?tab=chat")
    detail = _page(client, f"/console/namespaces/{ready_namespace.id}/configurations/{agent.configuration_id}")
    assert '<p class="notice" id="configuration-why">You can read this Configuration but not delete it.</p>' in detail
    assert f"/configurations/{agent.configuration_id}/edit" in detail
    assert f"/configurations/{agent.configuration_id}/delete" not in detail
    refused = client.post(f"/console/namespaces/{ready_namespace.id}/configurations/{agent.configuration_id}/delete")
    assert refused.status_code == 403
    assert Configuration.objects.filter(id=agent.configuration_id).exists()


def test_a_viewer_sees_the_configuration_page_read_only(ready_namespace):
    agent = AgentFactory(namespace=ready_namespace)
    client = signed_in_as(VIEWER, ready_namespace)
    detail = _page(client, f"/console/namespaces/{ready_namespace.id}/configurations/{agent.configuration_id}")
    assert "You can read this Configuration but not change or delete it." in detail
    assert f"/configurations/{agent.configuration_id}/edit" not in detail
    assert f"/configurations/{agent.configuration_id}/secrets" not in detail
    assert detail.count('aria-describedby="configuration-why"') == 3  # Edit, Delete, Edit Secret bindings
    # The editors answer with the page that says why; saving is refused all the same.
    base = f"/console/namespaces/{ready_namespace.id}/configurations/{agent.configuration_id}"
    assert client.get(base + "/edit")["Location"] == base
    assert client.get(base + "/secrets")["Location"] == base
    assert client.post(base + "/edit", {"configuration_json": "{}", "generation": "1"}).status_code == 403
    assert Configuration.objects.get(id=agent.configuration_id).generation == 1


@pytest.mark.parametrize(("role_name", "may_create"), [(VIEWER, False), (AGENT_USER, False), (DEVELOPER, True)])
def test_create_agent_is_offered_only_to_who_may_create(ready_namespace, role_name, may_create):
    client = signed_in_as(role_name, ready_namespace)
    agents = _page(client, f"/console/namespaces/{ready_namespace.id}/agents")
    new = _page(client, f"/console/namespaces/{ready_namespace.id}/agents/new")
    chooser = _page(client, f"/console/namespaces/{ready_namespace.id}/agents/start")
    assert (f"/console/namespaces/{ready_namespace.id}/agents/start" in agents) == may_create
    assert ('id="preset-chooser"' in chooser) == may_create
    assert ('id="create-agent-refused"' in chooser) != may_create
    assert ('id="create-agent-why"' in agents) != may_create
    assert ('id="create-agent-form"' in new) == may_create
    assert ('id="create-agent-refused"' in new) != may_create
    if not may_create:
        assert "but not create one" in agents
        assert "but not create one" in new


def test_share_this_agent_from_its_page(ready_namespace, console):
    agent = AgentFactory(namespace=ready_namespace, name="helpdesk")
    other = AgentFactory(namespace=ready_namespace, name="not-shared")
    teammate = human("sam-teammate")  # no Role anywhere: the share alone brings them in
    base = f"/console/namespaces/{ready_namespace.id}/agents/{agent.id}"
    sharing = _page(console, base + "?tab=sharing")
    assert 'id="agent-share-form"' in sharing
    assert "sam-teammate" in sharing  # offered in the picker
    shared = console.post(base + "/shares", {"subject": teammate.id, "level": "chat"})
    assert shared.status_code == 302
    binding = AccessBinding.objects.get(principal=teammate, resource_kind="agent", resource_id=agent.id)
    assert binding.role.name == AGENT_USER
    listed = _page(console, base + "?tab=sharing")
    assert f'id="share-who-{binding.id}">sam-teammate' in listed
    assert "Shared directly" in listed
    assert "Installation Role" in listed  # the administrator, and why
    # The teammate now finds it in its Namespace and chats with it, and no more.
    client = ConsoleClient()
    client.sign_in("sam-teammate", "a-long-test-password")
    agents = _page(client, f"/console/namespaces/{ready_namespace.id}/agents")
    assert f"/agents/{agent.id}" in agents
    assert f"/agents/{other.id}" not in agents
    assert "You can chat with this Agent but not deploy, stop, start or delete it." in _page(client, base)
    chat = _page(client, base + "?tab=chat")
    assert "not chat with it" not in chat
    assert "You can chat with this Agent but not share it." in _page(client, base + "?tab=sharing")
    assert client.post(base + "/shares", {"subject": teammate.id, "level": "administer"}).status_code == 403
    # Revoked from the page: gone, and the teammate can no longer open it (nor its Namespace).
    assert console.post(f"{base}/shares/{binding.id}/revoke").status_code == 302
    assert not AccessBinding.objects.filter(id=binding.id).exists()
    assert client.get(base).status_code == 404


def test_a_can_deploy_share_says_what_else_a_deployment_needs_until_it_is_granted(ready_namespace, console):
    """"Can deploy" is deploy on the Agent; a deployment also reads its Configuration and uses
    its Secrets, each by its own grant (the anchor's rule), so the page says what is missing."""
    key = SecretFactory(namespace=ready_namespace, name="release-model-key")
    agent = AgentFactory(namespace=ready_namespace, name="release-bot", harness_auth_method="api_key",
                         harness_secret=key)
    SecretBinding.objects.create(configuration=agent.configuration, env_name="OPENAI_API_KEY", secret=key)
    teammate = human("dana-deployer")
    base = f"/console/namespaces/{ready_namespace.id}/agents/{agent.id}"
    assert console.post(base + "/shares", {"subject": teammate.id, "level": "deploy"}).status_code == 302
    client = ConsoleClient()
    client.sign_in("dana-deployer", "a-long-test-password")

    page = _page(client, base)
    why = (f"You can deploy this Agent, but a deployment also needs you to read its Configuration and use the "
           f"Secret {key.id}. An administrator can give you that access.")
    assert why in page, "named by id: the Secret itself is not readable to them"
    deploy_button = page.split("Deploy new version")[0].rsplit("<button", 1)[1]
    assert " disabled" in deploy_button
    assert client.post(base + "/deploy", {"idempotency_key": "console-short"}).status_code == 403, "refused too"
    assert not AgentRevision.objects.filter(agent=agent).exists()

    # Granted what a deployment reads (and the Agent its key): the same page offers Deploy, and it works.
    inputs = Role.objects.create(name="Deploy inputs", permissions=["read:configuration", "operate:secret"])
    for kind, resource_id in (("configuration", agent.configuration_id), ("secret", key.id)):
        AccessBinding.objects.create(principal=teammate, role=inputs, namespace=ready_namespace,
                                     resource_kind=kind, resource_id=resource_id)
    AccessBinding.objects.create(principal=agent.service_principal, role=inputs, namespace=ready_namespace,
                                 resource_kind="secret", resource_id=key.id)
    page = _page(client, base)
    assert "a deployment also needs you" not in page
    deploy_button = page.split("Deploy new version")[0].rsplit("<button", 1)[1]
    assert " disabled" not in deploy_button
    admitted = client.post(base + "/deploy", {"idempotency_key": "console-granted"})
    assert admitted.status_code == 302
    first = AgentRevision.objects.get(agent=agent)

    # Without the Secret again, an earlier version's Redeploy says the same, once a newer one exists.
    AccessBinding.objects.filter(principal=teammate, resource_kind="secret").delete()
    assert console.post(base + "/deploy", {"idempotency_key": "console-admin"}).status_code == 302
    snapshot = _page(client, base + f"?tab=revisions&revision={first.id}")
    assert (f'id="redeploy-why">You can deploy this Agent, but a deployment also needs you to use the Secret '
            f'{key.id}.') in snapshot
    assert client.post(f"{base}/revisions/{first.id}/redeploy").status_code == 403
    assert AgentRevision.objects.filter(agent=agent).count() == 2


def test_a_share_without_a_subject_says_so_on_the_field(ready_namespace, console):
    agent = AgentFactory(namespace=ready_namespace)
    base = f"/console/namespaces/{ready_namespace.id}/agents/{agent.id}"
    answer = console.hx_post(base + "/shares", {"subject": "", "level": "chat"})
    assert answer.status_code == 200
    text = html.unescape(answer.content.decode())
    assert fragment_root(text) == "section#agent-sharing"
    assert 'id="share-subject-error"' in text
    assert not AccessBinding.objects.filter(resource_kind="agent", resource_id=agent.id).exists()
