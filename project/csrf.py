"""``CSRF_FAILURE_VIEW``: a refused CSRF check answered the way the face that was asked answers.

Django's own 403 page is a full HTML document; htmx swaps a 403 (``responseHandling`` in
``base.html``), so an expired token on a console form would put that page inside the
console. Instead:

- the JSON API (its session-authenticated writes are checked by ``occ.api.auth``; any other
  check Django makes there) answers with its error envelope;
- the console answers with its error component: for htmx the toast fragment, otherwise the
  error page;
- anything else (the admin) keeps Django's page.

It lives outside the faces because it chooses between them, as ``project.urls`` does.
"""

from __future__ import annotations

from typing import cast

from django.http import HttpRequest, HttpResponse
from django.views.csrf import csrf_failure as django_csrf_failure

from console.common import ConsoleRequest
from console.common import error_response as console_error
from occ.api.envelope import error_response as api_error
from occ.api.middleware import is_api_path
from occ.errors import Forbidden

CSRF_MESSAGE = "The security token of this page is missing or has expired. Reload the page and try again."
CONSOLE_PREFIX = "/console/"


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """The 403 for a refused CSRF check; ``reason`` is Django's and stays in its log."""
    if is_api_path(request.path):
        return api_error(403, Forbidden.code, CSRF_MESSAGE)
    if request.path.startswith(CONSOLE_PREFIX):
        return console_error(cast(ConsoleRequest, request), Forbidden(CSRF_MESSAGE), title="Page expired")
    return django_csrf_failure(request, reason)
