"""Single sign-on with OpenID Connect, the protocol half: mozilla-django-oidc's backend, held to
the checks OCC needs, answering who the provider says signed in (:class:`VerifiedIdentity`) or
why not (:class:`SignInRefused`).

The console starts the authorization code flow with PKCE (S256), a state and a nonce kept in
the session (mozilla-django-oidc's request view); the callback (``console.views.single_sign_on``)
finds the state in the session, and :meth:`OidcBackend.verified_identity` exchanges the code
with the PKCE verifier and the client secret, checks the ID token (RS256 against the provider's
JWKS, issuer, audience, expiry, nonce), and reads the userinfo of that same subject. Which OCC
account that identity is, if any, is ``occ.services.single_sign_on``'s decision.

Nothing here logs or returns what the provider sent back on failure (its text may hold tokens),
and the client secret is only ever sent to the token endpoint.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import jwt
import requests
from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import SuspiciousOperation
from django.http import HttpRequest
from django.urls import reverse
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import absolutify

BACKEND_PATH = "occ.iam.oidc.OidcBackend"
CLOCK_SKEW_SECONDS = 60


def enabled() -> bool:
    """Whether single sign-on is configured (``OCC_OIDC_ISSUER``; the settings check the rest)."""
    return bool(settings.OCC_OIDC_ISSUER)


def provider_name() -> str:
    return str(settings.OCC_OIDC_PROVIDER_NAME)


class Refusal(StrEnum):
    """Why a single sign-on did not sign anyone in (the audit event's ``reason``)."""

    PROVIDER_REFUSED = "provider_refused"
    STATE_MISMATCH = "state_mismatch"
    PROVIDER_UNAVAILABLE = "provider_unavailable"
    CODE_REJECTED = "code_rejected"
    TOKEN_INVALID = "token_invalid"
    NONCE_MISMATCH = "nonce_mismatch"
    UNKNOWN_SUBJECT = "unknown_subject"
    EMAIL_AMBIGUOUS = "email_ambiguous"
    ACCOUNT_DISABLED = "account_disabled"


def refusal_message(reason: Refusal) -> str:
    """What the sign-in page says: what happened and what to do next, never the provider's text."""
    name = provider_name()
    return {
        Refusal.PROVIDER_REFUSED: f"{name} did not sign you in. Try again; if it keeps refusing, ask your "
                                  f"administrator of {name}.",
        Refusal.STATE_MISMATCH: "This sign-in was not started from this browser or has expired. "
                                f"Start again with “Sign in with {name}”.",
        Refusal.PROVIDER_UNAVAILABLE: f"OCC could not complete the sign-in with {name}. Try again in a moment; "
                                      "if it keeps failing, an administrator can check the single sign-on settings.",
        Refusal.CODE_REJECTED: f"OCC could not complete the sign-in: {name} did not accept its code (it may have "
                               f"expired or been used already). Start again with “Sign in with {name}”.",
        Refusal.TOKEN_INVALID: f"The answer from {name} could not be verified, so nobody was signed in. "
                               "Start again; if it keeps failing, tell an administrator.",
        Refusal.NONCE_MISMATCH: f"The answer from {name} did not belong to this sign-in, so nobody was signed in. "
                                f"Start again with “Sign in with {name}”.",
        Refusal.UNKNOWN_SUBJECT: f"Your {name} account is not linked to an OCC account, and OCC does not create "
                                 "accounts at sign-in. Ask an OCC administrator to add you (with your email) or "
                                 f"to link your {name} account to yours.",
        Refusal.EMAIL_AMBIGUOUS: f"More than one OCC account has the email of your {name} account, so OCC cannot "
                                 "tell which is yours. Ask an OCC administrator to link your account explicitly.",
        Refusal.ACCOUNT_DISABLED: "Your OCC account is disabled. Ask an OCC administrator to re-enable it.",
    }[reason]


@dataclass
class SignInRefused(Exception):
    """A refused single sign-on: the reason, and safe facts for the audit event (ids, never tokens)."""

    reason: Refusal
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def message(self) -> str:
        return refusal_message(self.reason)


@dataclass(frozen=True)
class VerifiedIdentity:
    """Who the provider says signed in: from a verified ID token and the userinfo of its subject."""

    issuer: str
    subject: str
    email: str | None
    email_verified: bool

    @property
    def audit_details(self) -> dict[str, Any]:
        return {"method": "oidc", "issuer": self.issuer, "subject": self.subject}


class OidcBackend(OIDCAuthenticationBackend):
    """mozilla-django-oidc's backend with OCC's checks. Django's ``authenticate()`` never
    reaches it (a password never does): the callback calls :meth:`verified_identity`, and
    :meth:`get_user` loads the sessions it made, refusing a disabled account like Django's
    own backend does (so disabling someone ends their single sign-on sessions too)."""

    def authenticate(self, request: HttpRequest | None, **credentials: Any) -> None:  # type: ignore[override]
        return None

    def get_user(self, user_id: Any) -> Any:
        return ModelBackend.get_user(self, user_id)  # type: ignore[arg-type]

    def user_can_authenticate(self, user: Any) -> bool:
        return ModelBackend.user_can_authenticate(self, user)  # type: ignore[arg-type]

    def verified_identity(self, request: HttpRequest, *, nonce: str | None,
                          code_verifier: str | None) -> VerifiedIdentity:
        """Exchange the callback's code and check what comes back."""
        self.request = request
        token_request = {
            "client_id": self.OIDC_RP_CLIENT_ID,
            "client_secret": self.OIDC_RP_CLIENT_SECRET,
            "grant_type": "authorization_code",
            "code": request.GET.get("code", ""),
            "redirect_uri": absolutify(request, reverse(settings.OIDC_AUTHENTICATION_CALLBACK_URL)),
            "code_verifier": code_verifier,
        }
        try:
            tokens = self.get_token(token_request)
        except requests.HTTPError as error:
            if error.response is not None and 400 <= error.response.status_code < 500:
                raise SignInRefused(Refusal.CODE_REJECTED, {"step": "token",
                                                            "status": error.response.status_code}) from None
            raise SignInRefused(Refusal.PROVIDER_UNAVAILABLE, {"step": "token"}) from None
        except (requests.RequestException, ValueError):
            # The provider's answer is not repeated: a token error's body may echo the request.
            raise SignInRefused(Refusal.PROVIDER_UNAVAILABLE, {"step": "token"}) from None
        id_token, access_token = tokens.get("id_token"), tokens.get("access_token")
        if not isinstance(id_token, str) or not isinstance(access_token, str):
            raise SignInRefused(Refusal.TOKEN_INVALID, {"step": "token"})
        claims = self.verify_token(id_token, nonce=nonce)
        try:
            userinfo = self.get_userinfo(access_token, id_token, claims)
        except (requests.RequestException, ValueError):
            raise SignInRefused(Refusal.PROVIDER_UNAVAILABLE, {"step": "userinfo"}) from None
        if not isinstance(userinfo, dict) or userinfo.get("sub") != claims["sub"]:
            # OpenID Connect Core 5.3.2: userinfo of another subject must not be used.
            raise SignInRefused(Refusal.TOKEN_INVALID, {"step": "userinfo"})
        email = userinfo.get("email", claims.get("email"))
        verified = userinfo.get("email_verified", claims.get("email_verified"))
        return VerifiedIdentity(issuer=claims["iss"], subject=str(claims["sub"]),
                                email=email if isinstance(email, str) and email else None,
                                email_verified=verified is True)

    def verify_token(self, token: str, **kwargs: Any) -> dict[str, Any]:
        """The ID token's claims once its signature (a key of the provider's JWKS), issuer,
        audience, expiry and nonce are right."""
        nonce = kwargs.get("nonce")
        try:
            key = self.retrieve_matching_jwk(token)
        except requests.RequestException:
            raise SignInRefused(Refusal.PROVIDER_UNAVAILABLE, {"step": "jwks"}) from None
        except (SuspiciousOperation, jwt.PyJWTError, KeyError, TypeError, ValueError):
            raise SignInRefused(Refusal.TOKEN_INVALID, {"step": "signature"}) from None
        claims = self.get_payload_data(token, key)
        if self.get_settings("OIDC_USE_NONCE", True) and not (
                isinstance(nonce, str) and isinstance(claims.get("nonce"), str)
                and hmac.compare_digest(nonce, claims["nonce"])):
            raise SignInRefused(Refusal.NONCE_MISMATCH, {"issuer": claims["iss"], "subject": str(claims["sub"])})
        return claims

    def get_payload_data(self, token: str, key: Any) -> dict[str, Any]:
        try:
            claims: dict[str, Any] = jwt.decode(
                token, key, algorithms=[self.OIDC_RP_SIGN_ALGO], audience=self.OIDC_RP_CLIENT_ID,
                issuer=settings.OCC_OIDC_ISSUER, leeway=CLOCK_SKEW_SECONDS,
                options={"require": ["iss", "sub", "aud", "exp", "iat"]})
        except jwt.PyJWTError:
            raise SignInRefused(Refusal.TOKEN_INVALID, {"step": "claims"}) from None
        audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
        if len(audiences) > 1 and claims.get("azp") != self.OIDC_RP_CLIENT_ID:
            raise SignInRefused(Refusal.TOKEN_INVALID, {"step": "claims"})
        if not isinstance(claims["sub"], str) or not claims["sub"]:
            raise SignInRefused(Refusal.TOKEN_INVALID, {"step": "claims"})
        return claims
