"""Django messages reach an HTMX request as toasts: an ``occ:toast`` event in ``HX-Trigger``.

A full page renders its messages in the shell's toast region itself; an HTMX fragment has no
shell, so the messages ride on the response header and ``console.js`` shows them. A redirect
keeps them for the page it leads to.
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.http import HttpRequest, HttpResponse

from console.common import TOAST_EVENT, add_trigger, is_htmx


class HtmxMessagesMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not is_htmx(request) or not request.path.startswith("/console/"):
            return response
        if response.has_header("HX-Redirect") or 300 <= response.status_code < 400:
            return response
        storage = messages.get_messages(request)
        toasts = [{"level": m.level_tag or "info", "text": str(m.message)} for m in storage]
        if toasts:
            add_trigger(response, TOAST_EVENT, toasts)
        return response
