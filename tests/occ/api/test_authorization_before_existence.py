"""Authorization is decided before existence: a caller who may not see a Namespace gets the
same answer for a real id in it as for a made-up one, on every API route with path ids.

Each route of the authorization matrix is asked twice by a narrow caller: once with the real
ids of the administrator's Namespace (resources that exist, but in a Namespace the caller
cannot see) and once with made-up ids of the same shape. Status, error code and message must
match. The route list is checked against the OpenAPI document, so a new route with a path
id must join the walk.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

from occ.api import api
from occ.models import Namespace
from tests.conftest import ApiClient
from tests.factories import grant, key_for, service_principal
from tests.fakes.fake_slack import _fake_slack_server, fake_slack  # noqa: F401 (fixtures)
from tests.occ.api.test_authorization_matrix import READ_ALL_IN_NAMESPACE, ROUTES, Route, world  # noqa: F401

UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
WITH_PATH_IDS = [route for route in ROUTES if "{" in route.path]
NARROW = ["namespace_key", "installation_key_granted_elsewhere"]


def made_up(ids: dict[str, str]) -> dict[str, str]:
    """The same ids with every UUID replaced: the same shape, naming nothing."""
    return {name: UUID4.sub(lambda _: str(uuid.uuid4()), value) for name, value in ids.items()}


def _template(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "{}", path)


def test_every_route_with_a_path_id_is_walked():
    documented = {
        (method.upper(), _template(path))
        for path, operations in api.get_openapi_schema()["paths"].items() if "{" in path
        for method in operations
    }
    walked = {(route.method, _template(route.path)) for route in WITH_PATH_IDS}
    assert documented - walked == set(), "routes with path ids missing from the walk"


@pytest.fixture
def narrow_keys(world) -> dict[str, str]:  # noqa: F811
    """Callers with broad grants, but only in the Namespace 'other'."""
    other = Namespace.objects.get(name="other")
    elsewhere = service_principal("granted-elsewhere")
    grant(elsewhere, *READ_ALL_IN_NAMESPACE, "update:configuration", "delete:configuration", "create:secret",
          "update:secret", "delete:secret", "create:agent", "update:agent", "deploy:agent", "operate:agent",
          "delete:agent", namespace=other)
    return {"namespace_key": world["keys"]["other_namespace"], "installation_key_granted_elsewhere": key_for(elsewhere)}


def _answer(client: ApiClient, route: Route, ids: dict[str, str]) -> tuple[int, Any, Any]:
    path, body = route.render(ids)
    response = client.request(route.method, path, body)
    error = (response.body or {}).get("error") or {}
    return response.status, error.get("code"), error.get("message")


@pytest.mark.parametrize("caller", NARROW)
@pytest.mark.parametrize("route", WITH_PATH_IDS, ids=lambda r: r.id)
def test_a_real_id_out_of_scope_answers_as_a_made_up_one(world, narrow_keys, route: Route, caller: str):  # noqa: F811
    client = ApiClient(narrow_keys[caller])
    real = _answer(client, route, world["ids"])
    invented = _answer(client, route, made_up(world["ids"]))
    assert real == invented, f"{route.id}: real {real} vs made-up {invented}"
    assert real[0] in (401, 403, 404) or route.path.startswith("/api/auth/session"), real
