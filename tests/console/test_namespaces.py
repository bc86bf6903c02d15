"""The Namespaces page: the list, create (form errors, HTMX panel), rows that poll while the
status is not terminal, and delete with its confirmation and the NAMESPACE_NOT_EMPTY refusal."""

from __future__ import annotations

import json
import re

import pytest
from django.utils import timezone

from occ.models import AuditEvent, ControllerWork, Namespace, NamespaceStatus, NamespaceTarget
from occ.timestamps import rfc3339
from tests.conftest import mark_namespace_ready
from tests.console.conftest import ConsoleClient, current_nav, fragment_root, is_error_toast
from tests.factories import AgentFactory, NamespaceFactory, grant, human

PAGE = "/console/namespaces"


def row_url(namespace: Namespace) -> str:
    return f"/console/namespaces/{namespace.id}/row"


def delete_url(namespace: Namespace) -> str:
    return f"/console/namespaces/{namespace.id}/delete"


def triggers(response) -> dict:
    return json.loads(response.headers.get("HX-Trigger", "{}"))


def test_page_lists_readable_namespaces_with_status_and_create_form(console, ready_namespace):
    failed = NamespaceFactory(name="broken-team", status=NamespaceStatus.FAILED)

    response = console.get(PAGE)

    assert response.status_code == 200
    html = response.content.decode()
    assert re.search(r"<h1[^>]*>Namespaces</h1>", html)
    # The selector is the same on every page: here it shows the Namespace the navigation leads to.
    assert f'<option value="{ready_namespace.id}" selected>default</option>' in html
    assert current_nav(html) == "Namespaces"
    assert '<label for="namespace-name">Namespace name</label>' in html
    assert ">Create Namespace</span>" in html
    default_row = re.search(rf'<tr id="namespace-row-{ready_namespace.id}".*?</tr>', html, re.S).group(0)
    assert f'href="/console/namespaces/{ready_namespace.id}/agents">default</a>' in default_row
    assert '<span class="pill pill-ok" data-status="ready" role="status">Ready</span>' in default_row
    assert "hx-trigger" not in default_row  # terminal: no polling
    assert f'datetime="{rfc3339(ready_namespace.created_at)}"' in default_row
    failed_row = re.search(rf'<tr id="namespace-row-{failed.id}".*?</tr>', html, re.S).group(0)
    assert '<span class="pill pill-danger" data-status="failed" role="status">Failed</span>' in failed_row
    assert f'hx-get="{delete_url(failed)}"' in failed_row


def test_create_namespace_through_the_service_and_poll_its_row(console, console_actor, bootstrap):
    response = console.hx_post(PAGE, {"name": "team-blue"})

    assert response.status_code == 200
    html = response.content.decode()
    assert fragment_root(html) == "div#namespaces-panel"
    created = Namespace.objects.get(name="team-blue")
    assert created.status == NamespaceStatus.PROVISIONING
    assert ControllerWork.objects.filter(namespace=created, namespace_target=NamespaceTarget.READY).exists()
    assert AuditEvent.objects.filter(action="openclaw.namespaces.create", resource_id=created.id,
                                     actor_id=console_actor.id).exists()
    row = re.search(rf'<tr id="namespace-row-{created.id}"[^>]*>', html).group(0)
    assert f'hx-get="{row_url(created)}"' in row
    assert 'hx-trigger="every 2s"' in row
    assert 'id="namespace-name" name="name" value=""' in html  # the form is fresh again
    assert triggers(response)["occ:toast"]["messages"] == [
        {"level": "success", "text": "Namespace team-blue created. Status: Provisioning."}]

    polling = console.hx_get(row_url(created))
    assert polling.status_code == 200
    assert fragment_root(polling.content.decode()) == f"tr#namespace-row-{created.id}"
    assert 'hx-trigger="every 2s"' in polling.content.decode()

    mark_namespace_ready(created)
    done = console.hx_get(row_url(created))
    assert done.status_code == 286  # htmx stops polling
    assert "hx-trigger" not in done.content.decode()
    assert 'data-status="ready"' in done.content.decode()


def test_failed_is_terminal_too(console, bootstrap):
    failed = NamespaceFactory(status=NamespaceStatus.FAILED)
    response = console.hx_get(row_url(failed))
    assert response.status_code == 286
    assert 'data-status="failed"' in response.content.decode()


def test_a_row_whose_namespace_is_gone_is_removed_and_stops_polling(console, bootstrap):
    gone = NamespaceFactory(status=NamespaceStatus.DELETING)
    Namespace.objects.filter(id=gone.id).update(deleted_at=timezone.now())

    response = console.hx_get(row_url(gone))

    assert response.status_code == 286
    assert response.content == b""


def test_create_without_javascript_redirects_with_a_message(console, bootstrap):
    response = console.post(PAGE, {"name": "team-green"})

    assert response.status_code == 302
    assert response.headers["Location"] == PAGE
    assert Namespace.objects.filter(name="team-green").exists()
    assert "Namespace team-green created" in console.get(PAGE).content.decode()


@pytest.mark.parametrize(
    ("name", "message"),
    [
        pytest.param("", "Name", id="empty"),
        pytest.param("x" * 300, "Name", id="too-long"),
        pytest.param("default", "A Namespace with this name already exists.", id="taken"),
    ],
)
@pytest.mark.parametrize("htmx", [True, False], ids=["htmx", "plain"])
def test_invalid_names_are_explained_next_to_the_field(console, bootstrap, name, message, htmx):
    before = Namespace.objects.count()

    response = (console.hx_post if htmx else console.post)(PAGE, {"name": name})

    assert response.status_code == 200
    html = response.content.decode()
    if htmx:
        assert fragment_root(html) == "div#namespaces-panel"
    errors = re.search(r'<ul class="field-errors" id="namespace-name-error">(.*?)</ul>', html, re.S)
    assert errors
    assert message in errors.group(1)
    assert 'aria-invalid="true"' in html
    assert f'value="{name}"' in html  # what was typed is kept
    assert Namespace.objects.count() == before
    assert "HX-Trigger" not in response.headers


def test_a_deleted_namespaces_name_stays_reserved(console, bootstrap):
    NamespaceFactory(name="old-team", deleted_at=timezone.now())
    html = console.hx_post(PAGE, {"name": "old-team"}).content.decode()
    assert "The name belongs to a deleted Namespace and stays reserved." in html


def test_a_person_without_create_permission_gets_no_form_and_a_403(bootstrap, ready_namespace):
    person = human("ns-reader")
    grant(person, "read:namespace")
    client = ConsoleClient()
    client.force_login(person.user)

    html = client.get(PAGE).content.decode()
    assert 'id="create-namespace-form"' not in html
    assert ">default</a>" in html

    refused = client.hx_post(PAGE, {"name": "sneaky"})
    assert refused.status_code == 403
    assert is_error_toast(refused)
    assert not Namespace.objects.filter(name="sneaky").exists()
    assert AuditEvent.objects.filter(action="openclaw.authorization.namespace.create", outcome="denied",
                                     actor_id=person.id).exists()


def test_delete_opens_a_confirmation_dialog(console, ready_namespace):
    response = console.hx_get(delete_url(ready_namespace))

    assert response.status_code == 200
    html = response.content.decode()
    assert fragment_root(html) == "dialog#namespace-delete-dialog"
    assert "data-modal" in html
    assert "Delete Namespace default?" in html
    assert f'hx-post="{delete_url(ready_namespace)}"' in html
    assert ">Cancel</button>" in html
    assert "data-close-modal" in html
    assert Namespace.objects.get(id=ready_namespace.id).status == NamespaceStatus.READY  # GET changes nothing


def test_delete_confirmation_works_without_javascript(console, ready_namespace):
    page = console.get(delete_url(ready_namespace))
    assert page.status_code == 200
    assert "<html" in page.content.decode()
    assert 'method="post"' in page.content.decode()

    response = console.post(delete_url(ready_namespace))

    assert response.status_code == 302
    assert response.headers["Location"] == PAGE
    assert Namespace.objects.get(id=ready_namespace.id).status == NamespaceStatus.DELETING


def test_delete_queues_teardown_and_swaps_the_row_into_polling(console, console_actor, bootstrap):
    namespace = NamespaceFactory(name="to-delete")
    mark_namespace_ready(namespace)

    response = console.hx_post(delete_url(namespace))

    assert response.status_code == 200
    html = response.content.decode()
    assert fragment_root(html) == f"tr#namespace-row-{namespace.id}"
    assert response.headers["HX-Retarget"] == f"#namespace-row-{namespace.id}"
    assert response.headers["HX-Reswap"] == "outerHTML"
    assert 'hx-trigger="every 2s"' in html
    assert 'data-status="deleting"' in html
    fired = triggers(response)
    assert fired["occ:close-modal"] == {}
    assert fired["occ:toast"]["messages"] == [
        {"level": "success", "text": "Delete requested for Namespace to-delete. Status: Deleting."}]
    namespace.refresh_from_db()
    assert namespace.status == NamespaceStatus.DELETING
    assert ControllerWork.objects.filter(namespace=namespace, namespace_target=NamespaceTarget.DELETED,
                                         actor_id=console_actor.id).exists()


def test_a_non_empty_namespace_is_not_deleted_and_the_dialog_says_what_remains(console, ready_namespace):
    agent = AgentFactory(namespace=ready_namespace, name="still-here")

    response = console.hx_post(delete_url(ready_namespace))

    assert response.status_code == 409  # swapped into the dialog all the same (base.html's responseHandling)
    html = response.content.decode()
    assert fragment_root(html) == "div#namespace-delete-body"
    assert 'role="alert" data-error-code="NAMESPACE_NOT_EMPTY"' in html
    assert "This Namespace is not empty, so it was not deleted." in html
    assert agent.id in html
    assert agent.configuration_id in html
    assert "Delete its Agents first" in html
    assert f'<a href="/console/namespaces/{ready_namespace.id}/configurations">Configurations</a>' in html
    assert "HX-Retarget" not in response.headers
    assert Namespace.objects.get(id=ready_namespace.id).status == NamespaceStatus.READY
    assert not ControllerWork.objects.filter(namespace=ready_namespace,
                                             namespace_target=NamespaceTarget.DELETED).exists()

    plain = console.post(delete_url(ready_namespace))
    assert plain.status_code == 409
    assert agent.id in plain.content.decode()


def test_deleting_an_unreadable_namespace_is_unavailable(bootstrap, ready_namespace):
    person = human("no-access")
    grant(person, "read:installation")
    client = ConsoleClient()
    client.force_login(person.user)
    assert ready_namespace.id not in client.get(PAGE).content.decode()  # not listed (and a CSRF cookie)

    response = client.hx_post(delete_url(ready_namespace))

    assert response.status_code == 404
    assert is_error_toast(response)
    assert "Namespace unavailable" in response.content.decode()
    assert Namespace.objects.get(id=ready_namespace.id).status == NamespaceStatus.READY
