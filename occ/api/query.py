"""Query strings on the few GET routes that page (``occ.api.middleware.QUERY_PATH``): ninja
ignores a parameter it was not told about, so a misspelt ``cursr`` would silently be the first
page; these routes refuse any name they do not document, and a repeated one."""

from __future__ import annotations

from django.http import HttpRequest

from occ.errors import InvalidRequest


def require_known_query(request: HttpRequest, names: frozenset[str]) -> None:
    unknown = sorted(set(request.GET) - names)
    if unknown:
        raise InvalidRequest(f"Unknown query parameter: {unknown[0][:64]}.")
    repeated = sorted(name for name in request.GET if len(request.GET.getlist(name)) > 1)
    if repeated:
        raise InvalidRequest(f"Query parameter given more than once: {repeated[0]}.")
