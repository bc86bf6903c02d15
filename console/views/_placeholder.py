"""Placeholder pages while an area is being built (removed when every area has landed)."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse

from console.common import ConsoleRequest, console_view, error_response
from occ.errors import NotImplementedYet


@console_view
def placeholder(request: ConsoleRequest, **kwargs: Any) -> HttpResponse:
    return error_response(request, NotImplementedYet("This console page is not built yet."))
