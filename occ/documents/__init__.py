"""Stored documents: the revision spec and the provisioning plan, frozen pydantic models.

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
from occ.documents.provisioning import PlannedConfiguration, ProvisionPlan
from occ.documents.revision import (
    DriverPin,
    HarnessPin,
    PluginSnapshot,
    PublicRevision,
    RevisionSpec,
    SelectionDocument,
)

__all__ = [
    "Delivery", "Document", "DriverPin", "HarnessAuth", "HarnessPin", "PlannedConfiguration", "PluginApprover",
    "PluginSnapshot", "ProvisionPlan", "PublicRevision", "RevisionSpec", "SecretBinding", "SecretBindings",
    "SecretRef", "SelectionDocument", "bindings_of",
]
