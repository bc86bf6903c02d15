"""Talking to an Agent through OCC: the console's Chat tab proxies a conversation to the
Agent's running gateway through the compute driver (``ComputeDriver.chat``).

Each turn is authorized by ``invoke:agent`` on the exact Agent. A conversation is audited once,
when it starts (``openclaw.agents.conversation.start``, an ``access`` event with the
conversation's id and the revision it spoke to): never the text of any message. The caller
never learns the gateway's address or password; the driver resolves both.

While the gateway works on a reply, OCC asks the Agent's model endpoint itself
(``occ.drivers.model_providers.probe``): a gateway whose model endpoint is down retries for a
minute or more and then only says "the model returned an error", while a refused connection, a
name that does not resolve, a timeout or a rejected key is known at once. Found before the
first word of the reply, it ends the turn with that cause; found after the gateway failed, it
names the cause of that failure. The probe sends the Agent's model key only to the endpoint
the Agent's own configuration sends it to.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from django.conf import settings
from django.db import connections, transaction

from occ.commands.chat import AgentChat
from occ.drivers.compute import (
    CHAT_GATEWAY_NOT_RUNNING,
    CHAT_MODEL_REFUSED,
    CHAT_TIMEOUT,
    ChatMessage,
    ComputeError,
    SecretReference,
    get_compute_driver,
)
from occ.drivers.compute.base import GATEWAY_PASSWORD_PURPOSE
from occ.drivers.model_providers.probe import EndpointProblem, model_endpoint, probe_model_endpoint
from occ.errors import Conflict
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import authorize
from occ.ids import IdPrefix, new_id
from occ.models import Agent, AgentRevision, AgentStatus, AuditEvent, AuditKind, DesiredRuntimeState, Secret
from occ.selectors.agents import get_agent
from occ.selectors.namespaces import get_live_namespace
from occ.services.agent_lifecycle import last_active_revision
from occ.services.audit import audit_record
from occ.services.secrets import secret_value_use

CONVERSATION_STARTED = "openclaw.agents.conversation.start"
NOT_RUNNING_CODE = "AGENT_NOT_RUNNING"
# The chat failure codes for what the probe found (``ComputeError.code``, like the driver's).
CHAT_MODEL_ENDPOINT_REFUSED = "MODEL_ENDPOINT_REFUSED"
CHAT_MODEL_ENDPOINT_UNREACHABLE = "MODEL_ENDPOINT_UNREACHABLE"
CHAT_MODEL_ENDPOINT_TIMEOUT = "MODEL_ENDPOINT_TIMEOUT"
CHAT_MODEL_KEY_REJECTED = "MODEL_KEY_REJECTED"
MODEL_ENDPOINT_CODES = {
    EndpointProblem.REFUSED: CHAT_MODEL_ENDPOINT_REFUSED,
    EndpointProblem.UNREACHABLE: CHAT_MODEL_ENDPOINT_UNREACHABLE,
    EndpointProblem.TIMED_OUT: CHAT_MODEL_ENDPOINT_TIMEOUT,
    EndpointProblem.KEY_REJECTED: CHAT_MODEL_KEY_REJECTED,
}
PROBE_TIMEOUT_SECONDS = 10.0

logger = logging.getLogger(__name__)

# What a failed turn tells the person, by the failure's code (every face says the same).
CHAT_FAILURE_MESSAGES = {
    CHAT_GATEWAY_NOT_RUNNING: "The Agent's gateway is not running. Deploy the Agent, or wait until "
                              "its deployment finishes, then send again.",
    CHAT_TIMEOUT: "The Agent did not answer in time. Send again, or start a new conversation.",
    CHAT_MODEL_REFUSED: "The model refused to answer (its provider returned an error). Check the "
                        "Agent's model and its API key, then send again.",
    CHAT_MODEL_ENDPOINT_REFUSED:
        "The Agent's model endpoint refused the connection: nothing is listening at its address. Start the "
        "model server, or correct the base URL in the Configuration, then send again.",
    CHAT_MODEL_ENDPOINT_UNREACHABLE:
        "The Agent's model endpoint cannot be reached (its address does not resolve or has no route). Check the "
        "base URL in the Configuration and the network, then send again.",
    CHAT_MODEL_ENDPOINT_TIMEOUT:
        "The Agent's model endpoint did not answer in time. Check that the model server is up, then send again.",
    CHAT_MODEL_KEY_REJECTED:
        "The Agent's model provider rejected its API key. Replace the key in the Agent's model Secret, then "
        "send again.",
}
CHAT_UNSUPPORTED_MESSAGE = "Chat is not available for this Agent's compute driver."
CHAT_FAILED_MESSAGE = "The conversation failed. Send again, or start a new conversation."


def chat_failure_message(exc: ComputeError) -> str:
    return CHAT_FAILURE_MESSAGES.get(exc.code, CHAT_UNSUPPORTED_MESSAGE if exc.code == "CHAT_UNSUPPORTED"
                                     else CHAT_FAILED_MESSAGE)


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
    stopped = agent.desired_runtime_state == DesiredRuntimeState.STOPPED
    if agent.active_revision_id is None:  # a stopped Agent serves no revision either
        if stopped and last_active_revision(agent) is not None:
            raise AgentNotRunning("The Agent is stopped. Start it to talk to it.")
        raise AgentNotRunning("The Agent has not been deployed yet. Deploy it to talk to it.")
    if stopped:
        raise AgentNotRunning("The Agent is stopped. Start it to talk to it.")
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


def agent_conversation_continue(*, actor: Actor, namespace_id: str, agent_id: str,
                                conversation_id: str | None) -> Conversation:
    """The conversation ``conversation_id`` when this actor started it with this Agent (its start
    is in the audit log); otherwise a new one, started and audited. A caller that keeps no
    session (the API) cannot skip the audit by naming a conversation of its own."""
    agent = _invokable(actor, namespace_id, agent_id)
    if conversation_id is not None:
        started = AuditEvent.objects.filter(
            action=CONVERSATION_STARTED, actor_id=actor.id, namespace_id=agent.namespace_id, resource_id=agent.id,
            details__conversationId=conversation_id).first()
        if started is not None:
            return Conversation(id=conversation_id, agent_id=agent.id,
                                revision_id=str(started.details.get("revisionId") or agent.active_revision_id))
    return agent_conversation_start(actor=actor, namespace_id=namespace_id, agent_id=agent_id)


def agent_chat(*, actor: Actor, namespace_id: str, agent_id: str, command: AgentChat,
               client_address: str | None = None) -> Iterator[str]:
    """The reply to the conversation's last message, as the gateway streams it. Authorized now;
    the driver's failures (``ComputeError`` with a ``CHAT_*`` code) surface while iterating.
    ``client_address`` is the person's address as the web tier saw it (the driver may name it to
    the gateway)."""
    agent = _invokable(actor, namespace_id, agent_id)
    secret = Secret.objects.filter(owner_agent=agent, purpose=GATEWAY_PASSWORD_PURPOSE).first()
    password = (SecretReference(secret_id=secret.id, driver_id=secret.driver_id, backend_name=secret.backend_name)
                if secret is not None else None)
    timeout = float(settings.OCC_CHAT_TIMEOUT_SECONDS)
    reply = get_compute_driver().chat(
        namespace_id=agent.namespace_id, agent_id=agent.id, revision_id=str(agent.active_revision_id),
        gateway_password=password,
        messages=[ChatMessage(role=m.role, content=m.content) for m in command.messages], timeout=timeout,
        client_address=client_address)
    probe = _model_probe(agent)
    return reply if probe is None else _raced(reply, probe)


@dataclass(frozen=True)
class ChatEvent:
    """One event of a streamed turn, as every face sends it (``text/event-stream``):
    ``conversation`` (its id) first, ``token`` as the model streams, then ``done`` or one ``error``."""

    name: Literal["conversation", "token", "done", "error"]
    data: dict[str, str] = field(default_factory=dict)

    def sse(self) -> bytes:
        return f"event: {self.name}\ndata: {json.dumps(self.data, ensure_ascii=False)}\n\n".encode()


def chat_events(conversation_id: str, reply: Iterator[str], *, agent_id: str) -> Iterator[ChatEvent]:
    """The turn as events: a failure once the stream has begun is an ``error`` event in plain
    words (the log keeps the code, or the traceback of what was not expected)."""
    yield ChatEvent("conversation", {"id": conversation_id})
    try:
        for text in reply:
            yield ChatEvent("token", {"text": text})
    except ComputeError as exc:
        logger.info("chat with agent %s failed: %s", agent_id, exc.code)
        yield ChatEvent("error", {"code": exc.code, "message": chat_failure_message(exc)})
        return
    except Exception:
        logger.exception("chat with agent %s failed", agent_id)
        yield ChatEvent("error", {"code": "INTERNAL_ERROR", "message": CHAT_FAILED_MESSAGE})
        return
    yield ChatEvent("done")


# --- the model endpoint, asked beside the gateway ------------------------------------------------


def _model_probe(agent: Agent) -> Callable[[], EndpointProblem | None] | None:
    """A call that probes the serving revision's model endpoint with its model key; None when
    the endpoint cannot be told. The key is read here and held only by the call."""
    revision = AgentRevision.objects.filter(id=agent.active_revision_id).first()
    if revision is None:
        return None
    spec = revision.spec
    endpoint = model_endpoint(spec.configuration)
    if endpoint is None:
        return None
    secret = (Secret.objects.filter(id=spec.harness_secret_id, namespace_id=agent.namespace_id).first()
              if spec.harness_auth_method == "api_key" else None)
    api_key = None
    if secret is not None:
        try:
            api_key = secret_value_use(secret=secret, consumer=lambda value: value.strip())
        except Exception:  # a key that cannot be read now: probe without it (the gateway has its own copy)
            api_key = None
    return lambda: probe_model_endpoint(endpoint, api_key, timeout=PROBE_TIMEOUT_SECONDS)


def _failure(problem: EndpointProblem) -> ComputeError:
    return ComputeError(MODEL_ENDPOINT_CODES[problem], retryable=False, message=f"the model endpoint {problem.value}")


def _raced(reply: Iterator[str], probe: Callable[[], EndpointProblem | None]) -> Iterator[str]:
    """``reply`` as it streams, ended early by what ``probe`` finds before the first word.

    The gateway is read on a thread of its own (its socket blocks); a reply abandoned here is
    closed by that thread at its next word, and its connection ends with the gateway's answer
    (bounded by ``OCC_CHAT_TIMEOUT_SECONDS``)."""
    events: queue.Queue[tuple[str, object]] = queue.Queue()
    abandoned = threading.Event()

    def read() -> None:
        try:
            for text in reply:
                if abandoned.is_set():
                    break
                events.put(("token", text))
            events.put(("end", None))
        except BaseException as exc:
            events.put(("error", exc))
        finally:
            close = getattr(reply, "close", None)
            if close is not None:
                close()
            connections.close_all()  # this thread's own (a driver may read a Secret): never left open

    def ask() -> None:
        try:
            events.put(("probe", probe()))
        except Exception:
            events.put(("probe", None))

    threading.Thread(target=read, name="chat-reply", daemon=True).start()
    threading.Thread(target=ask, name="chat-model-probe", daemon=True).start()
    started = probed = False
    found: EndpointProblem | None = None
    try:
        while True:
            kind, value = events.get()
            if kind == "token":
                started = True
                yield str(value)
            elif kind == "probe":
                probed, found = True, value if isinstance(value, EndpointProblem) else None
                if found is not None and not started:
                    raise _failure(found)
            elif kind == "end":
                return
            else:
                raise _explained(value, events, probed=probed, found=found)
    finally:
        abandoned.set()


def _explained(error: object, events: queue.Queue[tuple[str, object]], *, probed: bool,
               found: EndpointProblem | None) -> BaseException:
    """The gateway's failure, named by the probe's verdict when the model endpoint is at fault
    (waiting for the verdict if it is still out: the probe is bounded)."""
    if not isinstance(error, ComputeError) or error.code == CHAT_GATEWAY_NOT_RUNNING:
        return error if isinstance(error, BaseException) else RuntimeError("chat failed")
    if not probed:
        try:
            while True:
                kind, value = events.get(timeout=PROBE_TIMEOUT_SECONDS + 1)
                if kind == "probe":
                    found = value if isinstance(value, EndpointProblem) else None
                    break
        except queue.Empty:
            found = None
    return error if found is None else _failure(found)
