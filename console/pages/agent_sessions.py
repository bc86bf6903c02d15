"""The Agent page's Sessions tab: the Agent's sessions from OCC's index (metadata only), each a
link to its transcript; for someone who may not read the Agent's conversations, a word on why."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.urls import reverse

from occ.selectors.agent_sessions import SessionQuery, agent_session_page

if TYPE_CHECKING:
    from console.pages.agent_screen import Screen

NO_CONVERSATIONS = ("You may not read this Agent's conversations: ask an administrator for "
                    "read_conversations:agent on it.")


def sessions_context(screen: Screen, *, after: str = "") -> dict[str, Any]:
    if not screen.may["read_conversations"]:
        return {"denied": NO_CONVERSATIONS}
    _, rows, next_cursor = agent_session_page(actor=screen.actor, namespace_id=screen.agent.namespace_id,
                                              agent_id=screen.agent.id, query=SessionQuery(), after=after)
    return {"rows": rows, "next": next_cursor,
            "all_url": f"{reverse('console:sessions')}?agent={screen.agent.id}"}
