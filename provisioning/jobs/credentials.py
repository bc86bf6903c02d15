"""Runtime credentials: what a compute driver needs OCC to keep for each Agent (the local
gateway's password). The worker creates them as runtime-credential Secrets through the
Secrets service and hands the driver references; the driver reads a value only through the
SecretDriver, at use, and never touches OCC's rows."""

from __future__ import annotations

import secrets
from dataclasses import replace

from occ.drivers.compute import AgentRef, ComputeDriver, SecretReference
from occ.models import Agent, Secret
from occ.selectors.runtime import agent_ref
from occ.services.secrets import runtime_credential_ensure

# A fresh credential: 32 random bytes, URL-safe (a gateway password).
CREDENTIAL_BYTES = 32


def _reference(secret: Secret) -> SecretReference:
    return SecretReference(secret_id=secret.id, driver_id=secret.driver_id, backend_name=secret.backend_name)


def credentials_ref(agent: Agent, driver: ComputeDriver) -> AgentRef:
    """The Agent's ref with the runtime credentials already kept for ``driver`` (reads only)."""
    purposes = driver.runtime_credential_purposes
    found: dict[str, SecretReference] = {}
    if purposes:
        for secret in Secret.objects.filter(owner_agent_id=agent.id, purpose__in=purposes).order_by("id"):
            if secret.purpose is not None:
                found.setdefault(secret.purpose, _reference(secret))
    return replace(agent_ref(agent), runtime_credentials=found)


def ensure_credentials(agent: Agent, driver: ComputeDriver) -> AgentRef:
    """Create each runtime credential ``driver`` needs and the Agent lacks (an existing one is
    kept as it is), and the Agent's ref with them all."""
    found = {
        purpose: _reference(runtime_credential_ensure(
            agent=agent, purpose=purpose, value_factory=lambda: secrets.token_urlsafe(CREDENTIAL_BYTES)))
        for purpose in driver.runtime_credential_purposes
    }
    return replace(agent_ref(agent), runtime_credentials=found)
