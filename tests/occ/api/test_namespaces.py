from __future__ import annotations

import pytest

from occ.models import AuditEvent, ControllerWork, Namespace, NamespaceStatus


def test_create_namespace_returns_provisioning_and_queues_ready_work(api):
    response = api.post("/namespaces", {"name": "team-a"})
    assert response.status == 201
    data = response.data
    assert data["name"] == "team-a"
    assert data["status"] == "provisioning"
    assert data["id"].startswith("ns_")
    assert response.body["meta"]["requestId"].startswith("req_")
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["X-Request-Id"] == response.body["meta"]["requestId"]
    work = ControllerWork.objects.get(idempotency_key=f"namespace:{data['id']}:ready")
    assert work.state == "queued"
    assert AuditEvent.objects.filter(action="openclaw.namespaces.create", resource_id=data["id"]).count() == 1


@pytest.mark.parametrize(
    ("body", "code", "path"),
    [
        pytest.param({}, "REQUIRED", "/name", id="missing-name"),
        pytest.param({"name": 5}, "INVALID_TYPE", "/name", id="int-name"),
        pytest.param({"name": " lead"}, "INVALID_FORMAT", "/name", id="leading-space"),
        pytest.param({"name": "trail "}, "INVALID_FORMAT", "/name", id="trailing-space"),
        pytest.param({"name": "a\u0007b"}, "INVALID_FORMAT", "/name", id="control-char"),
        pytest.param({"name": ""}, "INVALID_FORMAT", "/name", id="empty"),
        pytest.param({"name": "x" * 201}, "TOO_LONG", "/name", id="too-long"),
        pytest.param({"name": "ok", "extra": 1}, "UNKNOWN_FIELD", "/extra", id="unknown-field"),
        pytest.param({"name": "ok", "existingNamespace": "Bad_Name"}, "INVALID_FORMAT", "/existingNamespace",
                     id="bad-existing-namespace"),
    ],
)
def test_create_namespace_rejects_bad_input_and_changes_nothing(api, body, code, path):
    before = (Namespace.objects.count(), AuditEvent.objects.count(), ControllerWork.objects.count())
    response = api.post("/namespaces", body)
    assert response.status == 400
    assert response.error_code == "INVALID_REQUEST"
    assert {"code": code, "path": path} in response.body["error"]["details"]
    assert (Namespace.objects.count(), AuditEvent.objects.count(), ControllerWork.objects.count()) == before


def test_name_of_200_code_points_is_accepted(api):
    assert api.post("/namespaces", {"name": "é" * 200}).status == 201


def test_duplicate_name_conflicts(api):
    assert api.post("/namespaces", {"name": "dup"}).status == 201
    response = api.post("/namespaces", {"name": "dup"})
    assert response.status == 409
    assert response.error_code == "RESOURCE_CONFLICT"


def test_tombstoned_name_stays_reserved(api):
    namespace = Namespace.objects.create(name="gone")
    Namespace.objects.filter(id=namespace.id).update(deleted_at=namespace.created_at)
    response = api.post("/namespaces", {"name": "gone"})
    assert response.status == 409
    assert "deleted" in response.body["error"]["message"]
    assert api.get(f"/namespaces/{namespace.id}").status == 404


def test_list_and_get(api, bootstrap):
    created = api.post("/namespaces", {"name": "listed"}).data
    names = [ns["name"] for ns in api.get("/namespaces").data["namespaces"]]
    assert names == ["default", "listed"]
    assert api.get(f"/namespaces/{created['id']}").data == created


def test_get_unknown_namespace_is_404(api):
    response = api.get("/namespaces/ns_00000000-0000-4000-8000-000000000000")
    assert response.status == 404
    assert response.error_code == "NOT_FOUND"


def test_delete_empty_ready_namespace_queues_deletion(api, ready_namespace):
    response = api.delete(f"/namespaces/{ready_namespace.id}")
    assert response.status == 202
    assert response.data["status"] == "deleting"
    assert ControllerWork.objects.filter(idempotency_key=f"namespace:{ready_namespace.id}:deleted:1").exists()
    again = api.delete(f"/namespaces/{ready_namespace.id}")
    assert again.status == 202
    assert ControllerWork.objects.filter(namespace=ready_namespace, namespace_target="deleted").count() == 1


def test_delete_provisioning_namespace_conflicts(api, bootstrap):
    namespace = Namespace.objects.get(name="default")
    assert namespace.status == NamespaceStatus.PROVISIONING
    assert api.delete(f"/namespaces/{namespace.id}").status == 409


def test_delete_non_empty_namespace_names_what_remains(api, ready_namespace):
    from tests.factories import ConfigurationFactory, SecretFactory

    secret = SecretFactory(namespace=ready_namespace)
    configuration = ConfigurationFactory(namespace=ready_namespace)
    before = (ControllerWork.objects.count(), AuditEvent.objects.count())
    response = api.delete(f"/namespaces/{ready_namespace.id}")
    assert response.status == 409
    assert response.error_code == "NAMESPACE_NOT_EMPTY"
    message = response.body["error"]["message"]
    assert secret.id in message
    assert configuration.id in message
    assert len(message) <= 256
    assert (ControllerWork.objects.count(), AuditEvent.objects.count()) == before
    ready_namespace.refresh_from_db()
    assert ready_namespace.status == NamespaceStatus.READY


def _fail_latest_deletion(namespace):
    from django.utils import timezone

    work = ControllerWork.objects.filter(namespace=namespace, namespace_target="deleted").latest("created_at")
    ControllerWork.objects.filter(pk=work.pk).update(
        state="failed_permanent", completed_at=timezone.now(), reason_code="CONVERGENCE_DEADLINE_EXCEEDED")
    return work


def test_after_a_failed_deletion_only_the_initiator_may_retry(api, ready_namespace):
    from tests.conftest import ApiClient
    from tests.factories import grant, key_for, service_principal

    assert api.delete(f"/namespaces/{ready_namespace.id}").status == 202
    _fail_latest_deletion(ready_namespace)
    other = service_principal("other-deleter")
    grant(other, "delete:namespace")
    denied = ApiClient(key_for(other)).delete(f"/namespaces/{ready_namespace.id}")
    assert denied.status == 403
    assert AuditEvent.objects.filter(kind="authorization_denial", actor_id=other.id).count() == 1
    retried = api.delete(f"/namespaces/{ready_namespace.id}")
    assert retried.status == 202
    assert ControllerWork.objects.filter(idempotency_key=f"namespace:{ready_namespace.id}:deleted:2",
                                         state="queued").exists()


def test_takeover_when_the_initiator_lost_permission(bootstrap, ready_namespace):
    from occ.models import AccessBinding
    from tests.conftest import ApiClient
    from tests.factories import grant, key_for, service_principal

    initiator = service_principal("initiator")
    binding = grant(initiator, "delete:namespace")
    assert ApiClient(key_for(initiator)).delete(f"/namespaces/{ready_namespace.id}").status == 202
    _fail_latest_deletion(ready_namespace)
    AccessBinding.objects.filter(pk=binding.pk).delete()
    successor = service_principal("successor")
    grant(successor, "delete:namespace")
    response = ApiClient(key_for(successor)).delete(f"/namespaces/{ready_namespace.id}")
    assert response.status == 202
    work = ControllerWork.objects.get(idempotency_key=f"namespace:{ready_namespace.id}:deleted:2")
    assert work.actor_id == successor.id
    event = AuditEvent.objects.filter(action="openclaw.namespaces.delete").latest("occurred_at")
    assert event.details["takeover"] is True
