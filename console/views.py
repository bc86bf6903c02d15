from __future__ import annotations

from django.contrib.auth import logout
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import LoginView
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST


class SignInView(LoginView):
    template_name = "console/sign_in.html"
    redirect_authenticated_user = True
    next_page = "console:home"


@require_POST
def sign_out(request: HttpRequest) -> HttpResponse:
    logout(request)
    return redirect("console:sign-in")


@login_required
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "console/home.html")
