"""IAM records: principals, roles, access bindings, deny restrictions and service keys."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from occ.ids import IdPrefix, id_default
from occ.models.base import choices_check


class PrincipalKind(models.TextChoices):
    HUMAN = "human"
    SERVICE = "service"


class Principal(models.Model):
    """A human (linked to a Django user) or a service principal.

    Service principals are Installation-scoped (no namespace), Namespace-scoped, or owned by
    exactly one Agent (created with it, deleted with it).
    """

    id = models.CharField(primary_key=True, max_length=64, editable=False)
    kind = models.CharField(max_length=8, choices=PrincipalKind.choices)
    name = models.CharField(max_length=800)
    user = models.OneToOneField(settings.AUTH_USER_MODEL, null=True, blank=True,
                                on_delete=models.PROTECT, related_name="principal")
    namespace = models.ForeignKey("occ.Namespace", null=True, blank=True, on_delete=models.PROTECT,
                                  related_name="service_principals")
    agent = models.OneToOneField("occ.Agent", null=True, blank=True, on_delete=models.CASCADE,
                                 related_name="service_principal")
    # A person whose password an administrator set: they must choose their own before anything else.
    must_change_password = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            choices_check("kind", PrincipalKind, "principal_kind_valid"),
            models.CheckConstraint(
                condition=models.Q(kind="human", user__isnull=False, namespace__isnull=True, agent__isnull=True)
                | models.Q(kind="service", user__isnull=True, agent__isnull=True)
                | models.Q(kind="service", user__isnull=True, agent__isnull=False, namespace__isnull=False),
                name="principal_shape_valid",
            ),
        ]
        # The API's list of a Namespace's own service principals (its Agents' are not listed):
        # keyset pages on (created_at, id).
        # The accounts and whom an Agent can be shared with (people and service principals, never
        # an Agent's own): keyset pages on (name, id).
        indexes = [models.Index(fields=["namespace", "created_at", "id"], condition=models.Q(agent__isnull=True),
                                name="principal_created_order"),
                   models.Index(fields=["name", "id"], condition=models.Q(agent__isnull=True),
                                name="principal_name_order")]

    def __str__(self) -> str:
        return f"{self.name} ({self.id})"

    def save(self, *args, **kwargs) -> None:
        if not self.id:
            prefix = IdPrefix.PRINCIPAL if self.kind == PrincipalKind.HUMAN else IdPrefix.SERVICE_PRINCIPAL
            self.id = id_default(prefix)()
        super().save(*args, **kwargs)


class SingleSignOnIdentity(models.Model):
    """Who a person is at the Installation's OpenID Connect provider: its issuer and the subject
    (``sub``) it names them by. Made by an administrator's explicit link, or at the first sign-in
    whose verified email is the account's (``occ.services.single_sign_on``); never by sign-in
    alone for an account that does not exist: there is no self-signup."""

    principal = models.ForeignKey(Principal, on_delete=models.CASCADE, related_name="sso_identities")
    issuer = models.CharField(max_length=500)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="sso_identity_subject_unique"),
            models.UniqueConstraint(fields=["issuer", "principal"], name="sso_identity_one_per_person"),
        ]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"


class Role(models.Model):
    """A named, immutable set of ``action:kind`` permissions."""

    id = models.CharField(primary_key=True, max_length=64, default=id_default(IdPrefix.ROLE), editable=False)
    namespace = models.ForeignKey("occ.Namespace", null=True, blank=True, on_delete=models.PROTECT,
                                  related_name="roles")
    name = models.CharField(max_length=800)
    permissions = models.JSONField()
    # Built-in (administrator) and per-Namespace system Roles are hidden from the policy API.
    system = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["namespace", "name"], name="role_name_unique_in_namespace"),
            models.UniqueConstraint(fields=["name"], condition=models.Q(namespace__isnull=True),
                                    name="role_name_unique_installation"),
        ]
        # The API's list: keyset pages on (created_at, id).
        indexes = [models.Index(fields=["namespace", "created_at", "id"], name="role_created_order")]

    def __str__(self) -> str:
        return self.name


class AccessBinding(models.Model):
    """Role -> principal at Installation (no namespace), Namespace, or exact-resource scope."""

    id = models.CharField(primary_key=True, max_length=64, default=id_default(IdPrefix.BINDING), editable=False)
    principal = models.ForeignKey(Principal, on_delete=models.CASCADE, related_name="bindings")
    role = models.ForeignKey(Role, on_delete=models.PROTECT, related_name="bindings")
    namespace = models.ForeignKey("occ.Namespace", null=True, blank=True, on_delete=models.PROTECT,
                                  related_name="access_bindings")
    resource_kind = models.CharField(max_length=32, null=True, blank=True)
    resource_id = models.CharField(max_length=64, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(resource_kind__isnull=True, resource_id__isnull=True)
                | models.Q(resource_kind__isnull=False, resource_id__isnull=False, namespace__isnull=False),
                name="binding_scope_valid",
            ),
            models.UniqueConstraint(
                fields=["principal", "role", "namespace", "resource_kind", "resource_id"],
                condition=models.Q(resource_id__isnull=False), name="binding_exact_unique",
            ),
        ]
        indexes = [models.Index(fields=["resource_kind", "resource_id"], name="binding_target_idx"),
                   # The API's list: keyset pages on (created_at, id).
                   models.Index(fields=["namespace", "created_at", "id"], name="binding_created_order")]

    def __str__(self) -> str:
        return f"{self.principal_id} -> {self.role_id}"


class Restriction(models.Model):
    """A deny rule. It narrows grants and never grants; no principal means everyone."""

    id = models.CharField(primary_key=True, max_length=64, default=id_default(IdPrefix.RESTRICTION), editable=False)
    principal = models.ForeignKey(Principal, null=True, blank=True, on_delete=models.CASCADE,
                                  related_name="restrictions")
    namespace = models.ForeignKey("occ.Namespace", null=True, blank=True, on_delete=models.PROTECT,
                                  related_name="restrictions")
    action = models.CharField(max_length=32)
    resource_kind = models.CharField(max_length=32)
    resource_id = models.CharField(max_length=64, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"deny {self.action}:{self.resource_kind}"


class ServiceKey(models.Model):
    """An ``x-api-key`` credential: only a SHA-256 digest of the token is kept."""

    id = models.CharField(primary_key=True, max_length=64, default=id_default(IdPrefix.SERVICE_KEY), editable=False)
    principal = models.ForeignKey(Principal, on_delete=models.CASCADE, related_name="service_keys")
    namespace = models.ForeignKey("occ.Namespace", null=True, blank=True, on_delete=models.PROTECT,
                                  related_name="+")
    name = models.CharField(max_length=32)
    digest = models.CharField(max_length=64, unique=True)
    expires_at = models.DateTimeField()
    created_by = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # The API's list of a principal's keys: keyset pages on (created_at, id), newest first.
        indexes = [models.Index(fields=["principal", "created_at", "id"], name="service_key_created_order")]

    def __str__(self) -> str:
        return f"{self.name} ({self.id})"
