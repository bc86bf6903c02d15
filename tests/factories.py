"""factory_boy factories and small IAM helpers shared by the tests."""

from __future__ import annotations

from typing import Any

import factory
from django.contrib.auth import get_user_model

from occ.iam.actor import Actor, Source
from occ.iam.keys import create_key_record
from occ.models import (
    AccessBinding,
    Agent,
    Configuration,
    Namespace,
    NamespaceStatus,
    Principal,
    PrincipalKind,
    Role,
    Secret,
)


class NamespaceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Namespace

    name = factory.Sequence(lambda n: f"namespace-{n}")
    status = NamespaceStatus.READY


class SecretFactory(factory.django.DjangoModelFactory):
    """Secret metadata only; tests that need a stored value go through secret_create."""

    class Meta:
        model = Secret

    namespace = factory.SubFactory(NamespaceFactory)
    name = factory.Sequence(lambda n: f"secret-{n}")
    driver_id = "database"
    backend_name = factory.Sequence(lambda n: f"factory-secret-{n}")


class ConfigurationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Configuration

    namespace = factory.SubFactory(NamespaceFactory)
    name = factory.Sequence(lambda n: f"configuration-{n}")
    values = factory.LazyFunction(lambda: {"agents": {"defaults": {"skipBootstrap": True}}})


class AgentFactory(factory.django.DjangoModelFactory):
    """An Agent with its service principal, as agent_create would make it."""

    class Meta:
        model = Agent
        skip_postgeneration_save = True

    namespace = factory.SubFactory(NamespaceFactory)
    name = factory.Sequence(lambda n: f"agent-{n}")
    configuration = factory.LazyAttribute(lambda o: ConfigurationFactory(namespace=o.namespace))

    @factory.post_generation
    def service_principal(self, create: bool, extracted: Any, **kwargs: Any) -> None:
        if create:
            Principal.objects.create(kind=PrincipalKind.SERVICE, name=f"agent {self.name}",
                                     namespace=self.namespace, agent=self)


def human(username: str) -> Principal:
    user = get_user_model().objects.create_user(username=username, password="a-long-test-password")
    return Principal.objects.create(kind=PrincipalKind.HUMAN, name=username, user=user)


def service_principal(name: str, namespace: Namespace | None = None) -> Principal:
    return Principal.objects.create(kind=PrincipalKind.SERVICE, name=name, namespace=namespace)


def grant(principal: Principal, *permissions: str, namespace: Namespace | None = None,
          resource_kind: str | None = None, resource_id: str | None = None) -> AccessBinding:
    """Bind a fresh Role holding ``permissions`` ("action:kind") at the given scope."""
    role = Role.objects.create(namespace=namespace, name=f"role-{Role.objects.count() + 1}",
                               permissions=list(permissions))
    return AccessBinding.objects.create(principal=principal, role=role, namespace=namespace,
                                        resource_kind=resource_kind, resource_id=resource_id)


def actor(principal: Principal, *, key_namespace_id: str | None = None) -> Actor:
    return Actor(principal=principal, source=Source.API, key_namespace_id=key_namespace_id)


def key_for(principal: Principal, *, namespace: Namespace | None = None, days: int = 30) -> str:
    """Issue a service key for a service principal directly (no API, no audit)."""
    from datetime import timedelta

    from django.utils import timezone

    _, token = create_key_record(principal_id=principal.id, namespace_id=namespace.id if namespace else None,
                                 name="test", expires_at=timezone.now() + timedelta(days=days),
                                 created_by=principal.id)
    return token


def marked_document(marker: dict[str, Any]) -> dict[str, Any]:
    """A Configuration document the runtime accepts, told apart by ``marker`` (kept in the
    free-form ``agents.defaults.params``)."""
    return {"agents": {"defaults": {"params": marker}}}
