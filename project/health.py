"""Probes for process managers and load balancers. Outside the API: plain JSON, no auth."""

from __future__ import annotations

from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_safe

from occ.dependencies import broker_problem, database_problem

NO_STORE = {"Cache-Control": "no-store"}


@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """The process is alive and serving; touches nothing else."""
    return JsonResponse({"status": "ok"}, headers=NO_STORE)


@require_safe
def readyz(request: HttpRequest) -> JsonResponse:
    """200 when the database and the broker are reachable; 503 naming what failed and what to do."""
    problems = {"database": database_problem(connection), "broker": broker_problem()}
    ready = not any(problems.values())
    body = {
        "status": "ready" if ready else "unavailable",
        "checks": {name: "ok" if problem is None else problem for name, problem in problems.items()},
    }
    return JsonResponse(body, status=200 if ready else 503, headers=NO_STORE)
