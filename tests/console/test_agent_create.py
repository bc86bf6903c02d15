"""The Create Agent page: every fragment with and without HX-Request, what each request writes
(Secrets, Configurations, Agents, provisioning work, grants) and what it never shows (a key).

No worker runs: admission only queues work; later provisioning states are set on the rows as
the job would. Model discovery goes to the loopback fake providers over real HTTP.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Iterator
from datetime import timedelta
from html import unescape
from typing import Any

import pytest
from django.db import DatabaseError
from django.urls import reverse
from django.utils import timezone

from console.forms import agent_choices as ac
from console.forms.agent_create import AgentForm
from console.views import agent_create
from occ.commands.provisioning import REQUEST_ID
from occ.commands.secrets import SecretCreate
from occ.errors import Conflict, DependencyUnavailable, UnknownOutcome
from occ.models import (
    AccessBinding,
    Agent,
    AgentProvisioningWork,
    AuditEvent,
    Configuration,
    ControllerWork,
    ProvisioningStatus,
    Secret,
    WorkState,
)
from occ.selectors.secrets import model_key_secret_name
from occ.services import model_key_provisioning
from occ.services.secrets import secret_create
from tests.console.conftest import fragment_root
from tests.factories import AgentFactory, ConfigurationFactory
from tests.fakes.fake_model_providers import OPENAI_KEY, FakeModelProviders, serving
from tests.fakes.fake_slack import FakeSlack, _fake_slack_server, fake_slack  # noqa: F401 (fixtures)

CANARY = f"sk-canary-{uuid.uuid4().hex}"
TEAM_SECRET_VALUE = f"team-token-{uuid.uuid4().hex}"


# --- helpers ----------------------------------------------------------------------------------------


@pytest.fixture
def ns(ready_namespace):
    return ready_namespace


@pytest.fixture
def fake(settings) -> Iterator[FakeModelProviders]:
    yield from serving(settings)


def url(name: str, ns, *args: str) -> str:
    return reverse(f"console:{name}", args=[ns.id, *args])


def text(response) -> str:
    return response.content.decode()


def no_secret_values(response, *values: str) -> None:
    body = text(response)
    for value in (CANARY, OPENAI_KEY, TEAM_SECRET_VALUE, *values):
        assert value not in body, "a secret value reached the HTML"


def hidden(html: str, name: str) -> str:
    match = re.search(rf'<input type="hidden" name="{re.escape(name)}" value="([^"]*)"', html)
    assert match, f"no hidden input {name}"
    return unescape(match.group(1))


def textarea(html: str, element_id: str) -> str:
    match = re.search(rf'<textarea id="{element_id}"[^>]*>(.*?)</textarea>', html, re.S)
    assert match, f"no textarea #{element_id}"
    return unescape(match.group(1))


def triggers(response) -> dict[str, Any]:
    return json.loads(response.headers.get("HX-Trigger", "{}"))


def page_form(console, ns) -> dict[str, str]:
    """The fields the page renders at first (as a browser would post them)."""
    html = text(console.hx_get(url("agent-new", ns)))
    return {
        "request_id": hidden(html, "request_id"),
        "configuration_baseline": hidden(html, "configuration_baseline"),
        "configuration_json": textarea(html, "configuration-json"),
        "provider": "openai", "auth_choice": "new_key", "model_mode": "list",
        **{fld: ac.WORKSPACE_DEFAULTS[name] for name, fld, _ in ac.WORKSPACE_FILES},
    }


def filled_form(console, ns, **changes: str) -> dict[str, str]:
    """A complete, valid form: name, a typed key, a model and its regenerated JSON."""
    data = page_form(console, ns)
    data.update({"name": "helper", "api_key": CANARY, "model": "gpt-6-astra"})
    data.update(changes)
    form = AgentForm.choices_of(data)
    ac.regenerate_configuration(form)
    data["configuration_json"] = form.configuration_json
    data["configuration_baseline"] = form.configuration_baseline
    data.update({k: v for k, v in changes.items() if k in ("configuration_json", "configuration_baseline")})
    return data


def submit(console, ns, data: dict[str, str], *, action: str = "provision", htmx: bool = True):
    payload = {**data, "action": action}
    if htmx:
        return console.hx_post(url("agent-new-submit", ns), payload)
    return console.post(url("agent-new-submit", ns), payload)


def resubmit_fields(response, data: dict[str, str]) -> dict[str, str]:
    """What the re-rendered form posts next time: the same fields, the server's hidden ones updated,
    no typed key (the input was cleared)."""
    html = text(response)
    updated = {k: v for k, v in data.items() if k != "api_key"}
    updated["request_id"] = hidden(html, "request_id")
    return updated


def failing(monkeypatch, service: str, error: Exception, *, module: Any = agent_create) -> list[dict[str, Any]]:
    """Make the view's ``service`` raise ``error`` (a unit boundary); returns the calls it got."""
    calls: list[dict[str, Any]] = []

    def fail(**kwargs: Any) -> Any:
        calls.append(kwargs)
        raise error

    monkeypatch.setattr(module, service, fail)
    return calls


def set_state(work: AgentProvisioningWork, *, status: str, phase: str | None = None, work_state: str | None = None,
              error: dict[str, str] | None = None, revision_id: str | None = None) -> None:
    """What the worker job would write (the status follows from the work row, the phase and a
    cancellation)."""
    if status == ProvisioningStatus.CANCELLED:
        work.cancelled_at = timezone.now()
    if status == ProvisioningStatus.RUNNING and not work_state:
        ControllerWork.objects.filter(pk=work.work_id).update(
            state="claimed", claim_token="claim-test", lease_expires_at=timezone.now() + timedelta(seconds=60))
    if phase:
        work.completed_phase = phase
    if error:
        work.progress = {"error": error}
    if revision_id:
        work.revision_id = revision_id
    work.save()
    if work_state:
        row = work.work
        row.state = work_state
        row.reason_code = (error or {}).get("code")
        row.completed_at = timezone.now()
        row.save()


# --- the page --------------------------------------------------------------------------------------


def test_the_page_and_its_form_fragment(console, ns):
    page = console.get(url("agent-new", ns))
    assert page.status_code == 200
    html = text(page)
    assert "<html" in html
    assert "<h1>Create Agent</h1>" in html
    for needle in ('id="create-agent-form"', 'id="agent-name" name="name"', 'id="model-provider" name="provider"',
                   'id="model-api-key" name="api_key"', 'id="agent-model" name="model"', 'id="channels-card"',
                   'id="configuration-json-field"', 'id="configuration-json" name="configuration_json"',
                   "OpenClaw · Embedded", ">Create Agent</button>", ">Save as draft</button>",
                   ">Discover models<", ">Enter model ID manually</button>", ">Reset template</button>",
                   'id="provisioning-progress"', '<summary>Advanced settings</summary>'):
        assert needle in html, needle
    assert "{#" not in html
    assert "{%" not in html
    for name, _, element_id in ac.WORKSPACE_FILES:
        assert f'<label for="{element_id}">{name}</label>' in html
    assert REQUEST_ID.fullmatch(hidden(html, "request_id"))
    assert json.loads(textarea(html, "configuration-json")) == ac.configuration_template("openai", "")

    fragment = console.hx_get(url("agent-new", ns))
    assert fragment.status_code == 200
    assert fragment_root(text(fragment)) == "form#create-agent-form"
    assert "<html" not in text(fragment)


def test_each_visit_gets_its_own_request_id(console, ns):
    first, second = (hidden(text(console.get(url("agent-new", ns))), "request_id") for _ in range(2))
    assert first != second


def test_an_unreadable_namespace_is_not_shown(console, ns):
    response = console.get(reverse("console:agent-new", args=["ns_00000000-0000-4000-8000-000000000000"]))
    assert response.status_code == 404
    assert "Namespace unavailable" in text(response)


# --- coupling --------------------------------------------------------------------------------------


def test_a_provider_change_swaps_provider_credential_model_and_json(console, ns):
    data = filled_form(console, ns, provider="anthropic", model="claude-sonnet-5")
    response = console.hx_post(url("agent-new-form", ns), {**data, "changed": "provider"})
    assert response.status_code == 200
    html = text(response)
    assert fragment_root(html) == "div#base-url-field"
    assert 'id="model-provider"' not in html  # the select keeps whatever the person picked meanwhile
    for section in ("base-url-field", "credential-section", "model-field", "configuration-json-field",
                    "create-agent-state"):
        assert re.search(rf'id="{section}"[^>]*hx-swap-oob="true"', html), section
    assert "claude-sonnet-5" in html  # the Anthropic starter list
    assert 'value="claude-sonnet-5" selected' not in html  # the model was reset
    assert json.loads(textarea(html, "configuration-json")) == ac.configuration_template("anthropic", "")
    assert 'name="api_key" value=""' in html
    no_secret_values(response)


def test_a_compatible_endpoint_gets_a_base_url_and_manual_model_id(console, ns):
    data = filled_form(console, ns, provider="openai_compatible")
    html = text(console.hx_post(url("agent-new-form", ns), {**data, "changed": "provider"}))
    assert 'id="provider-base-url"' in html
    assert 'id="agent-model-manual" name="model_manual"' in html
    assert 'id="discover-models"' not in html
    data.update(base_url="http://127.0.0.1:18555/v1", model_mode="manual", model_manual="echo-model",
                configuration_json=textarea(html, "configuration-json"),
                configuration_baseline=hidden(html, "configuration_baseline"))
    response = console.hx_post(url("agent-new-form", ns), {**data, "changed": "model"})
    assert fragment_root(text(response)) == "div#configuration-json-field"
    values = json.loads(textarea(text(response), "configuration-json"))
    assert values["agents"]["defaults"]["model"]["primary"] == "compatible/echo-model"
    assert values["models"]["providers"]["compatible"]["baseUrl"] == "http://127.0.0.1:18555/v1"


def test_a_model_change_regenerates_only_the_json_keeping_the_slack_settings(console, ns):
    data = filled_form(console, ns)
    current = json.loads(data["configuration_json"])
    current["channels"] = {"slack": {"enabled": True, "mode": "socket"}}
    current["plugins"] = {"entries": {"slack": {"enabled": True}}}
    data.update(configuration_json=json.dumps(current), model="gpt-6-luna")
    response = console.hx_post(url("agent-new-form", ns), {**data, "changed": "model"})
    html = text(response)
    assert fragment_root(html) == "div#configuration-json-field"
    assert 'id="base-url-field"' not in html
    assert 'id="credential-section"' not in html
    values = json.loads(textarea(html, "configuration-json"))
    assert values["agents"]["defaults"]["model"]["primary"] == "openai/gpt-6-luna"
    assert values["channels"] == current["channels"]
    assert values["plugins"] == {"entries": {"slack": {"enabled": True}}}


def test_an_edited_json_survives_selection_changes_until_reset(console, ns):
    data = filled_form(console, ns)
    edited = json.loads(data["configuration_json"])
    edited["tools"] = {"profile": "coding"}
    data.update(configuration_json=json.dumps(edited), model="gpt-6-luna")
    html = text(console.hx_post(url("agent-new-form", ns), {**data, "changed": "model"}))
    assert json.loads(textarea(html, "configuration-json")) == edited
    assert "You edited this JSON" in html
    assert 'id="create-agent-state"' not in html  # the baseline stays the last template's

    reset = console.hx_post(url("agent-new-form", ns), {**data, "changed": "reset"})
    html = text(reset)
    assert fragment_root(html) == "div#configuration-json-field"
    assert json.loads(textarea(html, "configuration-json")) == ac.configuration_template("openai", "gpt-6-luna")
    assert 'id="create-agent-state" hidden hx-swap-oob="true"' in html


def test_manual_model_entry_and_back(console, ns):
    data = filled_form(console, ns, model="gpt-6-sol")
    html = text(console.hx_post(url("agent-new-form", ns), {**data, "changed": "manual_model"}))
    assert fragment_root(html) == "div#model-field"
    assert re.search(r'id="agent-model-manual" name="model_manual" value="gpt-6-sol"', html)
    assert "autofocus" in html
    data.update(model_mode="manual", model_manual="gpt-6-sol")
    back = text(console.hx_post(url("agent-new-form", ns), {**data, "changed": "list_model"}))
    assert 'id="agent-model" name="model"' in back


def test_an_auth_choice_change_shows_the_namespace_secrets(console, ns, console_actor):
    secret = secret_create(actor=console_actor, namespace_id=ns.id,
                           command=SecretCreate(name="team openai", value=TEAM_SECRET_VALUE))
    data = filled_form(console, ns, auth_choice="existing")
    response = console.hx_post(url("agent-new-form", ns), {**data, "changed": "auth_choice"})
    html = text(response)
    assert fragment_root(html) == "div#credential-section"
    assert 'id="model-secret" name="model_secret_id"' in html
    assert f'value="{secret.id}"' in html
    assert "team openai" in html
    assert ">Create new Secret</button>" in html
    assert 'id="model-api-key"' not in html
    no_secret_values(response)


def test_a_coupling_post_without_htmx_renders_the_page(console, ns):
    data = filled_form(console, ns, provider="anthropic")
    response = console.post(url("agent-new-form", ns), {**data, "changed": "provider"})
    assert response.status_code == 200
    assert "<html" in text(response)
    assert 'value="anthropic" selected' in text(response)
    no_secret_values(response)


# --- model discovery -------------------------------------------------------------------------------


def test_discovery_with_a_typed_key_lists_models_and_saves_nothing(console, ns, fake):
    data = filled_form(console, ns, api_key=OPENAI_KEY, model="")
    response = console.hx_post(url("agent-new-models", ns), data)
    assert response.status_code == 200
    html = text(response)
    assert fragment_root(html) == "div#model-field"
    assert '<option value="gpt-6-astra"' in html
    assert "text-embedding-3-large" not in html  # the provider's filter still applies
    assert re.search(r"\d+ models available with this credential", html)
    assert fake.requests
    assert fake.requests[0]["authorized"]
    assert Secret.objects.count() == 0
    no_secret_values(response)
    discovered = json.loads(hidden(html, "discovered_models"))
    assert ["gpt-6-astra", "gpt-6-astra"] in discovered


def test_the_model_select_is_disabled_while_discovery_runs(console, ns):
    """A model chosen during discovery would be replaced by the discovered list: htmx disables
    the select (and the button) for the request's duration."""
    page = text(console.get(url("agent-new", ns)))
    button = re.search(r'<button[^>]*id="discover-models"[^>]*>', page)
    assert button
    assert 'hx-disabled-elt="#agent-model, #discover-models"' in button.group(0)


def test_discovery_with_an_existing_secret_uses_its_reference(console, ns, fake, console_actor):
    secret = secret_create(actor=console_actor, namespace_id=ns.id,
                           command=SecretCreate(name="openai key", value=OPENAI_KEY))
    data = filled_form(console, ns, auth_choice="existing", model_secret_id=secret.id, api_key="")
    response = console.hx_post(url("agent-new-models", ns), data)
    assert '<option value="gpt-6-astra"' in text(response)
    assert fake.requests[0]["authorized"]
    no_secret_values(response)


def test_discovery_after_a_saved_key_uses_the_requests_secret(console, ns, fake, console_actor):
    data = filled_form(console, ns)
    secret_create(actor=console_actor, namespace_id=ns.id,  # what an earlier attempt of the request saved
                  command=SecretCreate(name="helper model credential", value=OPENAI_KEY), request_id=data["request_id"])
    response = console.hx_post(url("agent-new-models", ns), {**data, "api_key": ""})
    assert '<option value="gpt-6-astra"' in text(response)
    assert fake.requests[0]["authorized"]
    no_secret_values(response)


@pytest.mark.parametrize(("mode", "code"), [
    pytest.param("unauthorized", "MODEL_DISCOVERY_CREDENTIALS_REJECTED", id="rejected"),
    pytest.param("rate_limited", "MODEL_DISCOVERY_RATE_LIMITED", id="rate-limited"),
    pytest.param("server_error", "MODEL_DISCOVERY_UNAVAILABLE", id="unavailable"),
    pytest.param("bad_shape", "MODEL_DISCOVERY_INVALID_RESPONSE", id="invalid"),
    pytest.param("echo", "MODEL_DISCOVERY_INVALID_RESPONSE", id="echoes-the-key"),
])
def test_discovery_failures_are_told_in_our_words(console, ns, fake, mode, code):
    fake.configure(mode=mode)
    data = filled_form(console, ns, api_key=OPENAI_KEY)
    response = console.hx_post(url("agent-new-models", ns), data)
    assert response.status_code == 200
    html = text(response)
    assert fragment_root(html) == "div#model-field"
    assert agent_create.DISCOVERY_MESSAGES[code] in unescape(html)
    assert 'role="alert" id="discovery-error"' in html
    assert 'id="agent-model" name="model"' in html  # the starter list stays usable
    no_secret_values(response)


@pytest.mark.parametrize(("changes", "message"), [
    pytest.param({"api_key": ""}, agent_create.DISCOVERY_NEEDS_KEY, id="no-key"),
    pytest.param({"provider": "openai_compatible"}, agent_create.DISCOVERY_COMPATIBLE, id="compatible"),
    # Discovery asks a real provider, whose keys are 8 characters or more (the API's rule).
    pytest.param({"api_key": "short"}, "The API key must be 8 to 4,096 printable ASCII characters",
                 id="malformed-key"),
])
def test_discovery_refuses_without_calling_the_provider(console, ns, fake, changes, message):
    response = console.hx_post(url("agent-new-models", ns), filled_form(console, ns, **changes))
    assert message in unescape(text(response))
    assert fake.requests == []
    no_secret_values(response, "short")


def test_discovery_without_htmx_renders_the_page(console, ns, fake):
    response = console.post(url("agent-new-models", ns), filled_form(console, ns, api_key=OPENAI_KEY))
    assert "<html" in text(response)
    assert '<option value="gpt-6-astra"' in text(response)
    no_secret_values(response)


# --- the Create new Secret modal --------------------------------------------------------------------


def test_the_secret_modal_creates_a_secret_and_selects_it(console, ns):
    modal = console.hx_get(url("agent-new-secret", ns), {"name": "helper", "provider": "anthropic"})
    html = text(modal)
    assert fragment_root(html) == "dialog#secret-modal"
    assert "data-modal" in html
    assert 'value="helper model credential"' in html
    assert '<label for="new-secret-name">Secret name</label>' in html
    assert '<label for="new-secret-value">Secret value</label>' in html

    response = console.hx_post(url("agent-new-secret", ns), {"secret_name": "helper model credential",
                                                              "secret_value": CANARY, "provider": "anthropic"})
    assert response.status_code == 200
    secret = Secret.objects.get(name="helper model credential")
    html = text(response)
    assert fragment_root(html) == "div#credential-section"
    assert response.headers["HX-Retarget"] == "#credential-section"
    assert agent_create.CLOSE_MODAL_EVENT in triggers(response)
    assert triggers(response)["occ:toast"]["messages"] == [{"level": "success",
                                                 "text": "Secret “helper model credential” created and selected."}]
    assert f'value="{secret.id}" selected' in html
    no_secret_values(response)


def test_the_secret_modal_keeps_the_name_and_clears_the_value_on_a_refusal(console, ns, console_actor):
    secret_create(actor=console_actor, namespace_id=ns.id, command=SecretCreate(name="taken", value=TEAM_SECRET_VALUE))
    response = console.hx_post(url("agent-new-secret", ns), {"secret_name": "taken", "secret_value": CANARY})
    assert response.status_code == 200
    html = text(response)
    assert fragment_root(html) == "form#secret-modal-form"
    assert "A Secret with this name already exists" in html
    assert 'value="taken"' in html
    assert "HX-Retarget" not in response.headers
    assert Secret.objects.count() == 1
    no_secret_values(response)

    empty = text(console.hx_post(url("agent-new-secret", ns), {"secret_name": "", "secret_value": ""}))
    assert "Enter a name for the Secret." in empty
    assert "Enter the Secret value." in empty


def test_the_secret_modal_puts_a_refused_value_on_its_field(console, ns):
    response = console.hx_post(url("agent-new-secret", ns), {"secret_name": "big", "secret_value": "x" * 65_537})
    html = text(response)
    assert fragment_root(html) == "form#secret-modal-form"
    assert re.search(r'id="new-secret-value-error"><li>The value must be at most 65536 bytes', html)
    assert 'value="big"' in html
    assert Secret.objects.count() == 0


def test_the_secret_modal_without_htmx(console, ns):
    page = console.get(url("agent-new-secret", ns), {"name": "helper"})
    assert "<html" in text(page)
    assert 'id="secret-modal-form"' in text(page)
    response = console.post(url("agent-new-secret", ns), {"secret_name": "plain", "secret_value": CANARY})
    assert response.status_code == 302
    assert response.headers["Location"] == url("agent-new", ns)
    assert Secret.objects.filter(name="plain").count() == 1


# --- bad input -------------------------------------------------------------------------------------


def test_bad_input_marks_each_field_keeps_the_rest_and_creates_nothing(console, ns):
    data = filled_form(console, ns, name="", model="", api_key="sk ca")
    data["workspace_soul"] = "my own soul"
    response = submit(console, ns, data)
    assert response.status_code == 200
    html = text(response)
    assert fragment_root(html) == "form#create-agent-form"
    assert re.search(r'id="agent-name-error"><li>Enter a name for the Agent.', html)
    assert re.search(r'id="agent-model-error"><li>Choose an available model', html)
    assert re.search(r'id="model-api-key-error"><li>The API key must be', html)
    assert "my own soul" in html
    assert hidden(html, "request_id") == data["request_id"]
    assert 'name="api_key" value=""' in html
    no_secret_values(response, "sk ca")
    assert (Secret.objects.count(), AgentProvisioningWork.objects.count(), Configuration.objects.count()) == (0, 0, 0)


def test_an_edited_json_that_contradicts_the_selections_is_refused_next_to_it(console, ns):
    data = filled_form(console, ns)
    edited = json.loads(data["configuration_json"])
    edited["tools"] = {"profile": "coding"}
    data.update(configuration_json=json.dumps(edited), model="gpt-6-luna")  # the JSON still says gpt-6-astra
    html = text(submit(console, ns, data))
    assert re.search(r'id="configuration-json-error"><li>Configuration must use the selected provider and model', html)
    assert "<details id=\"advanced-settings\" class=\"card create-section\" open>" in html
    assert json.loads(textarea(html, "configuration-json")) == edited
    assert Secret.objects.count() == 0


def test_an_unedited_json_follows_the_selections_at_submit(console, ns):
    data = filled_form(console, ns)
    data["model"] = "gpt-6-luna"  # the coupling's answer was lost: the JSON still says gpt-6-astra
    submit(console, ns, data)
    values = AgentProvisioningWork.objects.get().plan["configuration"]["values"]
    assert values["agents"]["defaults"]["model"]["primary"] == "openai/gpt-6-luna"


def test_a_taken_name_is_refused_before_the_key_is_saved(console, ns):
    AgentFactory(namespace=ns, name="helper", configuration=ConfigurationFactory(namespace=ns))
    response = submit(console, ns, filled_form(console, ns))
    assert "An Agent with this name already exists" in text(response)
    assert Secret.objects.count() == 0
    assert AgentProvisioningWork.objects.count() == 0
    no_secret_values(response)


@pytest.mark.parametrize(("changes", "element", "message"), [
    pytest.param({"name": "helper\x00"}, "agent-name-error", "Null characters are not allowed.", id="nul-in-name"),
    pytest.param({"plugins": '{"occ-plugin:a": {"enabled": "yes"}}'}, "plugins-error", "", id="selection-shape"),
    pytest.param({"plugin_approvers": "U" * 300}, "plugins-error", "At most 256 characters.", id="approver"),
    pytest.param({"workspace_user": "me\x00"}, "workspace-user-error", "", id="nul-in-file"),
])
def test_what_the_commands_refuse_is_marked_on_its_field_before_anything_is_written(console, ns, changes, element,
                                                                                     message):
    response = submit(console, ns, filled_form(console, ns, **changes))
    assert response.status_code == 200
    html = text(response)
    assert fragment_root(html) == "form#create-agent-form"
    assert re.search(rf'id="{element}"><li>{re.escape(message)}', unescape(html)), html
    assert (Secret.objects.count(), AgentProvisioningWork.objects.count()) == (0, 0)
    no_secret_values(response)


def test_bad_input_without_htmx_renders_the_page(console, ns):
    response = submit(console, ns, filled_form(console, ns, name=""), htmx=False)
    assert response.status_code == 200
    assert "<html" in text(response)
    assert "Enter a name for the Agent." in text(response)
    no_secret_values(response)


# --- Create Agent: provisioning ---------------------------------------------------------------------


def test_create_saves_the_key_once_and_admits_provisioning(console, ns, console_actor):
    team = secret_create(actor=console_actor, namespace_id=ns.id,
                         command=SecretCreate(name="team token", value=TEAM_SECRET_VALUE))
    data = filled_form(console, ns, **{"secret_binding__TEAM_TOKEN": team.id})
    response = submit(console, ns, data)
    assert response.status_code == 200
    html = text(response)
    assert fragment_root(html) == "form#create-agent-form"
    no_secret_values(response)

    secret = Secret.objects.get(name=model_key_secret_name("helper"))
    work = AgentProvisioningWork.objects.get()
    assert work.request_id == data["request_id"]
    assert work.plan["harnessAuth"]["source"]["id"] == secret.id
    assert work.plan["executionMode"] == "embedded"
    assert work.plan["configuration"]["secretBindings"]["TEAM_TOKEN"]["source"]["id"] == team.id
    assert work.plan["configuration"]["values"]["agents"]["defaults"]["model"]["primary"] == "openai/gpt-6-astra"
    assert set(work.plan["initialWorkspaceFiles"]) == {"AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md"}
    assert Agent.objects.count() == 0  # the worker creates it
    audit = AuditEvent.objects.get(action="openclaw.agents.provision")
    assert audit.details["requestId"] == data["request_id"]
    assert AuditEvent.objects.filter(action="openclaw.secrets.create", resource_id=secret.id).count() == 1

    poll = url("agent-new-provisioning", ns, work.work_id)
    assert f'hx-get="{poll}" hx-trigger="every 1s"' in html
    assert "Provisioning queued…" in html
    assert 'name="saved_secret_id"' not in html  # nothing carries it: the requestId finds it
    assert re.search(rf'id="saved-key-status">API key saved as Secret “[^”]+” \(<code>{secret.id}</code>\)', html)
    assert 'id="model-api-key"' not in html  # the key input is gone: its Secret is reused
    assert f"secret_binding__TEAM_TOKEN\" value=\"{team.id}\"" in html


def test_retries_reuse_the_secret_and_the_same_request_finds_the_same_work(console, ns):
    data = filled_form(console, ns)
    first = submit(console, ns, data)
    again = resubmit_fields(first, data)
    assert "api_key" not in again
    second = submit(console, ns, again)
    assert second.status_code == 200
    assert Secret.objects.count() == 1
    assert AgentProvisioningWork.objects.count() == 1
    work = AgentProvisioningWork.objects.get()
    assert url("agent-new-provisioning", ns, work.work_id) in text(second)
    no_secret_values(second)


def test_the_same_request_with_other_settings_offers_a_new_request(console, ns):
    data = filled_form(console, ns)
    first = submit(console, ns, data)
    changed = {**resubmit_fields(first, data), "name": "helper-two"}
    response = submit(console, ns, changed)
    html = text(response)
    assert 'id="different-plan"' in html
    assert "already used for a request with different settings" in html
    assert ">Start a new request</button>" in html
    assert AgentProvisioningWork.objects.count() == 1

    fresh = console.hx_post(url("agent-new-form", ns), {**changed, "changed": "new_request"})
    new_id = hidden(text(fresh), "request_id")
    saved = Secret.objects.get()
    # The old request's Secret stays chosen, now as an existing Secret (swapped out of band).
    assert re.search(r'id="auth-choice" hx-swap-oob="true"', text(fresh))
    assert re.search(r'id="auth-existing" name="auth_choice" value="existing" checked', text(fresh))
    assert f'<option value="{saved.id}" selected>' in text(fresh)
    changed.update(auth_choice="existing", model_secret_id=saved.id)
    assert new_id != data["request_id"]
    assert REQUEST_ID.fullmatch(new_id)
    assert 'id="submit-feedback" class="submit-feedback" hx-swap-oob="true"' in text(fresh)
    assert 'id="different-plan"' not in text(fresh)  # the explanation is cleared
    created = submit(console, ns, {**changed, "request_id": new_id})
    assert AgentProvisioningWork.objects.count() == 2
    assert Secret.objects.count() == 1
    assert "Provisioning queued…" in text(created)


def test_an_existing_secret_is_used_as_chosen(console, ns, console_actor):
    secret = secret_create(actor=console_actor, namespace_id=ns.id,
                           command=SecretCreate(name="model", value=TEAM_SECRET_VALUE))
    data = filled_form(console, ns, auth_choice="existing", model_secret_id=secret.id, api_key="")
    submit(console, ns, data)
    assert AgentProvisioningWork.objects.get().plan["harnessAuth"]["source"]["id"] == secret.id
    assert Secret.objects.count() == 1


def test_a_rejected_admission_maps_onto_the_form(console, ns):
    data = filled_form(console, ns, **{"secret_binding__TEAM_TOKEN": "sec_00000000-0000-4000-8000-000000000009"})
    response = submit(console, ns, data)
    html = text(response)
    assert "A referenced Secret does not exist in this Namespace." in html
    assert 'id="channels-error"' in html
    assert AgentProvisioningWork.objects.count() == 0
    saved = Secret.objects.get()
    assert f"<code>{saved.id}</code>" in html  # shown; the retry reuses it
    assert 'id="model-api-key"' not in html
    no_secret_values(response)


def test_a_retry_after_a_refused_admission_creates_no_second_secret(console, ns, caplog):
    caplog.set_level(logging.DEBUG)
    missing = "sec_00000000-0000-4000-8000-000000000009"
    data = filled_form(console, ns, **{"secret_binding__TEAM_TOKEN": missing})
    refused = submit(console, ns, data)
    assert "A referenced Secret does not exist in this Namespace." in text(refused)
    saved = Secret.objects.get()
    listed = console.get(reverse("console:secrets", args=[ns.id]))
    assert saved.name in unescape(text(listed))  # the refusal leaves it listed, where it can be seen

    retry = {k: v for k, v in resubmit_fields(refused, data).items() if k != "secret_binding__TEAM_TOKEN"}
    assert "api_key" not in retry  # nothing carries the Secret but the requestId
    admitted = submit(console, ns, retry)
    assert "Provisioning queued…" in text(admitted)
    assert Secret.objects.count() == 1
    assert AgentProvisioningWork.objects.get().plan["harnessAuth"]["source"]["id"] == saved.id
    assert AuditEvent.objects.filter(action="openclaw.secrets.create").count() == 1
    for response in (refused, listed, admitted):
        no_secret_values(response)
    assert CANARY not in json.dumps(list(AuditEvent.objects.values("details")))
    assert CANARY not in caplog.text


def test_create_without_htmx_renders_the_page_with_progress(console, ns):
    response = submit(console, ns, filled_form(console, ns), htmx=False)
    assert response.status_code == 200
    assert "<html" in text(response)
    assert "Provisioning queued…" in text(response)
    no_secret_values(response)


# --- progress polling, retry -----------------------------------------------------------------------


@pytest.fixture
def admitted(console, ns) -> AgentProvisioningWork:
    submit(console, ns, filled_form(console, ns))
    return AgentProvisioningWork.objects.select_related("work").get()


def test_progress_polls_while_queued_and_running(console, ns, admitted):
    poll = url("agent-new-provisioning", ns, admitted.work_id)
    queued = console.hx_get(poll)
    assert queued.status_code == 200
    assert fragment_root(text(queued)) == "div#provisioning-progress"
    assert 'role="status"' in text(queued)
    assert 'hx-trigger="every 1s"' in text(queued)
    assert "Provisioning queued…" in text(queued)

    set_state(admitted, status=ProvisioningStatus.RUNNING, phase="configuration")
    running = console.hx_get(poll)
    assert running.status_code == 200
    assert "Provisioning Agent…" in text(running)
    assert "Preparing runtime credentials" in text(running)
    no_secret_values(running)


def test_progress_finishes_then_opens_the_agent(console, ns, admitted):
    set_state(admitted, status=ProvisioningStatus.SUCCEEDED, phase="handoff", work_state=WorkState.SUCCEEDED,
              revision_id="rev_00000000-0000-4000-8000-000000000001")
    poll = url("agent-new-provisioning", ns, admitted.work_id)
    done = console.hx_get(poll)
    assert done.status_code == 286  # htmx stops polling
    html = text(done)
    assert fragment_root(html) == "div#provisioning-progress"
    assert "Provisioning finished. Opening Agent details…" in html
    assert "every 1s" not in html
    agent_url = url("agent", ns, admitted.agent_id)
    assert f'href="{agent_url}"' in html

    opened = console.hx_get(poll, {"open": "1"})
    assert opened.headers["HX-Redirect"] == agent_url
    plain = console.get(poll)
    assert plain.status_code == 302
    assert plain.headers["Location"] == agent_url


def test_a_failed_provisioning_offers_retry_which_requeues_it(console, ns, admitted):
    set_state(admitted, status=ProvisioningStatus.FAILED, work_state=WorkState.FAILED_PERMANENT,
              error={"code": "DEPENDENCY_UNAVAILABLE", "message": "A service stayed unavailable."})
    poll = url("agent-new-provisioning", ns, admitted.work_id)
    failed = console.hx_get(poll)
    assert failed.status_code == 286
    html = text(failed)
    assert "Provisioning failed." in html
    assert "DEPENDENCY_UNAVAILABLE" in html
    retry_url = url("agent-new-provisioning-retry", ns, admitted.work_id)
    assert f'hx-post="{retry_url}"' in html
    assert ">Retry provisioning</button>" in html

    retried = console.hx_post(retry_url)
    assert retried.status_code == 200
    assert fragment_root(text(retried)) == "div#provisioning-progress"
    assert "Provisioning queued…" in text(retried)
    assert 'hx-trigger="every 1s"' in text(retried)
    admitted.refresh_from_db()
    assert admitted.status == ProvisioningStatus.QUEUED
    assert AgentProvisioningWork.objects.count() == 1


def test_progress_and_retry_without_htmx_render_a_page(console, ns, admitted):
    page = console.get(url("agent-new-provisioning", ns, admitted.work_id))
    assert page.status_code == 200
    assert "<html" in text(page)
    assert "Provisioning queued…" in text(page)
    set_state(admitted, status=ProvisioningStatus.FAILED, work_state=WorkState.FAILED_PERMANENT,
              error={"code": "LEASE_EXPIRED", "message": "The worker stopped."})
    retried = console.post(url("agent-new-provisioning-retry", ns, admitted.work_id))
    assert retried.status_code == 200
    assert "<html" in text(retried)
    admitted.refresh_from_db()
    assert admitted.status == ProvisioningStatus.QUEUED


def test_a_retry_that_is_refused_says_why_and_keeps_the_state(console, ns, admitted):
    retried = console.hx_post(url("agent-new-provisioning-retry", ns, admitted.work_id))
    assert "Only failed provisioning can be retried" in text(retried)
    assert "Provisioning queued…" in text(retried)


def test_a_cancelled_provisioning_offers_a_new_request(console, ns, admitted):
    set_state(admitted, status=ProvisioningStatus.CANCELLED, work_state=WorkState.FAILED_PERMANENT)
    html = text(console.hx_get(url("agent-new-provisioning", ns, admitted.work_id)))
    assert "Provisioning was cancelled." in html
    assert ">Start a new request</button>" in html
    assert "Retry provisioning" not in html


def test_an_unknown_work_is_reported_in_the_region(console, ns):
    response = console.hx_get(url("agent-new-provisioning", ns, "agent:agt_x:provisioned"))
    assert response.status_code == 286
    assert "Provisioning status unavailable." in text(response)


# --- unknown outcomes ------------------------------------------------------------------------------


def test_an_unknown_outcome_is_never_resubmitted_and_can_be_checked(console, ns, monkeypatch):
    calls = failing(monkeypatch, "provision_admit", DatabaseError("connection dropped"), module=model_key_provisioning)
    data = filled_form(console, ns)
    response = submit(console, ns, data)
    assert response.status_code == 200
    html = text(response)
    assert re.search(r'<div id="outcome-unknown" class="error-panel outcome-unknown" role="alert">', html)
    assert f"Request ID: <code>{data['request_id']}</code>" in html
    assert re.search(r'id="create-agent-submit" name="action" value="provision" disabled', html)
    assert len(calls) == 1
    assert AgentProvisioningWork.objects.count() == 0
    assert Secret.objects.count() == 1  # the key's Secret, reused by the next attempt
    no_secret_values(response)

    lookup = url("agent-new-lookup", ns)
    nothing = console.hx_get(lookup, {"request_id": data["request_id"], "name": "helper"})
    assert nothing.status_code == 200
    assert fragment_root(text(nothing)) == "div#outcome-lookup"
    assert "was recorded and nothing was created" in text(nothing)
    assert re.search(r'id="form-actions"[^>]*hx-swap-oob="true"', text(nothing))
    assert 'value="provision" disabled' not in text(nothing)

    monkeypatch.undo()
    submit(console, ns, resubmit_fields(response, data))
    work = AgentProvisioningWork.objects.get()
    found = console.hx_get(lookup, {"request_id": data["request_id"]})
    assert fragment_root(text(found)) == "div#outcome-lookup"
    assert "was recorded. Its progress is shown below." in text(found)
    assert url("agent-new-provisioning", ns, work.work_id) in text(found)
    assert Secret.objects.count() == 1


def test_the_lookup_finds_an_agent_by_name_and_works_without_htmx(console, ns):
    agent = AgentFactory(namespace=ns, name="helper", configuration=ConfigurationFactory(namespace=ns))
    response = console.get(url("agent-new-lookup", ns), {"request_id": ac.new_request_id(), "name": "helper"})
    assert response.status_code == 200
    assert "<html" in text(response)
    assert url("agent", ns, agent.id) in text(response)


def test_the_lookup_is_read_only_for_another_persons_request(console, ns, admitted):
    admitted.actor_id = "prn_00000000-0000-4000-8000-000000000000"
    admitted.save()
    html = text(console.hx_get(url("agent-new-lookup", ns), {"request_id": admitted.request_id}))
    assert "nothing was created" in html
    assert AgentProvisioningWork.objects.count() == 1


def test_the_form_reveals_the_unknown_block_when_the_request_itself_fails(console, ns):
    html = text(console.get(url("agent-new", ns)))
    # console.js reveals it (no inline handler: the Content-Security-Policy allows none).
    assert 'data-outcome-unknown-disables="#create-agent-submit, #save-draft"' in html
    assert "hx-on" not in html
    block = re.search(r'<div id="outcome-unknown"[^>]*>', html)
    assert block
    assert "hidden" in block.group(0)
    assert ">Check status</button>" in html
    assert 'hx-target="#outcome-lookup"' in html


@pytest.mark.parametrize("error", [
    pytest.param(DatabaseError("connection dropped"), id="database"),
    pytest.param(UnknownOutcome(), id="503-unknown-outcome"),
])
def test_an_unknown_draft_write_stops_before_the_next_step(console, ns, monkeypatch, error):
    failing(monkeypatch, "agent_draft_create", error)
    bindings = AccessBinding.objects.count()
    response = submit(console, ns, filled_form(console, ns), action="draft")
    assert response.status_code == 200
    assert 'class="error-panel outcome-unknown" role="alert">' in text(response)
    assert (Agent.objects.count(), Configuration.objects.count()) == (0, 0)
    assert AccessBinding.objects.count() == bindings
    assert re.search(r'id="save-draft" name="action" value="draft" disabled', text(response))


def test_an_unknown_secret_save_is_not_retried(console, ns, monkeypatch):
    failing(monkeypatch, "secret_create", DatabaseError("commit lost"), module=model_key_provisioning)
    response = submit(console, ns, filled_form(console, ns))
    assert 'class="error-panel outcome-unknown" role="alert">' in text(response)
    assert AgentProvisioningWork.objects.count() == 0
    no_secret_values(response)


# --- Save as draft ---------------------------------------------------------------------------------


def test_save_as_draft_creates_configuration_agent_and_grant(console, ns, console_actor):
    team = secret_create(actor=console_actor, namespace_id=ns.id,
                         command=SecretCreate(name="team token", value=TEAM_SECRET_VALUE))
    data = filled_form(console, ns, **{"secret_binding__TEAM_TOKEN": team.id})
    response = submit(console, ns, data, action="draft")
    agent = Agent.objects.get()
    assert response.status_code == 200
    assert response.headers["HX-Redirect"] == url("agent", ns, agent.id)
    secret = Secret.objects.get(name=model_key_secret_name("helper"))
    assert agent.harness_secret_id == secret.id
    assert agent.configuration.secret_bindings.get().secret_id == team.id
    assert agent.initial_workspace_files["SOUL.md"] == ac.WORKSPACE_DEFAULTS["SOUL.md"]
    granted = set(AccessBinding.objects.filter(principal=agent.service_principal).values_list("resource_id", flat=True))
    assert granted == {secret.id, team.id}
    assert AgentProvisioningWork.objects.count() == 0
    grant = AuditEvent.objects.get(action="openclaw.agents.secret_access.grant")
    assert (grant.resource_id, sorted(grant.details["secretIds"])) == (agent.id, sorted([secret.id, team.id]))


def test_a_refused_draft_saves_nothing_and_a_retry_saves_it_once(console, ns, monkeypatch):
    """One service (``agent_draft_create``): no saga in hidden fields, no half-saved draft."""
    from occ.services import agent_drafts

    def refuse(**kwargs: Any) -> Any:
        raise Conflict("A Role named agent-secret-access exists that is not the system Role.")

    monkeypatch.setattr(agent_drafts, "agent_secret_access_grant", refuse)
    data = filled_form(console, ns)
    response = submit(console, ns, data, action="draft")
    assert response.status_code == 200
    html = text(response)
    assert fragment_root(html) == "form#create-agent-form"
    assert "A Role named agent-secret-access exists" in html
    assert "saved_configuration_id" not in html
    assert "saved_agent_id" not in html
    assert (Agent.objects.count(), Configuration.objects.count()) == (0, 0)
    no_secret_values(response)

    monkeypatch.undo()
    retry = submit(console, ns, resubmit_fields(response, data), action="draft")
    agent = Agent.objects.get()
    assert retry.status_code == 200
    assert retry.headers["HX-Redirect"] == url("agent", ns, agent.id)
    assert (Configuration.objects.count(), Secret.objects.count()) == (1, 1)
    assert AccessBinding.objects.filter(principal=agent.service_principal).count() == 1


def test_a_refused_draft_marks_the_field_of_the_refused_place(console, ns):
    """The draft's Configuration is refused by its own service; the refusal names its place in
    the draft, which the form's Channels card filled."""
    missing = "sec_00000000-0000-4000-8000-000000000009"
    response = submit(console, ns, filled_form(console, ns, **{"secret_binding__TEAM_TOKEN": missing}),
                      action="draft")
    html = text(response)
    assert fragment_root(html) == "form#create-agent-form"
    assert re.search(r'id="channels-error"><li>A bound Secret does not exist in this Namespace.', html)
    assert 'id="form-error"' not in html  # on the field, not the form as a whole
    assert (Agent.objects.count(), Configuration.objects.count()) == (0, 0)
    no_secret_values(response)


def test_save_as_draft_without_htmx_redirects(console, ns):
    response = submit(console, ns, filled_form(console, ns), action="draft", htmx=False)
    agent = Agent.objects.get()
    assert response.status_code == 302
    assert response.headers["Location"] == url("agent", ns, agent.id)


# --- the Channels card's bindings ------------------------------------------------------------------


def test_the_channels_cards_bindings_survive_a_re_render_and_reach_the_request(console, ns, console_actor,
                                                                               fake_slack):  # noqa: F811
    fake_slack.add_token("xoxb-card-bindings-reach")
    bot = secret_create(actor=console_actor, namespace_id=ns.id,
                        command=SecretCreate(name="bot", value="xoxb-card-bindings-reach"))
    app = secret_create(actor=console_actor, namespace_id=ns.id,
                        command=SecretCreate(name="app", value="xapp-card-bindings-reach"))
    staged = {"secret_binding__SLACK_BOT_TOKEN": bot.id, "secret_binding__SLACK_APP_TOKEN": app.id,
              "slack_state": json.dumps({"channels": []})}
    with_slack = json.loads(filled_form(console, ns)["configuration_json"]) | {"channels": {"slack": SLACK_VALUES}}
    staged["configuration_json"] = json.dumps(with_slack)
    invalid = submit(console, ns, filled_form(console, ns, name="", **staged))
    html = text(invalid)
    assert html.count('name="secret_binding__SLACK_BOT_TOKEN"') == 1
    assert html.count('name="secret_binding__SLACK_APP_TOKEN"') == 1
    assert f'name="secret_binding__SLACK_BOT_TOKEN" value="{bot.id}"' in html
    assert "Slack: configured" in html
    no_secret_values(invalid)

    submit(console, ns, filled_form(console, ns, **staged, request_id="req_bindings-reach-the-request"))
    bindings = AgentProvisioningWork.objects.get().plan["configuration"]["secretBindings"]
    assert {env: b["source"]["id"] for env, b in bindings.items()} == {"SLACK_BOT_TOKEN": bot.id,
                                                                        "SLACK_APP_TOKEN": app.id}


# --- known failures with a documented code (issue 13 §6) -------------------------------------------


SLACK_VALUES = {"enabled": True, "mode": "socket",
                "appToken": {"source": "env", "provider": "default", "id": "SLACK_APP_TOKEN"},
                "botToken": {"source": "env", "provider": "default", "id": "SLACK_BOT_TOKEN"}}


def test_slack_unreachable_is_shown_as_that_known_failure_with_what_to_do(console, ns, console_actor,
                                                                          fake_slack, monkeypatch):  # noqa: F811
    """503 CHANNEL_CREDENTIAL_UNAVAILABLE (Slack cannot be reached) stored nothing: the form says
    so and what to do next, never "outcome unknown" (whose Check status finds no request)."""
    fake_slack.add_token("xoxb-console-unreachable")
    fake_slack.fail("auth.test", "http_500")
    bot = secret_create(actor=console_actor, namespace_id=ns.id,
                        command=SecretCreate(name="bot", value="xoxb-console-unreachable"))
    app = secret_create(actor=console_actor, namespace_id=ns.id,
                        command=SecretCreate(name="app", value="xapp-console-unreachable"))
    data = filled_form(console, ns, **{"secret_binding__SLACK_BOT_TOKEN": bot.id,
                                       "secret_binding__SLACK_APP_TOKEN": app.id})
    values = json.loads(data["configuration_json"])
    values["channels"] = {"slack": SLACK_VALUES}
    data["configuration_json"] = json.dumps(values)
    response = submit(console, ns, data)
    html = text(response)
    assert response.status_code == 200
    assert fragment_root(html) == "form#create-agent-form"
    assert 'class="error-panel outcome-unknown" role="alert">' not in html, "shown as an unknown outcome"
    assert "Slack could not be reached" in html
    assert "Try again in a minute" in html
    # Said once on its field (and linked from the summary): not a third time in a panel, and never
    # "Nothing was created" beside the model key Secret this request did save.
    assert html.count("Slack could not be reached to check the bot token") == 2
    assert 'id="form-error"' not in html
    assert "Nothing was created" not in html
    assert "Secret saved" in html
    assert re.search(r'id="channels-error"', html)
    assert not re.search(r'id="create-agent-submit" name="action" value="provision" disabled', html)
    assert AgentProvisioningWork.objects.count() == 0


def test_the_readmes_no_internet_path_is_accepted_as_written(console, ns):
    """README: "OpenAI-compatible endpoint with base URL http://127.0.0.1:18555/v1, any key and
    the model ID echo-model". The console accepts a short key such as ``any-key``."""
    data = filled_form(console, ns, provider="openai_compatible", base_url="http://127.0.0.1:18555/v1",
                       model_mode="manual", model_manual="echo-model", model="", api_key="any-key")
    response = submit(console, ns, data)
    html = text(response)
    assert "The API key must be" not in html
    assert "Provisioning queued…" in html
    work = AgentProvisioningWork.objects.get()
    assert work.plan["configuration"]["values"]["agents"]["defaults"]["model"]["primary"] == "compatible/echo-model"


def test_a_dependency_outage_before_the_write_is_a_known_failure(console, ns, monkeypatch):
    """503 DEPENDENCY_UNAVAILABLE is documented as "nothing was changed": say that, and let the
    person try again (the buttons stay enabled)."""
    failing(monkeypatch, "agent_draft_create", DependencyUnavailable("The audit log is unavailable."))
    response = submit(console, ns, filled_form(console, ns), action="draft")
    html = text(response)
    assert 'class="error-panel outcome-unknown" role="alert">' not in html
    assert "Nothing was changed. Try again in a minute" in html
    assert not re.search(r'id="save-draft" name="action" value="draft" disabled', html)
    assert (Agent.objects.count(), Configuration.objects.count()) == (0, 0)


def test_a_refused_submit_leads_with_a_focused_summary_linking_each_field(console, ns):
    response = submit(console, ns, filled_form(console, ns, name="", model="", api_key="has space"))
    html = text(response)
    summary = re.search(r'<div id="error-summary" class="error-summary" role="alert" tabindex="-1" data-takes-focus'
                        r'.*?</div>', html, re.S)
    assert summary, "no error summary"
    assert html.index('id="error-summary"') < html.index('id="agent-name"'), "the summary leads the form"
    links = re.findall(r'<li><a href="#([a-z-]+)">([^<]+)</a></li>', summary.group(0))
    assert [target for target, _ in links] == ["agent-name", "model-api-key", "agent-model"]
    for target, _ in links:
        assert f'id="{target}"' in html, f"the summary links to a missing field #{target}"
    assert unescape(links[0][1]) == ac.MESSAGES["name_required"]


def test_a_valid_form_has_no_error_summary(console, ns):
    assert 'id="error-summary"' not in text(console.get(url("agent-new", ns)))


def test_a_changed_control_removes_the_stale_error_summary(console, ns):
    data = filled_form(console, ns, name="")
    assert 'id="error-summary"' in text(submit(console, ns, data))
    changed = console.hx_post(url("agent-new-form", ns), {**data, "changed": "model"})
    assert '<div id="error-summary" hx-swap-oob="delete"></div>' in text(changed)
