"""POST /namespaces/{ns}/agents/models with ``authMethod: codex_pat`` (a service account token),
end to end: the JSON API, the service, the real SecretDriver and httpx speaking HTTP to the
loopback fake of the identity host and the Codex models endpoint."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from occ.commands.secrets import SecretCreate
from occ.models import AuditEvent, AuditKind, Secret
from occ.services.secrets import secret_create
from tests.conftest import ApiClient, ApiResponse
from tests.fakes.fake_codex import TOKEN, FakeCodex, serving
from tests.occ.api.test_model_discovery import _rows, every_log_line  # noqa: F401 - a fixture

WHOAMI = "/api/accounts/v1/user-auth-credential/whoami"


@pytest.fixture
def fake(settings) -> Iterator[FakeCodex]:
    settings.OCC_MODEL_DISCOVERY_TIMEOUT_SECONDS = 30.0
    yield from serving(settings)


@pytest.fixture
def token_secret(ready_namespace, admin_actor) -> Secret:
    return secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                         command=SecretCreate(name="codex-token", value=TOKEN + "\n"))


def _models(api: ApiClient, ns_id: str, body: dict) -> ApiResponse:
    return api.post(f"/namespaces/{ns_id}/agents/models", body)


def _typed(token: str = TOKEN) -> dict:
    return {"provider": "openai", "authMethod": "codex_pat", "apiKey": token}


def test_a_service_account_token_lists_the_workspace_models(api, ready_namespace, fake):
    response = _models(api, ready_namespace.id, _typed())
    assert response.status == 200, response.body
    assert response.data == {"provider": "openai", "models": [
        {"id": "gpt-6-astra", "displayName": "GPT-6 Astra"}, {"id": "gpt-6-luna", "displayName": "GPT-6 Luna"},
        {"id": "gpt-6-mini", "displayName": "GPT-6 Mini"}, {"id": "gpt-5.6-sol", "displayName": "gpt-5.6-sol"}]}
    assert [(r["path"], r["authorized"]) for r in fake.requests] == [
        (WHOAMI, True), ("/backend-api/codex/models", True)]
    assert fake.requests[1]["account"] is True


def test_a_token_secret_is_read_audited_and_never_stored_again(api, ready_namespace, fake, token_secret):
    before = set(AuditEvent.objects.values_list("id", flat=True))
    response = _models(api, ready_namespace.id, {"provider": "openai", "authMethod": "codex_pat", "secretRef": {
        "kind": "secret", "namespaceId": ready_namespace.id, "id": token_secret.id}})
    assert response.status == 200, response.body
    assert response.data["models"][0]["id"] == "gpt-6-astra"
    events = list(AuditEvent.objects.exclude(id__in=before))
    assert [(e.kind, e.resource_id, e.details["authMethod"]) for e in events] == [
        (AuditKind.ACCESS, token_secret.id, "codex_pat")]


def test_an_api_key_secret_used_as_a_token_is_refused_before_sending(api, ready_namespace, fake, admin_actor):
    key = secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                        command=SecretCreate(name="api-key", value="sk-fake-openai-0123456789abcdef"))
    response = _models(api, ready_namespace.id, {"provider": "openai", "authMethod": "codex_pat", "secretRef": {
        "kind": "secret", "namespaceId": ready_namespace.id, "id": key.id}})
    assert (response.status, response.error_code) == (400, "MODEL_DISCOVERY_CREDENTIALS_REJECTED")
    assert "not a service account token" in response.body["error"]["message"]
    assert fake.requests == []


@pytest.mark.parametrize(("body", "pointer", "says"), [
    pytest.param(_typed("sk-fake-openai-0123456789abcdef"), "/apiKey", "starts with at-", id="an-api-key"),
    pytest.param({**_typed(), "provider": "anthropic"}, "/authMethod", "only with provider openai",
                 id="anthropic"),
    pytest.param({**_typed(), "baseUrl": "http://127.0.0.1:9/v1"}, "/baseUrl", "leave baseUrl out",
                 id="custom-endpoint"),
    pytest.param({**_typed(), "authMethod": "oauth"}, "/authMethod", "", id="unknown-method"),
])
def test_what_a_token_cannot_be_is_a_400_naming_the_field(api, ready_namespace, fake, body, pointer, says):
    response = _models(api, ready_namespace.id, body)
    assert (response.status, response.error_code) == (400, "INVALID_REQUEST"), response.body
    assert [d["path"] for d in response.body["error"]["details"]] == [pointer]
    assert says in json.dumps(response.body)
    assert TOKEN not in json.dumps(response.body)
    assert fake.requests == []


@pytest.mark.parametrize(("mode", "status", "code"), [
    pytest.param("unauthorized", 400, "MODEL_DISCOVERY_CREDENTIALS_REJECTED", id="whoami-401"),
    pytest.param("forbidden", 400, "MODEL_DISCOVERY_CREDENTIALS_REJECTED", id="models-403"),
    pytest.param("rate_limited", 429, "MODEL_DISCOVERY_RATE_LIMITED", id="429"),
    pytest.param("server_error", 503, "MODEL_DISCOVERY_UNAVAILABLE", id="500"),
    pytest.param("redirect", 503, "MODEL_DISCOVERY_UNAVAILABLE", id="redirect"),
    pytest.param("bad_whoami", 503, "MODEL_DISCOVERY_INVALID_RESPONSE", id="bad-whoami"),
    pytest.param("echo", 503, "MODEL_DISCOVERY_INVALID_RESPONSE", id="echo"),
])
def test_upstream_failures_in_the_envelope(api, ready_namespace, fake, mode, status, code):
    fake.configure(mode=mode)
    response = _models(api, ready_namespace.id, _typed())
    assert (response.status, response.error_code) == (status, code), response.body
    raw = json.dumps(response.body)
    assert "manually" in raw
    assert "UPSTREAM-TEXT" not in raw
    assert TOKEN not in raw


@pytest.mark.parametrize("mode", ["ok", "unauthorized", "echo", "echo_escaped"])
def test_the_token_is_never_logged_returned_or_stored(api, ready_namespace, fake, token_secret,
                                                      every_log_line, mode):  # noqa: F811 - the imported fixture
    fake.configure(mode=mode)
    responses = [
        _models(api, ready_namespace.id, _typed()),
        _models(api, ready_namespace.id, {"provider": "openai", "authMethod": "codex_pat", "secretRef": {
            "kind": "secret", "namespaceId": ready_namespace.id, "id": token_secret.id}}),
    ]
    assert fake.requests
    assert all(r["authorized"] for r in fake.requests)
    for response in responses:
        assert TOKEN not in json.dumps(response.body)
        assert TOKEN not in str(dict(response.headers))
    assert every_log_line.records
    assert TOKEN not in every_log_line.text
    assert all(TOKEN not in str(record.args) for record in every_log_line.records)
    assert TOKEN not in _rows()
