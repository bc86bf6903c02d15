from __future__ import annotations

import json
from typing import Any

from django.http import HttpResponse, JsonResponse

from occ.context import current_request_id
from occ.errors import Detail


def _meta() -> dict[str, Any]:
    return {"requestId": current_request_id.get()}


def respond(data: Any, status: int = 200) -> JsonResponse:
    return JsonResponse({"data": data, "meta": _meta()}, status=status, json_dumps_params={"ensure_ascii": False})


def respond_json_items(items: list[str], status: int = 200) -> HttpResponse:
    """The envelope around a list whose items are already JSON texts (built by the database)."""
    meta = json.dumps(_meta(), ensure_ascii=False)
    body = f'{{"data": [{", ".join(items)}], "meta": {meta}}}'
    return HttpResponse(body.encode(), status=status, content_type="application/json")


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
