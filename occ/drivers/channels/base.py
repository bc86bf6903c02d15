"""The ChannelDriver contract: checking a native channel's credentials and looking up its
directory (people and channels) for the console's pickers. A driver never sends a message."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from occ.errors import Detail, DetailCode, NotImplementedYet, OccError

# Reads the value of the Secret bound to an environment variable, after authorizing the
# caller's ``secret:operate`` on that exact Secret: read_secret(env_name, json_pointer) -> value.
SecretReader = Callable[[str, str], str]

# Where the native document sits in the provisioning request body: credential errors point
# at ``VALUES_POINTER + "/channels/<channel>/..."``.
VALUES_POINTER = "/configuration/values"
BINDINGS_POINTER = "/configuration/secretBindings"

DirectoryKind = Literal["users", "channels"]


@dataclass(frozen=True)
class DirectoryCandidate:
    id: str
    name: str
    display_name: str | None = None

    def as_wire(self) -> dict[str, str]:
        wire = {"id": self.id, "name": self.name}
        if self.display_name:
            wire["displayName"] = self.display_name
        return wire


@dataclass(frozen=True)
class DirectoryPage:
    workspace_id: str
    workspace_name: str | None
    candidates: list[DirectoryCandidate]
    next_cursor: str | None
    complete: bool

    def as_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"workspaceId": self.workspace_id}
        if self.workspace_name:
            wire["workspaceName"] = self.workspace_name
        wire["candidates"] = [c.as_wire() for c in self.candidates]
        if self.next_cursor:
            wire["nextCursor"] = self.next_cursor
        wire["complete"] = self.complete
        return wire


class ChannelDriver(ABC):
    #: the key under the native document's ``channels`` object this driver checks ("slack")
    channel: str
    #: the environment variables that carry this channel's credentials by convention: a
    #: request binding one of them asks for the channel even when its document does not
    binding_envs: tuple[str, ...] = ()

    def requested(self, values: Mapping[str, Any], secret_bindings: Mapping[str, Any]) -> bool:
        """Whether the request asks for this channel: its document enables it, or it binds one
        of the channel's credential variables (the tokens would reach the runtime either way)."""
        return self.configured(values) or any(env in secret_bindings for env in self.binding_envs)

    def configured(self, values: Mapping[str, Any]) -> bool:
        """Whether ``values`` enable this driver's channel, so ``check_credentials`` has
        something to check."""
        channels = values.get("channels")
        section = channels.get(self.channel) if isinstance(channels, Mapping) else None
        return isinstance(section, Mapping) and section.get("enabled") is not False

    @abstractmethod
    def check_credentials(self, *, values: Mapping[str, Any], secret_bindings: Mapping[str, Any],
                          read_secret: SecretReader) -> None:
        """Check the channel's credentials: those ``values`` configure and those bound to
        ``binding_envs`` (skip when the request asks for neither); raise an ``OccError`` with a
        ``CHANNEL_CREDENTIAL_*`` code and the JSON pointer of the native field or the binding."""

    def lookup_directory(self, *, token: str, kind: DirectoryKind, query: str | None = None,
                         cursor: str | None = None, ids: Sequence[str] | None = None) -> DirectoryPage:
        """People or channels of the workspace ``token`` belongs to: one page of a listing
        (``query`` filters it, ``cursor`` continues it) or the labels of exact ``ids``.
        Raises a ``ChannelDirectoryError``."""
        raise NotImplementedYet("This channel has no directory lookup.")


# --- errors ---------------------------------------------------------------------------------
# Messages are ours: never the provider's text, never a token.


class ChannelCredentialError(OccError):
    detail_code = DetailCode.INVALID_VALUE

    @classmethod
    def at(cls, path: str, message: str, *, detail_code: str | None = None) -> ChannelCredentialError:
        return cls(message, details=[Detail(detail_code or cls.detail_code, path)])


class ChannelCredentialBindingRequired(ChannelCredentialError):
    """The token is not an environment reference with a Secret binding."""

    status = 400
    code = "CHANNEL_CREDENTIAL_BINDING_REQUIRED"
    detail_code = DetailCode.REQUIRED
    default_message = "The channel token must come from a Secret bound to an environment variable."


class ChannelCredentialRoleMismatch(ChannelCredentialError):
    """The bound Secret holds a token of another kind (an app token where a bot token belongs)."""

    status = 400
    code = "CHANNEL_CREDENTIAL_ROLE_MISMATCH"
    default_message = "The Secret holds a different kind of channel token."


class ChannelCredentialRejected(ChannelCredentialError):
    """The provider refused the token. 400 like any other input the client must change
    (the Secret's value), not 422, which this API uses nowhere."""

    status = 400
    code = "CHANNEL_CREDENTIAL_REJECTED"
    default_message = "The channel provider did not accept the token."


class ChannelCredentialUnavailable(ChannelCredentialError):
    status = 503
    code = "CHANNEL_CREDENTIAL_UNAVAILABLE"
    default_message = "OCC could not check the channel token with its provider. Try again shortly."


class ChannelDirectoryError(OccError):
    pass


class ChannelDirectoryCredentialsRejected(ChannelDirectoryError):
    status = 400
    code = "CHANNEL_DIRECTORY_CREDENTIALS_REJECTED"
    default_message = "The selected Secret does not hold a bot token the channel provider accepts."


class ChannelDirectoryMissingScope(ChannelDirectoryError):
    status = 400
    code = "CHANNEL_DIRECTORY_MISSING_SCOPE"
    default_message = "The bot token lacks a permission (scope) the directory lookup needs."


class ChannelDirectoryRateLimited(ChannelDirectoryError):
    status = 429
    code = "CHANNEL_DIRECTORY_RATE_LIMITED"
    default_message = "The channel provider is limiting requests. Wait a minute, then search again."


class ChannelDirectoryInvalidResponse(ChannelDirectoryError):
    status = 503
    code = "CHANNEL_DIRECTORY_INVALID_RESPONSE"
    default_message = "The channel provider answered in a way OCC does not understand. Enter exact IDs instead."


class ChannelDirectoryUnavailable(ChannelDirectoryError):
    status = 503
    code = "CHANNEL_DIRECTORY_UNAVAILABLE"
    default_message = "OCC could not reach the channel provider. Try again shortly, or enter exact IDs."
