"""Stored documents: the revision spec, the provisioning plan and the plugin selections and
warnings they carry, frozen pydantic models.

A pure leaf: it imports nothing of OCC, so every layer reads the same typed shapes (the
drivers and plugins included). Their JSON names (camelCase, as stored and as the API shows
them) are generated from the field names; nothing outside this package reads them by key.
"""

from occ.documents.base import (
    Delivery,
    Document,
    HarnessAuth,
    PluginApprover,
    SecretBinding,
    SecretBindings,
    SecretRef,
    bindings_of,
)
from occ.documents.plugins import (
    APPROVAL_MODES,
    DRIVER_POLICY,
    REVIEWERS,
    TOOL_DEFAULTS,
    WARNING_CODES,
    ApprovalMode,
    PluginSelection,
    PluginWarning,
    Reviewer,
    Selections,
    ToolPolicy,
    WarningCode,
)
from occ.documents.provisioning import PlannedConfiguration, ProvisionPlan
from occ.documents.repositories import (
    PROFILES,
    Profile,
    RepositoryBinding,
    RepositoryCredentials,
    RepositoryDriverPin,
    bindings_from_stored,
)
from occ.documents.revision import (
    DriverPin,
    HarnessPin,
    PluginSnapshot,
    PublicRevision,
    RevisionSpec,
)
from occ.documents.smoke import SMOKE_MAX, SmokeConversation, SmokeConversations, pattern_problem, prompt_problem

__all__ = [
    "APPROVAL_MODES",
    "DRIVER_POLICY",
    "PROFILES",
    "REVIEWERS",
    "SMOKE_MAX",
    "TOOL_DEFAULTS",
    "WARNING_CODES",
    "ApprovalMode",
    "Delivery",
    "Document",
    "DriverPin",
    "HarnessAuth",
    "HarnessPin",
    "PlannedConfiguration",
    "PluginApprover",
    "PluginSelection",
    "PluginSnapshot",
    "PluginWarning",
    "Profile",
    "ProvisionPlan",
    "PublicRevision",
    "RepositoryBinding",
    "RepositoryCredentials",
    "RepositoryDriverPin",
    "Reviewer",
    "RevisionSpec",
    "SecretBinding",
    "SecretBindings",
    "SecretRef",
    "Selections",
    "SmokeConversation",
    "SmokeConversations",
    "ToolPolicy",
    "WarningCode",
    "bindings_from_stored",
    "bindings_of",
    "pattern_problem",
    "prompt_problem",
]
