"""Provisioning rows exactly as the contract's admission and retry write them.

``admit`` writes the ControllerWork (through ``work_enqueue``) and its
AgentProvisioningWork in one transaction, with the admission audit event; ``retry`` does
what ``POST …/retry`` does. Small on purpose: they stand in for the admission service
until the lead points them at it.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

from django.db import transaction

from occ.iam.actor import Actor
from occ.ids import IdPrefix, new_id
from occ.models import (
    AgentProvisioningWork,
    AgentTarget,
    ControllerWork,
    Namespace,
    ProvisioningStatus,
    Secret,
    WorkEffect,
    WorkJob,
)
from occ.models.work import provisioning_key
from occ.services.audit import audit_record
from occ.services.work import work_enqueue, work_requeue

VALUES = {"agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "openai/gpt-5"}}}}


def plan_for(namespace: Namespace, *, name: str, harness: Secret | None, bound: dict[str, Secret] | None = None,
             values: dict[str, Any] | None = None, files: dict[str, str] | None = None) -> dict[str, Any]:
    """A normalized plan: references only, ``secretIds`` sorted."""
    def ref(secret: Secret) -> dict[str, str]:
        return {"kind": "secret", "namespaceId": namespace.id, "id": secret.id}

    bound = bound or {}
    return {
        "name": name,
        "configuration": {"kind": "agent", "values": values or VALUES, "secretBindings": {
            env: {"source": ref(secret), "delivery": {"type": "env"}} for env, secret in sorted(bound.items())}},
        "executionMode": "embedded",
        "harnessAuth": {"method": "api_key", "source": ref(harness)} if harness else None,
        "backendId": None, "plugins": {}, "pluginApprovers": [], "repositoryBindings": [],
        "initialWorkspaceFiles": files or {},
        "secretIds": sorted({s.id for s in bound.values()} | ({harness.id} if harness else set())),
    }


def admit(namespace: Namespace, actor: Actor, plan: dict[str, Any], *,
          request_id: str | None = None) -> AgentProvisioningWork:
    agent_id, configuration_id = new_id(IdPrefix.AGENT), new_id(IdPrefix.CONFIGURATION)
    fingerprint = hashlib.sha256(json.dumps(plan, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    with transaction.atomic():
        work = work_enqueue(key=provisioning_key(agent_id), job=WorkJob.PROVISION, namespace_id=namespace.id,
                            actor_id=actor.id, agent_id=agent_id, agent_target=AgentTarget.PROVISIONED)
        row = AgentProvisioningWork.objects.create(
            work=work, namespace=namespace, actor_id=actor.id, request_id=request_id or f"req_{uuid.uuid4()}",
            request_fingerprint=fingerprint, completed_phase="admitted",
            agent_id=agent_id, configuration_id=configuration_id, revision_id=None, plan=plan, progress={})
        audit_record(actor=actor, action="openclaw.agents.provision", namespace_id=namespace.id,
                     resource_kind="agent", resource_id=agent_id,
                     details={"workId": work.idempotency_key, "configurationId": configuration_id})
    return row


def retry(work_id: str) -> AgentProvisioningWork:
    """Requeue failed work keeping its outputs; after RECOVERY_REQUIRED (an operator checked)
    every begun effect without a receipt is marked ``resend``."""
    with transaction.atomic():
        work = ControllerWork.objects.select_for_update().get(pk=work_id)
        row = AgentProvisioningWork.objects.select_for_update().get(work=work)
        assert row.status == ProvisioningStatus.FAILED, row.status
        progress = dict(row.progress)
        if (progress.get("error") or {}).get("code") == "RECOVERY_REQUIRED":
            WorkEffect.objects.filter(work=work, state="begun").update(resend=True)
        progress.pop("error", None)
        row.progress = progress
        row.save(update_fields=["progress", "updated_at"])
        work_requeue(work=work)
    return row
