"""Repository drivers: the repositories an installation can reach, and credentials scoped to a
selection of them (``base``); the GitHub App driver (``github_app``); selection (``registry``)."""

from occ.drivers.repositories.base import (
    PROFILE_PERMISSIONS,
    REPOSITORY_REF,
    BindingProblem,
    RepositoryDriver,
    RepositoryDriverError,
    RepositoryDriverMisconfigured,
    RepositoryGrantRefused,
    RepositoryInstallationRevoked,
    RepositoryOption,
    RepositoryProviderRateLimited,
    RepositoryToken,
    canonical_ref,
)
from occ.drivers.repositories.registry import (
    NoRepositoryDriver,
    forget_repository_drivers,
    repository_driver,
    require_repository_driver,
)

__all__ = [
    "PROFILE_PERMISSIONS", "REPOSITORY_REF", "BindingProblem", "NoRepositoryDriver", "RepositoryDriver",
    "RepositoryDriverError", "RepositoryDriverMisconfigured", "RepositoryGrantRefused",
    "RepositoryInstallationRevoked", "RepositoryOption", "RepositoryProviderRateLimited", "RepositoryToken",
    "canonical_ref", "forget_repository_drivers", "repository_driver", "require_repository_driver",
]
