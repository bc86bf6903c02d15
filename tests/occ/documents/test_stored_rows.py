"""Rows written before the documents were typed still load, read the same, and write back
unchanged; their fingerprints are the ones recorded with them.

``fixtures/*.json`` were written by ``ed7f21c`` (the dict builders ``deploy._snapshot``,
``deploy._redeploy_snapshot`` and ``provisioning.provision_plan``) from the inputs in
``cases.py``, with the SHA-256 fingerprint that code computed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from occ.documents import DriverPin, ProvisionPlan, RevisionSpec, ToolPolicy
from tests.agents_support import SNAPSHOT
from tests.occ.documents import cases

FIXTURES = Path(__file__).resolve().parent / "fixtures"
REVISIONS = sorted(path.stem for path in FIXTURES.glob("*deploy-*.json"))
PLANS = sorted(path.stem for path in FIXTURES.glob("plan-*.json"))


def captured(name: str) -> tuple[dict[str, Any], str]:
    data = json.loads((FIXTURES / f"{name}.json").read_text())
    return data["document"], data["fingerprint"]


def test_every_case_was_captured():
    assert set(REVISIONS) == {*cases.DEPLOYS, *cases.REDEPLOY_SOURCES}
    assert set(PLANS) == set(cases.PLANS)


@pytest.mark.parametrize("name", REVISIONS)
def test_a_captured_revision_round_trips_with_its_fingerprint(name):
    stored, fingerprint = captured(name)
    spec = RevisionSpec.from_stored(stored)

    assert spec.document() == stored
    assert list(spec.document()) == list(stored), "the keys keep their order"
    assert spec.fingerprint() == fingerprint


@pytest.mark.parametrize("name", PLANS)
def test_a_captured_plan_round_trips_with_its_fingerprint(name):
    stored, fingerprint = captured(name)
    plan = ProvisionPlan.from_stored(stored)

    assert plan.document() == stored
    assert plan.fingerprint() == fingerprint


def test_a_deploy_snapshot_reads_by_attribute():
    spec = RevisionSpec.from_stored(captured("deploy-plugins")[0])

    assert spec.pinned_to(DriverPin(id="fake", implementation="fake"))
    assert not spec.pinned_to(DriverPin(id="fake", implementation="fake/2"))
    assert not spec.pinned_to(DriverPin(id="local", implementation="fake"))
    assert (spec.harness_auth_method, spec.harness_secret_id) == ("api_key", cases.HARNESS_SECRET)
    assert spec.bound_secret_ids == {"SLACK_BOT_TOKEN": cases.SLACK_SECRET, "TOOL_TOKEN": cases.TOOL_SECRET}
    assert spec.delivered_secret_ids == [cases.HARNESS_SECRET, cases.SLACK_SECRET, cases.TOOL_SECRET]
    assert spec.bindings_using(cases.TOOL_SECRET) == ["TOOL_TOKEN"]
    assert spec.configuration_document() == cases.VALUES
    assert spec.configuration_document() is not spec.configuration
    assert spec.plugin_driver == DriverPin(id="openclaw", implementation="occ.openclaw-curated/1")
    assert set(spec.plugin_selections) == set(cases.SELECTIONS)
    workboard = spec.plugin_selections[cases.WORKBOARD]
    assert workboard.tool_defaults == ToolPolicy(enabled=False, approval="none")
    assert workboard.tools == {"workboard_list": ToolPolicy(enabled=True)}
    assert (workboard.driver_policy, workboard.approvers) == (None, None)
    assert [(a.channel, a.id) for a in spec.plugin_approvers or []] == [("slack", "U012345")]
    assert (spec.execution_mode, spec.service_principal_id, spec.source_revision_id) == (
        "embedded", cases.PRINCIPAL, None)


def test_a_snapshot_without_harness_auth_delivers_only_its_bindings():
    spec = RevisionSpec.from_stored(captured("deploy-no-harness")[0])

    assert spec.harness_auth is None
    assert (spec.harness_auth_method, spec.harness_secret_id) == (None, None)
    assert spec.delivered_secret_ids == [cases.SLACK_SECRET, cases.TOOL_SECRET]
    assert spec.document()["harnessAuth"] is None, "a null that was written is kept"


@pytest.mark.parametrize("name", sorted(cases.REDEPLOY_SOURCES))
def test_older_shapes_load_and_write_back_the_keys_they_had(name):
    stored = cases.REDEPLOY_SOURCES[name]
    spec = RevisionSpec.from_stored(stored)

    assert spec.document() == {key: value for key, value in stored.items() if key != "sandboxDriver"}
    assert spec.source_revision_id is None
    assert spec.pinned_to(DriverPin(id="fake", implementation="fake"))


def test_the_first_snapshots_have_plugins_without_a_driver():
    spec = RevisionSpec.from_stored(cases.REDEPLOY_SOURCES["redeploy-first-generation"])

    assert spec.plugins is not None
    assert (spec.plugin_driver, spec.plugin_selections) == (None, {})
    assert spec.document()["plugins"] == {"plugins": {}}
    assert spec.plugin_approvers is None


def test_a_sparse_row_reads_with_the_defaults_its_readers_always_used():
    spec = RevisionSpec.from_stored(cases.REDEPLOY_SOURCES["redeploy-sparse"])

    assert (spec.configuration_kind, spec.secret_bindings, spec.plugins, spec.plugin_approvers) == (
        "agent", {}, None, None)
    assert (spec.delivered_secret_ids, spec.plugin_selections, spec.plugin_driver) == ([], {}, None)
    assert "sandboxDriver" not in spec.document()
    assert not hasattr(spec, "sandbox_driver")


def test_a_row_missing_even_its_compute_pin_is_pinned_to_nothing():
    spec = RevisionSpec.from_stored({})

    assert spec.compute is None
    assert not spec.pinned_to(DriverPin(id="fake", implementation="fake"))
    assert spec.document() == {}
    assert RevisionSpec.from_stored(None) == spec


def test_the_tests_own_rows_load():
    spec = RevisionSpec.from_stored(SNAPSHOT)

    assert spec.harness_secret_id == "sec_x"
    assert spec.pinned_to(DriverPin(id="local", implementation="local"))
    assert "sandboxDriver" not in spec.document()


def test_a_redeployed_snapshot_names_its_source():
    spec = RevisionSpec.from_stored(captured("redeploy-sparse")[0])

    assert spec.source_revision_id == cases.SOURCE_REVISION
    assert spec.harness_auth is None
    assert spec.plugin_approvers == []


def test_the_public_revision_shows_public_fields_as_null_when_the_row_lacks_them():
    spec = RevisionSpec.from_stored({"configuration": {"a": 1}, "executionMode": "embedded",
                                     "servicePrincipalId": "sp_x", "sourceRevisionId": "rev_x"})

    assert spec.public(configuration_id="cfg_x", configuration_generation=2).document() == {
        "configurationId": "cfg_x", "configurationGeneration": 2, "configurationKind": "agent",
        "configuration": {"a": 1}, "harness": None, "compute": None, "harnessAuth": None, "backendId": None,
        "secretBindings": None, "pluginApprovers": None,
    }


def test_the_public_revision_shows_optional_fields_only_when_set():
    stored, _ = captured("deploy-plugins")
    public = RevisionSpec.from_stored({**stored, "repositoryCredentials": {"bindings": []}}).public(
        configuration_id="cfg_x", configuration_generation=1).document()

    assert public["secretDriverId"] == "database"
    assert public["plugins"] == stored["plugins"]
    assert public["repositoryCredentials"] == {"bindings": []}
    assert not {"executionMode", "servicePrincipalId", "sourceRevisionId"} & set(public)


def test_a_plan_reads_by_attribute():
    plan = ProvisionPlan.from_stored(captured("plan-full")[0])

    assert plan.name == "captured"
    assert plan.configuration.values == cases.VALUES
    assert plan.bound_secret_ids == {"SLACK_BOT_TOKEN": cases.SLACK_SECRET, "TOOL_TOKEN": cases.TOOL_SECRET}
    assert plan.harness_secret_id == cases.HARNESS_SECRET
    assert plan.secret_ids == sorted([cases.HARNESS_SECRET, cases.SLACK_SECRET, cases.TOOL_SECRET])
    assert plan.initial_workspace_files == {"AGENTS.md": "# Rules\n", "SOUL.md": "calm"}


def test_a_plan_missing_the_agent_choices_reads_with_the_agent_defaults():
    stored = {"name": "old", "configuration": {"kind": "agent", "values": {}, "secretBindings": {}}}
    plan = ProvisionPlan.from_stored(stored)

    assert (plan.execution_mode, plan.harness_auth, plan.plugins, plan.secret_ids) == ("embedded", None, {}, [])
    assert plan.document() == stored
