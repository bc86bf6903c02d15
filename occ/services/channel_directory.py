"""The channel directory lookup behind the console's Slack pickers (spec §3.2).

The caller names a bot token Secret; OCC reads its value through the SecretDriver and hands
it to the ChannelDriver in-process. The token never leaves OCC except towards the channel
provider: not in the response, an error, an audit event or a log line.
"""

from __future__ import annotations

from django.db import transaction

from occ.commands.channel_directory import DirectoryLookup
from occ.drivers.channels import channel_drivers
from occ.drivers.channels.base import DirectoryPage
from occ.errors import NotFound, NotImplementedYet
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import authorize
from occ.models import Agent, AuditKind, Configuration, Namespace
from occ.selectors.namespaces import get_live_namespace
from occ.selectors.secrets import get_user_secret
from occ.services.audit import audit_record
from occ.services.secrets import secret_value_use


def _authorize_editor(actor: Actor, namespace: Namespace, *, agent_id: str | None,
                      configuration_id: str | None) -> None:
    """Creating an Agent, or updating the exact Agent / Configuration the picker edits."""
    if agent_id is None and configuration_id is None:
        authorize(actor, Action.CREATE, Kind.AGENT, namespace_id=namespace.id)
        return
    if agent_id is not None:
        if not Agent.objects.filter(namespace=namespace, id=agent_id).exists():
            raise NotFound("The Agent does not exist.")
        authorize(actor, Action.UPDATE, Kind.AGENT, namespace_id=namespace.id, resource_id=agent_id)
    if configuration_id is not None:
        if not Configuration.objects.filter(namespace=namespace, id=configuration_id).exists():
            raise NotFound("The Configuration does not exist in this Namespace.")
        authorize(actor, Action.UPDATE, Kind.CONFIGURATION, namespace_id=namespace.id, resource_id=configuration_id)


def channel_directory_lookup(
    *,
    actor: Actor,
    namespace_id: str,
    command: DirectoryLookup,
    channel: str = "slack",
) -> DirectoryPage:
    """One page of the workspace's people or channels, or the labels of exact ``ids``.

    Authorizes the editor's right and ``secret:operate`` on the same-Namespace Secret, then
    records the Secret's use (an ``access`` audit event, committed before the value is
    read), then reads the value and asks the driver. Nothing else is written.
    """
    namespace = get_live_namespace(namespace_id)
    _authorize_editor(actor, namespace, agent_id=command.agent_id, configuration_id=command.configuration_id)
    secret = get_user_secret(namespace, command.secret_id)
    authorize(actor, Action.OPERATE, Kind.SECRET, namespace_id=namespace.id, resource_id=secret.id)
    driver = channel_drivers().get(channel)
    if driver is None:
        raise NotImplementedYet("No directory lookup is available for this channel; enter exact IDs.")
    details = {"channel": channel, "kind": command.kind, "byIds": command.ids is not None}
    details.update({key: value for key, value in (("agentId", command.agent_id),
                                                  ("configurationId", command.configuration_id))
                    if value is not None})
    with transaction.atomic():
        audit_record(actor=actor, kind=AuditKind.ACCESS, action="openclaw.channels.directory.lookup",
                     namespace_id=namespace.id, resource_kind=Kind.SECRET, resource_id=secret.id, details=details)
    return secret_value_use(secret=secret, consumer=lambda token: driver.lookup_directory(
        token=token, kind=command.kind, query=command.query, cursor=command.cursor, ids=command.ids))
