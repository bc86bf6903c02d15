"""The API boundary: request ids, transport checks and the headers every response carries.

Runs before routing, so oversize bodies, wrong content types and query strings are refused
before anything authenticates or parses.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.utils.http import parse_header_parameters

from occ.api.envelope import error_response
from occ.context import current_request_id
from occ.ids import IdPrefix, new_id

# Also `//namespaces/...` and `/NAMESPACES/...`: no route, but the caller meant the API and gets
# its 404 in the envelope rather than the HTML page.
API_PATH = re.compile(r"^/+(installation|namespaces|backends|api|audit|sessions|approvals)(/|$)", re.IGNORECASE)
# Agent create and provisioning may carry initial workspace files; a chat turn the conversation so far.
LARGE_BODY_PATH = re.compile(r"^/namespaces/[^/]+/agents(/provision|/[^/]+/chat)?$")
# The reads that page or filter: a GET there may carry its documented query parameters (ninja
# validates them); everywhere else a query string is refused, so nothing is silently ignored.
QUERY_PATH = re.compile(r"^/namespaces/[^/]+/(agents|configurations|presets|secrets|usage|budgets|agents/[^/]+/logs"
                        r"|agents/([^/]+/)?repository-options|agents/[^/]+/(revisions|shares|shares/subjects|sessions(/[^/]+)?)"
                        r"|iam/(roles|access-bindings|service-principals))$|^/namespaces$|^/audit$|^/sessions$"
                        r"|^/api/auth/(accounts|service-keys|roles)$|^/installation/service-principals$")
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
# The code of an error response Django made itself (a foreign Host is 400, CSRF 403, ...).
STATUS_CODES = {400: "INVALID_REQUEST", 401: "UNAUTHENTICATED", 403: "FORBIDDEN", 404: "NOT_FOUND",
                405: "METHOD_NOT_ALLOWED", 413: "PAYLOAD_TOO_LARGE", 415: "UNSUPPORTED_MEDIA_TYPE",
                501: "NOT_IMPLEMENTED", 503: "DEPENDENCY_UNAVAILABLE"}
STATUS_MESSAGES = {400: "The request could not be processed.", 403: "The request is not allowed.",
                   404: "No such route.", 405: "This route does not allow that method."}
# No id, name or route holds a control character; `%00` in a path id would otherwise reach the
# database (PostgreSQL refuses a NUL in text) instead of being refused here.
PATH_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def is_api_path(path: str) -> bool:
    return bool(API_PATH.match(path))


def _body_limit(path: str) -> int:
    if LARGE_BODY_PATH.match(path):
        return settings.OCC_API_LARGE_BODY_LIMIT
    return settings.OCC_API_BODY_LIMIT


def _declared_length(request: HttpRequest) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


def _is_json(content_type: str) -> bool:
    """``application/json`` with no parameter but a UTF-8 charset, quoted or not (RFC 9110)."""
    media_type, params = parse_header_parameters(content_type)
    if media_type != "application/json":
        return False
    return {name.lower(): value.lower() for name, value in params.items()} in ({}, {"charset": "utf-8"})


class ApiBoundaryMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = new_id(IdPrefix.REQUEST)
        token = current_request_id.set(request_id)
        request.occ_request_id = request_id  # type: ignore[attr-defined]
        try:
            api = is_api_path(request.path)
            if not api and PATH_CONTROL.search(request.path):
                response: HttpResponse = HttpResponseBadRequest("The path holds a control character.",
                                                                content_type="text/plain")
            else:
                response = (self._refuse(request) if api else None) or self.get_response(request)
            if api:
                response = self._finish(response)
            response["X-Request-Id"] = request_id
            return response
        finally:
            current_request_id.reset(token)

    def _refuse(self, request: HttpRequest) -> HttpResponse | None:
        if PATH_CONTROL.search(request.path):
            return error_response(400, "INVALID_REQUEST", "The path holds a control character; no id does.")
        if request.META.get("QUERY_STRING") and not (request.method == "GET" and QUERY_PATH.match(request.path)):
            return error_response(400, "INVALID_REQUEST", "This API does not take query parameters.")
        length = _declared_length(request)
        if length > _body_limit(request.path):
            return error_response(413, "PAYLOAD_TOO_LARGE", "The request body is too large.")
        if request.method in BODY_METHODS:
            if length and not _is_json(request.META.get("CONTENT_TYPE", "")):
                return error_response(415, "UNSUPPORTED_MEDIA_TYPE", "Send the body as application/json.")
        elif length:
            return error_response(400, "INVALID_REQUEST", "This request does not take a body.")
        return None

    def _finish(self, response: HttpResponse) -> HttpResponse:
        content_type = response.get("Content-Type", "")
        status = response.status_code
        if status >= 400 and not content_type.startswith("application/json"):
            # Django's own error pages (no route, a foreign Host, ...) in the API's envelope.
            code = STATUS_CODES.get(status, "INVALID_REQUEST" if status < 500 else "INTERNAL_ERROR")
            message = STATUS_MESSAGES.get(status, "The request could not be processed." if status < 500
                                          else "The server could not complete the request.")
            headers = {"Allow": response["Allow"]} if status == 405 and response.has_header("Allow") else None
            response = error_response(status, code, message, headers=headers)
        response["Cache-Control"] = "no-store"
        response["X-Content-Type-Options"] = "nosniff"
        return response
