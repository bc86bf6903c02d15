"""The operators' admin: who gets in, what it shows, what it never shows, and that it is read-only."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest
from django.contrib import admin
from django.contrib.admin.utils import quote
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from occ.iam.keys import create_key_record, digest
from occ.models import (
    AccessBinding,
    Agent,
    AgentProvisioningWork,
    AgentRevision,
    AuditEvent,
    Configuration,
    ControllerWork,
    EncryptedSecretValue,
    Installation,
    Namespace,
    Principal,
    PrincipalKind,
    Restriction,
    Role,
    Secret,
    SecretBinding,
    ServiceKey,
    WorkEffect,
)
from occ.services.audit import audit_record
from tests.conftest import ADMIN_PASSWORD
from tests.factories import AgentFactory, NamespaceFactory, SecretFactory, grant, human, service_principal

REGISTERED = [
    Installation, Namespace, Configuration, Secret, Agent, AgentRevision, ControllerWork,
    AgentProvisioningWork, WorkEffect, AuditEvent, Principal, Role, AccessBinding, Restriction, ServiceKey,
]
_sequence = itertools.count()


def url_of(model, view: str = "changelist", pk: object = None) -> str:
    base = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
    if view == "changelist":
        return base
    if view == "add":
        return base + "add/"
    # The admin escapes primary keys in URLs ("_" is its escape character): ids like
    # "sec_25ab..." would otherwise be read back as another id.
    return base + f"{quote(pk)}/{view}/"


@pytest.fixture
def operator(bootstrap) -> Client:
    """The bootstrap administrator: neither staff nor superuser, but holds installation:administer."""
    user = get_user_model().objects.get(username="admin")
    assert not user.is_staff
    assert not user.is_superuser
    client = Client()
    client.force_login(user)
    return client


def populate() -> dict[type, object]:
    """One related row of every registered model (and of what they point at)."""
    n = next(_sequence)
    namespace = NamespaceFactory(name=f"admin-ns-{n}")
    secret = SecretFactory(namespace=namespace, name=f"admin-secret-{n}")
    agent = AgentFactory(namespace=namespace, name=f"admin-agent-{n}")
    SecretBinding.objects.create(configuration=agent.configuration, env_name=f"TOKEN_{n}", secret=secret)
    SecretFactory(namespace=namespace, owner_agent=agent, purpose="gateway-password")
    revision = AgentRevision.objects.create(
        namespace=namespace, agent=agent, number=1, configuration_id=agent.configuration_id,
        configuration_generation=1, snapshot={"configuration": {}}, created_by="prn_test",
    )
    Agent.objects.filter(pk=agent.pk).update(active_revision=revision)
    now = timezone.now()
    ControllerWork.objects.create(
        idempotency_key=f"agent_revision:{revision.id}:reconcile", job="revision", namespace=namespace,
        agent_id=agent.id, revision_id=revision.id, actor_id="prn_test", available_at=now, created_at=now,
        updated_at=now,
    )
    provisioning = ControllerWork.objects.create(
        idempotency_key=f"provisioning:{namespace.id}:{n}", job="provision", namespace=namespace,
        agent_id=f"agt_planned_{n}", agent_target="provisioned", actor_id="prn_test", available_at=now,
        created_at=now, updated_at=now,
    )
    AgentProvisioningWork.objects.create(
        work=provisioning, namespace=namespace, actor_id="prn_test", request_id=f"req_{n}",
        request_fingerprint="0" * 64, agent_id=f"agt_planned_{n}", configuration_id=f"cfg_planned_{n}", plan={},
    )
    WorkEffect.objects.create(work=provisioning, kind="transport", owner=provisioning.pk,
                              target_id=f"agt_planned_{n}", state="begun", attempt=1, driver_id="fake",
                              begun_at=now)
    person = human(f"admin-person-{n}")
    robot = service_principal(f"admin-robot-{n}", namespace=namespace)
    grant(person, "read:agent", namespace=namespace, resource_kind="agent", resource_id=agent.id)
    Restriction.objects.create(principal=person, namespace=namespace, action="read", resource_kind="secret")
    create_key_record(principal_id=robot.id, namespace_id=namespace.id, name=f"key-{n}",
                      expires_at=now + timedelta(days=1), created_by=person.id)
    audit_record(actor=None, source="test", action="test.admin.populate", namespace_id=namespace.id)
    return {
        Installation: Installation.objects.get(), Namespace: namespace, Configuration: agent.configuration,
        Secret: secret, Agent: agent, AgentRevision: revision, ControllerWork: provisioning,
        AgentProvisioningWork: provisioning.provisioning, WorkEffect: provisioning.effects.get(),
        AuditEvent: AuditEvent.objects.latest("occurred_at"),
        Principal: person, Role: Role.objects.filter(bindings__principal=person).get(),
        AccessBinding: AccessBinding.objects.get(principal=person),
        Restriction: Restriction.objects.get(principal=person),
        ServiceKey: ServiceKey.objects.get(principal=robot),
    }


# --- who gets in ------------------------------------------------------------------------------


def _user_with(username: str, *, staff: bool = False, superuser: bool = False, principal_grants=None,
               deny: bool = False):
    user_model = get_user_model()
    if principal_grants is None:
        return user_model.objects.create_user(username=username, password="a-long-test-password",
                                              is_staff=staff, is_superuser=superuser)
    person = human(username)
    user_model.objects.filter(pk=person.user_id).update(is_staff=staff, is_superuser=superuser)
    if principal_grants:
        grant(person, *principal_grants)
    if deny:
        Restriction.objects.create(principal=person, action="administer", resource_kind="installation")
    return user_model.objects.get(pk=person.user_id)


@pytest.mark.parametrize(
    "make_user",
    [
        pytest.param(lambda: _user_with("root", staff=True, superuser=True), id="django-superuser-without-principal"),
        pytest.param(lambda: _user_with("staffer", staff=True, superuser=True, principal_grants=["read:installation"]),
                     id="superuser-principal-with-read-only"),
        pytest.param(lambda: _user_with("plain", principal_grants=[]), id="principal-without-grants"),
        pytest.param(lambda: _user_with("denied", principal_grants=["administer:installation"], deny=True),
                     id="administer-with-deny-restriction"),
        pytest.param(lambda: _user_with("ns-admin", principal_grants=None), id="user-without-principal"),
    ],
)
def test_non_operators_are_sent_to_the_sign_in_page(bootstrap, make_user):
    client = Client()
    client.force_login(make_user())
    for url in ("/admin/", url_of(Namespace), url_of(AuditEvent)):
        response = client.get(url)
        assert response.status_code == 302, url
        assert response.headers["Location"].startswith("/admin/login/")


def test_anonymous_is_sent_to_the_sign_in_page(bootstrap):
    response = Client().get(url_of(AuditEvent))
    assert response.status_code == 302
    assert response.headers["Location"] == f"/admin/login/?next={url_of(AuditEvent)}"


def test_a_person_granted_administer_is_an_operator_without_being_staff(bootstrap):
    user = _user_with("operator-two", principal_grants=["administer:installation"])
    client = Client()
    client.force_login(user)
    assert client.get("/admin/").status_code == 200
    assert client.get(url_of(Namespace)).status_code == 200


def test_operator_sees_every_occ_model_on_the_index(operator):
    response = operator.get("/admin/")
    assert response.status_code == 200
    listed = {m["object_name"] for app in response.context["app_list"] for m in app["models"]}
    assert listed == {model.__name__ for model in REGISTERED}
    assert 'href="/console/"' in response.content.decode()
    for app in response.context["app_list"]:
        for entry in app["models"]:
            assert entry["perms"] == {"add": False, "change": False, "delete": False, "view": True}


def test_bootstrap_admin_signs_in_through_the_admin_form(bootstrap):
    client = Client()
    response = client.post("/admin/login/?next=/admin/", {"username": "admin", "password": ADMIN_PASSWORD})
    assert response.status_code == 302
    assert response.headers["Location"] == "/admin/"
    assert client.get("/admin/").status_code == 200


@pytest.mark.parametrize(
    ("username", "password", "message"),
    [
        pytest.param("admin", "not-the-password-at-all", "username or password is not right", id="wrong-password"),
        pytest.param("reader", "a-long-test-password", "may not administer the Installation", id="not-an-operator"),
    ],
)
def test_admin_sign_in_refuses_with_a_clear_message(bootstrap, username, password, message):
    _user_with("reader", principal_grants=["read:installation"])
    client = Client()
    response = client.post("/admin/login/", {"username": username, "password": password})
    assert response.status_code == 200
    assert message in response.content.decode()
    assert password not in response.content.decode()
    assert "_auth_user_id" not in client.session


# --- what it shows ------------------------------------------------------------------------------


def test_every_model_is_registered_and_secret_values_are_not():
    registered = set(admin.site._registry)
    assert set(REGISTERED) <= registered
    assert EncryptedSecretValue not in registered
    # People are created through the accounts API (bound to a Role, audited), not edited here.
    assert get_user_model() not in registered
    assert Group not in registered


def test_changelists_and_detail_pages_render_for_every_model(operator):
    rows = populate()
    for model in REGISTERED:
        response = operator.get(url_of(model))
        assert response.status_code == 200, model
        assert response.context["cl"].result_count >= 1, model
        detail = operator.get(url_of(model, "change", rows[model].pk))
        assert detail.status_code == 200, model


def test_changelists_cost_the_same_queries_for_one_row_or_many(operator):
    populate()
    before = {}
    for model in REGISTERED:
        with CaptureQueriesContext(connection) as queries:
            assert operator.get(url_of(model)).status_code == 200
        before[model] = len(queries)
    for _ in range(4):
        populate()
    for model in REGISTERED:
        with CaptureQueriesContext(connection) as queries:
            response = operator.get(url_of(model))
        assert response.status_code == 200
        if model is not Installation:
            assert response.context["cl"].result_count >= 5, model
        assert len(queries) == before[model], f"{model.__name__}: {before[model]} -> {len(queries)} queries"


@pytest.mark.parametrize(
    ("model", "query", "expected"),
    [
        pytest.param(Namespace, {"q": "admin-ns-"}, 1, id="namespace-by-name"),
        pytest.param(Namespace, {"status__exact": "provisioning"}, 1, id="namespace-by-status"),
        pytest.param(ControllerWork, {"state__exact": "queued", "job__exact": "provision"}, 1,
                     id="work-by-state-and-kind"),
        pytest.param(WorkEffect, {"kind__exact": "transport", "state__exact": "begun", "q": "agt_planned_"}, 1,
                     id="effect-by-kind-state-and-target"),
        pytest.param(AuditEvent, {"kind__exact": "bootstrap"}, 1, id="audit-by-kind"),
        pytest.param(AuditEvent, {"outcome__exact": "succeeded", "q": "test.admin.populate"}, 1,
                     id="audit-by-outcome-and-action"),
        pytest.param(Principal, {"kind__exact": "human", "q": "admin-person-"}, 1, id="principal-by-kind"),
    ],
)
def test_search_and_filters(operator, model, query, expected):
    populate()
    response = operator.get(url_of(model), query)
    assert response.status_code == 200
    assert response.context["cl"].result_count == expected


def test_lists_filter_by_namespace(operator):
    first, second = populate()[Namespace], populate()[Namespace]
    for model in (Configuration, Secret, Agent, AgentRevision, ControllerWork, AgentProvisioningWork):
        response = operator.get(url_of(model), {"namespace__id__exact": first.id})
        assert response.status_code == 200
        shown = list(response.context["cl"].result_list)
        assert shown, model
        assert all(row.namespace_id == first.id for row in shown), model
        assert second.id not in {row.namespace_id for row in shown}


def test_secret_values_and_key_digests_never_appear(operator, bootstrap):
    canary = "CANARY-ciphertext-never-shown"
    secret = SecretFactory(namespace=Namespace.objects.get(name="default"), name="canary-secret")
    EncryptedSecretValue.objects.create(backend_name=secret.backend_name, ciphertext=canary)
    key = bootstrap.key
    pages = [
        url_of(Secret), url_of(Secret, "change", secret.pk), url_of(ServiceKey), url_of(ServiceKey, "change", key.pk),
        url_of(Configuration), url_of(AuditEvent),
    ]
    for url in pages:
        response = operator.get(url)
        assert response.status_code == 200, url
        body = response.content.decode()
        assert canary not in body, url
        assert key.digest not in body, url
        assert bootstrap.key_token not in body, url
    assert operator.get("/admin/occ/encryptedsecretvalue/").status_code == 404
    # The digest is not searchable either.
    response = operator.get(url_of(ServiceKey), {"q": digest(bootstrap.key_token)})
    assert response.context["cl"].result_count == 0


# --- read-only ------------------------------------------------------------------------------


@pytest.mark.parametrize("model", REGISTERED, ids=lambda m: m.__name__)
def test_every_model_is_read_only(operator, model):
    rows = populate()
    obj = rows[model]
    counts = {m: m.objects.count() for m in REGISTERED}
    audit_count = AuditEvent.objects.count()
    assert operator.get(url_of(model, "change", obj.pk)).status_code == 200
    assert operator.get(url_of(model, "add")).status_code == 403
    assert operator.post(url_of(model, "add"), {"name": "sneaky"}).status_code == 403
    assert operator.post(url_of(model, "change", obj.pk), {"name": "sneaky"}).status_code == 403
    assert operator.get(url_of(model, "delete", obj.pk)).status_code == 403
    assert operator.post(url_of(model, "delete", obj.pk), {"post": "yes"}).status_code == 403
    bulk = operator.post(url_of(model), {"action": "delete_selected", "_selected_action": [obj.pk],
                                         "post": "yes"})
    assert bulk.status_code in (200, 302)
    assert {m: m.objects.count() for m in REGISTERED} == counts
    assert AuditEvent.objects.count() == audit_count
    assert type(obj).objects.filter(pk=obj.pk).exists()
    changelist = operator.get(url_of(model)).content.decode()
    assert url_of(model, "add") not in changelist


def test_a_work_row_page_lists_its_effects(operator):
    effect = populate()[WorkEffect]
    body = operator.get(url_of(ControllerWork, "change", effect.work_id)).content.decode()
    assert "Work effects" in body
    assert effect.target_id in body
    assert "begun" in body


def test_detail_page_has_no_save_button(operator):
    namespace = populate()[Namespace]
    body = operator.get(url_of(Namespace, "change", namespace.pk)).content.decode()
    assert namespace.name in body
    assert 'name="_save"' not in body
    assert Namespace.objects.get(pk=namespace.pk).name == namespace.name


def test_service_principal_kind_is_shown_for_bootstrap_principals(operator, bootstrap):
    response = operator.get(url_of(Principal), {"kind__exact": PrincipalKind.SERVICE})
    assert bootstrap.key.principal_id in {row.pk for row in response.context["cl"].result_list}
