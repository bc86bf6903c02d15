"""``console.forms.configurations.ConfigurationForm`` (django.forms): parsing and the field's own errors; a
syntax error says where it is."""

from __future__ import annotations

import pytest

from console.forms.configurations import INVALID_JSON, LOST_GENERATION, ConfigurationDocumentForm, ConfigurationForm


@pytest.mark.parametrize(("data", "field", "message"), [
    pytest.param({"configuration_json": "{", "generation": "1"}, "configuration_json",
                 f"{INVALID_JSON} Line 1, column 2: Not valid JSON: Expecting property name enclosed in double quotes.",
                 id="not-json"),
    pytest.param({"configuration_json": '{\n  "a": 1,\n  "b" 2\n}', "generation": "1"}, "configuration_json",
                 f"{INVALID_JSON} Line 3, column 7: Not valid JSON: Expecting ':' delimiter.", id="second-line"),
    pytest.param({"configuration_json": "[1]", "generation": "1"}, "configuration_json",
                 f"{INVALID_JSON} Line 1, column 1: The document must be a JSON object: {{…}}.", id="array"),
    pytest.param({"configuration_json": '{"a": NaN}', "generation": "1"}, "configuration_json",
                 f"{INVALID_JSON} Line 1, column 7: Not valid JSON: NaN is not a JSON value.", id="nan"),
    pytest.param({"configuration_json": "", "generation": "1"}, "configuration_json", INVALID_JSON, id="empty"),
    pytest.param({"configuration_json": "{}", "generation": ""}, "generation", LOST_GENERATION, id="no-generation"),
    pytest.param({"configuration_json": "{}", "generation": "x1"}, "generation", LOST_GENERATION, id="bad-generation"),
])
def test_a_bad_field_is_refused_with_our_message(data, field, message):
    form = ConfigurationForm(data)
    assert not form.is_valid()
    assert form.errors[field] == [message]


def test_a_valid_form_gives_the_document_and_the_generation():
    form = ConfigurationForm({"configuration_json": ' {"agents": {}} ', "generation": "7"})
    assert form.is_valid(), form.errors
    assert form.cleaned_data == {"name": "", "configuration_json": {"agents": {}}, "generation": 7}


def test_the_create_form_needs_no_generation():
    form = ConfigurationDocumentForm({"configuration_json": '{"agents": {}}'})
    assert form.is_valid(), form.errors
    assert form.cleaned_data == {"name": "", "configuration_json": {"agents": {}}}
    assert form.chosen_name() is None, "a blank name: OCC names it"


def test_the_saved_document_fills_an_unbound_form():
    form = ConfigurationForm.of("support", {"agents": {"defaults": {}}}, 3)
    assert '"defaults": {}' in form.text()
    assert 'value="support"' in str(form["name"])
    assert 'value="3"' in str(form["generation"])
