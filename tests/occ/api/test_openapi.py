from __future__ import annotations

import re

from django.test import Client

from occ.api import api
from occ.errors import ERROR_CODES


def _routes() -> set[tuple[str, str]]:
    """Every (METHOD, /path/{param}) the API serves, read from the routers themselves."""
    routes = set()
    for prefix, router in api._routers:
        for path, path_view in router.path_operations.items():
            full = "/" + "/".join(p.strip("/") for p in (prefix, path) if p.strip("/"))
            full = re.sub(r"\{(\w+):?\w*\}", r"{\1}", full)
            for operation in path_view.operations:
                for method in operation.methods:
                    routes.add((method.upper(), full))
    return routes


def test_every_route_is_in_the_openapi_document(db):
    response = Client().get("/api/openapi.json")
    assert response.status_code == 200
    document = response.json()
    documented = {(method.upper(), path) for path, item in document["paths"].items() for method in item}
    served = _routes()
    assert len(served) >= 5
    assert served <= documented, served - documented


def test_error_codes_are_a_closed_set():
    assert len(ERROR_CODES) == len(set(ERROR_CODES))
    assert all(re.fullmatch(r"[A-Z][A-Z0-9_]{0,63}", code) for code in ERROR_CODES)
