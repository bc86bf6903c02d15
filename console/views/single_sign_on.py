"""Sign in with the Installation's OpenID Connect provider (``occ.iam.oidc``; docs/access.md).

``sign-in/oidc`` starts the authorization code flow (mozilla-django-oidc's request view: a
state, a nonce and a PKCE verifier kept in the session, then a redirect to the provider);
``sign-in/oidc/callback`` is where the provider sends the browser back. Both answer 404 while
single sign-on is not configured. A refusal is audited, then the sign-in page says why
(``SESSION_REFUSAL``: the reason's code, read once by the sign-in view).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import login
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import path
from django.views.decorators.http import require_GET
from mozilla_django_oidc.views import OIDCAuthenticationRequestView

from console.pages.sign_in import SESSION_REFUSAL
from occ.iam import oidc
from occ.iam.oidc import OidcBackend, Refusal, SignInRefused
from occ.services.single_sign_on import sso_sign_in, sso_sign_in_refused

_STATES = "oidc_states"  # mozilla-django-oidc's session key: state -> nonce, code verifier, when
_NEXT = "oidc_login_next"  # and the checked ``next`` of the request view


class SignInWithProvider(OIDCAuthenticationRequestView):
    def get(self, request: HttpRequest) -> HttpResponse:  # type: ignore[override]
        if not oidc.enabled():
            raise Http404("Single sign-on is not configured.")
        return super().get(request)


def _take_state(request: HttpRequest) -> dict[str, Any]:
    """The sign-in this callback answers, removed from the session so it cannot be replayed."""
    states = request.session.get(_STATES)
    state = request.GET.get("state", "")
    if not isinstance(states, dict) or not state or state not in states:
        raise SignInRefused(Refusal.STATE_MISMATCH)
    entry = states.pop(state)
    request.session[_STATES] = states
    return entry if isinstance(entry, dict) else {}


@require_GET
def callback(request: HttpRequest) -> HttpResponse:
    if not oidc.enabled():
        raise Http404("Single sign-on is not configured.")
    try:
        entry = _take_state(request)
        if request.GET.get("error") or not request.GET.get("code"):
            raise SignInRefused(Refusal.PROVIDER_REFUSED)
        identity = OidcBackend().verified_identity(request, nonce=entry.get("nonce"),
                                                   code_verifier=entry.get("code_verifier"))
        user = sso_sign_in(identity=identity)
    except SignInRefused as refusal:
        sso_sign_in_refused(refusal=refusal)
        request.session[SESSION_REFUSAL] = refusal.reason.value
        return redirect("console:sign-in")
    next_url = request.session.pop(_NEXT, None)
    login(request, user, backend=oidc.BACKEND_PATH)  # a new session: the old one's key ends here
    return redirect(next_url or "console:home")


urlpatterns = [
    path("sign-in/oidc", require_GET(SignInWithProvider.as_view()), name="sign-in-oidc"),
    path("sign-in/oidc/callback", callback, name="sign-in-oidc-callback"),
]
