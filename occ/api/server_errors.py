"""gunicorn's own error answers in the API's envelope.

gunicorn refuses some requests before Django sees them: a request line over
``limit_request_line`` (414), headers over ``limit_request_fields`` or
``limit_request_field_size`` (431), a request it cannot parse (400). It answers those with an
HTML page written by ``gunicorn.util.write_error``. Raising the limits only moves the edge (the
request line cannot go past 8190 bytes), so the web process replaces that one function, for
every worker class: the same status, the JSON error envelope, and nothing of the request echoed
(gunicorn's text quotes the offending line or header). Installed by ``project.wsgi`` when gunicorn
serves it.
"""

from __future__ import annotations

import json
import socket
from typing import Any

from gunicorn import util

from occ.ids import IdPrefix, new_id

CODES = {403: "FORBIDDEN", 500: "INTERNAL_ERROR", 501: "NOT_IMPLEMENTED"}
MESSAGES = {
    414: "The request line is too long: shorten the path or its query.",
    431: "The request headers are too large or too many.",
    500: "The server could not complete the request.",
    501: "The request uses a transfer coding OCC does not support.",
}
DEFAULT_MESSAGE = "The request could not be read as HTTP."


def error_bytes(status: int, reason: str) -> bytes:
    """The whole HTTP/1.1 response for a request gunicorn refused."""
    body = json.dumps({
        "error": {"code": CODES.get(status, "INVALID_REQUEST"), "message": MESSAGES.get(status, DEFAULT_MESSAGE)},
        "meta": {"requestId": new_id(IdPrefix.REQUEST)},
    }).encode()
    reason = reason.encode("latin-1", "replace").decode("latin-1").replace("\r", " ").replace("\n", " ")
    head = (f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
            f"Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nContent-Length: {len(body)}\r\n\r\n")
    return head.encode("latin-1") + body


def write_error(sock: socket.socket, status_int: int, reason: str, mesg: Any) -> None:
    """``gunicorn.util.write_error``'s signature; ``mesg`` (gunicorn's detail) is not sent."""
    util.write_nonblock(sock, error_bytes(status_int, reason))


def install() -> None:
    util.write_error = write_error
