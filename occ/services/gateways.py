"""A local operator reads an Agent's gateway password (``manage.py occ_gateway info --show-password``).

The password is the Agent's driver-owned runtime credential; clients of the gateway's
OpenAI-compatible endpoint send it as a bearer token. Only an operator with shell access to
the installation can ask, each read is audited first, and the value is handed to the
caller's consumer for the duration of one call (the SecretDriver's ``with_value``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.db import transaction

from occ.drivers.compute.base import GATEWAY_PASSWORD_PURPOSE
from occ.drivers.secrets import get_secret_driver
from occ.errors import NotFound
from occ.iam.actor import Source
from occ.iam.permissions import Kind
from occ.models import Agent, AuditKind, Secret
from occ.services.audit import audit_record

T = TypeVar("T")


def agent_gateway_password_read(*, agent_id: str, consumer: Callable[[str], T]) -> T:
    """Call ``consumer`` with the Agent's gateway password, after one ``access`` audit event."""
    agent = Agent.objects.filter(id=agent_id).first()
    if agent is None:
        raise NotFound("The Agent does not exist.")
    secret = Secret.objects.filter(owner_agent=agent, purpose=GATEWAY_PASSWORD_PURPOSE).first()
    if secret is None:
        raise NotFound("The Agent has no gateway password yet: it is created when the Agent is first deployed.")
    with transaction.atomic():
        audit_record(actor=None, source=Source.CLI.value, kind=AuditKind.ACCESS,
                     action="openclaw.agents.gateway_password.read", namespace_id=agent.namespace_id,
                     resource_kind=Kind.AGENT, resource_id=agent.id, details={"secretId": secret.id})
    return get_secret_driver(secret.driver_id).with_value(secret.backend_name, consumer)
