"""Talking to an Agent through OCC: the console's Chat tab proxies a conversation to the
Agent's running gateway through the compute driver (``ComputeDriver.chat``).

Each turn is authorized by ``invoke:agent`` on the exact Agent. A conversation is audited once,
when it starts (``openclaw.agents.conversation.start``, an ``access`` event with the
conversation's id and the revision it spoke to): never the text of any message. The caller
never learns the gateway's address or password; the driver resolves both.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction

from occ.commands.chat import AgentChat
from occ.drivers.compute import ChatMessage, SecretReference, get_compute_driver
from occ.drivers.compute.base import GATEWAY_PASSWORD_PURPOSE
from occ.errors import Conflict
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import authorize
from occ.ids import IdPrefix, new_id
from occ.models import Agent, AgentStatus, AuditKind, DesiredRuntimeState, Secret
from occ.selectors.agents import get_agent
from occ.selectors.namespaces import get_live_namespace
from occ.services.audit import audit_record

CONVERSATION_STARTED = "openclaw.agents.conversation.start"
NOT_RUNNING_CODE = "AGENT_NOT_RUNNING"


class AgentNotRunning(Conflict):
    code = NOT_RUNNING_CODE
    default_message = "The Agent is not running."


@dataclass(frozen=True)
class Conversation:
    id: str
    agent_id: str
    revision_id: str


def _invokable(actor: Actor, namespace_id: str, agent_id: str) -> Agent:
    namespace = get_live_namespace(namespace_id)
    agent = get_agent(namespace, agent_id)
    authorize(actor, Action.INVOKE, Kind.AGENT, namespace_id=namespace.id, resource_id=agent.id)
    if agent.status != AgentStatus.ACTIVE:
        raise AgentNotRunning("The Agent is being deleted.")
    if agent.active_revision_id is None:
        raise AgentNotRunning("The Agent has not been deployed yet. Deploy it to talk to it.")
    if agent.desired_runtime_state == DesiredRuntimeState.STOPPED:
        raise AgentNotRunning("The Agent is stopped. Deploy it to talk to it.")
    return agent


def agent_conversation_start(*, actor: Actor, namespace_id: str, agent_id: str) -> Conversation:
    """A new conversation with the Agent's serving revision: authorized, then audited."""
    agent = _invokable(actor, namespace_id, agent_id)
    conversation = Conversation(id=new_id(IdPrefix.CONVERSATION), agent_id=agent.id,
                                revision_id=str(agent.active_revision_id))
    with transaction.atomic():
        audit_record(actor=actor, kind=AuditKind.ACCESS, action=CONVERSATION_STARTED, namespace_id=agent.namespace_id,
                     resource_kind=Kind.AGENT, resource_id=agent.id,
                     details={"conversationId": conversation.id, "revisionId": conversation.revision_id})
    return conversation


def agent_chat(*, actor: Actor, namespace_id: str, agent_id: str, command: AgentChat) -> Iterator[str]:
    """The reply to the conversation's last message, as the gateway streams it. Authorized now;
    the driver's failures (``ComputeError`` with a ``CHAT_*`` code) surface while iterating."""
    agent = _invokable(actor, namespace_id, agent_id)
    secret = Secret.objects.filter(owner_agent=agent, purpose=GATEWAY_PASSWORD_PURPOSE).first()
    password = (SecretReference(secret_id=secret.id, driver_id=secret.driver_id, backend_name=secret.backend_name)
                if secret is not None else None)
    timeout = float(settings.OCC_CHAT_TIMEOUT_SECONDS)
    return get_compute_driver().chat(
        namespace_id=agent.namespace_id, agent_id=agent.id, revision_id=str(agent.active_revision_id),
        gateway_password=password,
        messages=[ChatMessage(role=m.role, content=m.content) for m in command.messages], timeout=timeout)
