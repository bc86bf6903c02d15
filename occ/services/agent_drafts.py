"""Save an Agent as a draft: its Configuration, the stopped Agent and the Agent's access to
the Secrets it uses, all or nothing.

The console's "Save as draft" used to make these one request at a time and carry the ids of
what it had made in hidden form fields, so a retry could continue where an attempt stopped.
One transaction makes that unnecessary: either everything is saved (and audited, each step by
its own service, in this transaction) or nothing is, and a retry starts from the beginning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction

from occ.commands.configurations import ConfigurationCreate
from occ.iam.actor import Actor
from occ.models import Agent
from occ.services.agent_secret_access import agent_secret_access_grant
from occ.services.agents import agent_create
from occ.services.configurations import configuration_create


def _secret_ids(harness_secret_id: str | None, configuration: ConfigurationCreate) -> list[str]:
    """The model Secret and every bound Secret, each once, in a stable order."""
    ids = [harness_secret_id or "", *sorted(configuration.bound.values())]
    return list(dict.fromkeys(i for i in ids if i))


def agent_draft_create(*, actor: Actor, namespace_id: str, name: str, configuration: ConfigurationCreate,
                       harness_auth: Mapping[str, Any], initial_workspace_files: Mapping[str, str],
                       execution_mode: str = "embedded") -> Agent:
    """A stopped Agent ready to deploy, with a Configuration of its own and ``secret:operate``
    for its service principal on the model Secret and every bound Secret. One transaction:
    a refusal at any step leaves nothing behind."""
    with transaction.atomic():
        saved = configuration_create(actor=actor, namespace_id=namespace_id, command=configuration)
        agent = agent_create(actor=actor, namespace_id=namespace_id, name=name, configuration_id=saved.id,
                             execution_mode=execution_mode, harness_auth=dict(harness_auth),
                             initial_workspace_files=dict(initial_workspace_files))
        agent_secret_access_grant(actor=actor, namespace_id=namespace_id, agent_id=agent.id,
                                  secret_ids=_secret_ids(agent.harness_secret_id, configuration))
    return agent
