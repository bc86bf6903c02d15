"""The production routes plus ``GET /bench/bare``: the web stack's floor, served by the same server."""

from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.views.decorators.http import require_GET

from occ.urls import urlpatterns as occ_urlpatterns


@require_GET
def bare(request: HttpRequest) -> JsonResponse:
    """No database, no authentication: routing, the middleware stack and a tiny JSON body."""
    return JsonResponse({"data": {"ok": True}})


urlpatterns = [path("bench/bare", bare), *occ_urlpatterns]
