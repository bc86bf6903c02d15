from __future__ import annotations

from typing import Any

from django.http import HttpResponse, JsonResponse

from occ.context import current_request_id
from occ.errors import Detail


def _meta() -> dict[str, Any]:
    return {"requestId": current_request_id.get()}


def respond(data: Any, status: int = 200) -> JsonResponse:
    return JsonResponse({"data": data, "meta": _meta()}, status=status, json_dumps_params={"ensure_ascii": False})


def no_content() -> HttpResponse:
    return HttpResponse(status=204)


def error_response(status: int, code: str, message: str, details: list[Detail] | None = None,
                   headers: dict[str, str] | None = None) -> JsonResponse:
    error: dict[str, Any] = {"code": code, "message": message[:256]}
    if details:
        error["details"] = [d.as_wire() for d in details[:32]]
    response = JsonResponse({"error": error, "meta": _meta()}, status=status)
    for name, value in (headers or {}).items():
        response[name] = value
    return response
