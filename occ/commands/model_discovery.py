"""The model discovery command: which models a key can use. Nothing is stored."""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import AfterValidator, Field, model_validator

from occ.commands.base import Command, located, problem
from occ.commands.common import SecretRef
from occ.commands.configurations import check_own_namespace
from occ.drivers.model_providers import is_usable_api_key, is_usable_codex_token
from occ.errors import DetailCode


def _api_key(value: str) -> str:
    # The method decides which of the two shapes applies (checked below); the message never repeats the key.
    if not is_usable_api_key(value) and not is_usable_codex_token(value):
        raise problem(DetailCode.INVALID_FORMAT,
                      "The API key must be 8 to 4,096 printable ASCII characters without spaces "
                      "(a service account token: at- and up to 8,192 of them).")
    return value


class ModelDiscovery(Command):
    """``{provider, apiKey}`` or ``{provider, secretRef}``. ``baseUrl`` may only name the
    provider's configured public endpoint: any other address is refused, never contacted.
    ``authMethod`` ``codex_pat``: the credential is a ChatGPT workspace's service account token
    (``at-…``), which lists the models Codex offers that workspace (OpenAI only)."""

    # Any string: an unknown provider gets MODEL_DISCOVERY_UNSUPPORTED_PROVIDER (enter the ID manually).
    provider: Annotated[str, Field(max_length=64)]
    api_key: Annotated[str, AfterValidator(_api_key), Field(json_schema_extra={"writeOnly": True})] | None = None
    secret_ref: SecretRef | None = None
    base_url: Annotated[str, Field(max_length=2048)] | None = None
    auth_method: Literal["api_key", "codex_pat"] = "api_key"

    @model_validator(mode="after")
    def _one_credential(self) -> Self:
        if (self.api_key is None) == (self.secret_ref is None):
            raise problem(DetailCode.REQUIRED, "Send exactly one of apiKey and secretRef.")
        if self.auth_method == "codex_pat":
            if self.provider != "openai":
                raise located(("authMethod",), DetailCode.INVALID_VALUE,
                              "authMethod codex_pat (a service account token) works only with provider openai.")
            if self.base_url is not None:
                raise located(("baseUrl",), DetailCode.INVALID_VALUE,
                              "A service account token is sent only to OpenAI's own hosts; leave baseUrl out.")
            if self.api_key is not None and not is_usable_codex_token(self.api_key):
                raise located(("apiKey",), DetailCode.INVALID_FORMAT,
                              "A service account token starts with at- and has no spaces (an API key is sent "
                              "with authMethod api_key).")
        elif self.api_key is not None and not is_usable_api_key(self.api_key):
            raise located(("apiKey",), DetailCode.INVALID_FORMAT,
                          "The API key must be 8 to 4,096 printable ASCII characters without spaces.")
        return self

    def check_namespace(self, namespace_id: str) -> None:
        if self.secret_ref is not None:
            check_own_namespace([(("secretRef",), self.secret_ref)], namespace_id,
                                "The Secret must belong to this Namespace.")
