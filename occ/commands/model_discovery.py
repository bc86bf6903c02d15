"""The model discovery command: which models a key can use. Nothing is stored."""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import AfterValidator, Field, model_validator

from occ.commands.base import Command, problem
from occ.commands.common import SecretRef
from occ.commands.configurations import check_own_namespace
from occ.drivers.model_providers import is_usable_api_key
from occ.errors import DetailCode


def _api_key(value: str) -> str:
    if not is_usable_api_key(value):
        # The message never repeats the key.
        raise problem(DetailCode.INVALID_FORMAT,
                      "The API key must be 8 to 4,096 printable ASCII characters without spaces.")
    return value


class ModelDiscovery(Command):
    """``{provider, apiKey}`` or ``{provider, secretRef}``. ``baseUrl`` may only name the
    provider's configured public endpoint: any other address is refused, never contacted."""

    # Any string: an unknown provider gets MODEL_DISCOVERY_UNSUPPORTED_PROVIDER (enter the ID manually).
    provider: Annotated[str, Field(max_length=64)]
    api_key: Annotated[str, AfterValidator(_api_key), Field(json_schema_extra={"writeOnly": True})] | None = None
    secret_ref: SecretRef | None = None
    base_url: Annotated[str, Field(max_length=2048)] | None = None

    @model_validator(mode="after")
    def _one_credential(self) -> Self:
        if (self.api_key is None) == (self.secret_ref is None):
            raise problem(DetailCode.REQUIRED, "Send exactly one of apiKey and secretRef.")
        return self

    def check_namespace(self, namespace_id: str) -> None:
        if self.secret_ref is not None:
            check_own_namespace([(("secretRef",), self.secret_ref)], namespace_id,
                                "The Secret must belong to this Namespace.")
