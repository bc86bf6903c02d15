"""Sign-in throttling (django-axes) as the console and the admin see it.

Axes counts failed sign-ins per account and client address together (settings: ``AXES_*``); its
backend refuses an attempt while that pair is locked out, and marks the request. The sign-in
forms of both faces derive from :class:`ThrottledAuthenticationForm`, which turns that mark
into a message saying the sign-in is locked and until when; Axes' middleware then sends the
page with status 429 (:func:`lockout_response`). What a lockout records (the attempt and an
audit event, in one transaction) is ``occ.services.sign_in``.
"""

from __future__ import annotations

import functools
import ipaddress
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from axes.helpers import get_cool_off, get_failure_limit
from axes.models import AccessAttempt
from django import forms
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.db.models import Max, Q, Sum
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from occ.iam.actor import Actor, Source
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed
from occ.models import Principal, PrincipalKind

LOCKED_OUT = "locked_out"
RECOVERY_ONLY = "password_recovery_only"
RECOVERY_ONLY_MESSAGE = ("Password sign-in is for administrators' recovery only. Use “Sign in with {provider}” "
                         "above; if you cannot, ask an OCC administrator.")
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class SignInLockout:
    until: datetime

    @property
    def minutes_left(self) -> int:
        return max(1, math.ceil((self.until - timezone.now()).total_seconds() / 60))

    @property
    def message(self) -> str:
        minutes = self.minutes_left
        wait = "1 minute" if minutes == 1 else f"{minutes} minutes"
        return (f"Sign-in is locked for {wait} (until {self.until:%H:%M} UTC) after too many wrong passwords "
                "for this account from this address. Wait, then try again; an operator can lift it sooner.")


@functools.cache
def _networks(proxies: tuple[str, ...]) -> tuple[IPNetwork, ...]:
    return tuple(ipaddress.ip_network(proxy, strict=False) for proxy in proxies)


def _ip(value: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        return None


def client_address(request: HttpRequest) -> str | None:
    """The address Axes counts. The connection's, unless it is a trusted proxy
    (``OCC_TRUSTED_PROXIES``): then the ``X-Forwarded-For`` hops are read from the right (each
    proxy appends the address it saw), skipping trusted proxies, and the first other one is the
    client. Hops further left were written by the client and are never believed, so a guesser
    cannot choose an address; a hop that is not an address ends the walk at the last proxy.
    (Written with ``ipaddress``: python-ipware, which Axes ships, trusts proxies by string prefix,
    not by network.)"""
    remote = request.META.get("REMOTE_ADDR")
    trusted = _networks(tuple(settings.OCC_TRUSTED_PROXIES))
    address = _ip(remote or "")
    if address is None or not any(address in network for network in trusted):
        return remote
    hops = [hop.strip() for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
    nearest = remote
    for hop in reversed(hops):
        hop_address = _ip(hop)
        if hop_address is None:
            return nearest
        if not any(hop_address in network for network in trusted):
            return str(hop_address)
        nearest = str(hop_address)
    return nearest


def sign_in_lockout(request: HttpRequest, username: str | None) -> SignInLockout | None:
    """The lockout Axes applied to this request, with when it ends, or None: the account's
    counted failures from this address lock until the last one plus the cool-off."""
    if not getattr(request, "axes_locked_out", False):
        return None
    cool_off = get_cool_off(request) or timedelta(0)
    now = timezone.now()
    recent = AccessAttempt.objects.filter(attempt_time__gte=now - cool_off)
    ends = []
    for matching in (Q(username=username or "", ip_address=client_address(request)),):
        counted = recent.filter(matching).aggregate(failures=Sum("failures_since_start"), last=Max("attempt_time"))
        if (counted["failures"] or 0) >= get_failure_limit(request, None) and counted["last"] is not None:
            ends.append(counted["last"] + cool_off)
    return SignInLockout(until=max(ends, default=now + cool_off))


def password_sign_in_allowed(user: Any) -> bool:
    """``OCC_PASSWORD_SIGN_IN``: everyone, or (``recovery``, with single sign-on on) only people
    who administer the Installation: the way back in when the provider is down or misconfigured."""
    if settings.OCC_PASSWORD_SIGN_IN != "recovery" or not settings.OCC_OIDC_ISSUER:
        return True
    principal = Principal.objects.filter(user=user, kind=PrincipalKind.HUMAN).first()
    return principal is not None and allowed(Actor(principal=principal, source=Source.CONSOLE),
                                             Action.ADMINISTER, Kind.INSTALLATION)


class ThrottledAuthenticationForm(AuthenticationForm):
    """Django's sign-in form, saying so when the refusal is a lockout (``lockout`` is set), and
    refusing a right password of someone who must use single sign-on (code ``RECOVERY_ONLY``)."""

    lockout: SignInLockout | None = None

    def confirm_login_allowed(self, user: Any) -> None:
        super().confirm_login_allowed(user)
        if not password_sign_in_allowed(user):
            raise forms.ValidationError(RECOVERY_ONLY_MESSAGE.format(provider=settings.OCC_OIDC_PROVIDER_NAME),
                                        code=RECOVERY_ONLY)

    def clean(self) -> dict[str, Any]:
        try:
            return super().clean()
        except forms.ValidationError:
            if self.request is None:
                raise
            self.lockout = sign_in_lockout(self.request, self.cleaned_data.get("username"))
            if self.lockout is None:
                raise
            raise forms.ValidationError(self.lockout.message, code=LOCKED_OUT) from None


def lockout_response(request: HttpRequest, original_response: HttpResponse | None,
                     credentials: dict[str, Any] | None = None) -> HttpResponse:
    """``AXES_LOCKOUT_CALLABLE``: the sign-in page the view rendered (it already says that
    sign-in is locked, and keeps the username), as 429 Too Many Requests."""
    response = original_response if original_response is not None else HttpResponse(
        "Sign-in is locked after too many wrong passwords. Try again later.", content_type="text/plain")
    response.status_code = 429
    return response
