"""The JSON API: one NinjaAPI, the envelope, and the mapping from domain errors."""

from __future__ import annotations

import json
import logging
from typing import Any

from django.db import DatabaseError, DataError, IntegrityError
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI, Swagger
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.openapi.schema import OpenAPISchema
from ninja.parser import Parser

from occ.api.auth import ApiKeyAuth
from occ.api.envelope import error_response
from occ.api.routers import (
    agents,
    audit,
    auth,
    channel_directory,
    configurations,
    deployments,
    iam,
    installation,
    model_discovery,
    namespaces,
    permissions,
    plugin_discovery,
    presets,
    provisioning,
    repositories,
    revisions,
    secrets,
    sessions,
    sharing,
    usage,
)
from occ.api.schemas import BODY_ERROR_STATUSES, ERROR_STATUSES, ErrorEnvelope
from occ.commands.base import invalid_request, pointer
from occ.errors import Detail, DetailCode, OccError
from occ.iam.actor import Actor
from occ.services.audit import audit_denial

logger = logging.getLogger("occ.api")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class RepeatedKey(ValueError):
    """A JSON object that names one key twice; ``path`` is that key's location."""

    def __init__(self, path: tuple[str | int, ...]) -> None:
        super().__init__("a JSON object repeats a key")
        self.path = path


class _Repeating(dict[str, Any]):
    """A parsed JSON object that named ``key`` more than once."""

    def __init__(self, pairs: list[tuple[str, Any]], key: str) -> None:
        super().__init__(pairs)
        self.key = key


def _repeated_at(value: Any, path: tuple[str | int, ...] = ()) -> tuple[str | int, ...] | None:
    if isinstance(value, _Repeating):
        return (*path, value.key)
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _repeated_at(item, (*path, key))
        if found is not None:
            return found
    return None


class StrictJsonParser(Parser):
    """JSON with no NaN or Infinity and no key named twice in one object: Python's parser lets
    the last one win, so two readers of one body could see different values."""

    def parse_body(self, request: HttpRequest) -> Any:
        repeated = False

        def object_of(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
            nonlocal repeated
            keys = [key for key, _ in pairs]
            if len(set(keys)) == len(keys):
                return dict(pairs)
            repeated = True
            return _Repeating(pairs, next(key for i, key in enumerate(keys) if key in keys[:i]))

        data = json.loads(request.body.decode("utf-8"), parse_constant=_reject_constant,
                          object_pairs_hook=object_of)
        if repeated:
            raise RepeatedKey(_repeated_at(data) or ())
        return data


ERROR_REF = {"$ref": "#/components/schemas/ErrorEnvelope"}
BODY_METHODS = frozenset({"post", "put", "patch"})


class OccApi(NinjaAPI):
    def get_openapi_schema(self, *, path_prefix: str | None = None,
                           path_params: dict[str, Any] | None = None) -> OpenAPISchema:
        """The document with the error envelope under every error status an operation answers."""
        schema = super().get_openapi_schema(path_prefix=path_prefix, path_params=path_params)
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        envelope = ErrorEnvelope.model_json_schema(ref_template="#/components/schemas/{model}")
        components.update(envelope.pop("$defs", {}))
        components["ErrorEnvelope"] = envelope
        for item in schema["paths"].values():
            for method, operation in item.items():
                statuses = ERROR_STATUSES + (BODY_ERROR_STATUSES if method in BODY_METHODS else ())
                for status in statuses:
                    operation["responses"].setdefault(str(status), {
                        "description": "An error, in the envelope.",
                        "content": {"application/json": {"schema": ERROR_REF}}})
        return schema


api = OccApi(
    title="OCC API",
    version="1",
    description="Control plane for OpenClaw agents.",
    auth=ApiKeyAuth(),
    parser=StrictJsonParser(),
    urls_namespace="occ-api",
    openapi_url="api/openapi.json",
    # The API reference: ninja's Swagger UI from its own static files ("ninja" is an installed
    # app, so no CDN), our template (templates/ninja/swagger.html); no online validator call.
    docs_url="api/docs",
    docs=Swagger(settings={"validatorUrl": None, "defaultModelsExpandDepth": 0}),
)

def _body_location(error: dict[str, Any]) -> dict[str, Any]:
    # ninja prefixes body locations with ("body", "<param name>"), others with their source.
    loc = tuple(error.get("loc", ()))
    return {**error, "loc": loc[2:] if len(loc) >= 2 and loc[0] == "body" else loc[1:]}


@api.exception_handler(ValidationError)
def _validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    if any(tuple(e.get("loc", ()))[:1] == ("path",) for e in exc.errors):
        return error_response(404, "NOT_FOUND", "The resource does not exist.")
    invalid = invalid_request(_body_location(e) for e in exc.errors)
    return error_response(invalid.status, invalid.code, invalid.message, invalid.details)


@api.exception_handler(OccError)
def _occ_error(request: HttpRequest, exc: OccError) -> HttpResponse:
    denial = getattr(exc, "denial", None)
    if denial is not None:
        auth = getattr(request, "auth", None)
        actor = auth if isinstance(auth, Actor) else None
        try:
            audit_denial(denial, actor=actor)
        except OccError as audit_exc:
            return error_response(audit_exc.status, audit_exc.code, audit_exc.message)
    return error_response(exc.status, exc.code, exc.message, exc.details)


@api.exception_handler(AuthenticationError)
def _unauthenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return error_response(401, "UNAUTHENTICATED", "Sign in or send a valid x-api-key header.")


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if exc.status_code == 400:
        if isinstance(exc.__cause__, RepeatedKey):
            return error_response(400, "INVALID_REQUEST", "The request body names a key twice in one object.",
                                  [Detail(DetailCode.INVALID_FORMAT, pointer(exc.__cause__.path))])
        if isinstance(exc.__cause__, RecursionError):
            return error_response(400, "INVALID_REQUEST", "The request body is nested too deeply.",
                                  [Detail(DetailCode.TOO_DEEP, "")])
        return error_response(400, "INVALID_REQUEST", "The request body is not valid JSON.",
                              [Detail(DetailCode.INVALID_FORMAT, "")])
    return error_response(exc.status_code, "INVALID_REQUEST", "The request could not be processed.")


@api.exception_handler(Http404)
def _not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return error_response(404, "NOT_FOUND", "The resource does not exist.")


@api.exception_handler(DatabaseError)
def _database_error(request: HttpRequest, exc: DatabaseError) -> HttpResponse:
    if isinstance(exc, DataError | IntegrityError):
        # Their text quotes the refused data (PostgreSQL's CONTEXT and DETAIL lines), so a
        # request body: the log names the kind and the SQLSTATE only.
        logger.error("database refused data on %s %s: %s (SQLSTATE %s)", request.method, request.path,
                     type(exc).__name__, getattr(exc.__cause__, "sqlstate", None))
    else:
        logger.exception("database error on %s %s", request.method, request.path)
    return error_response(503, "DEPENDENCY_UNAVAILABLE", "The database is unavailable. Try again shortly.")


@api.exception_handler(Exception)
def _internal_error(request: HttpRequest, exc: Exception) -> HttpResponse:
    logger.exception("unhandled error on %s %s", request.method, request.path)
    return error_response(500, "INTERNAL_ERROR", "The server could not complete the request.")


def _register_routers() -> None:
    api.add_router("", installation.router)
    api.add_router("", namespaces.router)
    api.add_router("", configurations.router)
    api.add_router("", secrets.router)
    api.add_router("", presets.router)
    # Before agents: `/agents/provision`, `/agents/models` and `/agents/repository-options` would
    # otherwise match `/agents/{agent_id}`.
    api.add_router("", provisioning.router)
    api.add_router("", model_discovery.router)
    api.add_router("", plugin_discovery.router)
    api.add_router("", channel_directory.router)
    api.add_router("", repositories.router)
    api.add_router("", agents.router)
    api.add_router("", revisions.router)
    api.add_router("", deployments.router)
    api.add_router("", sharing.router)
    api.add_router("", iam.router)
    api.add_router("", auth.router)
    api.add_router("", permissions.router)
    api.add_router("", audit.router)
    api.add_router("", usage.router)
    api.add_router("", sessions.router)


_register_routers()
