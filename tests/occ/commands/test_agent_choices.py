"""The Agent choices are defined once and every command keeps the body's field order."""

from __future__ import annotations

import pytest

from occ.commands.agents import AgentChoices, AgentCreate, AgentUpdate
from occ.commands.base import parse
from occ.commands.provisioning import ProvisionCommand, ProvisionWithModelKey
from occ.errors import InvalidRequest

CHOICES = ["execution_mode", "harness_auth", "backend_id", "plugins", "plugin_approvers", "repository_bindings"]


@pytest.mark.parametrize(("command", "order"), [
    pytest.param(AgentCreate, ["name", "configuration_id", *CHOICES, "initial_workspace_files", "smoke_conversations",
                                           "rollback_on_failure"],
                 id="create"),
    pytest.param(AgentUpdate, ["configuration_id", *CHOICES, "smoke_conversations", "rollback_on_failure"],
                 id="update"),
    pytest.param(ProvisionCommand, ["request_id", "name", "configuration", *CHOICES, "initial_workspace_files",
                                    "secrets", "configuration_id", "agent_id"], id="provision"),
    pytest.param(ProvisionWithModelKey, ["request_id", "name", "configuration", *CHOICES, "initial_workspace_files",
                                         "secrets", "configuration_id", "agent_id", "model_key"], id="model-key"),
])
def test_fields_keep_the_body_order(command, order):
    assert issubclass(command, AgentChoices)
    assert list(command.model_fields) == order


def test_refusals_are_listed_in_the_body_order():
    with pytest.raises(InvalidRequest) as refused:
        parse(AgentCreate, {"executionMode": 1, "backendId": 2, "configurationId": 3, "name": 4})
    assert [detail.path for detail in refused.value.details] == [
        "/name", "/configurationId", "/executionMode", "/backendId"]
