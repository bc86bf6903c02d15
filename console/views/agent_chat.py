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

from django.http import HttpResponse, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.urls import path
from django.views.decorators.http import require_POST

from console.common import ConsoleRequest, console_view, current
from console.pages.agent_outcome import audit_refusal
from console.pages.agent_screen import Screen, respond
from occ.commands.base import parse
from occ.commands.chat import AgentChat
from occ.errors import Forbidden, InvalidRequest, OccError
from occ.iam.sign_in import client_address
from occ.services.agent_chat import agent_chat, agent_conversation_start, chat_events

CONVERSATIONS_KEY = "occ.console.conversations"  # agent id -> the conversation id (ids only)


def _refusal(exc: OccError, *, title: str) -> JsonResponse:
    return JsonResponse({"title": title, "message": exc.message}, status=exc.status)


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
        reply = agent_chat(actor=actor, namespace_id=namespace_id, agent_id=agent_id, command=command,
                           client_address=client_address(request))
    except Forbidden as exc:
        audit_refusal(request, exc)
        return _refusal(exc, title="You may not talk to this Agent")
    except OccError as exc:
        return _refusal(exc, title="Message not sent")
    events = (event.sse() for event in chat_events(conversation_id, reply, agent_id=agent_id))
    response = StreamingHttpResponse(events, content_type="text/event-stream")
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
