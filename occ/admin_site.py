"""The operators' admin site: entry is decided by OCC's IAM, not by Django's staff flags.

An operator is a person whose human Principal holds ``installation:administer``. Django's
``is_staff`` and ``is_superuser`` grant nothing here, and Django model permissions are not
consulted: every ModelAdmin follows :meth:`OperatorAdminSite.has_permission`.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.admin import AdminSite
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest

from occ.iam.actor import Actor, Source
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed
from occ.models import Principal, PrincipalKind

_OPERATOR_CACHE_ATTR = "_occ_is_operator"


def is_operator(user: Any) -> bool:
    """Whether ``user`` is an active person whose Principal may administer the Installation."""
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    principal = Principal.objects.filter(user=user, kind=PrincipalKind.HUMAN).first()
    if principal is None:
        return False
    return allowed(Actor(principal=principal, source=Source.ADMIN), Action.ADMINISTER, Kind.INSTALLATION)


def request_is_operator(request: HttpRequest) -> bool:
    """``is_operator`` for the request's user, decided once per request (the admin asks often)."""
    user = getattr(request, "user", None)
    # Keyed by user: signing in replaces request.user part-way through a request.
    user_key = getattr(user, "pk", None)
    cached = getattr(request, _OPERATOR_CACHE_ATTR, None)
    if cached is None or cached[0] != user_key:
        cached = (user_key, is_operator(user))
        setattr(request, _OPERATOR_CACHE_ATTR, cached)
    return cached[1]


class OperatorAuthenticationForm(AuthenticationForm):
    """The admin's sign-in form, admitting operators instead of staff accounts."""

    error_messages = {
        **AuthenticationForm.error_messages,
        "invalid_login": "Your username or password is not right. Try again.",
        "not_operator": "This account may not administer the Installation. Ask an operator for access.",
    }

    def confirm_login_allowed(self, user: Any) -> None:
        super().confirm_login_allowed(user)
        if not is_operator(user):
            raise forms.ValidationError(self.error_messages["not_operator"], code="not_operator")


class OperatorAdminSite(AdminSite):
    site_header = "OCC operators"
    site_title = "OCC admin"
    index_title = "Installation records"
    site_url = "/console/"
    login_form = OperatorAuthenticationForm

    def has_permission(self, request: HttpRequest) -> bool:
        return request_is_operator(request)
