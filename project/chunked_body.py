"""WSGI: a request body sent with ``Transfer-Encoding: chunked`` is read as a body.

gunicorn decodes the chunks and says so with ``wsgi.input_terminated`` (the input ends where
the body does), but sends no ``CONTENT_LENGTH``, and Django reads a request without one as
empty: valid JSON was answered "required field missing". This wrapper reads such a body (at
most one byte past the largest body OCC takes, so the API's 413 still applies) and hands it on
with its length, as if it had been sent with one. No maintained package does this for Django's
WSGI handler; it is one function.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def _chunked(environ: dict[str, Any]) -> bool:
    encoding = environ.get("HTTP_TRANSFER_ENCODING", "").lower()
    return (encoding.rsplit(",", 1)[-1].strip() == "chunked" and not environ.get("CONTENT_LENGTH")
            and bool(environ.get("wsgi.input_terminated")))


def reading_chunked_bodies(app: WsgiApp) -> WsgiApp:
    def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if _chunked(environ):
            limit = max(settings.OCC_API_LARGE_BODY_LIMIT, settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 0)
            body = environ["wsgi.input"].read(limit + 1)
            environ = {**environ, "wsgi.input": io.BytesIO(body), "CONTENT_LENGTH": str(len(body))}
        return app(environ, start_response)
    return application
