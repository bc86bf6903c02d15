"""The channel directory lookup command behind the console's Slack pickers. Nothing is stored."""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import Field, model_validator

from occ.commands.base import Command, located
from occ.drivers.channels.base import DirectoryKind
from occ.errors import DetailCode

IDS_MAX = 20

DirectoryId = Annotated[str, Field(max_length=64)]


class DirectoryLookup(Command):
    """A page of people or channels (``query``, ``cursor``), or the labels of exact ``ids``."""

    secret_id: str
    kind: DirectoryKind
    query: Annotated[str, Field(max_length=200)] | None = None
    cursor: Annotated[str, Field(max_length=2000)] | None = None
    ids: Annotated[list[DirectoryId], Field(max_length=IDS_MAX)] | None = None
    # The picker edits this exact Agent / Configuration: their update right replaces agent:create.
    agent_id: str | None = None
    configuration_id: str | None = None

    @model_validator(mode="after")
    def _ids_alone(self) -> Self:
        if self.ids is not None and (self.query is not None or self.cursor is not None):
            raise located(("ids",), DetailCode.INVALID_VALUE, "Send either ids, or a query and a cursor, not both.")
        return self
