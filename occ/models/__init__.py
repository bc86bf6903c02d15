from occ.drivers.secrets.models import EncryptedSecretValue
from occ.models.audit import AuditEvent, AuditKind, AuditOutcome
from occ.models.deploy import DeployIdempotencyKey
from occ.models.iam import AccessBinding, Principal, PrincipalKind, Restriction, Role, ServiceKey
from occ.models.installation import Installation
from occ.models.namespace import Namespace, NamespaceStatus
from occ.models.resources import (
    Agent,
    AgentRevision,
    AgentStatus,
    Configuration,
    DesiredRuntimeState,
    ExecutionMode,
    HarnessAuthMethod,
    Secret,
    SecretBinding,
)
from occ.models.work import (
    TERMINAL_STATES,
    AgentProvisioningWork,
    AgentTarget,
    ControllerWork,
    EffectKind,
    EffectState,
    NamespaceTarget,
    ProvisioningPhase,
    ProvisioningStatus,
    WorkEffect,
    WorkJob,
    WorkState,
)

__all__ = [
    "TERMINAL_STATES",
    "AccessBinding",
    "Agent",
    "AgentProvisioningWork",
    "AgentRevision",
    "AgentStatus",
    "AgentTarget",
    "AuditEvent",
    "AuditKind",
    "AuditOutcome",
    "Configuration",
    "ControllerWork",
    "DeployIdempotencyKey",
    "DesiredRuntimeState",
    "EffectKind",
    "EffectState",
    "EncryptedSecretValue",
    "ExecutionMode",
    "HarnessAuthMethod",
    "Installation",
    "Namespace",
    "NamespaceStatus",
    "NamespaceTarget",
    "Principal",
    "PrincipalKind",
    "ProvisioningPhase",
    "ProvisioningStatus",
    "Restriction",
    "Role",
    "Secret",
    "SecretBinding",
    "ServiceKey",
    "WorkEffect",
    "WorkJob",
    "WorkState",
]
