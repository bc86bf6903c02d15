"""Human accounts: an administrator provisions a person (spec §2.3 ``POST /api/auth/accounts``).

An account is a Django user (sign-in by ``username`` and password), its human Principal and
one Installation-wide AccessBinding to an existing Installation Role. Public sign-up does not
exist; this is the only way besides bootstrap to create a person who can act.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from occ.commands.accounts import AccountCreate
from occ.errors import Conflict
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import authorize
from occ.models import AccessBinding, Principal, PrincipalKind, Role
from occ.services.audit import audit_record


@dataclass(frozen=True)
class Account:
    principal: Principal
    binding: AccessBinding

    @property
    def user_id(self) -> str:
        return str(self.principal.user_id)

    @property
    def username(self) -> str:
        user = self.principal.user
        assert user is not None, "a human principal always has its user"
        return user.username


def _check_strength(command: AccountCreate) -> None:
    """Django's configured password validators. The refusal never repeats the password."""
    try:
        validate_password(command.password, user=get_user_model()(username=command.username))
    except ValidationError as exc:
        raise command.weak_password(exc.messages) from None


def _installation_role(command: AccountCreate) -> Role:
    role = Role.objects.filter(id=command.role_id, namespace__isnull=True).first()
    if role is None:
        raise command.not_an_installation_role()
    return role


def account_create(*, actor: Actor, command: AccountCreate) -> Account:
    """The user, its human Principal and one Installation-wide binding to the command's Role."""
    _check_strength(command)
    username, display_name = command.username, command.display_name
    user_model = get_user_model()
    with transaction.atomic():
        authorize(actor, Action.ADMINISTER, Kind.INSTALLATION)
        role = _installation_role(command)
        if user_model.objects.filter(username__iexact=username).exists():
            raise Conflict("An account with this username already exists.")
        try:
            with transaction.atomic():
                user = user_model.objects.create_user(username=username, password=command.password)
        except IntegrityError:
            raise Conflict("An account with this username already exists.") from None
        principal = Principal.objects.create(kind=PrincipalKind.HUMAN, name=display_name, user=user)
        binding = AccessBinding.objects.create(principal=principal, role=role)
        audit_record(actor=actor, action="openclaw.accounts.create", resource_kind="principal",
                     resource_id=principal.id,
                     details={"userId": str(user.pk), "roleId": role.id, "accessBindingId": binding.id})
    return Account(principal=principal, binding=binding)
