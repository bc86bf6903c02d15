"""Text and numbers no database stores are a 400 at their place, never a database error.

A NUL, a lone surrogate or a number beyond a double (``1e400`` reads as infinity) anywhere in a
body is refused by the commands (``occ.commands.base.unstorable``) with the JSON pointer of the
value; a control character in a path id by the API boundary. Nothing reaches the database, and
nothing of the body reaches the log. Run on SQLite and on PostgreSQL (``DATABASE_URL``).
"""

from __future__ import annotations

import copy
import json
import logging
from typing import Any

import pytest

from occ.commands.secrets import SecretCreate
from occ.models import AuditEvent, Configuration, ControllerWork, Namespace, Secret
from occ.services.secrets import secret_create
from tests.factories import marked_document

MARKER = "body-marker-7f3a"
# Raw JSON texts (the escapes are JSON's, so the body is what a client sends on the wire).
BAD = [
    pytest.param(f'"{MARKER}\\u0000"', "INVALID_VALUE", id="nul"),
    pytest.param(f'"{MARKER}\\ud800"', "INVALID_VALUE", id="lone-surrogate"),
    pytest.param("1e400", "INVALID_VALUE", id="out-of-range-number"),
    pytest.param("-1e400", "INVALID_VALUE", id="out-of-range-negative"),
]
BAD_KEYS = [
    pytest.param(f'"{MARKER}\\u0000"', id="nul-in-key"),
    pytest.param(f'"{MARKER}\\udfff"', id="lone-surrogate-in-key"),
]


def state() -> tuple[int, ...]:
    return (Configuration.objects.count(), AuditEvent.objects.count(), ControllerWork.objects.count(),
            Secret.objects.count(), Namespace.objects.count())


def values_with(raw: str, *, as_key: bool = False) -> str:
    """A valid document whose free-form ``agents.defaults.params`` holds ``raw``."""
    inner = f'{{{raw}: 1}}' if as_key else f'{{"x": [1, {raw}]}}'
    return json.dumps(marked_document({})).replace("{}", inner)


def assert_refused(response: Any, code: str, path: str, caplog: pytest.LogCaptureFixture) -> None:
    assert response.status == 400, response.body
    assert response.error_code == "INVALID_REQUEST"
    assert {"code": code, "path": path} in response.body["error"]["details"]
    assert MARKER not in json.dumps(response.body)
    assert MARKER not in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.fixture
def ns(ready_namespace) -> Namespace:
    return ready_namespace


@pytest.fixture
def configuration(api, ns) -> dict[str, Any]:
    response = api.post(f"/namespaces/{ns.id}/configurations", {"kind": "agent", "values": marked_document({})})
    assert response.status == 201
    return response.data


@pytest.mark.parametrize(("raw", "code"), BAD)
def test_configuration_create_refuses_unstorable_values(api, ns, raw, code, caplog):
    before = state()
    body = f'{{"kind": "agent", "values": {values_with(raw)}}}'.encode()
    response = api.post(f"/namespaces/{ns.id}/configurations", raw=body)
    assert_refused(response, code, "/values/agents/defaults/params/x/1", caplog)
    assert state() == before


@pytest.mark.parametrize("raw", BAD_KEYS)
def test_configuration_create_refuses_unstorable_keys_at_their_object(api, ns, raw, caplog):
    before = state()
    body = f'{{"kind": "agent", "values": {values_with(raw, as_key=True)}}}'.encode()
    response = api.post(f"/namespaces/{ns.id}/configurations", raw=body)
    assert_refused(response, "INVALID_VALUE", "/values/agents/defaults/params", caplog)
    assert state() == before


@pytest.mark.parametrize(("raw", "code"), BAD)
def test_configuration_patch_refuses_unstorable_values(api, configuration, raw, code, caplog):
    before = state()
    url = f"/namespaces/{configuration['namespaceId']}/configurations/{configuration['id']}"
    response = api.patch(url, raw=f'{{"values": {values_with(raw)}}}'.encode())
    assert_refused(response, code, "/values/agents/defaults/params/x/1", caplog)
    assert state() == before
    assert api.get(url).data["generation"] == configuration["generation"]


@pytest.mark.parametrize(("raw", "code"), BAD)
def test_provisioning_refuses_unstorable_values(api, ns, admin_actor, raw, code, caplog):
    key = secret_create(actor=admin_actor, namespace_id=ns.id, command=SecretCreate(name="model-key", value="k"))
    before = state()
    body = {
        "requestId": "req_0f6b2a4e8d1c4f5e",
        "name": "provisioned",
        "configuration": {"kind": "agent", "values": "VALUES"},
        "harnessAuth": {"method": "api_key", "source": {"kind": "secret", "namespaceId": ns.id, "id": key.id}},
    }
    raw_body = json.dumps(body).replace('"VALUES"', values_with(raw)).encode()
    response = api.post(f"/namespaces/{ns.id}/agents/provision", raw=raw_body)
    assert_refused(response, code, "/configuration/values/agents/defaults/params/x/1", caplog)
    assert state() == before


@pytest.mark.parametrize(
    ("route", "body", "path"),
    [
        pytest.param("/namespaces", '{"name": RAW}', "/name", id="namespace-name"),
        pytest.param("/namespaces/NS/secrets", '{"name": "n", "value": RAW}', "/value", id="secret-value"),
        pytest.param("/namespaces/NS/secrets", '{"name": RAW, "value": "v"}', "/name", id="secret-name"),
    ],
)
@pytest.mark.parametrize("raw", [f'"{MARKER}\\u0000"', f'"{MARKER}\\ud800"'])
def test_other_text_fields_refuse_unstorable_text(api, ns, route, body, path, raw, caplog):
    before = state()
    response = api.post(route.replace("NS", ns.id), raw=body.replace("RAW", raw).encode())
    assert_refused(response, "INVALID_VALUE", path, caplog)
    assert state() == before


@pytest.mark.parametrize(
    "path_of",
    [
        pytest.param(lambda ns, cfg: f"/namespaces/{ns}%00", id="namespace-id"),
        pytest.param(lambda ns, cfg: f"/namespaces/{ns}/configurations/{cfg}%00", id="configuration-id"),
        pytest.param(lambda ns, cfg: f"/namespaces/{ns}/secrets/sec_%00x", id="secret-id"),
        pytest.param(lambda ns, cfg: f"/namespaces/{ns}/agents/agt_%01", id="control-character"),
    ],
)
def test_control_character_in_a_path_id_is_400(api, configuration, path_of, caplog):
    response = api.get(path_of(configuration["namespaceId"], configuration["id"]))
    assert response.status == 400, response.body
    assert response.error_code == "INVALID_REQUEST"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_finite_numbers_and_unicode_text_are_kept(api, ns):
    document = marked_document({"big": 1e308, "small": -5e-324, "text": "zero\u200bwidth \U0001f600 é"})
    response = api.post(f"/namespaces/{ns.id}/configurations", {"kind": "agent", "values": copy.deepcopy(document)})
    assert response.status == 201, response.body
    assert response.data["values"] == document
