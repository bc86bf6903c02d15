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
    names = [ns["name"] for ns in api.get("/namespaces").data]
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
