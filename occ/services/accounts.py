"""Human accounts: an administrator provisions a person (spec §2.3 ``POST /api/auth/accounts``).

An account is a Django user (sign-in by ``username`` and password), its human Principal and
one Installation-wide AccessBinding to an existing Installation Role. Public sign-up does not
exist; this is the only way besides bootstrap to create a person who can act.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from occ.errors import Conflict, DetailCode, InvalidRequest
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import authorize
from occ.models import AccessBinding, Principal, PrincipalKind, Role
from occ.services.audit import audit_record
from occ.services.checks import check_name

USERNAME_MAX = 150
PASSWORD_MIN = 12
PASSWORD_MAX = 128
_USERNAME = UnicodeUsernameValidator()


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


def check_username(username: str) -> None:
    if len(username) > USERNAME_MAX:
        raise InvalidRequest.at("/username", DetailCode.TOO_LONG,
                                f"Username must be at most {USERNAME_MAX} characters.")
    try:
        _USERNAME(username)
    except ValidationError:
        raise InvalidRequest.at("/username", DetailCode.INVALID_FORMAT,
                                "Username must be non-empty and contain only letters, digits and @ . + - _.") from None


def check_password(password: str, *, username: str) -> None:
    """Length bounds, then Django's configured validators. Never repeats the password."""
    if len(password) > PASSWORD_MAX:
        raise InvalidRequest.at("/password", DetailCode.TOO_LONG,
                                f"Password must be at most {PASSWORD_MAX} characters.")
    if len(password) < PASSWORD_MIN:
        raise InvalidRequest.at("/password", DetailCode.INVALID_VALUE,
                                f"Password must be at least {PASSWORD_MIN} characters.")
    try:
        validate_password(password, user=get_user_model()(username=username))
    except ValidationError as exc:
        message = "Choose a stronger password. " + " ".join(exc.messages)
        raise InvalidRequest.at("/password", DetailCode.INVALID_VALUE, message[:256]) from None


def _installation_role(role_id: str) -> Role:
    role = Role.objects.filter(id=role_id, namespace__isnull=True).first()
    if role is None:
        raise InvalidRequest.at("/roleId", DetailCode.INVALID_VALUE,
                                "roleId must name an existing Installation Role.")
    return role


def account_create(*, actor: Actor, username: str, password: str, role_id: str, name: str | None = None) -> Account:
    check_username(username)
    display_name = username if name is None else name
    check_name(display_name)
    check_password(password, username=username)
    user_model = get_user_model()
    with transaction.atomic():
        authorize(actor, Action.ADMINISTER, Kind.INSTALLATION)
        role = _installation_role(role_id)
        if user_model.objects.filter(username__iexact=username).exists():
            raise Conflict("An account with this username already exists.")
        try:
            with transaction.atomic():
                user = user_model.objects.create_user(username=username, password=password)
        except IntegrityError:
            raise Conflict("An account with this username already exists.") from None
        principal = Principal.objects.create(kind=PrincipalKind.HUMAN, name=display_name, user=user)
        binding = AccessBinding.objects.create(principal=principal, role=role)
        audit_record(actor=actor, action="openclaw.accounts.create", resource_kind="principal",
                     resource_id=principal.id,
                     details={"userId": str(user.pk), "roleId": role.id, "accessBindingId": binding.id})
    return Account(principal=principal, binding=binding)
