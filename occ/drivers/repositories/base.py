"""The RepositoryDriver contract: which repositories an installation can reach, whether a
selection of them is allowed, and short-lived credentials scoped to exactly a selection.

A binding names a repository as ``owner/name`` (lowercase) and an access profile. Each profile
is one fixed permission map (``PROFILE_PERMISSIONS``, the anchor's access levels): a token is
minted for one profile and the exact repositories bound with it, never wider.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar

from occ.documents.repositories import PROFILES, Profile, RepositoryBinding
from occ.errors import DependencyUnavailable

# GitHub's own spelling rules: an owner of 1-39 letters, digits and inner hyphens, a
# repository name of 1-100 letters, digits, '.', '_' and '-' (never '.' or '..').
REPOSITORY_REF = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,38})/(?!\.\.?$)[a-z0-9._-]{1,100}$")

# Every profile may read metadata, checks and statuses; the rest is the profile's own.
_SHARED = {"metadata": "read", "checks": "read", "statuses": "read"}
PROFILE_PERMISSIONS: Mapping[Profile, Mapping[str, str]] = {
    "git-read": {"contents": "read", "pull_requests": "read", "issues": "read", **_SHARED},
    "git-write": {"contents": "write", "pull_requests": "write", "issues": "read", **_SHARED},
    "git-full": {"contents": "write", "pull_requests": "write", "issues": "write", **_SHARED},
}


def canonical_ref(value: str) -> str:
    """The ``owner/name`` reference of a repository: lowercase, no ``.git`` suffix."""
    ref = value.strip().lower()
    return ref[:-4] if ref.endswith(".git") else ref


class RepositoryDriverError(DependencyUnavailable):
    """The repository provider could not answer. Messages are ours, never upstream text."""

    code = "REPOSITORY_OPTIONS_UNAVAILABLE"
    default_message = "GitHub could not be reached to list or check repositories. Try again shortly."


class RepositoryProviderRateLimited(RepositoryDriverError):
    default_message = "GitHub is limiting OCC's requests. Try again in a minute."


class RepositoryInstallationRevoked(RepositoryDriverError):
    default_message = ("The GitHub App installation no longer grants OCC access (it was removed, suspended or "
                       "its key was replaced). Ask an administrator to reinstall the App or update its key.")


class RepositoryGrantRefused(RepositoryDriverError):
    default_message = ("GitHub did not grant the access requested: the App may lack a permission the profile "
                       "needs, or a repository left the installation. Check the App's permissions.")


class RepositoryDriverMisconfigured(DependencyUnavailable):
    default_message = ("The repository driver is not configured: set the GitHub App id, installation id and "
                       "private key file, then restart OCC.")


@dataclass(frozen=True)
class RepositoryOption:
    """A repository the installation can reach, and the profiles a binding to it may select."""

    repository_ref: str  # owner/name, lowercase
    display_name: str  # as the provider spells it
    repository_id: int
    allowed_profiles: tuple[Profile, ...] = PROFILES
    description: str | None = None


@dataclass(frozen=True)
class RepositoryToken:
    """A short-lived credential for exactly ``repository_refs`` with ``permissions``."""

    token: str = field(repr=False)
    expires_at: datetime
    repository_refs: tuple[str, ...]
    permissions: Mapping[str, str]


@dataclass(frozen=True)
class BindingProblem:
    index: int
    field: str  # the RepositoryBinding field at fault: "repository_ref" or "profile"
    message: str


class RepositoryDriver(ABC):
    driver_id: ClassVar[str]

    @abstractmethod
    def list_options(self) -> list[RepositoryOption]:
        """Every repository the installation can reach, sorted by reference."""

    @abstractmethod
    def mint_token(self, repository_refs: Sequence[str], profile: Profile) -> RepositoryToken:
        """A token for exactly ``repository_refs`` with ``profile``'s permissions; a grant that
        differs from the request is refused (``RepositoryGrantRefused``), never used."""

    def check_bindings(self, bindings: Sequence[RepositoryBinding]) -> list[BindingProblem]:
        """What is wrong with ``bindings`` now (empty: all allowed): a repository the
        installation cannot reach, or a profile it does not allow for that repository."""
        if not bindings:
            return []
        options = {option.repository_ref: option for option in self.list_options()}
        problems = []
        for index, binding in enumerate(bindings):
            option = options.get(binding.repository_ref)
            if option is None:
                problems.append(BindingProblem(index, "repository_ref", (
                    f"The GitHub App installation cannot reach {binding.repository_ref}: choose a repository from "
                    "the repository options, or ask an administrator to add it to the installation.")))
            elif binding.profile not in option.allowed_profiles:
                problems.append(BindingProblem(index, "profile", (
                    f"{binding.profile} is not allowed for {binding.repository_ref}; choose one of "
                    f"{', '.join(option.allowed_profiles)}.")))
        return problems
