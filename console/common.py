"""What every console view shares: the signed-in Actor, the selected Namespace, htmx
responses (on django-htmx and template-partials), toasts and the mapping of domain errors onto forms and fixed messages.

Views stay thin: they parse the form, call one ``occ.services`` function (or a selector) with
``request.console.actor`` and render a template. Everything here is about the browser surface.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, cast
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.db import DatabaseError
from django.forms.utils import ErrorDict
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django_htmx.http import HTMX_STOP_POLLING, HttpResponseClientRedirect, reswap, retarget, trigger_client_event
from django_htmx.middleware import HtmxDetails

from occ.errors import ERROR_CODES, Forbidden, NotFound, OccError, UnknownOutcome
from occ.iam.actor import Actor, Source
from occ.iam.sessions import request_is_operator, session_actor
from occ.models import Namespace, NamespaceStatus
from occ.selectors.iam import manages_namespace_access
from occ.selectors.namespaces import namespace_get, namespace_page
from occ.services.audit import audit_denial

logger = logging.getLogger(__name__)

TOAST_EVENT = "occ:toast"
CLOSE_MODAL_EVENT = "occ:close-modal"
TOASTS = "toasts"  # the shell's toast region (base.html)

V = TypeVar("V", bound=Callable[..., HttpResponseBase])  # a streamed answer too (the Chat tab)
SWITCHER_SIZE = 20  # Namespaces the selector lists; "More Namespaces…" leads to the Namespaces page
MORE_NAMESPACES = "*"  # the selector's value for "More Namespaces…"


# --- request state -----------------------------------------------------------------------

@dataclass
class ConsoleContext:
    """``request.console``: who acts, what they may see, and where they are."""

    actor: Actor
    namespaces: list[Namespace]  # the first SWITCHER_SIZE readable ones, oldest first
    namespace: Namespace | None = None
    request_id: str = ""
    is_operator: bool = False
    more_namespaces: bool = False  # whether more readable Namespaces follow ``namespaces``

    @property
    def nav_namespace(self) -> Namespace | None:
        """Where the Agents and Secrets links lead: this page's Namespace, else the landing one."""
        return self.namespace or default_namespace(self.namespaces)

    @property
    def switcher_namespaces(self) -> list[Namespace]:
        """The selector's choices: ``namespaces``, and this page's Namespace when it is further on."""
        here = self.namespace
        if here is None or any(ns.id == here.id for ns in self.namespaces):
            return self.namespaces
        return [*self.namespaces, here]

    @property
    def manages_nav_access(self) -> bool:
        """Whether the nav's Namespace's Access page is theirs to use (``policy_namespace``'s rule)."""
        nav = self.nav_namespace
        return nav is not None and manages_namespace_access(self.actor, nav.id)

    @property
    def namespace_id(self) -> str:
        assert self.namespace is not None, "only Namespace pages ask for the Namespace"
        return self.namespace.id


class ConsoleRequest(HttpRequest):
    """What a console view receives: django-htmx's ``request.htmx`` and ``request.console``."""

    htmx: HtmxDetails
    console: ConsoleContext


def console_actor(request: HttpRequest) -> Actor:
    """The signed-in person's Actor (source ``console``); Forbidden when IAM does not know them."""
    actor = session_actor(request, source=Source.CONSOLE)
    assert actor is not None, "callers check authentication first"
    return actor


def readable_namespace(actor: Actor, namespace_id: str) -> Namespace | None:
    """The live Namespace if ``actor`` may read it, else None (missing, deleted or not theirs:
    the console never says which)."""
    try:
        return namespace_get(actor=actor, namespace_id=namespace_id)
    except (NotFound, Forbidden):
        return None


def default_namespace(namespaces: Iterable[Namespace]) -> Namespace | None:
    """The first ready Namespace, else the first readable one (the console's landing choice)."""
    namespaces = list(namespaces)
    return next((ns for ns in namespaces if ns.status == NamespaceStatus.READY), None) or (
        namespaces[0] if namespaces else None)


# --- the view decorator ------------------------------------------------------------------

def console_view(view: V) -> V:
    """Sign-in required; sets ``request.console``; renders domain errors as the console does.

    A view whose URL has ``namespace_id`` gets the Namespace checked for ``read`` (an unreadable
    or unknown one renders "Namespace unavailable", never a hint of which it was). An OccError
    escaping the view becomes an error page, or for an HTMX request an error fragment with the
    real status, swapped into the toast region; a 403 is audited as a denial like the API's.
    """

    @functools.wraps(view)
    def wrapper(request: ConsoleRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        request_id = getattr(request, "occ_request_id", "")
        # Console forms carry keys, tokens and Secret values: no error report ever shows a
        # posted field (Django's sensitive_post_parameters, for every field of every form).
        request.sensitive_post_parameters = "__ALL__"  # type: ignore[attr-defined]
        if not request.user.is_authenticated:
            if request.htmx:  # htmx follows HX-Redirect whatever the status; 401 says why
                next_url = request.htmx.current_url_abs_path or "/console/"
                response = HttpResponseClientRedirect(f"{settings.LOGIN_URL}?{urlencode({'next': next_url})}")
                response.status_code = 401
                return response
            return redirect_to_login(request.get_full_path())
        try:
            actor = console_actor(request)
        except Forbidden as exc:
            return error_response(request, exc)
        if actor.principal.must_change_password and getattr(request.resolver_match, "url_name", "") != "password":
            return redirect_or_hx(request, reverse("console:password"))
        # The selector's first Namespaces only: an Installation may hold thousands.
        namespaces, more = namespace_page(actor=actor, page_size=SWITCHER_SIZE)
        context = ConsoleContext(actor=actor, namespaces=namespaces, request_id=request_id, more_namespaces=bool(more),
                                 is_operator=request_is_operator(request, actor=actor))
        request.console = context
        namespace_id = kwargs.get("namespace_id")
        if namespace_id is not None:
            context.namespace = next((ns for ns in namespaces if ns.id == namespace_id), None) or readable_namespace(
                actor, namespace_id)
            if context.namespace is None:
                return error_response(request, NotFound(
                    "This Namespace is unavailable: it does not exist or you may not read it. "
                    "Choose another Namespace."), title="Namespace unavailable")
        try:
            return view(request, *args, **kwargs)
        except OccError as exc:
            return error_response(request, exc)
        except DatabaseError:
            logger.exception("console request failed in the database")
            return error_response(request, UnknownOutcome(
                "The database did not answer. Refresh and check before trying again."))

    return cast(V, wrapper)


def current(request: ConsoleRequest) -> ConsoleContext:
    return request.console


# --- errors ------------------------------------------------------------------------------

# Fixed titles per status (reference console's message table); the message itself is always
# ours: OccError messages never carry input values or upstream text.
_TITLES = {
    400: "Check the entered values",
    401: "Sign in again",
    403: "Access denied",
    404: "Resource unavailable",
    409: "Conflicts with the saved state",
    429: "Too many requests",
    501: "Not available here",
}


# Documented failures whose message alone does not say what to do: a title and the next step.
# Known failures changed nothing (the service's transaction rolled back), so trying again is safe.
KNOWN_FAILURES: dict[str, tuple[str, str]] = {
    "CHANNEL_CREDENTIAL_UNAVAILABLE": (
        "Slack could not be reached",
        "Slack could not be reached to check the bot token, so the Agent was not created. Try again in a "
        "minute; if it keeps failing, check that OCC can reach Slack."),
    "CHANNEL_DIRECTORY_UNAVAILABLE": (
        "Slack could not be reached",
        "Slack could not be reached to list channels. Nothing was changed. Try again in a minute."),
    "DEPENDENCY_UNAVAILABLE": (
        "Service unavailable",
        "A service OCC depends on did not answer. Nothing was changed. Try again in a minute; if it keeps "
        "failing, ask an operator."),
}
# The only codes that leave the outcome open: the write may or may not have happened.
UNCERTAIN_CODES = frozenset({"UNKNOWN_OUTCOME", "INTERNAL_ERROR"})


@dataclass(frozen=True)
class SummaryItem:
    """One entry of ``components/error_summary.html``: a message and the id of its field."""

    field_id: str
    message: str


def error_summary(errors: Mapping[str, list[str]] | ErrorDict, field_ids: Mapping[str, str],
                  fallback_id: str) -> list[SummaryItem]:
    """Every message of a refused form, in the form's field order, each linking to its field
    (``field_ids``: field name to element id; a message no field claims links to ``fallback_id``).
    ``errors`` may be a Django form's ``errors``: its lists give their messages as text."""
    order = list(field_ids) + [name for name in errors if name not in field_ids]
    return [SummaryItem(field_ids.get(name, fallback_id), str(message))
            for name in order for message in errors.get(name, [])]


def is_known_failure(exc: OccError) -> bool:
    """A documented error code other than an uncertain one: the write did not happen.

    Every service is one transaction, so an ``OccError`` it raises rolled everything back; only
    ``UNKNOWN_OUTCOME`` (a commit nobody can vouch for), an internal error or a database error
    leave the outcome open, and only those make the console say "outcome unknown".
    """
    return exc.code in ERROR_CODES and exc.code not in UNCERTAIN_CODES


def known_failure_message(exc: OccError) -> str:
    """What happened and what to do next, in our words."""
    return KNOWN_FAILURES[exc.code][1] if exc.code in KNOWN_FAILURES else exc.message


def error_title(exc: OccError) -> str:
    if exc.code in KNOWN_FAILURES:
        return KNOWN_FAILURES[exc.code][0]
    if not is_known_failure(exc):
        return "Outcome unknown"
    return _TITLES.get(exc.status, "Request failed")


def _audit_denial(request: ConsoleRequest, exc: OccError) -> None:
    denial = getattr(exc, "denial", None)
    if denial is None:
        return
    console = getattr(request, "console", None)
    try:
        audit_denial(denial, actor=console.actor if console else None)
    except OccError:
        logger.exception("could not record a console denial")


def error_response(request: ConsoleRequest, exc: OccError, *, title: str | None = None) -> HttpResponse:
    """The error page, or for htmx the ``components/error.html`` fragment (status kept),
    retargeted into the toast region: it never replaces what the request pointed at."""
    _audit_denial(request, exc)
    context = {"error": exc, "error_title": title or error_title(exc),
               "request_id": getattr(request, "occ_request_id", "")}
    if request.htmx:
        response = render(request, "console/components/error.html#error-toast", context, status=exc.status)
        return reswap(retarget(response, f"#{TOASTS}"), "beforeend")
    context["console"] = getattr(request, "console", None)
    return render(request, "console/error_page.html", context, status=exc.status)


def refusal_errors(exc: OccError, field_at: Callable[[str], str | None]) -> dict[str, list[str]]:
    """A service's refusal as form errors: the message (ours) on the field each detail's JSON
    pointer belongs to (``field_at``; None: no field). What no field claims lands under
    ``"__all__"``. A message is said once: on its field when it has one (the page's summary
    links there), never again as a form-level panel beside it."""
    errors: dict[str, list[str]] = {}
    message = known_failure_message(exc)
    for detail in exc.details or []:
        target = field_at(detail.path) or "__all__"
        if message not in errors.setdefault(target, []):
            errors[target].append(message)
    if not errors:
        errors["__all__"] = [message]
    return errors


# --- HTMX responses (django-htmx) ------------------------------------------------------------

def wants_fragment(request: ConsoleRequest) -> bool:
    """An htmx request that swaps part of a page; a boosted navigation or a history restore
    wants the whole page, like a plain browser."""
    htmx = request.htmx
    return bool(htmx) and not htmx.boosted and not htmx.history_restore_request


def render_page(request: ConsoleRequest, page: str, context: Mapping[str, Any], *, partial: str,
                status: int = 200) -> HttpResponse:
    """One view, one page: the whole ``page``, or for an htmx swap its partial ``page#partial``
    (partial name = the fragment's DOM id = the ``hx-target`` that asked for it)."""
    template = f"{page}#{partial}" if wants_fragment(request) else page
    return render(request, template, context, status=status)


def trigger(response: HttpResponse, event: str, **detail: Any) -> HttpResponse:
    """Add one client event to ``HX-Trigger`` (panels listen with ``from:body``)."""
    return trigger_client_event(response, event, detail)


def redirect_or_hx(request: ConsoleRequest, url: str) -> HttpResponse:
    """A full navigation from an htmx request (``HX-Redirect``), a 302 otherwise; messages
    survive to the next page either way."""
    if request.htmx:
        return HttpResponseClientRedirect(url)
    return redirect(url)


def stop_polling(response: HttpResponse) -> HttpResponse:
    """htmx stops an ``every Ns`` trigger when the answer is 286; the fragment still swaps."""
    response.status_code = HTMX_STOP_POLLING
    return response
