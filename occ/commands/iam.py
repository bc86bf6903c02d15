"""Namespace IAM policy commands: Roles, exact-resource access bindings, service principals."""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import AfterValidator, Field, model_validator

from occ.commands.base import Command, located, one_of, problem
from occ.commands.common import Name
from occ.errors import DetailCode
from occ.iam.permissions import BINDABLE_KINDS, VALID_ACTIONS, Action, Kind, permission

IDENTITY_SUBJECT = "identity"
# Far more than the number of valid pairs; duplicates are refused anyway.
PERMISSIONS_MAX = 64
# Actions a Namespace Role may hold per kind: no Installation permissions, and of the
# Namespace kind only ``read`` (creating or deleting Namespaces is Installation business).
ROLE_ACTIONS: dict[Kind, frozenset[Action]] = {
    **{kind: actions for kind, actions in VALID_ACTIONS.items() if kind != Kind.INSTALLATION},
    Kind.NAMESPACE: frozenset({Action.READ}),
}


def split_permission(value: str) -> tuple[str, str]:
    """``"read:agent"`` -> ``("read", "agent")``."""
    action, _, kind = value.partition(":")
    return action, kind


class Permission(Command):
    action: str
    resource_kind: str


def _some(permissions: list[Permission]) -> list[Permission]:
    if not permissions:
        raise problem(DetailCode.INVALID_VALUE, "A Role needs at least one permission.")
    return permissions


class RoleCreate(Command):
    """An immutable set of ``action`` on ``resourceKind`` pairs, each valid for a Namespace Role
    and none repeated."""

    name: Name
    permissions: Annotated[list[Permission], Field(max_length=PERMISSIONS_MAX), AfterValidator(_some)]

    @model_validator(mode="after")
    def _grantable(self) -> Self:
        seen: set[str] = set()
        for index, pair in enumerate(self.permissions):
            if pair.resource_kind not in ROLE_ACTIONS:
                raise located(("permissions", index, "resourceKind"), DetailCode.INVALID_VALUE,
                              f"Permission {index}: the resource kind cannot be granted by a Namespace Role.")
            if pair.action not in ROLE_ACTIONS[Kind(pair.resource_kind)]:
                raise located(("permissions", index, "action"), DetailCode.INVALID_VALUE,
                              f"Permission {index}: the action is not valid for its resource kind.")
            value = permission(pair.action, pair.resource_kind)
            if value in seen:
                raise located(("permissions", index), DetailCode.INVALID_VALUE,
                              f"Permission {index} repeats an earlier permission.")
            seen.add(value)
        return self

    @property
    def stored_permissions(self) -> list[str]:
        """The ``action:kind`` strings a Role stores, in the order given."""
        return [permission(p.action, p.resource_kind) for p in self.permissions]


def _bindable(value: str) -> str:
    if value not in BINDABLE_KINDS:
        raise problem(DetailCode.INVALID_VALUE, "resourceKind must be a kind of resource inside a Namespace.")
    return value


class AccessBindingCreate(Command):
    """Bind a Role of the Namespace to one subject on one exact resource of the Namespace."""

    subject_kind: Annotated[Literal["identity"], one_of(IDENTITY_SUBJECT,
                                                        message='subjectKind must be "identity".')]
    subject_id: str
    role_id: str
    resource_kind: Annotated[str, AfterValidator(_bindable)]
    resource_id: str

    @property
    def kind(self) -> Kind:
        return Kind(self.resource_kind)


class ServicePrincipalCreate(Command):
    name: Name


SHARE_LEVELS = ("chat", "deploy", "administer")


class AgentShare(Command):
    """Give one person or service principal a level of access to one Agent: ``chat`` (read it
    and talk to it), ``deploy`` (also change, deploy, stop and start it, read its logs) or
    ``administer`` (also delete it and share it)."""

    subject_id: Annotated[str, Field(min_length=1, max_length=64)]
    level: Annotated[Literal["chat", "deploy", "administer"],
                     one_of(*SHARE_LEVELS, message='level must be "chat", "deploy" or "administer".')]
