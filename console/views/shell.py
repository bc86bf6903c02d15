"""The shell: sign-in and sign-out, the landing redirect, the Namespace switch, unknown paths.

Sign-in is Django's session login (the bootstrap administrator signs in with the printed
password), throttled per account and client address by django-axes. Sign-out is POST only,
with the CSRF check, so a link or an image cannot sign anyone out.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.exceptions import NON_FIELD_ERRORS
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import path, reverse
from django.views.decorators.http import require_GET, require_POST

from console.common import (
    MORE_NAMESPACES,
    ConsoleRequest,
    console_view,
    current,
    default_namespace,
    error_response,
    readable_namespace,
)
from console.pages.sign_in import sign_in_options
from occ.errors import NotFound
from occ.iam import oidc
from occ.iam.sign_in import RECOVERY_ONLY, ThrottledAuthenticationForm
from occ.services.single_sign_on import password_sign_in_audit

# The pages the selector can keep when it moves to another Namespace; anything deeper
# (an Agent, the create form) belongs to the old Namespace and returns to its list.
_SWITCHABLE = {"agents": "console:agents", "configurations": "console:configurations", "secrets": "console:secrets"}


class SignInView(LoginView):
    """Django's login view; its form says when sign-in is locked (``occ.iam.sign_in``), and
    Axes' middleware sends that page as 429. With single sign-on configured the page offers
    "Sign in with <provider>" first (``console.pages.sign_in``); while passwords are for
    recovery only, each password sign-in and refusal for that reason is audited."""

    form_class = ThrottledAuthenticationForm
    template_name = "console/sign_in.html"
    redirect_authenticated_user = True
    next_page = "console:home"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        form = context.get("form")
        context["options"] = sign_in_options(self.request, password_errors=bool(form is not None and form.errors))
        return context

    def form_valid(self, form: AuthenticationForm) -> HttpResponse:
        if settings.OCC_PASSWORD_SIGN_IN == "recovery" and oidc.enabled():
            password_sign_in_audit(user=form.get_user(), refused=False)
        return super().form_valid(form)

    def form_invalid(self, form: AuthenticationForm) -> HttpResponse:
        user = form.get_user()
        if user is not None and form.has_error(NON_FIELD_ERRORS, RECOVERY_ONLY):
            password_sign_in_audit(user=user, refused=True)
        return super().form_invalid(form)


@require_POST
def sign_out(request: HttpRequest) -> HttpResponse:
    logout(request)
    messages.info(request, "You are signed out.")
    return redirect("console:sign-in")


@require_GET
@console_view
def home(request: ConsoleRequest) -> HttpResponse:
    """Land on the Agents of the first ready Namespace; with none readable, on Namespaces."""
    namespace = default_namespace(current(request).namespaces)
    if namespace is None:
        return redirect("console:namespaces")
    return redirect("console:agents", namespace.id)


@require_GET
@console_view
def switch_namespace(request: ConsoleRequest) -> HttpResponse:
    wanted = request.GET.get("namespace", "")
    page = _SWITCHABLE.get(request.GET.get("page", ""), "console:agents")
    if wanted == MORE_NAMESPACES:
        return redirect("console:namespaces")
    if readable_namespace(current(request).actor, wanted) is None:
        messages.error(request, "That Namespace is unavailable. Choose another one.")
        return redirect("console:namespaces")
    return redirect(reverse(page, args=[wanted]))


@console_view
def not_found(request: ConsoleRequest, rest: str) -> HttpResponse:
    return error_response(request, NotFound("There is no console page at this address."), title="Page not found")


def server_error(request: HttpRequest) -> HttpResponse:
    """``handler500``: a failure that escaped every other handler (the API has its own). A
    write may have happened, so it says the outcome is unknown, with the request id; no shell,
    since whatever failed may be what the shell needs."""
    from django.template import loader

    body = loader.get_template("500.html").render({"request_id": getattr(request, "occ_request_id", "")})
    return HttpResponse(body, status=500)


urlpatterns = [
    path("", home, name="home"),
    path("sign-in", SignInView.as_view(), name="sign-in"),
    path("sign-out", sign_out, name="sign-out"),
    path("switch-namespace", switch_namespace, name="switch-namespace"),
]
