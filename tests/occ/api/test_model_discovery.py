"""POST /namespaces/{ns}/agents/models, end to end: the JSON API, the service, the real
SecretDriver and httpx speaking HTTP to the loopback fake providers."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
from django.apps import apps
from django.core import serializers
from django.db import connection

from occ.commands.secrets import SecretCreate
from occ.models import AuditEvent, AuditKind, Principal, Secret
from occ.services.secrets import secret_create
from tests.conftest import ApiClient, ApiResponse
from tests.factories import AgentFactory, NamespaceFactory, grant, key_for, service_principal
from tests.fakes.fake_model_providers import ANTHROPIC_KEY, OPENAI_KEY, FakeModelProviders, serving

KEYS = {"openai": OPENAI_KEY, "anthropic": ANTHROPIC_KEY}


@pytest.fixture
def fake(settings) -> Iterator[FakeModelProviders]:
    # Roomy: a short timeout would race every outcome on a loaded machine. The timeout case
    # below sets its own.
    yield from serving(settings, timeout=30.0)


@pytest.fixture
def ns(ready_namespace):
    return ready_namespace


@pytest.fixture
def openai_secret(ns, admin_actor) -> Secret:
    return secret_create(actor=admin_actor, namespace_id=ns.id,
                         command=SecretCreate(name="openai-key", value=OPENAI_KEY))


def _models(api: ApiClient, ns_id: str, body: dict) -> ApiResponse:
    return api.post(f"/namespaces/{ns_id}/agents/models", body)


def _ref(secret: Secret) -> dict[str, str]:
    return {"kind": "secret", "namespaceId": secret.namespace_id, "id": secret.id}


def _rows(*, audit: bool = True) -> str:
    models = [m for m in apps.get_models() if audit or m is not AuditEvent]
    return "".join(serializers.serialize("json", model.objects.order_by("pk")) for model in models)


def _audit_ids() -> set[str]:
    return set(AuditEvent.objects.values_list("id", flat=True))


def _new_events(before: set[str]) -> list[AuditEvent]:
    return list(AuditEvent.objects.exclude(id__in=before))


def test_openai_models_through_the_api(api, ns, fake):
    response = _models(api, ns.id, {"provider": "openai", "apiKey": OPENAI_KEY})
    assert response.status == 200, response.body
    assert set(response.body) == {"data", "meta"}
    assert response.body["meta"]["requestId"]
    assert response.data["provider"] == "openai"
    assert response.data["models"][:2] == [
        {"id": "gpt-6-astra", "createdAt": "2026-09-21T14:13:20.000Z"},
        {"id": "gpt-6-luna", "createdAt": "2026-05-28T20:26:40.000Z"},
    ]
    assert response.data["models"][-1] == {"id": "gpt-no-date"}


def test_anthropic_models_through_the_api_with_paging(api, ns, fake):
    fake.configure(page_size=2)
    response = _models(api, ns.id, {"provider": "anthropic", "apiKey": ANTHROPIC_KEY})
    assert response.status == 200, response.body
    assert response.data == {"provider": "anthropic", "models": [
        {"id": "claude-opus-5-5", "displayName": "Claude Opus 5.5", "createdAt": "2026-08-01T00:00:00.000Z"},
        {"id": "claude-mythos-5-1", "displayName": "Claude Mythos 5.1", "createdAt": "2026-06-01T00:00:00.000Z"},
        {"id": "claude-sonnet-5", "displayName": "Claude Sonnet 5", "createdAt": "2026-03-01T00:00:00.000Z"},
        {"id": "claude-haiku-4-5", "displayName": "Claude Haiku 4.5", "createdAt": "2025-10-01T00:00:00.000Z"},
        {"id": "claude-sonnet-4-6"},
    ]}
    assert len(fake.requests) == 3


def test_a_secret_ref_is_read_and_audited_without_its_value(api, ns, fake, openai_secret):
    before, audit = _rows(audit=False), _audit_ids()
    response = _models(api, ns.id, {"provider": "openai", "secretRef": _ref(openai_secret)})
    assert response.status == 200, response.body
    assert response.data["models"][0]["id"] == "gpt-6-astra"
    assert fake.requests[0]["authorized"]
    assert _rows(audit=False) == before
    events = _new_events(audit)
    assert [(e.kind, e.resource_id) for e in events] == [(AuditKind.ACCESS, openai_secret.id)]


ERRORS = [
    pytest.param("unauthorized", 400, "MODEL_DISCOVERY_CREDENTIALS_REJECTED", id="401"),
    pytest.param("forbidden", 400, "MODEL_DISCOVERY_CREDENTIALS_REJECTED", id="403"),
    pytest.param("rate_limited", 429, "MODEL_DISCOVERY_RATE_LIMITED", id="429"),
    pytest.param("server_error", 503, "MODEL_DISCOVERY_UNAVAILABLE", id="500"),
    pytest.param("slow", 503, "MODEL_DISCOVERY_UNAVAILABLE", id="timeout"),
    pytest.param("redirect", 503, "MODEL_DISCOVERY_UNAVAILABLE", id="redirect"),
    pytest.param("bad_json", 503, "MODEL_DISCOVERY_INVALID_RESPONSE", id="bad-json"),
    pytest.param("huge", 503, "MODEL_DISCOVERY_INVALID_RESPONSE", id="too-large"),
    pytest.param("echo", 503, "MODEL_DISCOVERY_INVALID_RESPONSE", id="echo"),
]


@pytest.mark.parametrize(("mode", "status", "code"), ERRORS)
def test_upstream_failures_in_the_envelope(api, ns, fake, settings, mode, status, code):
    fake.configure(mode=mode, delay=6.0)
    if mode == "slow":
        settings.OCC_MODEL_DISCOVERY_TIMEOUT_SECONDS = 0.5  # well under the fake's delay
    response = _models(api, ns.id, {"provider": "openai", "apiKey": OPENAI_KEY})
    assert (response.status, response.error_code) == (status, code), response.body
    assert "manually" in response.body["error"]["message"]
    raw = json.dumps(response.body)
    assert "UPSTREAM-TEXT" not in raw
    assert OPENAI_KEY not in raw
    assert "data" not in response.body


@pytest.mark.parametrize(("body", "pointer"), [
    pytest.param({"provider": "openai", "apiKey": OPENAI_KEY, "model": "x"}, "/model", id="unknown-field"),
    pytest.param({"provider": "openai", "apiKey": OPENAI_KEY, "secretRef": {"kind": "secret", "namespaceId": "n",
                                                                            "id": "s", "x": 1}},
                 "/secretRef/x", id="unknown-ref-field"),
    pytest.param({"provider": 1, "apiKey": OPENAI_KEY}, "/provider", id="provider-type"),
    pytest.param({"apiKey": OPENAI_KEY}, "/provider", id="no-provider"),
    pytest.param({"provider": "openai", "apiKey": 12345678}, "/apiKey", id="key-type"),
    pytest.param({"provider": "openai"}, "", id="no-credential"),
    pytest.param({"provider": "openai", "apiKey": OPENAI_KEY + " x"}, "/apiKey", id="key-with-space"),
])
def test_the_body_is_closed(api, ns, fake, body, pointer):
    response = _models(api, ns.id, body)
    assert (response.status, response.error_code) == (400, "INVALID_REQUEST"), response.body
    assert pointer in [d["path"] for d in response.body["error"]["details"]]
    assert OPENAI_KEY not in json.dumps(response.body)
    assert fake.requests == []


@pytest.mark.parametrize("body", [
    pytest.param({"provider": "openai-compatible", "apiKey": OPENAI_KEY}, id="other-provider"),
    pytest.param({"provider": "openai", "apiKey": OPENAI_KEY, "baseUrl": "{typed}"}, id="typed-endpoint"),
    pytest.param({"provider": "anthropic", "apiKey": ANTHROPIC_KEY, "baseUrl": "{openai}"}, id="other-allowed"),
])
def test_custom_endpoints_get_manual_entry_and_no_request(api, ns, fake, body):
    with FakeModelProviders() as typed:
        urls = {"typed": typed.base_url("openai") + "/v1", "openai": fake.base_url("openai")}
        body = {k: v.format(**urls) for k, v in body.items()}
        response = _models(api, ns.id, body)
        assert typed.requests == []
    assert (response.status, response.error_code) == (400, "MODEL_DISCOVERY_UNSUPPORTED_PROVIDER")
    assert "model ID manually" in response.body["error"]["message"]
    assert fake.requests == []


def test_naming_the_configured_endpoint_is_allowed(api, ns, fake):
    body = {"provider": "openai", "apiKey": OPENAI_KEY, "baseUrl": fake.base_url("openai") + "/v1/"}
    assert _models(api, ns.id, body).status == 200


# --- the Secret path ---------------------------------------------------------------------------


def _client_with(ns, *permissions, **scope) -> tuple[Principal, ApiClient]:
    principal = service_principal(f"models-{Principal.objects.count()}")
    grant(principal, *permissions, namespace=ns, **scope)
    return principal, ApiClient(key_for(principal))


def test_without_operate_on_the_secret_403_and_one_denial(ns, fake, openai_secret):
    principal, client = _client_with(ns, "create:agent", "read:secret")
    before, audit = _rows(audit=False), _audit_ids()
    response = _models(client, ns.id, {"provider": "openai", "secretRef": _ref(openai_secret)})
    assert (response.status, response.error_code) == (403, "FORBIDDEN")
    events = _new_events(audit)
    assert [(e.kind, e.actor_id, e.resource_id) for e in events] == [
        (AuditKind.AUTHORIZATION_DENIAL, principal.id, openai_secret.id)]
    assert events[0].details["permission"] == "operate:secret"
    assert fake.requests == []
    assert _rows(audit=False) == before


def test_operate_on_exactly_that_secret_is_enough(ns, fake, openai_secret):
    principal, client = _client_with(ns, "create:agent")
    grant(principal, "operate:secret", namespace=ns, resource_kind="secret", resource_id=openai_secret.id)
    response = _models(client, ns.id, {"provider": "openai", "secretRef": _ref(openai_secret)})
    assert response.status == 200, response.body
    assert fake.requests[0]["authorized"]


def test_a_secret_of_another_namespace_404(api, ns, fake, admin_actor):
    other = NamespaceFactory(name="other-ns", status="ready")
    foreign = secret_create(actor=admin_actor, namespace_id=other.id,
                            command=SecretCreate(name="foreign", value=OPENAI_KEY))
    ref = {"kind": "secret", "namespaceId": ns.id, "id": foreign.id}
    response = _models(api, ns.id, {"provider": "openai", "secretRef": ref})
    assert (response.status, response.error_code) == (404, "NOT_FOUND")
    response = _models(api, ns.id, {"provider": "openai", "secretRef": _ref(foreign)})
    assert (response.status, response.error_code) == (400, "INVALID_REQUEST")
    assert response.body["error"]["details"][0]["path"] == "/secretRef/namespaceId"
    assert fake.requests == []


def test_a_runtime_credential_is_not_a_secret_you_can_name(api, ns, fake, openai_secret):
    agent = AgentFactory(namespace=ns)
    Secret.objects.filter(id=openai_secret.id).update(owner_agent=agent, purpose="gateway-password")
    response = _models(api, ns.id, {"provider": "openai", "secretRef": _ref(openai_secret)})
    assert (response.status, response.error_code) == (404, "NOT_FOUND")
    assert fake.requests == []


def test_anonymous_and_other_namespace_callers_are_refused(anon_api, ns, fake):
    assert _models(anon_api, ns.id, {"provider": "openai", "apiKey": OPENAI_KEY}).status == 401
    other = NamespaceFactory(name="theirs")
    _, outsider = _client_with(other, "create:agent", "operate:secret")
    response = _models(outsider, ns.id, {"provider": "openai", "apiKey": OPENAI_KEY})
    assert (response.status, response.error_code) == (403, "FORBIDDEN")
    assert fake.requests == []


# --- the key never comes back out -------------------------------------------------------------


@pytest.fixture
def every_log_line(caplog):
    caplog.set_level(logging.DEBUG)
    for name in list(logging.root.manager.loggerDict):
        caplog.set_level(logging.DEBUG, logger=name)
    forced = connection.force_debug_cursor
    connection.force_debug_cursor = True  # SQL with its parameters
    yield caplog
    connection.force_debug_cursor = forced


@pytest.mark.parametrize("mode", ["ok", "unauthorized", "echo", "echo_escaped", "bad_json", "redirect"])
def test_the_key_is_never_logged_returned_or_stored(api, ns, fake, openai_secret, every_log_line, mode):
    fake.configure(mode=mode)
    responses = [
        _models(api, ns.id, {"provider": "openai", "apiKey": OPENAI_KEY}),
        _models(api, ns.id, {"provider": "openai", "secretRef": _ref(openai_secret)}),
        _models(api, ns.id, {"provider": "openai", "apiKey": OPENAI_KEY, "unknown": True}),
    ]
    assert len(fake.requests) == 2
    assert all(r["authorized"] for r in fake.requests)
    for response in responses:
        assert OPENAI_KEY not in json.dumps(response.body)
        assert OPENAI_KEY not in str(dict(response.headers))
    assert every_log_line.records, "the capture must see log lines to prove anything"
    assert OPENAI_KEY not in every_log_line.text
    assert all(OPENAI_KEY not in str(record.args) for record in every_log_line.records)
    assert OPENAI_KEY not in _rows()
