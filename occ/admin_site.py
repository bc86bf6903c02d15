"""The operators' admin site: entry is decided by OCC's IAM, not by Django's staff flags.

An operator is a person whose human Principal holds ``installation:administer``. Django's
``is_staff`` and ``is_superuser`` grant nothing here, and Django model permissions are not
consulted: every ModelAdmin follows :meth:`OperatorAdminSite.has_permission`.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.admin import AdminSite
from django.http import HttpRequest

from occ.iam.sessions import is_operator, request_is_operator
from occ.iam.sign_in import ThrottledAuthenticationForm


class OperatorAuthenticationForm(ThrottledAuthenticationForm):
    """The admin's sign-in form, admitting operators instead of staff accounts (and saying
    so when sign-in is locked after too many wrong passwords)."""

    error_messages = {
        **ThrottledAuthenticationForm.error_messages,
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
