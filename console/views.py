"""Console sign-in, sign-out and the (for now minimal) home page.

Sign-in is Django's session login; the console pages of the console issue build on it.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import LoginView
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from occ.admin_site import request_is_operator


class SignInView(LoginView):
    template_name = "console/sign_in.html"
    redirect_authenticated_user = True
    next_page = "console:home"


@require_POST
def sign_out(request: HttpRequest) -> HttpResponse:
    """POST only (with Django's CSRF check), so a link or an image cannot sign anyone out."""
    logout(request)
    messages.info(request, "You are signed out.")
    return redirect("console:sign-in")


@require_GET
@login_required
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "console/home.html", {"is_operator": request_is_operator(request)})
