"""Django messages reach an htmx request as toasts: an ``occ:toast`` event in ``HX-Trigger``.

A full page renders its messages in the shell's toast region itself; an htmx fragment has no
shell, so the messages ride on the response header (django-htmx's ``trigger_client_event``)
and ``console.js`` shows them. A redirect keeps them for the page it leads to.
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.utils.cache import add_never_cache_headers
from django_htmx.http import trigger_client_event

from console.common import TOAST_EVENT


class HtmxMessagesMiddleware:
    """After django-htmx's ``HtmxMiddleware`` (which sets ``request.htmx``)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not request.htmx or not request.path.startswith("/console/"):  # type: ignore[attr-defined]
            return response
        if response.has_header("HX-Redirect") or 300 <= response.status_code < 400:
            return response
        toasts = [{"level": m.level_tag or "info", "text": str(m.message)} for m in messages.get_messages(request)]
        if toasts:
            trigger_client_event(response, TOAST_EVENT, {"messages": toasts})
        return response


class PrivatePagesMiddleware:
    """Console pages are never stored by a browser or a proxy (``Cache-Control: no-store``):
    they show a person's Agents, Secrets' names and audit trail, and a shared computer's back
    button or disk cache must not show them to the next person after sign-out."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if request.path.startswith("/console/"):
            add_never_cache_headers(response)
        return response
