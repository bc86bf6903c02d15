"""Reads behind the console's Members and access pages: accounts, a service principal's keys,
and a Namespace's bindings with the names people recognise.

They ask what the services that change these records ask: ``installation:administer`` (keys,
accounts), and for a Namespace's policy ``policy_namespace``'s rule (``installation:administer``
or ``administer:namespace``), so whoever sees a list here can act on it, and nobody else learns
what exists. Key reads return metadata only: a key's
digest never leaves the model, and its token was never stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from occ.errors import NotFound
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import authorize
from occ.models import (
    AccessBinding,
    Agent,
    Configuration,
    Namespace,
    Principal,
    PrincipalKind,
    Role,
    Secret,
    ServiceKey,
    SingleSignOnIdentity,
)
from occ.selectors.iam import (
    namespace_bindings,
    policy_namespace,
    scoped_service_principals,
    service_principal_get,
)
from occ.selectors.paging import moment_page, text_page

SEARCH_MAX = 200
PAGE_SIZE = 50


@dataclass(frozen=True)
class KeyView:
    """A service key without its digest: what a list shows and a revocation names."""

    id: str
    name: str
    created_at: datetime
    expires_at: datetime
    created_by: str
    created_by_name: str | None

    @property
    def expired(self) -> bool:
        return self.expires_at <= timezone.now()


@dataclass(frozen=True)
class AccountView:
    principal_id: str
    name: str
    username: str
    active: bool
    roles: list[str]  # "Viewer on default", "administrator" (Installation-wide), ...
    created_at: datetime
    must_change_password: bool = False
    email: str = ""
    sso_subject: str | None = None  # linked at the configured OpenID Connect provider


@dataclass(frozen=True)
class BindingView:
    binding: AccessBinding
    subject_name: str
    subject_kind: str  # "person", "service principal" or "Agent"
    role_name: str
    target_label: str  # what the binding is on, by name

    @property
    def namespace_wide(self) -> bool:
        """Namespace- or Installation-wide: given on the Members page (or by operators), not here."""
        return self.binding.resource_id is None

    @property
    def installation_wide(self) -> bool:
        return self.binding.namespace_id is None


@dataclass(frozen=True)
class Choice:
    value: str
    label: str


def _search(text: str) -> str:
    return text.strip()[:SEARCH_MAX]


def service_principal_summaries(*, actor: Actor, namespace_id: str | None,
                                search: str = "") -> list[tuple[Principal, int]]:
    """The scope's service principals (the Namespace's, not the Agents' own; ``namespace_id=None``:
    the Installation's), each with its number of keys, by name; ``search`` matches part of a
    name or the id."""
    rows = _summaries(actor=actor, namespace_id=namespace_id, search=search)
    return [(p, p.keys) for p in rows]  # type: ignore[attr-defined]


def _summaries(*, actor: Actor, namespace_id: str | None, search: str) -> QuerySet[Principal]:
    """The scope's service principals matching ``search``, each annotated with ``keys``, by
    ``(name, id)``: the console's list and the API's pages read the same rows."""
    principals = scoped_service_principals(actor=actor, namespace_id=namespace_id)
    text = _search(search)
    if text:
        principals = principals.filter(Q(name__icontains=text) | Q(id__icontains=text))
    return principals.annotate(keys=Count("service_keys")).order_by("name", "id")


@dataclass(frozen=True)
class ServicePrincipalSummaryPage:
    rows: list[tuple[Principal, int]]  # each principal with its number of keys
    next_cursor: str | None


def service_principal_summary_page(*, actor: Actor, namespace_id: str | None, search: str = "", after: str = "",
                                   page_size: int = PAGE_SIZE) -> ServicePrincipalSummaryPage:
    """One keyset page of :func:`service_principal_summaries` (the API's), on ``(name, id)``;
    whoever may list the scope reads every row of it, so a page is full unless it is the last."""
    chosen, next_cursor = text_page(_summaries(actor=actor, namespace_id=namespace_id, search=search),
                                    field="name", after=after, page_size=page_size)
    return ServicePrincipalSummaryPage(rows=[(p, p.keys) for p in chosen],  # type: ignore[attr-defined]
                                       next_cursor=next_cursor)


def service_key_list(*, actor: Actor, namespace_id: str | None,
                     principal_id: str) -> tuple[Principal, list[KeyView]]:
    """A service principal of the scope and its keys, newest first (metadata, never a digest)."""
    authorize(actor, Action.ADMINISTER, Kind.INSTALLATION)  # what issuing and revoking ask
    principal = service_principal_get(actor=actor, namespace_id=namespace_id, principal_id=principal_id)
    keys = list(ServiceKey.objects.filter(principal=principal).order_by("-created_at", "-id")
                .values("id", "name", "created_at", "expires_at", "created_by"))
    names = dict(Principal.objects.filter(id__in={k["created_by"] for k in keys}).values_list("id", "name"))
    return principal, [KeyView(created_by_name=names.get(k["created_by"]), **k) for k in keys]


def service_key_page(*, actor: Actor, namespace_id: str | None, principal_id: str, after: str = "",
                     page_size: int = PAGE_SIZE) -> tuple[Principal, list[KeyView], str | None]:
    """``service_key_list`` one keyset page at a time, newest first on ``(created_at, id)``, and
    the next page's cursor (None on the last page)."""
    authorize(actor, Action.ADMINISTER, Kind.INSTALLATION)  # what issuing and revoking ask
    principal = service_principal_get(actor=actor, namespace_id=namespace_id, principal_id=principal_id)
    keys, next_cursor = moment_page(ServiceKey.objects.filter(principal=principal), field="created_at", after=after,
                                    readable=lambda _key_id: True, page_size=page_size, newest_first=True)
    names = dict(Principal.objects.filter(id__in={k.created_by for k in keys}).values_list("id", "name"))
    return principal, [KeyView(id=k.id, name=k.name, created_at=k.created_at, expires_at=k.expires_at,
                               created_by=k.created_by, created_by_name=names.get(k.created_by)) for k in keys], \
        next_cursor


def _people(search: str) -> QuerySet[Principal]:
    # A person never has an Agent; saying so lets the page read the principal_name_order index.
    people = Principal.objects.filter(kind=PrincipalKind.HUMAN, agent__isnull=True).select_related("user")
    text = _search(search)
    if text:
        people = people.filter(Q(name__icontains=text) | Q(user__username__icontains=text) | Q(id__icontains=text))
    return people


def account_list(*, actor: Actor, search: str = "") -> list[AccountView]:
    """Every person (human principal) with the Installation Roles they hold, by name."""
    authorize(actor, Action.ADMINISTER, Kind.INSTALLATION)  # what creating an account asks
    return _account_views(list(_people(search).order_by("name", "id")))


@dataclass(frozen=True)
class AccountPage:
    rows: list[AccountView]
    next_cursor: str | None  # the page after this one; None on the last page


def account_page(*, actor: Actor, search: str = "", after: str = "", page_size: int = PAGE_SIZE) -> AccountPage:
    """One keyset page of :func:`account_list` on ``(name, id)`` (the console's Members list and
    ``GET /api/auth/accounts``); a cursor that is not one of ours is refused."""
    authorize(actor, Action.ADMINISTER, Kind.INSTALLATION)
    people, next_cursor = text_page(_people(search), field="name", after=after, page_size=page_size)
    return AccountPage(rows=_account_views(people), next_cursor=next_cursor)


def _account_views(people_list: list[Principal]) -> list[AccountView]:
    roles = roles_held([p.id for p in people_list])
    return [AccountView(principal_id=p.id, name=p.name, username=p.user.username if p.user else "",
                        active=bool(p.user and p.user.is_active), roles=roles.get(p.id, []),
                        created_at=p.created_at, must_change_password=p.must_change_password)
            for p in people_list]


def account_get(*, actor: Actor, principal_id: str) -> AccountView:
    """One person as the Members list shows them (``installation:administer``, as changing them asks)."""
    authorize(actor, Action.ADMINISTER, Kind.INSTALLATION)
    p = Principal.objects.select_related("user").filter(id=principal_id, kind=PrincipalKind.HUMAN).first()
    if p is None or p.user is None:
        raise NotFound("The account does not exist; it may have been removed.")
    link = None
    if settings.OCC_OIDC_ISSUER:
        link = SingleSignOnIdentity.objects.filter(principal=p, issuer=settings.OCC_OIDC_ISSUER).first()
    return AccountView(principal_id=p.id, name=p.name, username=p.user.username, active=p.user.is_active,
                       roles=roles_held([p.id]).get(p.id, []), created_at=p.created_at,
                       must_change_password=p.must_change_password, email=p.user.email,
                       sso_subject=link.subject if link else None)


def roles_held(principal_ids: list[str]) -> dict[str, list[str]]:
    """What each principal holds, Installation-wide and on Namespaces or resources, by Role
    name ("Viewer on default"); callers authorized ``installation:administer``."""
    held: dict[str, list[str]] = {}
    rows = (AccessBinding.objects.filter(principal__in=principal_ids)
            .order_by("role__name", "namespace__name", "resource_kind", "resource_id")
            .values_list("principal_id", "role__name", "namespace__name", "resource_kind", "resource_id"))
    for principal_id, role_name, namespace_name, resource_kind, resource_id in rows:
        where = "" if namespace_name is None else f" on {namespace_name}"
        if resource_id is not None:
            where = f" on {resource_kind} {resource_id} in {namespace_name}"
        held.setdefault(principal_id, []).append(role_name + where)
    return held


def namespace_choices(*, actor: Actor) -> list[Choice]:
    """Every Namespace, for giving a person a Role on some of them (``installation:administer``)."""
    authorize(actor, Action.ADMINISTER, Kind.INSTALLATION)
    return [Choice(ns_id, name) for ns_id, name in Namespace.objects.order_by("name").values_list("id", "name")]


def installation_roles_held(principal_ids: list[str]) -> dict[str, list[str]]:
    """The names of the Installation Roles each principal holds, by name (callers authorized
    ``installation:administer`` for the principals they ask about)."""
    roles: dict[str, list[str]] = {}
    for principal_id, role_name in (AccessBinding.objects.filter(principal__in=principal_ids, namespace__isnull=True)
                                    .order_by("role__name").values_list("principal_id", "role__name")):
        roles.setdefault(principal_id, []).append(role_name)
    return roles


def installation_role_choices(*, actor: Actor) -> list[Choice]:
    """The Installation Roles an account can be given (``account_create`` accepts any of them)."""
    authorize(actor, Action.ADMINISTER, Kind.INSTALLATION)
    return [Choice(r.id, r.name) for r in Role.objects.filter(namespace__isnull=True).order_by("name", "id")]


def installation_role_page(*, actor: Actor, after: str = "",
                           page_size: int = PAGE_SIZE) -> tuple[list[Role], str | None]:
    """``installation_role_choices`` one keyset page at a time on ``(name, id)``, and the next
    page's cursor (None on the last page)."""
    authorize(actor, Action.ADMINISTER, Kind.INSTALLATION)
    return text_page(Role.objects.filter(namespace__isnull=True), field="name", after=after, page_size=page_size)


def _targets(namespace_id: str, agent_names: dict[str, str]) -> dict[tuple[str, str], str]:
    """Every resource a binding in the Namespace can be on, by (kind, id), with its label
    (``agent_names``: the Namespace's Agents, id -> name, already read)."""
    targets: dict[tuple[str, str], str] = {}
    for agent_id, name in agent_names.items():
        targets[(Kind.AGENT.value, agent_id)] = f"Agent {name}"
    for secret_id, name in Secret.objects.filter(namespace_id=namespace_id, owner_agent__isnull=True) \
            .values_list("id", "name"):
        targets[(Kind.SECRET.value, secret_id)] = f"Secret {name}"
    for config_id in Configuration.objects.filter(namespace_id=namespace_id).values_list("id", flat=True):
        targets[(Kind.CONFIGURATION.value, config_id)] = f"Configuration {config_id}"
    return targets


def _subject_label(principal: Principal, agent_names: dict[str, str]) -> tuple[str, str]:
    if principal.kind == PrincipalKind.HUMAN:
        return principal.name, "person"
    if principal.agent_id:
        return agent_names.get(principal.agent_id, principal.name), "Agent"
    return principal.name, "service principal"


def installation_bindings_reaching_namespaces() -> list[AccessBinding]:
    """The Installation-wide bindings whose Role grants something inside Namespaces (the
    administrator's included): they apply in every Namespace, so its Access page shows them."""
    rows = AccessBinding.objects.filter(namespace__isnull=True).select_related("role").order_by("created_at", "id")
    return [b for b in rows if any(not p.endswith(f":{Kind.INSTALLATION.value}") for p in b.role.permissions)]


@dataclass(frozen=True)
class NamespaceAccess:
    """A Namespace's policy as the Access page shows it, and what its forms offer."""

    roles: list[Role]
    bindings: list[BindingView]
    subjects: list[Choice]  # people, the Namespace's service principals and its Agents
    targets: list[Choice]  # "kind:id" of the Namespace itself and each resource in it


def namespace_access(*, actor: Actor, namespace_id: str) -> NamespaceAccess:
    """Roles, bindings (with subject, Role and target names) and the form choices, for a caller
    who may manage the Namespace's policy; one query per kind, whatever the number of rows."""
    namespace = policy_namespace(actor=actor, namespace_id=namespace_id)
    bindings = installation_bindings_reaching_namespaces() + namespace_bindings(namespace)
    roles = list(Role.objects.filter(namespace=namespace, system=False).order_by("name", "id"))
    role_names = dict(Role.objects.filter(id__in={b.role_id for b in bindings}).values_list("id", "name"))
    agent_names = dict(Agent.objects.filter(namespace=namespace).values_list("id", "name"))
    subjects = list(Principal.objects.filter(Q(kind=PrincipalKind.HUMAN) | Q(namespace=namespace))
                    .order_by("kind", "name", "id"))
    principals = {p.id: p for p in subjects}
    missing = {b.principal_id for b in bindings} - principals.keys()
    principals.update({p.id: p for p in Principal.objects.filter(id__in=missing)})
    targets = _targets(namespace.id, agent_names)
    namespace_label = f"Namespace {namespace.name}"

    def target_label(binding: AccessBinding) -> str:
        if binding.namespace_id is None:
            return "every Namespace (Installation-wide)"
        if binding.resource_id is None:
            return f"all of {namespace_label}"
        if binding.resource_kind == Kind.NAMESPACE:
            return namespace_label
        return targets.get((binding.resource_kind or "", binding.resource_id),
                           f"{binding.resource_kind} {binding.resource_id}")

    views = []
    for binding in bindings:
        name, kind = _subject_label(principals[binding.principal_id], agent_names)
        views.append(BindingView(binding=binding, subject_name=name, subject_kind=kind,
                                 role_name=role_names.get(binding.role_id, binding.role_id),
                                 target_label=target_label(binding)))
    subject_choices = []
    for principal in subjects:
        name, kind = _subject_label(principal, agent_names)
        subject_choices.append(Choice(principal.id, f"{name} ({kind})"))
    target_choices = [Choice(f"{Kind.NAMESPACE.value}:{namespace.id}", namespace_label)]
    target_choices += [Choice(f"{kind}:{rid}", label) for (kind, rid), label in
                       sorted(targets.items(), key=lambda item: item[1].casefold())]
    return NamespaceAccess(roles=roles, bindings=views, subjects=subject_choices, targets=target_choices)
