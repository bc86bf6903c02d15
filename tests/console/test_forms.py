"""``console.forms.ConfigurationForm`` (django.forms): parsing and the field's own errors."""

from __future__ import annotations

import pytest

from console.forms import INVALID_JSON, LOST_GENERATION, ConfigurationForm


@pytest.mark.parametrize(("data", "field", "message"), [
    pytest.param({"configuration_json": "{", "generation": "1"}, "configuration_json", INVALID_JSON, id="not-json"),
    pytest.param({"configuration_json": "[1]", "generation": "1"}, "configuration_json", INVALID_JSON, id="array"),
    pytest.param({"configuration_json": '{"a": NaN}', "generation": "1"}, "configuration_json", INVALID_JSON,
                 id="nan"),
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
    assert form.cleaned_data == {"configuration_json": {"agents": {}}, "generation": 7}


def test_the_saved_document_fills_an_unbound_form():
    form = ConfigurationForm.of({"agents": {"defaults": {}}}, 3)
    assert '"defaults": {}' in form.text()
    assert 'value="3"' in str(form["generation"])
