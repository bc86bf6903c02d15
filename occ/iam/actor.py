from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from occ.iam.policy import Policy

if TYPE_CHECKING:
    from occ.models import Principal


class Source(StrEnum):
    API = "api"
    CONSOLE = "console"
    ADMIN = "admin"
    CLI = "cli"
    WORKER = "worker"


@dataclass
class Actor:
    """Who is acting, through what, and (for a Namespace-scoped key) where they may act.

    The policy is loaded once per Actor: one request, or one worker claim.
    """

    principal: Principal
    source: Source = Source.API
    key_id: str | None = None
    key_namespace_id: str | None = None
    _policy: Policy | None = field(default=None, repr=False)

    @property
    def id(self) -> str:
        return self.principal.id

    @property
    def scope_namespace_id(self) -> str | None:
        """The one Namespace this actor may reach, or None for Installation scope."""
        return self.key_namespace_id or self.principal.namespace_id

    @property
    def policy(self) -> Policy:
        if self._policy is None:
            self._policy = Policy.load(self.principal)
        return self._policy

    def forget_policy(self) -> None:
        """Drop the cached policy, e.g. after a grant in the same request."""
        self._policy = None
