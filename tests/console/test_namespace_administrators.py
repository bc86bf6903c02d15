"""The console's Access page for a Namespace administrator (``administer:namespace``): they find
it, are offered only what they may grant, and use it (docs/access.md, "Managing a Namespace's
access")."""

from __future__ import annotations

from django.urls import reverse

from occ.iam.roles import DEVELOPER, NAMESPACE_ADMINISTRATOR
from occ.models import AccessBinding, Role
from tests.console.conftest import ConsoleClient
from tests.factories import AgentFactory, human, service_principal


def access_url(namespace) -> str:
    return f"/console/namespaces/{namespace.id}/access"


def test_a_namespace_administrator_manages_access_within_what_they_hold(ready_namespace):
    """The built-in Namespace administrator finds Access in the nav, is offered only the
    permissions they hold (no preset ones), makes a Role and grants it; Members stays an
    Installation administrator's."""
    lead = human("team-lead")
    AccessBinding.objects.create(principal=lead, namespace=ready_namespace,
                                 role=Role.objects.get(name=NAMESPACE_ADMINISTRATOR, namespace__isnull=True))
    client = ConsoleClient()
    client.sign_in(lead.user.username, "a-long-test-password")
    agents_page = client.get(f"/console/namespaces/{ready_namespace.id}/agents").content.decode()
    assert f'href="{access_url(ready_namespace)}"' in agents_page
    page = client.get(access_url(ready_namespace))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'value="deploy:agent"' in html
    assert 'value="read:preset"' not in html
    assert "Only the permissions you hold throughout this Namespace are offered" in html
    assert f'href="{reverse("console:members")}"' not in html
    made = client.hx_post(f"{access_url(ready_namespace)}/roles", {"name": "Deployers",
                                                                   "permissions": ["read:agent", "deploy:agent"]})
    assert made.status_code == 200
    role = Role.objects.get(namespace=ready_namespace, name="Deployers")
    refused = client.hx_post(f"{access_url(ready_namespace)}/roles", {"name": "Sneaky", "permissions": ["read:preset"]})
    assert not Role.objects.filter(name="Sneaky").exists()
    assert 'id="role_permissions-error"' in refused.content.decode()
    agent = AgentFactory(namespace=ready_namespace, name="helper")
    robot = service_principal("CI deploys", ready_namespace)
    client.hx_post(f"{access_url(ready_namespace)}/bindings", {
        "subject": robot.id, "role": role.id, "target": f"agent:{agent.id}"})
    assert AccessBinding.objects.filter(principal=robot, role=role, resource_id=agent.id).exists()


def test_a_developer_has_no_access_page_in_the_nav(ready_namespace):
    person = human("developer")
    AccessBinding.objects.create(principal=person, namespace=ready_namespace,
                                 role=Role.objects.get(name=DEVELOPER, namespace__isnull=True))
    client = ConsoleClient()
    client.sign_in(person.user.username, "a-long-test-password")
    agents_page = client.get(f"/console/namespaces/{ready_namespace.id}/agents").content.decode()
    assert f'href="{access_url(ready_namespace)}"' not in agents_page
    assert client.get(access_url(ready_namespace)).status_code == 403
