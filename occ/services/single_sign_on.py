"""Single sign-on, the account half: which existing OCC account a verified OpenID Connect identity
is (``occ.iam.oidc`` verifies it), the links between the two, and the audit of every sign-in and
refusal.

An identity signs in as the account linked to its subject at this issuer. An unlinked subject is
linked at its first sign-in only when ``OCC_OIDC_LINK_BY_EMAIL`` is on, the provider says the
email is verified, and exactly one active person's account has that email; otherwise it is
refused. No account is ever created here (no self-signup). An administrator links or unlinks a
person's subject explicitly and sets the email that linking matches (:func:`account_sso_set`).

Audit: ``openclaw.auth.sign_in`` (kind ``access``, succeeded) for each sign-in, in the transaction
that links when it links; ``openclaw.auth.sign_in.refused`` (kind ``access``, denied) for each
refusal, committed alone before the refusal is shown; ``openclaw.accounts.sso.link`` for a link
made at sign-in, ``openclaw.accounts.sso.update`` for an administrator's change.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction

from occ.errors import Conflict, InvalidRequest, NotFound
from occ.iam.actor import Actor, Source
from occ.iam.oidc import Refusal, SignInRefused, VerifiedIdentity
from occ.iam.permissions import Action, Kind
from occ.iam.policy import authorize
from occ.models import AuditKind, AuditOutcome, Principal, PrincipalKind, SingleSignOnIdentity
from occ.services.audit import audit_record

SIGN_IN_ACTION = "openclaw.auth.sign_in"
REFUSED_ACTION = "openclaw.auth.sign_in.refused"
LINK_ACTION = "openclaw.accounts.sso.link"
UPDATE_ACTION = "openclaw.accounts.sso.update"
ACCOUNT_KIND = "principal"
SUBJECT_MAX = 255


def _person_by_verified_email(identity: VerifiedIdentity) -> Principal | None:
    if not settings.OCC_OIDC_LINK_BY_EMAIL or not identity.email_verified or identity.email is None:
        return None
    people = list(Principal.objects.select_for_update().select_related("user").filter(
        kind=PrincipalKind.HUMAN, user__email__iexact=identity.email).exclude(
        sso_identities__issuer=identity.issuer)[:2])
    if len(people) > 1:
        raise SignInRefused(Refusal.EMAIL_AMBIGUOUS, identity.audit_details)
    return people[0] if people else None


def sso_sign_in(*, identity: VerifiedIdentity) -> User:
    """The account ``identity`` signs in as (the caller starts the session), linking it by
    verified email when that is how it is found; :class:`SignInRefused` when there is none or it
    is disabled. The sign-in's audit event is in the transaction; a refusal's is the caller's
    (:func:`sso_sign_in_refused`), since this transaction rolls back."""
    with transaction.atomic():
        link = SingleSignOnIdentity.objects.select_related("principal__user").filter(
            issuer=identity.issuer, subject=identity.subject).first()
        how = "linked"
        if link is None:
            principal = _person_by_verified_email(identity)
            if principal is None:
                raise SignInRefused(Refusal.UNKNOWN_SUBJECT, {
                    **identity.audit_details, "emailVerified": identity.email_verified})
            link = SingleSignOnIdentity.objects.create(principal=principal, issuer=identity.issuer,
                                                       subject=identity.subject)
            how = "verifiedEmail"
        principal = link.principal
        user = principal.user
        assert user is not None, "a human principal always has its user"
        details = {**identity.audit_details, "userId": str(user.pk)}
        if not user.is_active:
            raise SignInRefused(Refusal.ACCOUNT_DISABLED, details)
        actor = Actor(principal=principal, source=Source.CONSOLE)
        if how == "verifiedEmail":
            audit_record(actor=actor, action=LINK_ACTION, resource_kind=ACCOUNT_KIND, resource_id=principal.id,
                         details={**details, "linkedBy": how})
        audit_record(actor=actor, action=SIGN_IN_ACTION, resource_kind=ACCOUNT_KIND, resource_id=principal.id,
                     details={**details, "linkedBy": how}, kind=AuditKind.ACCESS)
    return user


def sso_sign_in_refused(*, refusal: SignInRefused) -> None:
    """Commit the refusal's audit event on its own (before the sign-in page says why)."""
    details: dict[str, Any] = {"method": "oidc", **refusal.details, "reason": refusal.reason.value}
    principal_id = None
    if "userId" in details:
        principal_id = Principal.objects.filter(user_id=details["userId"]).values_list("id", flat=True).first()
    with transaction.atomic():
        audit_record(actor=None, action=REFUSED_ACTION, resource_kind=ACCOUNT_KIND, resource_id=principal_id,
                     details=details, kind=AuditKind.ACCESS, outcome=AuditOutcome.DENIED, source=Source.CONSOLE)


def password_sign_in_audit(*, user: User, refused: bool) -> None:
    """A password sign-in while passwords are for recovery only (``OCC_PASSWORD_SIGN_IN``): the
    administrator's recovery sign-in, or a person refused because they must use single sign-on."""
    principal = Principal.objects.filter(user=user, kind=PrincipalKind.HUMAN).first()
    details: dict[str, Any] = {"method": "password", "userId": str(user.pk), "recoveryOnly": True}
    with transaction.atomic():
        if refused:
            audit_record(actor=None, action=REFUSED_ACTION, resource_kind=ACCOUNT_KIND,
                         resource_id=principal.id if principal else None,
                         details={**details, "reason": "password_recovery_only"}, kind=AuditKind.ACCESS,
                         outcome=AuditOutcome.DENIED, source=Source.CONSOLE)
        elif principal is not None:
            audit_record(actor=Actor(principal=principal, source=Source.CONSOLE), action=SIGN_IN_ACTION,
                         resource_kind=ACCOUNT_KIND, resource_id=principal.id, details=details,
                         kind=AuditKind.ACCESS)


def _human(principal_id: str) -> tuple[Principal, User]:
    principal = Principal.objects.select_for_update().filter(id=principal_id, kind=PrincipalKind.HUMAN).first()
    user = None if principal is None else User.objects.select_for_update().filter(principal=principal).first()
    if principal is None or user is None:
        raise NotFound("The account does not exist; it may have been removed already.")
    return principal, user


def _check_email(email: str) -> str:
    email = email.strip()
    if not email:
        return ""
    try:
        validate_email(email)
    except ValidationError:
        raise InvalidRequest("Enter an email address like name@example.com, or leave it empty.") from None
    return email


def account_sso_set(*, actor: Actor, principal_id: str, subject: str, email: str) -> SingleSignOnIdentity | None:
    """An administrator's single sign-on settings for a person: their email (what linking by
    verified email matches; empty for none) and their explicit link, the provider's ``subject``
    (replacing any previous one; empty unlinks). Unlinking does not end current sessions:
    disable the account for that."""
    subject = subject.strip()
    if len(subject) > SUBJECT_MAX:
        raise InvalidRequest(f"The subject is at most {SUBJECT_MAX} characters.")
    email = _check_email(email)
    with transaction.atomic():
        authorize(actor, Action.ADMINISTER, Kind.INSTALLATION)
        if not settings.OCC_OIDC_ISSUER:
            raise Conflict("Single sign-on is not configured (OCC_OIDC_ISSUER), so there is nothing to link.")
        issuer = str(settings.OCC_OIDC_ISSUER)
        principal, user = _human(principal_id)
        previous = SingleSignOnIdentity.objects.filter(issuer=issuer, principal=principal).first()
        previous_subject = previous.subject if previous else ""
        if subject == previous_subject and email == user.email:
            return previous
        if subject and SingleSignOnIdentity.objects.filter(issuer=issuer, subject=subject).exclude(
                principal=principal).exists():
            raise Conflict("That subject is already linked to another account. Remove it there first.")
        link = previous
        if subject != previous_subject:
            SingleSignOnIdentity.objects.filter(issuer=issuer, principal=principal).delete()
            link = None
            if subject:
                try:
                    with transaction.atomic():
                        link = SingleSignOnIdentity.objects.create(principal=principal, issuer=issuer, subject=subject)
                except IntegrityError:
                    raise Conflict("That subject is already linked to another account. "
                                   "Remove it there first.") from None
        email_changed = email != user.email
        if email_changed:
            user.email = email
            user.save(update_fields=["email"])
        audit_record(actor=actor, action=UPDATE_ACTION, resource_kind=ACCOUNT_KIND,
                     resource_id=principal.id,
                     details={"userId": str(user.pk), "issuer": issuer, "subject": subject or None,
                              "previousSubject": previous_subject or None, "linkedBy": "administrator",
                              "emailChanged": email_changed})
    return link
