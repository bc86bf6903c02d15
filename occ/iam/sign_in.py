"""Sign-in throttling (django-axes) as the console and the admin see it.

Axes counts failed sign-ins per account and per client address (settings: ``AXES_*``); its
backend refuses an attempt while either is locked out, and marks the request. The sign-in
forms of both faces derive from :class:`ThrottledAuthenticationForm`, which turns that mark
into a message saying the sign-in is locked and until when; Axes' middleware then sends the
page with status 429 (:func:`lockout_response`). What a lockout records (the attempt and an
audit event, in one transaction) is ``occ.services.sign_in``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from axes.helpers import get_cool_off, get_failure_limit
from axes.models import AccessAttempt
from django import forms
from django.contrib.auth.forms import AuthenticationForm
from django.db.models import Max, Q, Sum
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

LOCKED_OUT = "locked_out"


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
                "for this account or from this address. Wait, then try again; an operator can lift it sooner.")


def client_address(request: HttpRequest) -> str | None:
    """The address Axes counts: the connection's. A forwarded header would let a guesser
    choose their own address, so none is read (no proxy sits in front of ``make run``)."""
    return request.META.get("REMOTE_ADDR")


def sign_in_lockout(request: HttpRequest, username: str | None) -> SignInLockout | None:
    """The lockout Axes applied to this request, with when it ends, or None. Of the account
    and the address, each one whose counted failures reach the limit locks until its last
    counted failure plus the cool-off; the later of those is when sign-in opens again."""
    if not getattr(request, "axes_locked_out", False):
        return None
    cool_off = get_cool_off(request) or timedelta(0)
    now = timezone.now()
    recent = AccessAttempt.objects.filter(attempt_time__gte=now - cool_off)
    ends = []
    for matching in (Q(username=username) if username else None, Q(ip_address=client_address(request))):
        if matching is None:
            continue
        counted = recent.filter(matching).aggregate(failures=Sum("failures_since_start"), last=Max("attempt_time"))
        if (counted["failures"] or 0) >= get_failure_limit(request, None) and counted["last"] is not None:
            ends.append(counted["last"] + cool_off)
    return SignInLockout(until=max(ends, default=now + cool_off))


class ThrottledAuthenticationForm(AuthenticationForm):
    """Django's sign-in form, saying so when the refusal is a lockout (``lockout`` is set)."""

    lockout: SignInLockout | None = None

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
