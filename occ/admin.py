"""The Django admin for operators: every OCC record browsable, searchable and filterable.

Who gets in is decided by :class:`occ.admin_site.OperatorAdminSite` (``installation:administer``
on the person's Principal); each ModelAdmin here follows the site instead of Django's model
permissions. Everything is read-only: changes go through ``occ.services`` so they are
authorized and audited like every other entry point. Admin actions that call a service (with
an ``Actor`` of source ``admin``) can be added here as those services appear.

Secret values are never shown: the database SecretDriver's ``EncryptedSecretValue`` table is
not registered, Secrets show metadata only and service keys never show their digest.
Changelists name every related column they display in ``list_select_related`` so a page costs
the same number of queries whatever its length.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from occ.errors import OccError
from occ.iam.actor import Source
from occ.iam.sessions import request_is_operator, session_actor
from occ.models import (
    AccessBinding,
    Agent,
    AgentProvisioningWork,
    AgentRevision,
    AuditEvent,
    Configuration,
    ControllerWork,
    Installation,
    Namespace,
    Principal,
    Restriction,
    Role,
    Secret,
    SecretBinding,
    ServiceKey,
    WorkEffect,
)
from occ.services.finalization import deployment_finalization_retry

# People are created through POST /api/auth/accounts (bound to a Role, audited), not here.
for _model in (get_user_model(), Group):
    if admin.site.is_registered(_model):
        admin.site.unregister(_model)


class _OperatorReadOnly:
    """Permissions for a read-only view that follows the operators' site, not model perms."""

    admin_site: admin.AdminSite

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request_is_operator(request)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request_is_operator(request)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReadOnlyAdmin(_OperatorReadOnly, admin.ModelAdmin):
    """Every admin below: declared ``fields`` (what an operator may see), all read-only."""

    actions = None
    list_per_page = 100

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self.fields or ()


class ReadOnlyTabularInline(_OperatorReadOnly, admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = False

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self.fields or ()


@admin.register(Installation)
class InstallationAdmin(ReadOnlyAdmin):
    list_display = ("id", "name", "created_at")
    search_fields = ("id", "name")
    fields = ("id", "name", "created_at")


@admin.register(Namespace)
class NamespaceAdmin(ReadOnlyAdmin):
    list_display = ("id", "name", "status", "existing_namespace", "created_at", "deleted_at")
    list_filter = ("status", ("deleted_at", admin.EmptyFieldListFilter))
    search_fields = ("id", "name", "existing_namespace")
    ordering = ("name",)
    fields = ("id", "name", "status", "existing_namespace", "created_at", "updated_at", "deleted_at")


class SecretBindingInline(ReadOnlyTabularInline):
    model = SecretBinding
    fields = ("env_name", "secret", "delivery")

    def get_queryset(self, request: HttpRequest) -> Any:
        return super().get_queryset(request).select_related("secret")


@admin.register(Configuration)
class ConfigurationAdmin(ReadOnlyAdmin):
    list_display = ("id", "namespace", "kind", "generation", "created_at", "updated_at")
    list_filter = ("kind", "namespace")
    list_select_related = ("namespace",)
    search_fields = ("id", "namespace__id", "namespace__name")
    fields = ("id", "namespace", "kind", "generation", "values", "created_at", "updated_at")
    inlines = (SecretBindingInline,)


@admin.register(Secret)
class SecretAdmin(ReadOnlyAdmin):
    """Metadata and the immutable driver identity only; the value stays in the SecretDriver."""

    list_display = ("id", "name", "namespace", "driver_id", "owner_agent", "purpose", "created_at")
    list_filter = ("driver_id", ("owner_agent", admin.EmptyFieldListFilter), "namespace")
    list_select_related = ("namespace", "owner_agent")
    search_fields = ("id", "name", "namespace__id", "namespace__name")
    fields = ("id", "name", "namespace", "owner_agent", "purpose", "driver_id", "backend_name", "backend_key",
              "created_at", "updated_at")


@admin.register(Agent)
class AgentAdmin(ReadOnlyAdmin):
    list_display = ("id", "name", "namespace", "status", "desired_runtime_state", "execution_mode",
                    "configuration", "active_revision", "created_at")
    list_filter = ("status", "desired_runtime_state", "execution_mode", "namespace")
    list_select_related = ("namespace", "configuration", "active_revision")
    search_fields = ("id", "name", "namespace__id", "namespace__name", "configuration__id")
    fields = ("id", "name", "namespace", "status", "desired_runtime_state", "active_revision", "configuration",
              "execution_mode", "harness_auth_method", "harness_secret", "backend_id", "plugins",
              "plugin_approvers", "repository_bindings", "initial_workspace_files", "created_at", "updated_at")


@admin.register(AgentRevision)
class AgentRevisionAdmin(ReadOnlyAdmin):
    list_display = ("id", "agent", "number", "namespace", "configuration_id", "configuration_generation",
                    "created_by", "created_at")
    list_filter = ("namespace",)
    list_select_related = ("agent", "namespace")
    search_fields = ("id", "agent__id", "agent__name", "configuration_id")
    ordering = ("-created_at",)
    fields = ("id", "agent", "number", "namespace", "configuration_id", "configuration_generation", "snapshot",
              "created_by", "created_at")
    actions = ["retry_finalization"]  # type: ignore[assignment]  # the one admin action

    @admin.action(description="Retry the finalization of the selected active revisions")
    def retry_finalization(self, request: HttpRequest, queryset: QuerySet[AgentRevision]) -> None:
        """The operator's repair when a deployment's finalization gave up: the same service
        (authorized for this operator, audited) as ``POST …/retry-finalization``."""
        actor = session_actor(request, source=Source.ADMIN)
        if actor is None:
            return
        for revision in queryset:
            try:
                deployment_finalization_retry(actor=actor, namespace_id=revision.namespace_id,
                                              agent_id=revision.agent_id, revision_id=revision.id)
            except OccError as refused:
                self.message_user(request, f"Revision {revision.id}: {refused.message}", messages.ERROR)
            else:
                self.message_user(request, f"Revision {revision.id}: finalization requeued.", messages.SUCCESS)


WORK_EFFECT_FIELDS = ("kind", "state", "owner", "target_id", "attempt", "driver_id", "resend", "begun_at",
                      "receipted_at", "observed", "observation", "observed_owner", "granted_secret_ids",
                      "removed_by", "removed_at", "removed_credential_ids")


class WorkEffectInline(ReadOnlyTabularInline):
    """The effects of one work row, on its page."""

    model = WorkEffect
    fields = ("kind", "state", "target_id", "attempt", "begun_at", "receipted_at", "observation", "resend")


@admin.register(ControllerWork)
class ControllerWorkAdmin(ReadOnlyAdmin):
    list_display = ("idempotency_key", "job", "state", "namespace", "agent_id", "namespace_target",
                    "agent_target", "attempt_count", "available_at", "reason_code", "updated_at")
    list_filter = ("state", "job", "namespace_target", "agent_target", "namespace")
    list_select_related = ("namespace",)
    search_fields = ("idempotency_key", "namespace__id", "agent_id", "revision_id", "actor_id", "reason_code")
    ordering = ("-updated_at",)
    fields = ("idempotency_key", "job", "state", "namespace", "agent_id", "revision_id", "namespace_target",
              "agent_target", "actor_id", "available_at", "attempt_count", "max_attempts", "lease_expires_at",
              "completed_at", "reason_code", "result_data", "created_at", "updated_at")
    inlines = (WorkEffectInline,)


@admin.register(WorkEffect)
class WorkEffectAdmin(ReadOnlyAdmin):
    """A job's external writes: begun before the driver call, receipted after (an effect still
    ``begun`` after a lost claim is what ``RECOVERY_REQUIRED`` points an operator at)."""

    list_display = ("work", "kind", "state", "target_id", "attempt", "resend", "begun_at", "receipted_at",
                    "observation", "removed_at")
    list_filter = ("kind", "state", "resend", "observed", "observation", "work__namespace")
    list_select_related = ("work",)
    search_fields = ("work__idempotency_key", "owner", "target_id", "observed_owner", "removed_by")
    ordering = ("-begun_at",)
    fields = ("work", *WORK_EFFECT_FIELDS)


@admin.register(AgentProvisioningWork)
class AgentProvisioningWorkAdmin(ReadOnlyAdmin):
    list_display = ("work", "namespace", "status", "completed_phase", "agent_id", "configuration_id",
                    "revision_id", "updated_at")
    list_filter = ("work__state", "completed_phase", "namespace")
    list_select_related = ("work", "namespace")
    search_fields = ("work__idempotency_key", "request_id", "agent_id", "configuration_id", "actor_id")
    ordering = ("-updated_at",)
    fields = ("work", "namespace", "actor_id", "request_id", "request_fingerprint", "status", "cancelled_at",
              "completed_phase", "agent_id", "configuration_id", "revision_id", "plan", "progress", "created_at",
              "updated_at")


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ("id", "occurred_at", "kind", "action", "outcome", "actor_id", "namespace_id",
                    "resource_kind", "resource_id")
    list_filter = ("kind", "outcome", "resource_kind", "namespace_id")
    search_fields = ("id", "action", "actor_id", "namespace_id", "resource_id")
    date_hierarchy = "occurred_at"
    ordering = ("-occurred_at",)
    fields = ("id", "occurred_at", "kind", "action", "outcome", "actor_id", "namespace_id", "resource_kind",
              "resource_id", "details")


@admin.register(Principal)
class PrincipalAdmin(ReadOnlyAdmin):
    list_display = ("id", "kind", "name", "user", "namespace", "agent", "created_at")
    list_filter = ("kind", "namespace")
    list_select_related = ("user", "namespace", "agent")
    search_fields = ("id", "name", "user__username", "namespace__name", "agent__id")
    fields = ("id", "kind", "name", "user", "namespace", "agent", "created_at")


@admin.register(Role)
class RoleAdmin(ReadOnlyAdmin):
    list_display = ("id", "name", "namespace", "system", "created_at")
    list_filter = ("system", "namespace")
    list_select_related = ("namespace",)
    search_fields = ("id", "name", "namespace__name")
    fields = ("id", "name", "namespace", "system", "permissions", "created_at")


@admin.register(AccessBinding)
class AccessBindingAdmin(ReadOnlyAdmin):
    list_display = ("id", "principal", "role", "namespace", "resource_kind", "resource_id", "created_at")
    list_filter = ("resource_kind", "namespace")
    list_select_related = ("principal", "role", "namespace")
    search_fields = ("id", "principal__id", "principal__name", "role__id", "role__name", "resource_id")
    fields = ("id", "principal", "role", "namespace", "resource_kind", "resource_id", "created_at")


@admin.register(Restriction)
class RestrictionAdmin(ReadOnlyAdmin):
    list_display = ("id", "action", "resource_kind", "resource_id", "principal", "namespace", "created_at")
    list_filter = ("action", "resource_kind", "namespace")
    list_select_related = ("principal", "namespace")
    search_fields = ("id", "principal__id", "principal__name", "resource_id")
    fields = ("id", "principal", "namespace", "action", "resource_kind", "resource_id", "created_at")


@admin.register(ServiceKey)
class ServiceKeyAdmin(ReadOnlyAdmin):
    """Key metadata; the digest is never displayed or searchable."""

    list_display = ("id", "name", "principal", "namespace", "expires_at", "expired", "created_by", "created_at")
    list_filter = ("namespace",)
    list_select_related = ("principal", "namespace")
    search_fields = ("id", "name", "principal__id", "principal__name")
    fields = ("id", "name", "principal", "namespace", "expires_at", "expired", "created_by", "created_at")

    @admin.display(boolean=True, description="expired")
    def expired(self, obj: ServiceKey) -> bool:
        return obj.expires_at <= timezone.now()
