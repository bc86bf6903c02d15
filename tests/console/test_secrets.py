"""The Secrets page: list, create, replace a value, delete (refused while referenced).

Every response of every test here is checked for the canary value: a value is never
rendered back, not on success, not in a refused form, not in a dialog or a fragment.
"""

from __future__ import annotations

import json
import re
import secrets as stdlib_secrets

import pytest

from occ.commands.secrets import SecretCreate
from occ.models import AuditEvent, HarnessAuthMethod, Namespace, Secret
from occ.services.secrets import secret_create, secret_value_use
from occ.timestamps import rfc3339
from tests.console.conftest import ConsoleClient, current_nav, fragment_root, is_error_toast
from tests.factories import AgentFactory, grant, human

CANARY = "canary-" + stdlib_secrets.token_hex(12)


class CanaryCheckingClient(ConsoleClient):
    """Every response this client receives is checked for the canary."""

    def request(self, **request):  # type: ignore[override]
        response = super().request(**request)
        body = response.content.decode(errors="replace")
        random_part = CANARY.removeprefix("canary-")  # in every value these tests send
        assert random_part not in body, "a Secret value was rendered back"
        assert random_part not in json.dumps(dict(response.headers))
        return response


@pytest.fixture
def browser(bootstrap) -> CanaryCheckingClient:
    from tests.conftest import ADMIN_PASSWORD

    client = CanaryCheckingClient()
    client.sign_in("admin", ADMIN_PASSWORD)
    return client


def page(namespace: Namespace) -> str:
    return f"/console/namespaces/{namespace.id}/secrets"


def value_url(secret: Secret) -> str:
    return f"/console/namespaces/{secret.namespace_id}/secrets/{secret.id}/value"


def delete_url(secret: Secret) -> str:
    return f"/console/namespaces/{secret.namespace_id}/secrets/{secret.id}/delete"


def stored_value(secret: Secret) -> str:
    return secret_value_use(secret=Secret.objects.get(id=secret.id), consumer=lambda value: value)


def triggers(response) -> dict:
    return json.loads(response.headers.get("HX-Trigger", "{}"))


def password_inputs(html: str) -> list[str]:
    return re.findall(r'<input[^>]*type="password"[^>]*>', html, re.S)


def assert_value_inputs_empty(html: str) -> None:
    inputs = password_inputs(html)
    assert inputs, "no password input rendered"
    for element in inputs:
        assert " value=" not in element, element


@pytest.fixture
def stored(console_actor, ready_namespace) -> Secret:
    return secret_create(actor=console_actor, namespace_id=ready_namespace.id,
                         command=SecretCreate(name="OpenAI key", value=CANARY))


def test_page_lists_secrets_with_create_form_and_row_actions(browser, ready_namespace, stored):
    response = browser.get(page(ready_namespace))

    assert response.status_code == 200
    html = response.content.decode()
    assert re.search(r"<h1[^>]*>Secrets</h1>", html)
    assert current_nav(html) == "Secrets"
    assert '<label for="secret-name">Secret name</label>' in html
    assert '<label for="secret-value">Secret value</label>' in html
    assert re.search(r'<input id="secret-value" name="value" type="password"', html)
    assert ">Create Secret</span>" in html
    assert_value_inputs_empty(html)
    row = re.search(rf'<tr id="secret-row-{stored.id}">.*?</tr>', html, re.S).group(0)
    assert f'<span id="secret-name-{stored.id}">OpenAI key</span>' in row
    assert f'<code title="{stored.id}">{stored.id[:12]}</code>' in row  # the name first, then the short id
    assert f'datetime="{rfc3339(stored.created_at)}"' in row
    assert f'hx-get="{value_url(stored)}"' in row
    assert ">Replace value</button>" in row
    assert f'hx-get="{delete_url(stored)}"' in row
    assert ">Delete</button>" in row
    assert "No Secrets yet" not in html


def test_an_empty_namespace_says_no_secrets_yet(browser, ready_namespace):
    html = browser.get(page(ready_namespace)).content.decode()
    assert "No Secrets yet" in html
    assert '<div id="secrets-table"' in html


def test_create_stores_the_value_through_the_service(browser, console_actor, ready_namespace):
    response = browser.hx_post(page(ready_namespace), {"name": "Slack bot token", "value": CANARY})

    assert response.status_code == 200
    html = response.content.decode()
    assert fragment_root(html) == "div#secrets-panel"
    secret = Secret.objects.get(namespace=ready_namespace, name="Slack bot token")
    assert stored_value(secret) == CANARY
    assert AuditEvent.objects.filter(action="openclaw.secrets.create", resource_id=secret.id,
                                     actor_id=console_actor.id).exists()
    assert f'<tr id="secret-row-{secret.id}">' in html
    assert 'id="secret-name" name="name" value=""' in html  # a fresh form
    assert_value_inputs_empty(html)
    assert triggers(response)["occ:toast"]["messages"] == [{"level": "success",
                                                            "text": "Secret Slack bot token created."}]


def test_create_without_javascript_redirects_back_to_the_list(browser, ready_namespace):
    response = browser.post(page(ready_namespace), {"name": "plain", "value": CANARY})

    assert response.status_code == 302
    assert response.headers["Location"] == page(ready_namespace)
    listed = browser.get(page(ready_namespace)).content.decode()
    assert ">plain</span>" in listed
    assert "Secret plain created." in listed


@pytest.mark.parametrize(
    ("name", "value", "field", "message"),
    [
        pytest.param("", CANARY, "secret-name-error", "Name must not be empty.", id="empty-name"),
        pytest.param("x" * 300, CANARY, "secret-name-error", "Name must be at most", id="long-name"),
        pytest.param("ok name", "", "secret-value-error", "The value must not be empty.", id="empty-value"),
        pytest.param("ok name", CANARY + "\x00", "secret-value-error", "must not contain NUL", id="nul-value"),
        pytest.param("OpenAI key", CANARY, "secret-name-error", "A Secret with this name already exists",
                     id="duplicate-name"),
    ],
)
@pytest.mark.parametrize("htmx", [True, False], ids=["htmx", "plain"])
def test_a_refused_create_keeps_the_name_clears_the_value_and_creates_nothing(
        browser, ready_namespace, stored, name, value, field, message, htmx):
    before = set(Secret.objects.values_list("id", flat=True))

    response = (browser.hx_post if htmx else browser.post)(page(ready_namespace), {"name": name, "value": value})

    assert response.status_code == 200
    html = response.content.decode()
    if htmx:
        assert fragment_root(html) == "div#secrets-panel"
    errors = re.search(rf'<ul class="field-errors" id="{field}">(.*?)</ul>', html, re.S)
    assert errors
    assert message in errors.group(1)
    assert f'value="{name}"' in html
    assert_value_inputs_empty(html)
    assert "For your safety the value was cleared" in html
    assert set(Secret.objects.values_list("id", flat=True)) == before
    assert "HX-Trigger" not in response.headers


def test_create_in_a_namespace_not_ready_yet_is_explained(browser, bootstrap):
    provisioning = Namespace.objects.get(name="default")  # bootstrap leaves it provisioning

    response = browser.hx_post(page(provisioning), {"name": "early", "value": CANARY})

    assert response.status_code == 200
    html = response.content.decode()
    assert re.search(r'<div class="error-panel" role="alert"><p>The Namespace is provisioning; Secret values '
                     r"can be stored only once it is ready.</p>", html)
    assert not Secret.objects.filter(name="early").exists()


def test_replace_value_opens_a_dialog_with_an_empty_password_input(browser, stored):
    response = browser.hx_get(value_url(stored))

    assert response.status_code == 200
    html = response.content.decode()
    assert fragment_root(html) == "dialog#secret-value-dialog"
    assert "data-modal" in html
    assert '<label for="secret-new-value">New value</label>' in html
    assert_value_inputs_empty(html)
    assert f'hx-post="{value_url(stored)}"' in html

    full = browser.get(value_url(stored))  # without JavaScript: a page with the same form
    assert full.status_code == 200
    assert "<html" in full.content.decode()
    assert_value_inputs_empty(full.content.decode())


def test_replace_value_stores_the_new_value_in_place(browser, console_actor, stored):
    new_value = CANARY + "-rotated"

    response = browser.hx_post(value_url(stored), {"value": new_value})

    assert response.status_code == 200
    assert response.content == b""
    assert response.headers["HX-Reswap"] == "none"  # the row stays, with the button that opened the dialog
    fired = triggers(response)
    assert fired["occ:close-modal"] == {}
    assert fired["occ:toast"]["messages"] == [{"level": "success",
                                               "text": "The value of Secret OpenAI key was replaced."}]
    assert stored_value(stored) == new_value
    assert Secret.objects.filter(id=stored.id).count() == 1
    assert AuditEvent.objects.filter(action="openclaw.secrets.update", resource_id=stored.id,
                                     actor_id=console_actor.id).exists()


def test_replace_value_without_javascript(browser, ready_namespace, stored):
    response = browser.post(value_url(stored), {"value": "another-" + CANARY})
    assert response.status_code == 302
    assert response.headers["Location"] == page(ready_namespace)
    assert stored_value(stored) == "another-" + CANARY


@pytest.mark.parametrize("htmx", [True, False], ids=["htmx", "plain"])
def test_an_empty_new_value_is_refused_next_to_the_field(browser, stored, htmx):
    response = (browser.hx_post if htmx else browser.post)(value_url(stored), {"value": ""})

    assert response.status_code == 200
    html = response.content.decode()
    if htmx:
        assert fragment_root(html) == "form#secret-value-form"
    errors = re.search(r'<ul class="field-errors" id="secret-new-value-error">(.*?)</ul>', html, re.S)
    assert errors
    assert "The value must not be empty." in errors.group(1)
    assert_value_inputs_empty(html)
    assert stored_value(stored) == CANARY


def test_delete_asks_first_then_removes_the_secret(browser, console_actor, stored):
    dialog = browser.hx_get(delete_url(stored))
    assert fragment_root(dialog.content.decode()) == "dialog#secret-delete-dialog"
    assert "Delete Secret OpenAI key?" in dialog.content.decode()
    assert Secret.objects.filter(id=stored.id).exists()

    response = browser.hx_post(delete_url(stored))

    assert response.status_code == 200
    html = response.content.decode()
    assert fragment_root(html) == "div#secrets-table"
    assert response.headers["HX-Retarget"] == "#secrets-table"
    assert "No Secrets yet" in html
    fired = triggers(response)
    assert fired["occ:close-modal"] == {}
    assert fired["occ:toast"]["messages"] == [{"level": "success", "text": "Secret OpenAI key deleted."}]
    assert not Secret.objects.filter(id=stored.id).exists()
    assert AuditEvent.objects.filter(action="openclaw.secrets.delete", resource_id=stored.id,
                                     actor_id=console_actor.id).exists()


def test_delete_without_javascript(browser, ready_namespace, stored):
    page_html = browser.get(delete_url(stored)).content.decode()
    assert "<html" in page_html
    assert ">Delete Secret</button>" in page_html

    response = browser.post(delete_url(stored))

    assert response.status_code == 302
    assert not Secret.objects.filter(id=stored.id).exists()


def test_a_secret_still_referenced_is_not_deleted_and_the_dialog_says_by_what(browser, ready_namespace, stored):
    agent = AgentFactory(namespace=ready_namespace, name="uses-key",
                         harness_auth_method=HarnessAuthMethod.API_KEY, harness_secret=stored)

    response = browser.hx_post(delete_url(stored))

    assert response.status_code == 409  # swapped into the dialog all the same (base.html's responseHandling)
    html = response.content.decode()
    assert fragment_root(html) == "div#secret-delete-body"
    assert 'role="alert" data-error-code="RESOURCE_CONFLICT"' in html
    assert "The Secret is still in use, so it was not deleted." in html
    assert agent.id in html
    assert "HX-Retarget" not in response.headers
    assert Secret.objects.filter(id=stored.id).exists()
    assert stored_value(stored) == CANARY

    plain = browser.post(delete_url(stored))
    assert plain.status_code == 409
    assert agent.id in plain.content.decode()


def test_a_secret_of_another_namespace_is_not_found(browser, ready_namespace, stored):
    from tests.factories import NamespaceFactory

    other = NamespaceFactory(name="elsewhere")
    wrong = f"/console/namespaces/{other.id}/secrets/{stored.id}/value"

    response = browser.hx_post(wrong, {"value": "x-" + CANARY})

    assert response.status_code == 404
    assert is_error_toast(response)
    assert stored_value(stored) == CANARY


def test_a_reader_cannot_replace_a_value(bootstrap, ready_namespace, stored):
    person = human("secret-reader")
    grant(person, "read:namespace", "read:secret", namespace=ready_namespace)
    client = CanaryCheckingClient()
    client.force_login(person.user)
    assert ">OpenAI key</span>" in client.get(page(ready_namespace)).content.decode()

    response = client.hx_post(value_url(stored), {"value": "x-" + CANARY})

    assert response.status_code == 403
    assert is_error_toast(response)
    assert stored_value(stored) == CANARY
    assert AuditEvent.objects.filter(action="openclaw.authorization.secret.update", outcome="denied").exists()
