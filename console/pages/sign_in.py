"""What the sign-in page offers: single sign-on when it is configured (``occ.iam.oidc``), the
password form (for everyone, or for administrators' recovery only: ``OCC_PASSWORD_SIGN_IN``),
and why the last single sign-on was refused, once."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.http import HttpRequest

from occ.iam import oidc

SESSION_REFUSAL = "occ_sso_refusal"


@dataclass(frozen=True)
class SignInOptions:
    single_sign_on: bool
    provider_name: str
    password_recovery_only: bool
    # Whether the password form shows at once, not folded under "administrator recovery".
    password_open: bool
    refusal: str | None


def sign_in_options(request: HttpRequest, *, password_errors: bool = False) -> SignInOptions:
    reason = request.session.pop(SESSION_REFUSAL, None)
    refusal = None
    if reason in set(oidc.Refusal):
        refusal = oidc.refusal_message(oidc.Refusal(reason))
    enabled = oidc.enabled()
    recovery = enabled and settings.OCC_PASSWORD_SIGN_IN == "recovery"
    return SignInOptions(single_sign_on=enabled, provider_name=oidc.provider_name(),
                         password_recovery_only=recovery, password_open=not recovery or password_errors,
                         refusal=refusal)
