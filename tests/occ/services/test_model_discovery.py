"""models_discover: authorization before any read or request, one access audit per Secret read,
nothing else written (loopback fake providers, the real database SecretDriver)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.apps import apps
from django.core import serializers

from occ.commands.base import build
from occ.commands.model_discovery import ModelDiscovery
from occ.commands.secrets import SecretCreate
from occ.drivers.model_providers import ModelDiscoveryCredentialsRejected, ModelDiscoveryUnsupportedProvider
from occ.drivers.secrets.database import DatabaseSecretDriver
from occ.errors import Forbidden, InvalidRequest, NotFound
from occ.models import AuditEvent, AuditKind, Secret
from occ.services.model_discovery import SECRET_USE_ACTION, models_discover
from occ.services.secrets import secret_create
from tests.factories import NamespaceFactory, actor, grant, service_principal
from tests.fakes.fake_model_providers import ANTHROPIC_KEY, OPENAI_KEY, FakeModelProviders, serving


@pytest.fixture
def fake(settings) -> Iterator[FakeModelProviders]:
    yield from serving(settings)


@pytest.fixture
def reads(monkeypatch) -> list[str]:
    """Backend names whose value the SecretDriver handed out (a spy around the real driver)."""
    seen: list[str] = []
    real = DatabaseSecretDriver.with_value

    def spy(self, backend_name, consumer):
        seen.append(backend_name)
        return real(self, backend_name, consumer)

    monkeypatch.setattr(DatabaseSecretDriver, "with_value", spy)
    return seen


@pytest.fixture
def anthropic_secret(ready_namespace, admin_actor) -> Secret:
    return secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                         command=SecretCreate(name="anthropic-key", value=ANTHROPIC_KEY + "\n"))


def _everything() -> dict[str, str]:
    """Every row of every model but the audit log, serialized."""
    return {model._meta.label: serializers.serialize("json", model.objects.order_by("pk"))
            for model in apps.get_models() if model is not AuditEvent}


def _caller(namespace, *permissions, **scope):
    principal = service_principal(f"caller-{len(permissions)}-{scope.get('resource_id', 'ns')}")
    grant(principal, *permissions, namespace=namespace, **scope)
    return actor(principal)


def _ref(secret: Secret) -> dict[str, str]:
    return {"kind": "secret", "namespaceId": secret.namespace_id, "id": secret.id}


def test_a_typed_key_writes_nothing_at_all(fake, ready_namespace, admin_actor):
    before, audit = _everything(), AuditEvent.objects.count()
    found = models_discover(actor=admin_actor, namespace_id=ready_namespace.id,
                            command=build(ModelDiscovery, provider="openai", api_key=OPENAI_KEY))
    assert found.provider == "openai"
    assert found.models[0].id == "gpt-6-astra"
    assert _everything() == before
    assert AuditEvent.objects.count() == audit


def test_a_secret_is_read_once_after_one_access_event(fake, ready_namespace, anthropic_secret, reads):
    caller = _caller(ready_namespace, "create:agent", "operate:secret")
    before, audit = _everything(), set(AuditEvent.objects.values_list("id", flat=True))
    found = models_discover(actor=caller, namespace_id=ready_namespace.id,
                            command=build(ModelDiscovery, provider="anthropic", secret_ref=_ref(anthropic_secret)))
    assert [m.id for m in found.models][:2] == ["claude-opus-5-5", "claude-mythos-5-1"]
    assert fake.requests[0]["authorized"]  # the stored value (its trailing newline trimmed) was sent
    assert reads == [anthropic_secret.backend_name]
    assert _everything() == before
    [event] = AuditEvent.objects.exclude(id__in=audit)
    assert (event.kind, event.action, event.actor_id) == (AuditKind.ACCESS, SECRET_USE_ACTION, caller.id)
    assert (event.namespace_id, event.resource_kind, event.resource_id) == (
        ready_namespace.id, "secret", anthropic_secret.id)
    assert event.details["purpose"] == "model_discovery"
    assert event.details["provider"] == "anthropic"
    assert ANTHROPIC_KEY not in str(event.details)


@pytest.mark.parametrize("permissions", [("create:agent",), ("create:agent", "read:secret")])
def test_without_operate_the_value_is_never_read(fake, ready_namespace, anthropic_secret, reads, permissions):
    caller = _caller(ready_namespace, *permissions)
    with pytest.raises(Forbidden):
        models_discover(actor=caller, namespace_id=ready_namespace.id,
                        command=build(ModelDiscovery, provider="anthropic", secret_ref=_ref(anthropic_secret)))
    assert reads == []
    assert fake.requests == []
    assert not AuditEvent.objects.filter(kind=AuditKind.ACCESS).exists()


def test_operate_on_another_secret_is_not_enough(fake, ready_namespace, anthropic_secret, admin_actor, reads):
    other = secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                          command=SecretCreate(name="other", value="sk-other-000"))
    caller = _caller(ready_namespace, "create:agent")
    grant(caller.principal, "operate:secret", namespace=ready_namespace, resource_kind="secret", resource_id=other.id)
    with pytest.raises(Forbidden):
        models_discover(actor=caller, namespace_id=ready_namespace.id,
                        command=build(ModelDiscovery, provider="anthropic", secret_ref=_ref(anthropic_secret)))
    assert reads == []
    assert fake.requests == []


def test_operate_without_agent_create_is_refused_first(fake, ready_namespace, anthropic_secret, reads):
    caller = _caller(ready_namespace, "operate:secret")
    with pytest.raises(Forbidden) as raised:
        models_discover(actor=caller, namespace_id=ready_namespace.id,
                        command=build(ModelDiscovery, provider="anthropic", secret_ref=_ref(anthropic_secret)))
    assert raised.value.denial is not None
    assert raised.value.denial.resource_kind == "agent"
    assert reads == []
    assert fake.requests == []


def test_a_secret_of_another_namespace_is_not_found(fake, ready_namespace, admin_actor, reads):
    other_ns = NamespaceFactory(name="elsewhere", status="ready")
    foreign = secret_create(actor=admin_actor, namespace_id=other_ns.id,
                            command=SecretCreate(name="foreign", value=ANTHROPIC_KEY))
    with pytest.raises(NotFound):
        models_discover(actor=admin_actor, namespace_id=ready_namespace.id,
                        command=build(ModelDiscovery, provider="anthropic", secret_ref={
                            "kind": "secret", "namespaceId": ready_namespace.id, "id": foreign.id}))
    with pytest.raises(InvalidRequest) as raised:
        models_discover(actor=admin_actor, namespace_id=ready_namespace.id,
                        command=build(ModelDiscovery, provider="anthropic", secret_ref=_ref(foreign)))
    assert raised.value.details[0].path == "/secretRef/namespaceId"
    assert reads == []
    assert fake.requests == []


def test_an_unsupported_provider_reads_no_secret(fake, ready_namespace, admin_actor, anthropic_secret, reads):
    with pytest.raises(ModelDiscoveryUnsupportedProvider):
        models_discover(actor=admin_actor, namespace_id=ready_namespace.id,
                        command=build(ModelDiscovery, provider="openai-compatible", secret_ref=_ref(anthropic_secret)))
    assert reads == []
    assert fake.requests == []
    assert not AuditEvent.objects.filter(kind=AuditKind.ACCESS).exists()


def test_a_secret_that_holds_no_key_is_not_sent(fake, ready_namespace, admin_actor):
    secret = secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                           command=SecretCreate(name="prose", value="this is not an api key"))
    with pytest.raises(ModelDiscoveryCredentialsRejected) as raised:
        models_discover(actor=admin_actor, namespace_id=ready_namespace.id,
                        command=build(ModelDiscovery, provider="openai", secret_ref=_ref(secret)))
    assert "Secret" in raised.value.message
    assert "not an api key" not in raised.value.message
    assert fake.requests == []


@pytest.mark.parametrize(("api_key", "secret_ref", "path"), [
    pytest.param(None, None, "", id="neither"),
    pytest.param(OPENAI_KEY, {"kind": "secret", "namespaceId": "x", "id": "sec_00000000-0000-4000-8000-000000000000"},
                 "", id="both"),
    pytest.param("short", None, "/apiKey", id="not-a-key"),
    pytest.param(None, {"kind": "secret", "namespaceId": "{ns}", "id": "nope"}, "/secretRef/id", id="bad-id"),
])
def test_the_credential_is_checked_before_anything_else(fake, ready_namespace, admin_actor, api_key, secret_ref,
                                                        path):
    if secret_ref is not None:
        secret_ref = {k: v.format(ns=ready_namespace.id) for k, v in secret_ref.items()}
    with pytest.raises(InvalidRequest) as raised:
        models_discover(actor=admin_actor, namespace_id=ready_namespace.id,
                        command=build(ModelDiscovery, provider="openai", api_key=api_key, secret_ref=secret_ref))
    assert raised.value.details[0].path == path
    assert "short" not in raised.value.message
    assert fake.requests == []
