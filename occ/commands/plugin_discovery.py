"""Plugin discovery commands: a catalog page or one entry's details. Nothing is stored.

At create time the credential is in the body: ``accessToken`` (a transient Codex service
account token, never stored) or ``secretRef`` (a Secret of the route's Namespace), or neither
when the installation's driver needs none. For an existing Agent the body never carries one:
the server uses the Agent's bound Secret.
"""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import AfterValidator, Field, model_validator

from occ.commands.base import Command, problem
from occ.commands.common import SecretRef
from occ.commands.configurations import check_own_namespace
from occ.errors import DetailCode

QUERY_MAX = 1024
CURSOR_MAX = 2048
TOKEN_MAX = 8192
REMOTE_ID_MAX = 256


def _token(value: str) -> str:
    if not value.strip() or any(ord(ch) < 33 or ord(ch) > 126 for ch in value):
        # The message never repeats the token.
        raise problem(DetailCode.INVALID_FORMAT, "accessToken must be printable ASCII without spaces.")
    return value


def _remote_id(value: str) -> str:
    if not value or any(ord(ch) < 33 or ord(ch) > 126 for ch in value):
        raise problem(DetailCode.INVALID_FORMAT, "pluginId must be an entry's remoteId.")
    return value


AccessToken = Annotated[str, Field(max_length=TOKEN_MAX, json_schema_extra={"writeOnly": True}),
                        AfterValidator(_token)]
Query = Annotated[str, Field(max_length=QUERY_MAX)]
Cursor = Annotated[str, Field(min_length=1, max_length=CURSOR_MAX)]
RemoteId = Annotated[str, Field(max_length=REMOTE_ID_MAX), AfterValidator(_remote_id)]


class _CreateCredential(Command):
    access_token: AccessToken | None = None
    secret_ref: SecretRef | None = None

    @model_validator(mode="after")
    def _at_most_one_credential(self) -> Self:
        if self.access_token is not None and self.secret_ref is not None:
            raise problem(DetailCode.INVALID_VALUE, "Send at most one of accessToken and secretRef.")
        return self

    def check_namespace(self, namespace_id: str) -> None:
        if self.secret_ref is not None:
            check_own_namespace([(("secretRef",), self.secret_ref)], namespace_id,
                                "The Secret must belong to this Namespace.")


class PluginDiscovery(_CreateCredential):
    """Create Agent: one page. ``q`` searches the whole catalog (empty lists everything);
    ``cursor`` is the ``nextCursor`` of the page before, for the same ``q``."""

    q: Query = ""
    cursor: Cursor | None = None


class PluginDetailsDiscovery(_CreateCredential):
    """Create Agent: one entry with its tools; ``pluginId`` is the entry's ``remoteId``."""

    plugin_id: RemoteId


class AgentPluginDiscovery(Command):
    """An existing Agent: one page, with the Agent's bound credential."""

    q: Query = ""
    cursor: Cursor | None = None


class AgentPluginDetailsDiscovery(Command):
    """An existing Agent: one entry with its tools, with the Agent's bound credential."""

    plugin_id: RemoteId
