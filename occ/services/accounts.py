"""Human accounts (spec §2.3 ``/api/auth/accounts``): an administrator provisions a person,
disables, re-enables or removes them, and sets a one-time password; a person changes their own.

An account is a Django user (sign-in by ``username`` and password) and its human Principal,
with optionally one Installation Role bound on some Namespaces or Installation-wide. Public
sign-up does not exist. Every write here is authorized (``installation:administer``, or being
the person) and audited in its transaction.

Signed-in sessions end at once without a session table scan: Django checks on every request
that the session's user is active and that the password hash it was made with is still the
user's (``get_session_auth_hash``), so disabling, removing or setting a password ends every
session of that person. Humans hold no service keys today; any key a person's Principal has is
deleted with it all the same.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from occ.commands.accounts import AccountCreate, PasswordChange, PasswordSet
from occ.errors import Conflict, InvalidRequest, NotFound
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import authorize
from occ.iam.roles import ADMINISTRATOR
from occ.models import AccessBinding, Namespace, Principal, PrincipalKind, Role, ServiceKey
from occ.services.audit import audit_record

ACCOUNT_KIND = "principal"


@dataclass(frozen=True)
class Account:
    principal: Principal
    bindings: list[AccessBinding] = field(default_factory=list)

    @property
    def user_id(self) -> str:
        return str(self.principal.user_id)

    @property
    def username(self) -> str:
        user = self.principal.user
        assert user is not None, "a human principal always has its user"
        return user.username


def _check_strength(password: str, username: str, refuse: Callable[[list[str]], InvalidRequest]) -> None:
    """Django's configured password validators. The refusal never repeats the password."""
    try:
        validate_password(password, user=get_user_model()(username=username))
    except ValidationError as exc:
        raise refuse(exc.messages) from None


def _installation_role(command: AccountCreate) -> Role | None:
    if command.role_id is None:
        return None
    role = Role.objects.filter(id=command.role_id, namespace__isnull=True).first()
    if role is None:
        raise command.not_an_installation_role()
    return role


def _namespaces(command: AccountCreate) -> list[Namespace]:
    found = list(Namespace.objects.filter(id__in=command.namespace_ids).order_by("name"))
    if len(found) != len(command.namespace_ids):
        raise command.unknown_namespaces()
    return found


def account_create(*, actor: Actor, command: AccountCreate) -> Account:
    """The user, its human Principal and the command's Role on each of its Namespaces
    (Installation-wide when none; no binding without a Role)."""
    _check_strength(command.password, command.username, command.weak_password)
    username, display_name = command.username, command.display_name
    user_model = get_user_model()
    with transaction.atomic():
        authorize(actor, Action.ADMINISTER, Kind.INSTALLATION)
        role = _installation_role(command)
        namespaces = _namespaces(command)
        if user_model.objects.filter(username__iexact=username).exists():
            raise Conflict("An account with this username already exists.")
        try:
            with transaction.atomic():
                user = user_model.objects.create_user(username=username, password=command.password)
        except IntegrityError:
            raise Conflict("An account with this username already exists.") from None
        principal = Principal.objects.create(kind=PrincipalKind.HUMAN, name=display_name, user=user)
        bindings = []
        if role is not None:
            scopes: list[Namespace | None] = [*namespaces] or [None]
            bindings = [AccessBinding.objects.create(principal=principal, role=role, namespace=namespace)
                        for namespace in scopes]
        audit_record(actor=actor, action="openclaw.accounts.create", resource_kind=ACCOUNT_KIND,
                     resource_id=principal.id,
                     details={"userId": str(user.pk), "roleId": role.id if role else None,
                              "namespaceIds": [n.id for n in namespaces],
                              "accessBindingIds": [b.id for b in bindings]})
    return Account(principal=principal, bindings=bindings)


def _person(principal_id: str) -> tuple[Principal, User]:
    """The person, locked for the change (call inside the transaction)."""
    principal = Principal.objects.select_for_update().filter(id=principal_id, kind=PrincipalKind.HUMAN).first()
    user = None
    if principal is not None and principal.user_id is not None:
        user = User.objects.select_for_update().filter(pk=principal.user_id).first()
    if principal is None or user is None:
        raise NotFound("The account does not exist; it may have been removed already.")
    principal.user = user
    return principal, user


def _check_not_last_administrator(principal: Principal, what: str) -> None:
    """An Installation keeps at least one active person with the administrator Role everywhere."""
    administrators = AccessBinding.objects.filter(
        role__name=ADMINISTRATOR, role__system=True, namespace__isnull=True,
        principal__kind=PrincipalKind.HUMAN, principal__user__is_active=True)
    if administrators.filter(principal=principal).exists() and not administrators.exclude(
            principal=principal).exists():
        raise Conflict(f"This is the last active administrator: {what} them would leave nobody to administer "
                       "the Installation. Make someone else an administrator first.")


def _check_not_self(actor: Actor, principal: Principal, what: str) -> None:
    if actor.id == principal.id:
        raise Conflict(f"You cannot {what} your own account; ask another administrator.")


def _end_keys(principal: Principal) -> list[str]:
    keys = sorted(ServiceKey.objects.filter(principal=principal).values_list("id", flat=True))
    ServiceKey.objects.filter(id__in=keys).delete()
    return keys


def account_set_active(*, actor: Actor, principal_id: str, active: bool) -> Principal:
    """Disable (sessions and keys end at once, sign-in refused) or re-enable an account."""
    with transaction.atomic():
        authorize(actor, Action.ADMINISTER, Kind.INSTALLATION)
        principal, user = _person(principal_id)
        if not active:
            _check_not_self(actor, principal, "disable")
            _check_not_last_administrator(principal, "disabling")
        if user.is_active == active:
            return principal
        user.is_active = active
        user.save(update_fields=["is_active"])
        details = {"userId": str(user.pk)}
        if not active:
            details["revokedServiceKeys"] = _end_keys(principal)  # type: ignore[assignment]
        audit_record(actor=actor, action="openclaw.accounts.enable" if active else "openclaw.accounts.disable",
                     resource_kind=ACCOUNT_KIND, resource_id=principal.id, details=details)
    return principal


def account_delete(*, actor: Actor, principal_id: str) -> None:
    """Remove a person: their user, Principal, bindings and keys. What they did stays in the
    audit log under their Principal id."""
    with transaction.atomic():
        authorize(actor, Action.ADMINISTER, Kind.INSTALLATION)
        principal, user = _person(principal_id)
        _check_not_self(actor, principal, "remove")
        _check_not_last_administrator(principal, "removing")
        details = {"userId": str(user.pk), "username": user.get_username(),
                   "revokedServiceKeys": _end_keys(principal),
                   "removedAccessBindings": sorted(principal.bindings.values_list("id", flat=True))}
        principal.delete()
        user.delete()
        audit_record(actor=actor, action="openclaw.accounts.delete", resource_kind=ACCOUNT_KIND,
                     resource_id=principal_id, details=details)


def _set_password(principal: Principal, user: User, password: str, *, must_change: bool) -> None:
    """``password`` for ``user``; ``must_change``: only the Change password page until they pick their own."""
    user.set_password(password)
    user.save(update_fields=["password"])
    principal.must_change_password = must_change
    principal.save(update_fields=["must_change_password"])


def account_password_set(*, actor: Actor, principal_id: str, command: PasswordSet) -> Principal:
    """An administrator's one-time password for a person: their sessions end, and after signing
    in with it they must choose their own before anything else."""
    with transaction.atomic():
        authorize(actor, Action.ADMINISTER, Kind.INSTALLATION)
        principal, user = _person(principal_id)
        _check_not_self(actor, principal, "set a one-time password for")
        _check_strength(command.password, user.get_username(), command.weak_password)
        _set_password(principal, user, command.password, must_change=True)
        audit_record(actor=actor, action="openclaw.accounts.password.set", resource_kind=ACCOUNT_KIND,
                     resource_id=principal.id, details={"userId": str(user.pk), "mustChange": True})
    return principal


def account_password_change(*, actor: Actor, command: PasswordChange) -> User:
    """A signed-in person's own new password (the current one proves it is them). Their other
    sessions end; the caller keeps the current one (``update_session_auth_hash``)."""
    if actor.principal.kind != PrincipalKind.HUMAN:
        raise Conflict("Only a person has a password; a service key signs in without one.")
    with transaction.atomic():
        principal, user = _person(actor.principal.id)
        if not user.check_password(command.current_password):
            raise command.wrong_current_password()
        if command.new_password == command.current_password:
            raise command.same_password()
        _check_strength(command.new_password, user.get_username(), command.weak_password)
        _set_password(principal, user, command.new_password, must_change=False)
        audit_record(actor=actor, action="openclaw.accounts.password.change", resource_kind=ACCOUNT_KIND,
                     resource_id=principal.id, details={"userId": str(user.pk)})
    return user
