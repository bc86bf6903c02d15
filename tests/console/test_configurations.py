"""The Configurations pages: list (search, paging, empty states), details, create, edit,
delete (confirmation, refused while Agents use it) and the editor's check endpoint.

Each htmx partial is asserted by its root id; the same URL without ``HX-Request`` is the page.
"""

from __future__ import annotations

import json
import re

import pytest

from console.presentation import short_id
from occ.models import AuditEvent, Configuration, SecretBinding
from tests.console.conftest import ConsoleClient, current_nav, fragment_root, is_error_toast
from tests.factories import AgentFactory, ConfigurationFactory, NamespaceFactory, SecretFactory, grant, human

VALID = {"agents": {"defaults": {"model": {"primary": "openai/gpt-5"}, "skipBootstrap": True}}}
# "bogus" (line 3) is not an OpenClaw key; "primary" (line 5) must be a string.
INVALID = '{\n  "agents": {"defaults": {}},\n  "bogus": true,\n  "tools": {\n    "github": {}\n  }\n}'


def base(namespace) -> str:
    return f"/console/namespaces/{namespace.id}/configurations"


def url(configuration: Configuration, action: str = "") -> str:
    return f"/console/namespaces/{configuration.namespace_id}/configurations/{configuration.id}" + (
        f"/{action}" if action else "")


def text(response) -> str:
    return response.content.decode()


def reader_client(namespace, *permissions) -> ConsoleClient:
    person = human("reader")
    grant(person, *permissions, namespace=namespace)
    return signed_in(person, namespace)


def signed_in(person, namespace) -> ConsoleClient:
    client = ConsoleClient()
    client.force_login(person.user)
    client.get(base(namespace))  # the CSRF cookie, as a browser has it from the page
    return client


@pytest.fixture
def used(ready_namespace):
    configuration = ConfigurationFactory(namespace=ready_namespace, values=VALID)
    AgentFactory(namespace=ready_namespace, name="Support bot", configuration=configuration)
    return configuration


# --- list ---------------------------------------------------------------------------------------

def test_the_list_is_a_page_with_the_configurations_and_their_agents(console, ready_namespace, used):
    response = console.get(base(ready_namespace))
    assert response.status_code == 200
    html = text(response)
    assert "<h1 id=\"configurations-heading\">Configurations</h1>" in html
    assert current_nav(html) == "Configurations"
    assert f'href="{base(ready_namespace)}" aria-current="page">' in html  # in the navigation
    assert ">Support bot</a>" in html
    assert "<code>openai/gpt-5</code>" in html
    assert "Create Configuration" in html
    # Its name is the link, then its short id (the full one in its title and copy button).
    row = html[html.index(f'id="configuration-row-{used.id}"'):]
    row = row[:row.index("</tr>")]
    assert f'<a class="ref-name" href="{url(used)}">{used.name}</a> <span class="id-chip">' in row
    assert f'<code title="{used.id}">' in row
    assert f'>{short_id(used.id)}</code>' in row
    assert f'data-copy="{used.id}"' in row
    assert f">{used.id}<" not in row
    assert "<time datetime=" in row
    assert "data-relative>just now</time>" in row


def test_an_empty_namespace_says_so_and_how_to_start(console, ready_namespace):
    html = text(console.get(base(ready_namespace)))
    assert "No Configurations yet" in html
    assert f'href="{base(ready_namespace)}/new"' in html


def test_search_answers_the_table_fragment(console, ready_namespace, used):
    other = ConfigurationFactory(namespace=ready_namespace, values={})
    response = console.hx_get(base(ready_namespace), {"q": "support"})
    assert response.status_code == 200
    html = text(response)
    assert fragment_root(html) == "div#configurations-table"
    assert used.id in html
    assert other.id not in html

    nothing = text(console.hx_get(base(ready_namespace), {"q": "no-such-thing"}))
    assert "No matching Configurations" in nothing
    assert "no-such-thing" in nothing


def test_a_reader_sees_no_create_button(ready_namespace, used):
    client = reader_client(ready_namespace, "read:namespace", "read:configuration")
    html = text(client.get(base(ready_namespace)))
    assert used.id in html
    assert "Create Configuration" not in html


# --- details ------------------------------------------------------------------------------------

def test_the_details_show_the_document_its_agents_and_its_secrets_by_name(console, ready_namespace, used):
    secret = SecretFactory(namespace=ready_namespace, name="Slack bot token")
    SecretBinding.objects.create(configuration=used, env_name="SLACK_BOT_TOKEN", secret=secret)
    response = console.get(url(used))
    assert response.status_code == 200
    html = text(response)
    assert ">Support bot</a>" in html
    assert "<code>SLACK_BOT_TOKEN</code>" in html
    assert ">Slack bot token</a>" in html
    assert "&quot;primary&quot;: &quot;openai/gpt-5&quot;" in html  # the document, escaped
    assert f'href="{url(used, "edit")}"' in html
    assert f'hx-get="{url(used, "delete")}"' in html

    fragment = console.hx_get(url(used))
    assert fragment_root(text(fragment)) == "section#configuration-detail"


def test_the_details_of_a_configuration_of_another_namespace_are_unavailable(console, ready_namespace):
    elsewhere = ConfigurationFactory(namespace=NamespaceFactory())
    response = console.get(f"{base(ready_namespace)}/{elsewhere.id}")
    assert response.status_code == 404


# --- create -------------------------------------------------------------------------------------

def test_the_create_form_starts_from_a_minimal_document(console, ready_namespace):
    html = text(console.get(f"{base(ready_namespace)}/new"))
    assert 'data-json-editor data-check-url="' + f'{base(ready_namespace)}/check"' in html
    assert "&quot;skipBootstrap&quot;: true" in html


def test_create_saves_audits_and_goes_to_the_details(console, ready_namespace):
    response = console.post(f"{base(ready_namespace)}/new", {"configuration_json": json.dumps(VALID)})
    created = Configuration.objects.get(namespace=ready_namespace)
    assert response.status_code == 302
    assert response["Location"] == url(created)
    assert created.values == VALID
    assert AuditEvent.objects.filter(action="openclaw.configurations.create", resource_id=created.id).exists()
    assert created.name == f"configuration {created.id[4:12]}", "a blank name: OCC names it"
    assert f"Configuration {created.name} created." in text(console.get(url(created)))


def test_create_takes_a_name_and_a_taken_one_is_refused_at_the_name_field(console, ready_namespace, used):
    response = console.post(f"{base(ready_namespace)}/new",
                            {"name": "Support", "configuration_json": json.dumps(VALID)})
    created = Configuration.objects.get(namespace=ready_namespace, name="Support")
    assert response["Location"] == url(created)
    details = text(console.get(url(created)))
    assert ('<h1 id="configuration-heading">Configuration <span class="ref"><span class="ref-name">Support</span>'
            in details)

    refused = console.hx_post(f"{base(ready_namespace)}/new",
                              {"name": used.name, "configuration_json": json.dumps(VALID)})
    html = text(refused)
    assert refused.status_code == 200
    assert fragment_root(html) == "form#configuration-form"
    assert 'id="configuration-name-error"' in html
    assert "A Configuration of that name exists" in html
    assert Configuration.objects.filter(namespace=ready_namespace).count() == 2


def test_create_over_htmx_redirects_the_browser(console, ready_namespace):
    response = console.hx_post(f"{base(ready_namespace)}/new", {"configuration_json": json.dumps(VALID)})
    created = Configuration.objects.get(namespace=ready_namespace)
    assert response.status_code == 200
    assert response["HX-Redirect"] == url(created)


def test_a_refused_document_lists_each_problem_at_its_line_and_column(console, ready_namespace):
    response = console.hx_post(f"{base(ready_namespace)}/new", {"configuration_json": INVALID})
    assert response.status_code == 200
    html = text(response)
    assert fragment_root(html) == "form#configuration-form"
    assert 'Line 3, column 3: OpenClaw refuses bogus: Unrecognized key: &quot;bogus&quot;' in html
    assert "Line 5, column 5: OpenClaw refuses tools.github.profileId" in html
    assert 'id="error-summary"' in html
    assert 'aria-invalid="true"' in html
    assert INVALID.replace('"', "&quot;") in html  # what was typed stays
    assert not Configuration.objects.filter(namespace=ready_namespace).exists()


def test_a_syntax_error_without_javascript_says_where(console, ready_namespace):
    response = console.post(f"{base(ready_namespace)}/new", {"configuration_json": '{\r\n  "a": 1\r\n  "b": 2\r\n}'})
    assert response.status_code == 200
    html = text(response)
    assert "<h1 id=\"configuration-form-heading\">Create Configuration</h1>" in html  # the whole page
    assert "Enter a valid JSON object. Line 3, column 3: Not valid JSON: Expecting &#x27;,&#x27; delimiter." in html


def test_create_without_the_right_is_refused_and_audited(ready_namespace):
    client = reader_client(ready_namespace, "read:namespace", "read:configuration")
    response = client.hx_post(f"{base(ready_namespace)}/new", {"configuration_json": json.dumps(VALID)})
    assert response.status_code == 403
    assert is_error_toast(response)
    assert not Configuration.objects.filter(namespace=ready_namespace).exists()
    assert AuditEvent.objects.filter(outcome="denied", action__contains="configuration").exists()


# --- edit ---------------------------------------------------------------------------------------

def test_edit_replaces_the_document_at_the_generation_it_was_opened_at(console, used):
    page = text(console.get(url(used, "edit")))
    assert 'name="generation" value="1"' in page
    assert 'name="name" maxlength="200"' in page
    assert f'value="{used.name}"' in page
    assert f'data-check-url="{url(used, "check")}"' in page
    changed = {"agents": {"defaults": {"skipBootstrap": False}}}
    response = console.post(url(used, "edit"), {"configuration_json": json.dumps(changed), "generation": "1"})
    assert response.status_code == 302
    assert response["Location"] == url(used)
    used.refresh_from_db()
    assert (used.values, used.generation) == (changed, 2)


def test_a_stale_edit_is_refused_and_says_to_reload(console, used):
    console.post(url(used, "edit"), {"configuration_json": "{}", "generation": "1"})
    response = console.hx_post(url(used, "edit"), {"configuration_json": json.dumps(VALID), "generation": "1"})
    assert response.status_code == 409
    html = text(response)
    assert fragment_root(html) == "form#configuration-form"
    assert "Someone saved this Configuration after you opened it." in html
    assert f'href="{url(used, "edit")}">Reload the Configuration' in html
    used.refresh_from_db()
    assert (used.values, used.generation) == ({}, 2)


def test_a_refused_edit_places_its_problems(console, used):
    response = console.hx_post(url(used, "edit"), {"configuration_json": INVALID, "generation": "1"})
    assert response.status_code == 200
    assert "Line 3, column 3: OpenClaw refuses bogus" in text(response)
    used.refresh_from_db()
    assert used.generation == 1


# --- delete -------------------------------------------------------------------------------------

def test_the_confirmation_is_a_dialog_with_cancel_focused(console, used):
    response = console.hx_get(url(used, "delete"))
    html = text(response)
    assert fragment_root(html) == "dialog#configuration-delete-dialog"
    assert re.search(r"<button type=\"button\" data-close-modal autofocus>Cancel</button>", html)
    page = text(console.get(url(used, "delete")))  # without JavaScript: a page
    assert re.search(r'<a class="button" href="[^"]+" autofocus>Cancel</a>', page)


def test_a_delete_refused_while_agents_use_it_says_so_in_plain_words(console, ready_namespace, used):
    agent = used.agents.get()
    response = console.hx_post(url(used, "delete"))
    assert response.status_code == 409
    html = text(response)
    assert fragment_root(html) == "div#configuration-delete-body"
    assert "This Configuration is still in use, so it was not deleted." in html
    agent_link = f'<a href="/console/namespaces/{ready_namespace.id}/agents/{agent.id}">Support bot</a>'
    assert f"An Agent uses it: {agent_link}." in html
    assert "Point those Agents at another Configuration or delete them" in html
    assert Configuration.objects.filter(id=used.id).exists()


def test_delete_removes_it_and_returns_to_the_list(console, ready_namespace):
    unused = ConfigurationFactory(namespace=ready_namespace, values={})
    response = console.hx_post(url(unused, "delete"))
    assert response.status_code == 200
    assert response["HX-Redirect"] == base(ready_namespace)
    assert not Configuration.objects.filter(id=unused.id).exists()
    assert AuditEvent.objects.filter(action="openclaw.configurations.delete", resource_id=unused.id).exists()
    plain = ConfigurationFactory(namespace=ready_namespace, values={})
    assert console.post(url(plain, "delete"))["Location"] == base(ready_namespace)


# --- the editor's check -------------------------------------------------------------------------

def check(client, namespace, body: str, configuration: Configuration | None = None):
    target = url(configuration, "check") if configuration else f"{base(namespace)}/check"
    return client.post(target, {"configuration_json": body})


@pytest.mark.parametrize(("body", "expected"), [
    pytest.param(json.dumps(VALID), [], id="valid"),
    pytest.param('{\n  "a": 1,\n}', [("", "INVALID_JSON", 3, 1)], id="syntax"),
    pytest.param('[1]', [("", "INVALID_TYPE", 1, 1)], id="not-an-object"),
    pytest.param('{"a": NaN}', [("", "INVALID_JSON", 1, 7)], id="nan"),
    pytest.param('{\n  "agents": {"defaults": {"model": {"primary": 5}}}\n}',
                 [("/agents/defaults/model/primary", "INVALID_TYPE", 2, 48)], id="type"),
    pytest.param(INVALID, [("/bogus", "UNKNOWN_FIELD", 3, 3), ("/tools/github/profileId", "REQUIRED", 5, 5)],
                 id="unknown-key-and-required"),
    pytest.param('{"gateway": {\n "port": 1}}', [("/gateway/port", "INVALID_VALUE", 2, 10)], id="owned-by-occ"),
    pytest.param('{"models": {"providers": {"x": {"baseUrl": "ftp://x", "api": "ollama", "models": []}}}}',
                 [("/models/providers/x/baseUrl", "INVALID_FORMAT", 1, 44)], id="occ-rule"),
    pytest.param('{"__proto__": {}}', [("/__proto__", "INVALID_VALUE", 1, 2)], id="prototype-key"),
    pytest.param("x" * 500_001, [("", "TOO_LONG", 1, 1)], id="too-long"),
])
def test_the_check_places_each_kind_of_problem(console, ready_namespace, body, expected):
    response = check(console, ready_namespace, body)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    problems = response.json()["problems"]
    assert [(p["pointer"], p["code"], p["line"], p["column"]) for p in problems] == expected
    for problem in problems:
        assert problem["message"]
        assert (problem["endLine"], problem["endColumn"]) >= (problem["line"], problem["column"])


def test_the_check_says_what_saving_would_refuse(console, ready_namespace):
    """Same rules as the server: what the check passes saves, what it refuses is refused."""
    bad = '{"agents": {"defaults": {"thinkingDefault": "loud"}}}'
    assert check(console, ready_namespace, bad).json()["problems"][0]["pointer"] == "/agents/defaults/thinkingDefault"
    assert "Line 1, column 45" in text(console.post(f"{base(ready_namespace)}/new", {"configuration_json": bad}))
    assert not Configuration.objects.exists()


def test_the_check_of_an_existing_configuration_takes_the_right_to_update_it(ready_namespace, used):
    client = reader_client(ready_namespace, "read:namespace", "read:configuration")
    response = check(client, ready_namespace, "{}", used)
    assert response.status_code == 403
    assert AuditEvent.objects.filter(outcome="denied", action="openclaw.authorization.configuration.update").exists()
    assert check(client, ready_namespace, "{}").status_code == 403  # nor create one

    editor = human("editor")
    grant(editor, "read:namespace", namespace=ready_namespace)
    grant(editor, "update:configuration", namespace=ready_namespace, resource_kind="configuration",
          resource_id=used.id)
    editor = signed_in(editor, ready_namespace)
    assert check(editor, ready_namespace, '{"bogus": 1}', used).json()["problems"][0]["code"] == "UNKNOWN_FIELD"


def test_the_check_of_another_namespaces_configuration_is_unavailable(console, ready_namespace):
    elsewhere = ConfigurationFactory(namespace=NamespaceFactory())
    response = console.post(f"{base(ready_namespace)}/{elsewhere.id}/check", {"configuration_json": "{}"})
    assert response.status_code == 404


def test_the_check_is_post_only_and_signed_in_only(console, ready_namespace):
    assert console.get(f"{base(ready_namespace)}/check").status_code == 405
    anonymous = ConsoleClient()
    response = anonymous.post(f"{base(ready_namespace)}/check", {"configuration_json": "{}"})
    assert response.status_code == 302
    assert "/console/sign-in" in response["Location"]


# --- Secret bindings ----------------------------------------------------------------------------

def rows(*pairs: tuple[str, str], delete: tuple[int, ...] = (), generation: int = 1, initial: int = 0) -> dict:
    """The bindings form as posted: each (variable, Secret id) a row, plus the management form."""
    data = {"generation": str(generation), "bindings-TOTAL_FORMS": str(len(pairs)),
            "bindings-INITIAL_FORMS": str(initial), "bindings-MIN_NUM_FORMS": "0", "bindings-MAX_NUM_FORMS": "64"}
    for index, (name, secret_id) in enumerate(pairs):
        data[f"bindings-{index}-env_name"] = name
        data[f"bindings-{index}-secret"] = secret_id
    for index in delete:
        data[f"bindings-{index}-DELETE"] = "on"
    return data


def bound(configuration: Configuration) -> dict[str, str]:
    return dict(SecretBinding.objects.filter(configuration=configuration).values_list("env_name", "secret_id"))


@pytest.fixture
def secrets(ready_namespace):
    return {"bot": SecretFactory(namespace=ready_namespace, name="Slack bot token"),
            "app": SecretFactory(namespace=ready_namespace, name="Slack app token")}


def test_the_bindings_form_shows_each_binding_by_name_and_an_empty_row(console, used, secrets):
    SecretBinding.objects.create(configuration=used, env_name="SLACK_BOT_TOKEN", secret=secrets["bot"])
    details = text(console.get(url(used)))
    assert f'href="{url(used, "secrets")}">Edit Secret bindings</a>' in details

    page = console.get(url(used, "secrets"))
    html = text(page)
    assert page.status_code == 200
    assert "<h1 id=\"configuration-bindings-heading\">Secrets of Configuration" in html  # the whole page
    assert 'name="bindings-0-env_name" id="id_bindings-0-env_name" value="SLACK_BOT_TOKEN"' in html
    assert f'<option value="{secrets["bot"].id}" selected>Slack bot token</option>' in html
    assert f'<option value="{secrets["app"].id}">Slack app token</option>' in html
    assert 'name="bindings-1-env_name" id="id_bindings-1-env_name" value=""' in html  # the row to add one
    assert 'name="bindings-0-DELETE"' in html
    assert 'name="bindings-1-DELETE"' not in html  # nothing to remove on the empty row
    assert 'name="generation" value="1"' in html

    fragment = console.hx_get(url(used, "secrets"))
    assert fragment_root(text(fragment)) == "form#configuration-bindings-form"


def test_saving_bindings_replaces_them_through_the_service_and_audits_it(console, used, secrets):
    SecretBinding.objects.create(configuration=used, env_name="SLACK_BOT_TOKEN", secret=secrets["bot"])
    response = console.hx_post(url(used, "secrets"), rows(
        ("SLACK_BOT_TOKEN", secrets["bot"].id), ("SLACK_APP_TOKEN", secrets["app"].id), ("", ""), initial=1))

    assert response.headers["HX-Redirect"] == url(used)
    assert bound(used) == {"SLACK_BOT_TOKEN": secrets["bot"].id, "SLACK_APP_TOKEN": secrets["app"].id}
    used.refresh_from_db()
    assert used.generation == 2
    assert used.values == VALID  # the document is kept
    event = AuditEvent.objects.get(action="openclaw.configurations.update", resource_id=used.id)
    assert event.details["secretBindingsChanged"] is True
    assert event.details["secretBindings"] == {"SLACK_APP_TOKEN": secrets["app"].id,
                                               "SLACK_BOT_TOKEN": secrets["bot"].id}
    assert "Secret bindings saved (generation 2)" in text(console.get(url(used)))


def test_remove_drops_a_binding(console, used, secrets):
    SecretBinding.objects.create(configuration=used, env_name="SLACK_BOT_TOKEN", secret=secrets["bot"])
    response = console.post(url(used, "secrets"), rows(("SLACK_BOT_TOKEN", secrets["bot"].id), delete=(0,), initial=1))
    assert response.status_code == 302
    assert bound(used) == {}


@pytest.mark.parametrize(("posted", "message"), [
    pytest.param([("slack token", "bot")], "A binding name must be an environment variable name", id="bad-name"),
    pytest.param([("OPENCLAW_GATEWAY_TOKEN", "bot")], "OPENCLAW_GATEWAY_TOKEN", id="reserved-name"),
    pytest.param([("TOKEN", "bot"), ("TOKEN", "app")], "TOKEN is listed twice. Each variable receives one Secret.",
                 id="twice"),
    pytest.param([("TOKEN", "")], "Choose the Secret that TOKEN receives.", id="no-secret"),
    pytest.param([("", "bot")], "Name the environment variable that receives this Secret.", id="no-name"),
    pytest.param([("TOKEN", "elsewhere")], "That Secret is not one of this Namespace&#x27;s any more.",
                 id="secret-of-another-namespace"),
])
def test_a_refused_row_says_why_in_plain_words_and_nothing_changes(console, used, secrets, posted, message):
    secrets["elsewhere"] = SecretFactory(namespace=NamespaceFactory(), name="Elsewhere")
    response = console.hx_post(url(used, "secrets"), rows(*[(name, secrets[s].id if s else "") for name, s in posted]))
    html = text(response)
    assert response.status_code == 200
    assert fragment_root(html) == "form#configuration-bindings-form"
    assert message in html
    assert 'id="error-summary"' in html
    assert 'aria-invalid="true"' in html
    assert bound(used) == {}
    assert not AuditEvent.objects.filter(action="openclaw.configurations.update").exists()


def test_bindings_saved_against_a_stale_generation_are_refused(console, used, secrets):
    used.generation = 2
    used.save(update_fields=["generation"])
    response = console.hx_post(url(used, "secrets"), rows(("TOKEN", secrets["bot"].id), generation=1))
    assert response.status_code == 200
    assert "Someone saved this Configuration after you opened it." in text(response)
    assert bound(used) == {}


def test_add_a_variable_shows_one_more_row_and_saves_nothing(console, used, secrets):
    SecretBinding.objects.create(configuration=used, env_name="TOKEN", secret=secrets["bot"])
    response = console.hx_post(url(used, "secrets"), {**rows(("TOKEN", secrets["bot"].id), initial=1), "add_row": "1"})
    html = text(response)
    assert 'name="bindings-0-DELETE"' in html  # the saved row can still be removed
    assert 'name="bindings-1-DELETE"' not in html
    assert fragment_root(html) == "form#configuration-bindings-form"
    assert 'name="bindings-0-env_name" id="id_bindings-0-env_name" value="TOKEN"' in html  # kept as typed
    assert 'name="bindings-1-env_name"' in html
    assert 'name="bindings-TOTAL_FORMS" value="2"' in html
    assert 'id="error-summary"' not in html
    assert bound(used) == {"TOKEN": secrets["bot"].id}


def test_bindings_need_the_right_to_update_the_configuration(ready_namespace, used, secrets):
    client = reader_client(ready_namespace, "read:namespace", "read:configuration", "read:secret")
    page = text(client.get(url(used)))
    assert url(used, "secrets") not in page  # Edit Secret bindings disabled, with its reason
    assert "You can read this Configuration but not change or delete it." in page
    response = client.hx_post(url(used, "secrets"), rows(("TOKEN", secrets["bot"].id)))
    assert response.status_code == 403
    assert is_error_toast(response)
    assert bound(used) == {}
