"""A turn of a conversation with an Agent (the console's Chat tab): the whole conversation so
far, the person's new message last. OCC forwards it to the gateway and stores none of it."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from occ.commands.base import Command, problem
from occ.errors import DetailCode

MESSAGES_MAX = 100
MESSAGE_MAX_CHARS = 16_000


class ChatTurn(Command):
    role: Literal["user", "assistant"]
    content: Annotated[str, Field(min_length=1, max_length=MESSAGE_MAX_CHARS)]


class AgentChat(Command):
    conversation_id: Annotated[str, Field(pattern=r"^cnv_[0-9a-f-]{36}$")] | None = None
    messages: Annotated[list[ChatTurn], Field(min_length=1, max_length=MESSAGES_MAX)]

    @model_validator(mode="after")
    def _ends_with_the_person(self) -> AgentChat:
        if self.messages[-1].role != "user":
            raise problem(DetailCode.INVALID_VALUE, "The last message must be the person's.")
        if not self.messages[-1].content.strip():
            raise problem(DetailCode.INVALID_VALUE, "Write a message first.")
        return self
