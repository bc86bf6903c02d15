from __future__ import annotations

from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """The process is alive and serving."""
    return JsonResponse({"status": "ok"}, headers={"Cache-Control": "no-store"})


@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """The database and the broker are reachable."""
    from occ.dependencies import broker_problem, database_problem

    checks = {"database": database_problem(connection), "broker": broker_problem()}
    ready = not any(checks.values())
    body = {"status": "ready" if ready else "unavailable",
            "checks": {name: ("ok" if problem is None else problem) for name, problem in checks.items()}}
    return JsonResponse(body, status=200 if ready else 503, headers={"Cache-Control": "no-store"})
