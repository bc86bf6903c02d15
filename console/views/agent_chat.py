"""The Agent page's Chat tab: a conversation with the Agent's running gateway.

``POST …/chat`` takes the conversation so far as JSON (``occ.commands.chat.AgentChat``; the
browser keeps the turns, OCC stores none of them) and answers ``text/event-stream``: one
``conversation`` event (its id), ``token`` events as the model streams, then ``done`` or one
``error`` in plain words. A refusal before anything streams (no ``invoke:agent``, the Agent
stopped, a bad body) is a JSON ``{"title", "message"}`` with its status; a 403 is audited.
``POST …/chat/new`` forgets the conversation and answers the empty tab (htmx).

The browser talks to OCC only: the gateway's address and password stay in the compute driver.
A conversation is audited once, by its first turn (``occ.services.agent_chat``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

from django.http import HttpResponse, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.urls import path
from django.views.decorators.http import require_POST

from console.common import ConsoleRequest, console_view, current
from console.pages.agent_outcome import audit_refusal
from console.pages.agent_screen import Screen, respond
from occ.commands.base import parse
from occ.commands.chat import AgentChat
from occ.drivers.compute import CHAT_GATEWAY_NOT_RUNNING, CHAT_MODEL_REFUSED, CHAT_TIMEOUT, ComputeError
from occ.errors import Forbidden, InvalidRequest, OccError
from occ.services.agent_chat import agent_chat, agent_conversation_start

logger = logging.getLogger(__name__)

CONVERSATIONS_KEY = "occ.console.conversations"  # agent id -> the conversation id (ids only)

PLAIN_FAILURES = {
    CHAT_GATEWAY_NOT_RUNNING: "The Agent's gateway is not running. Deploy the Agent, or wait until "
                              "its deployment finishes, then send again.",
    CHAT_TIMEOUT: "The Agent did not answer in time. Send again, or start a new conversation.",
    CHAT_MODEL_REFUSED: "The model refused to answer (its provider returned an error). Check the "
                        "Agent's model and its API key, then send again.",
}
UNSUPPORTED = "Chat is not available for this Agent's compute driver."
FAILED = "The conversation failed. Send again, or start a new conversation."


def plain_failure(exc: ComputeError) -> str:
    return PLAIN_FAILURES.get(exc.code, UNSUPPORTED if exc.code == "CHAT_UNSUPPORTED" else FAILED)


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def _refusal(exc: OccError, *, title: str) -> JsonResponse:
    return JsonResponse({"title": title, "message": exc.message}, status=exc.status)


def _stream(conversation_id: str, reply: Iterator[str], agent_id: str) -> Iterator[bytes]:
    yield _event("conversation", {"id": conversation_id})
    try:
        for text in reply:
            yield _event("token", {"text": text})
    except ComputeError as exc:
        logger.info("chat with agent %s failed: %s", agent_id, exc.code)
        yield _event("error", {"code": exc.code, "message": plain_failure(exc)})
        return
    except Exception:  # the stream has begun: the person gets words, the log the traceback
        logger.exception("chat with agent %s failed", agent_id)
        yield _event("error", {"code": "INTERNAL_ERROR", "message": FAILED})
        return
    yield _event("done", {})


@require_POST
@console_view
def chat_send(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponseBase:
    actor = current(request).actor
    try:
        command = parse(AgentChat, json.loads(request.body or b"null"))
    except ValueError:
        return _refusal(InvalidRequest("The message could not be read."), title="Message not sent")
    except InvalidRequest as exc:
        return _refusal(exc, title="Message not sent")
    conversations = dict(request.session.get(CONVERSATIONS_KEY, {}))
    conversation_id = conversations.get(agent_id)
    try:
        if conversation_id is None or command.conversation_id != conversation_id:
            conversation_id = agent_conversation_start(actor=actor, namespace_id=namespace_id, agent_id=agent_id).id
            conversations[agent_id] = conversation_id
            request.session[CONVERSATIONS_KEY] = conversations
        reply = agent_chat(actor=actor, namespace_id=namespace_id, agent_id=agent_id, command=command)
    except Forbidden as exc:
        audit_refusal(request, exc)
        return _refusal(exc, title="You may not talk to this Agent")
    except OccError as exc:
        return _refusal(exc, title="Message not sent")
    response = StreamingHttpResponse(_stream(conversation_id, reply, agent_id), content_type="text/event-stream")
    response["Cache-Control"] = "no-store"
    response["X-Accel-Buffering"] = "no"  # a buffering proxy in front must pass tokens on as they come
    return response


@require_POST
@console_view
def chat_new(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    """Forget the conversation; the next message starts (and audits) a new one."""
    screen = Screen.load(request, namespace_id, agent_id)
    conversations = dict(request.session.get(CONVERSATIONS_KEY, {}))
    if conversations.pop(agent_id, None) is not None:
        request.session[CONVERSATIONS_KEY] = conversations
    return respond(screen, "agent-chat", tab="chat")


urlpatterns = [
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/chat", chat_send, name="agent-chat"),
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/chat/new", chat_new, name="agent-chat-new"),
]
