"""Presets in the console: the chooser Create Agent starts from, a Preset's variables rendered
into the ordinary Create Agent form (which then provisions), a credential a Preset binds shown
locked, and "Save as preset" for an Agent."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

import pytest
from django.urls import reverse

from occ.commands.presets import PresetCreate
from occ.commands.secrets import SecretCreate
from occ.iam.permissions import permission
from occ.models import AgentProvisioningWork, AuditEvent, Preset
from occ.openclaw.presets import STANDARD_OPENCLAW
from occ.selectors.permissions import PROVISION_AUTHORITY
from occ.services.presets import preset_create
from occ.services.secrets import secret_create
from tests.console.conftest import ConsoleClient
from tests.factories import AgentFactory, ConfigurationFactory, grant, human

CANARY = "sk-console-preset-canary-51ab"


class _Inputs(HTMLParser):
    """The values a browser would post from one form: inputs, checked radios, selected options, textareas."""

    def __init__(self, form_id: str) -> None:
        super().__init__()
        self.form_id, self.inside, self.values = form_id, False, {}
        self._select: str | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.inside = a.get("id") == self.form_id
        if not self.inside or ("name" not in a and tag != "option"):
            return
        if tag == "input" and (a.get("type") not in ("radio", "checkbox") or "checked" in a):
            self.values[a["name"]] = a.get("value", "")
        elif tag == "select":
            self._select = a["name"]
        elif tag == "option" and self._select and "selected" in a:
            self.values[self._select] = a.get("value", "")
        elif tag == "textarea":
            self._textarea = a["name"]
            self.values[a["name"]] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "select":
            self._select = None
        elif tag == "textarea":
            self._textarea = None
        elif tag == "form":
            self.inside = False

    def handle_data(self, data: str) -> None:
        if self._textarea:
            self.values[self._textarea] += data


def posted(html: str, form_id: str = "create-agent-form") -> dict[str, Any]:
    parser = _Inputs(form_id)
    parser.feed(html)
    return parser.values


def url(name: str, ns, *args: str) -> str:
    return reverse(f"console:{name}", args=[ns.id, *args])


@pytest.fixture
def ns(ready_namespace):
    return ready_namespace


@pytest.fixture
def model_key(ns, console_actor):
    return secret_create(actor=console_actor, namespace_id=ns.id, command=SecretCreate(name="team key", value=CANARY))


def test_the_chooser_offers_the_default_no_preset_and_saved_ones_by_name(console, ns, console_actor):
    preset_create(actor=console_actor, namespace_id=ns.id, command=PresetCreate(name="Alpha bot"))
    html = console.get(url("agent-choose", ns)).content.decode()
    standard = Preset.objects.get(namespace=ns, name=STANDARD_OPENCLAW)
    assert f'href="{url("agent-choose-preset", ns, standard.id)}"' in html
    assert 'id="start-blank"' in html
    assert f'href="{url("agent-new", ns)}"' in html
    assert html.index("Alpha bot") < html.index(f"preset-{standard.id}")
    listing = console.get(reverse("console:agents", args=[ns.id])).content.decode()
    assert url("agent-choose", ns) in listing


def test_without_read_on_presets_the_default_button_is_disabled(client, ns, bootstrap):
    person = human("dev")
    grant(person, *(permission(action, kind) for action, kind in PROVISION_AUTHORITY), "read:namespace",
          "read:agent", namespace=ns)
    person.user.set_password("pw-dev-123456")
    person.user.save()
    browser = ConsoleClient()
    browser.sign_in("dev", "pw-dev-123456")
    html = browser.get(url("agent-choose", ns)).content.decode()
    assert '<button type="button" class="button primary" id="start-default" disabled' in html
    assert STANDARD_OPENCLAW not in html


def test_the_standard_preset_fills_the_create_agent_form_which_provisions(console, ns, model_key):
    standard = Preset.objects.get(namespace=ns, name=STANDARD_OPENCLAW)
    questions = console.get(url("agent-choose-preset", ns, standard.id)).content.decode()
    assert 'name="name"' in questions
    assert 'value="gpt-6-astra"' in questions
    assert f'<option value="{model_key.id}">team key</option>' in questions
    filled = console.post(url("agent-choose-preset", ns, standard.id),
                          {"name": "preset-bot", "model": "gpt-6-sol", "apiKey": model_key.id})
    html = filled.content.decode()
    assert filled.status_code == 200
    assert 'id="create-agent-form"' in html
    values = posted(html)
    assert values["name"] == "preset-bot"
    assert values["model"] == "gpt-6-sol"
    assert values["auth_choice"] == "existing"
    assert values["model_secret_id"] == model_key.id
    assert values["credential_lock"] == ""  # chosen here, not bound by the Preset: still a choice
    assert '"primary": "openai/gpt-6-sol"' in values["configuration_json"]
    response = console.post(url("agent-new-submit", ns), {**values, "action": "provision"})
    assert response.status_code == 200
    work = AgentProvisioningWork.objects.get()
    assert work.plan["name"] == "preset-bot"
    assert work.plan["harnessAuth"]["source"]["id"] == model_key.id
    assert CANARY not in html


def test_a_missing_variable_is_asked_again_with_its_error(console, ns):
    standard = Preset.objects.get(namespace=ns, name=STANDARD_OPENCLAW)
    response = console.post(url("agent-choose-preset", ns, standard.id), {"name": "", "apiKey": "__enter_key__"})
    html = response.content.decode()
    assert 'id="preset-variables-form"' in html
    assert "This field is required." in html
    assert 'id="create-agent-form"' not in html


def test_a_preset_that_binds_its_credential_locks_it_and_says_why(console, ns, console_actor, model_key):
    preset = preset_create(actor=console_actor, namespace_id=ns.id, command=PresetCreate.model_validate({
        "name": "Bound team bot", "template": {
            "agent": {"name": "bound-bot", "harnessAuth": {"method": "api_key", "source": {
                "kind": "secret", "id": model_key.id}}},
            "configuration": {"values": {"agents": {"defaults": {
                "skipBootstrap": True, "model": {"primary": "anthropic/claude-sonnet-5"}}}}}}}))
    html = console.get(url("agent-choose-preset", ns, preset.id)).content.decode()  # no variables: at once
    values = posted(html)
    assert values["credential_lock"] == "Bound team bot"
    assert values["provider"] == "anthropic"
    assert values["model_secret_id"] == model_key.id
    assert 'id="credential-lock-reason"' in html
    assert "binds this credential" in html
    assert '<select id="model-provider"' not in html
    assert 'id="auth-new-key"' not in html
    changed = console.hx_post(url("agent-new-form", ns), {**values, "changed": "provider", "provider": "openai"})
    assert changed.status_code == 200
    assert changed.content.decode().count("credential-section") == 0  # nothing cleared, nothing re-rendered


def test_save_as_preset_keeps_the_agents_secret_bindings(console, ns, console_actor, model_key):
    configuration = ConfigurationFactory(namespace=ns, values={"agents": {"defaults": {
        "skipBootstrap": True, "model": {"primary": "openai/gpt-6-luna"}}}})
    agent = AgentFactory(namespace=ns, configuration=configuration, name="source-bot",
                         harness_auth_method="api_key", harness_secret=model_key)
    page = console.get(reverse("console:agent", args=[ns.id, agent.id])).content.decode()
    assert url("agent-save-preset", ns, agent.id) in page
    response = console.post(url("agent-save-preset", ns, agent.id), {"name": "From source"})
    assert response.status_code == 302
    preset = Preset.objects.get(namespace=ns, name="From source")
    template = preset.spec
    assert template.agent.harness_auth.source.id == model_key.id
    assert template.configuration.values == configuration.values
    assert AuditEvent.objects.filter(action="openclaw.presets.create", resource_id=preset.id).count() == 1
    again = console.post(url("agent-save-preset", ns, agent.id), {"name": "From source"})
    assert again.status_code == 200
    assert "already exists" in again.content.decode()
    started = posted(console.get(url("agent-choose-preset", ns, preset.id)).content.decode())
    assert started["credential_lock"] == "From source"
    assert started["model_secret_id"] == model_key.id
