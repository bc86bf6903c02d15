"""Repository bindings: which repositories an Agent may reach, and with which access profile.

An Agent stores its bindings as these documents; a deploy freezes them, with the
RepositoryDriver that admitted them, into the revision (``RepositoryCredentials``). A binding
names a repository (``owner/name``, lowercase) and a profile, never a token: tokens are minted
by the driver when the runtime needs them and are never stored.
"""

from __future__ import annotations

from typing import Literal

from occ.documents.base import Document

Profile = Literal["git-read", "git-write", "git-full"]
PROFILES: tuple[Profile, ...] = ("git-read", "git-write", "git-full")
PROFILE_LABELS: dict[str, str] = {"git-read": "Read-only", "git-write": "Contributor, issues off",
                                  "git-full": "Contributor"}


class RepositoryBinding(Document):
    """One repository (``owner/name``) and the access profile the Agent gets to it."""

    repository_ref: str
    profile: Profile


class RepositoryDriverPin(Document):
    """The RepositoryDriver that admitted a revision's bindings (its setting's id)."""

    id: str


class RepositoryCredentials(Document):
    """A revision's repository bindings and the driver that mints their credentials."""

    driver: RepositoryDriverPin | None = None  # absent only in hand-written rows
    bindings: list[RepositoryBinding]

    def refs(self) -> list[str]:
        return [binding.repository_ref for binding in self.bindings]


def bindings_from_stored(stored: object) -> list[RepositoryBinding]:
    """The typed bindings of an Agent's stored list (an unreadable row reads as none)."""
    if not isinstance(stored, list):
        return []
    return [RepositoryBinding.model_validate(item) for item in stored if isinstance(item, dict)]
