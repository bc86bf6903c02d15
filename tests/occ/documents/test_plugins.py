"""Plugin selections and warnings are stored documents with the shape they always had."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from occ.documents import PluginApprover, PluginSelection, PluginWarning, RevisionSpec, ToolPolicy


def test_a_selection_stores_only_what_was_set():
    """None inherits and an empty tool map says nothing: neither is written, so a selection
    built by the API stores exactly the keys the old hand-written writer did."""
    selection = PluginSelection(enabled=False, tool_defaults=ToolPolicy(approval="none", reviewer=None),
                                tools={}, driver_policy=None, approvers=None)

    assert selection.document() == {"enabled": False, "toolDefaults": {"approval": "none"}}


def test_an_empty_approver_list_and_an_empty_driver_policy_are_kept():
    """``[]`` (nobody may approve) and ``{}`` are values, unlike an absent key (inherit)."""
    selection = PluginSelection(enabled=True, approvers=(), driver_policy={},
                                tools={"a": ToolPolicy(approvers=())})

    assert selection.document() == {"enabled": True, "approvers": [], "driverPolicy": {},
                                    "tools": {"a": {"approvers": []}}}


def test_a_selection_inside_a_revision_keeps_its_stored_keys():
    stored = {"plugins": {"plugins": {"p": {"enabled": True, "tools": {"t": {"enabled": False}},
                                            "approvers": [{"channel": "slack", "id": "U1"}]}}}}

    spec = RevisionSpec.from_stored(stored)

    assert spec.plugin_selections["p"].approvers == (PluginApprover(channel="slack", id="U1"),)
    assert spec.document() == stored


@pytest.mark.parametrize("document", [
    pytest.param({"toolDefaults": {"enabled": True}}, id="enabled-missing"),
    pytest.param({"enabled": True, "toolDefaults": {"approval": "sometimes"}}, id="unknown-approval"),
    pytest.param({"enabled": True, "approvers": [{"channel": "slack"}]}, id="approver-without-id"),
])
def test_a_malformed_selection_is_refused(document):
    with pytest.raises(ValidationError):
        PluginSelection.model_validate(document)


def test_a_warning_is_stored_with_its_wire_names_and_reads_back():
    warning = PluginWarning(plugin_id="occ-plugin:workboard", code="PLUGIN_AUTH_REQUIRED")

    assert warning.document() == {"pluginId": "occ-plugin:workboard", "code": "PLUGIN_AUTH_REQUIRED"}
    assert PluginWarning.model_validate(warning.document()) == warning
    with pytest.raises(ValidationError):
        PluginWarning.model_validate({"pluginId": "x", "code": "SOMETHING_ELSE"})
