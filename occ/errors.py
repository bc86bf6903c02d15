"""Domain errors. Every entry point maps them to its own surface (API envelope, form
errors, admin messages); messages are ours, never upstream text or input values."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class DetailCode:
    REQUIRED = "REQUIRED"
    UNKNOWN_FIELD = "UNKNOWN_FIELD"
    INVALID_TYPE = "INVALID_TYPE"
    INVALID_FORMAT = "INVALID_FORMAT"
    INVALID_VALUE = "INVALID_VALUE"
    TOO_LONG = "TOO_LONG"
    TOO_DEEP = "TOO_DEEP"


MESSAGE_LIMIT = 256


def fit_message(message: str) -> str:
    """``message`` cut to the wire's limit, with an ellipsis when cut (lists of names grow)."""
    return message if len(message) <= MESSAGE_LIMIT else message[:MESSAGE_LIMIT - 3] + "..."


@dataclass(frozen=True)
class Detail:
    code: str
    path: str  # a JSON pointer into the request body

    def as_wire(self) -> dict[str, str]:
        return {"code": self.code, "path": self.path}


class OccError(Exception):
    status = 500
    code = "INTERNAL_ERROR"
    default_message = "The server could not complete the request."

    def __init__(self, message: str | None = None, *, details: list[Detail] | None = None,
                 code: str | None = None) -> None:
        self.message = message or self.default_message
        self.details = details or []
        if code is not None:
            self.code = code
        super().__init__(self.message)

    def relocate(self, prefix: str) -> None:
        """Report this refusal in the request of a caller that passed part of it on: each
        detail's pointer goes under ``prefix``, where that part sits in the caller's request."""
        self.details = [Detail(detail.code, prefix + detail.path) for detail in self.details]


class InvalidRequest(OccError):
    status = 400
    code = "INVALID_REQUEST"
    default_message = "The request is not valid."

    @classmethod
    def at(cls, path: str, detail_code: str, message: str) -> InvalidRequest:
        return cls(message, details=[Detail(detail_code, path)])


class Unauthenticated(OccError):
    status = 401
    code = "UNAUTHENTICATED"
    default_message = "Sign in or send a valid x-api-key header."


@dataclass
class Denial:
    """What was refused, for the denial audit event."""

    actor_id: str | None
    action: str
    resource_kind: str
    namespace_id: str | None = None
    resource_id: str | None = None
    reason: str = "no_matching_grant"
    extra: dict[str, Any] = field(default_factory=dict)


class Forbidden(OccError):
    status = 403
    code = "FORBIDDEN"
    default_message = "You do not have permission to do this."

    def __init__(self, message: str | None = None, *, denial: Denial | None = None) -> None:
        super().__init__(message)
        self.denial = denial


class NotFound(OccError):
    status = 404
    code = "NOT_FOUND"
    default_message = "The resource does not exist."


class Conflict(OccError):
    """409. ``code`` is one of RESOURCE_CONFLICT, AGENT_DELETING, NAMESPACE_NOT_READY,
    NAMESPACE_NOT_EMPTY, INSTALLATION_EXISTS, BUDGET_EXCEEDED."""

    status = 409
    code = "RESOURCE_CONFLICT"
    default_message = "The request conflicts with the current state of the resource."


class NotImplementedYet(OccError):
    status = 501
    code = "NOT_IMPLEMENTED"
    default_message = "This capability is not available yet."


class DependencyUnavailable(OccError):
    status = 503
    code = "DEPENDENCY_UNAVAILABLE"
    default_message = "A service OCC depends on is unavailable. Try again shortly."


class UnknownOutcome(OccError):
    status = 503
    code = "UNKNOWN_OUTCOME"
    default_message = "OCC could not confirm whether the write happened. Read the resource back before retrying."


ERROR_CODES = (
    "INVALID_REQUEST", "UNAUTHENTICATED", "FORBIDDEN", "NOT_FOUND", "METHOD_NOT_ALLOWED",
    "INSTALLATION_EXISTS", "RESOURCE_CONFLICT", "AGENT_DELETING", "NAMESPACE_NOT_READY",
    "NAMESPACE_NOT_EMPTY", "PAYLOAD_TOO_LARGE", "UNSUPPORTED_MEDIA_TYPE", "UNKNOWN_OUTCOME",
    "NOT_IMPLEMENTED", "INTERNAL_ERROR", "DEPENDENCY_UNAVAILABLE",
    "CHANNEL_CREDENTIAL_BINDING_REQUIRED", "CHANNEL_CREDENTIAL_ROLE_MISMATCH", "CHANNEL_CREDENTIAL_REJECTED",
    "CHANNEL_CREDENTIAL_UNAVAILABLE", "CHANNEL_DIRECTORY_CREDENTIALS_REJECTED", "CHANNEL_DIRECTORY_MISSING_SCOPE",
    "CHANNEL_DIRECTORY_RATE_LIMITED", "CHANNEL_DIRECTORY_INVALID_RESPONSE", "CHANNEL_DIRECTORY_UNAVAILABLE",
    "MODEL_DISCOVERY_CREDENTIALS_REJECTED", "MODEL_DISCOVERY_RATE_LIMITED", "MODEL_DISCOVERY_UNAVAILABLE",
    "MODEL_DISCOVERY_INVALID_RESPONSE", "MODEL_DISCOVERY_UNSUPPORTED_PROVIDER", "BUDGET_EXCEEDED",
    "GATEWAY_UNAVAILABLE", "APPROVAL_ALREADY_DECIDED",
    "REPOSITORY_OPTIONS_UNAVAILABLE",
)
