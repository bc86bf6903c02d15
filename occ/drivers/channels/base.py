"""The ChannelDriver contract: checking a native channel's credentials and looking up its
directory (people and channels) for the console's pickers. A driver never sends a message."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any

# Reads the value of the Secret bound to an environment variable, after authorizing the
# caller's ``secret:operate`` on that exact Secret: read_secret(env_name, json_pointer) -> value.
SecretReader = Callable[[str, str], str]


class ChannelDriver(ABC):
    #: the key under the native document's ``channels`` object this driver checks ("slack")
    channel: str

    @abstractmethod
    def check_credentials(self, *, values: Mapping[str, Any], secret_bindings: Mapping[str, Any],
                          read_secret: SecretReader) -> None:
        """Check the channel's configured credentials in ``values`` (skip when absent or
        disabled); raise an ``OccError`` with a ``CHANNEL_CREDENTIAL_*`` code and the native
        field's JSON pointer otherwise."""
