"""Save an Agent as a draft: its Configuration, the stopped Agent and the Agent's access to
the Secrets it uses, all or nothing.

The console's "Save as draft" used to make these one request at a time and carry the ids of
what it had made in hidden form fields, so a retry could continue where an attempt stopped.
One transaction makes that unnecessary: either everything is saved (and audited, each step by
its own service, in this transaction) or nothing is, and a retry starts from the beginning.
"""

from __future__ import annotations

from django.db import transaction

from occ.commands.agents import AgentDraftCreate, AgentSecretAccess
from occ.errors import OccError
from occ.iam.actor import Actor
from occ.models import Agent
from occ.services.agent_secret_access import agent_secret_access_grant
from occ.services.agents import agent_create
from occ.services.configurations import configuration_create


def _secret_ids(command: AgentDraftCreate) -> list[str]:
    """The model Secret and every bound Secret, each once, in a stable order."""
    ids = [command.harness_auth.secret_id, *sorted(command.configuration.bound.values())]
    return list(dict.fromkeys(ids))


def agent_draft_create(*, actor: Actor, namespace_id: str, command: AgentDraftCreate) -> Agent:
    """A stopped Agent ready to deploy, with a Configuration of its own and ``secret:operate``
    for its service principal on the model Secret and every bound Secret. One transaction:
    a refusal at any step leaves nothing behind."""
    with transaction.atomic():
        try:
            saved = configuration_create(actor=actor, namespace_id=namespace_id, command=command.configuration,
                                         default_name=f"{command.name} configuration")
        except OccError as exc:
            exc.relocate("/configuration")  # its details point into the Configuration: place them in the command
            raise
        agent = agent_create(actor=actor, namespace_id=namespace_id, command=command.agent(saved.id))
        agent_secret_access_grant(actor=actor, namespace_id=namespace_id, agent_id=agent.id,
                                  command=AgentSecretAccess(secret_ids=_secret_ids(command)))
    return agent
