"""``console`` in every template: the shell (navigation, Namespace selector) reads it."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest


def console(request: HttpRequest) -> dict[str, Any]:
    return {"console": getattr(request, "console", None)}
