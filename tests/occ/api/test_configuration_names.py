"""Configurations have a name, unique in their Namespace (issue 27, item 5): given when created
or renamed through the API, else OCC names it ("configuration <short id>", or after the Agent
that a draft or a provisioning creates it for); the list, the reads and the audit carry it."""

from __future__ import annotations

import pytest

from occ.models import AuditEvent, Configuration, NamespaceStatus
from tests.factories import NamespaceFactory, marked_document
from tests.occ.api.test_configurations import admin_api, caller, coll  # noqa: F401 (fixtures)

DOCUMENT = {"kind": "agent", "values": marked_document({})}


@pytest.fixture
def ns(db):
    return NamespaceFactory(status=NamespaceStatus.READY)


def test_a_name_given_is_kept_shown_listed_and_audited(admin_api, ns):  # noqa: F811
    created = admin_api.post(coll(ns.id), {**DOCUMENT, "name": "support bot"})
    assert created.status == 201
    assert created.data["name"] == "support bot"
    assert admin_api.get(f"{coll(ns.id)}/{created.data['id']}").data["name"] == "support bot"
    listed = admin_api.get(coll(ns.id)).data["configurations"]
    assert [(row["id"], row["name"]) for row in listed] == [(created.data["id"], "support bot")]
    event = AuditEvent.objects.get(action="openclaw.configurations.create", resource_id=created.data["id"])
    assert event.details["name"] == "support bot"


def test_without_a_name_occ_names_it_after_its_id(admin_api, ns):  # noqa: F811
    data = admin_api.post(coll(ns.id), DOCUMENT).data
    assert data["name"] == f"configuration {data['id'][4:12]}"


def test_a_name_taken_in_the_namespace_is_a_409_and_changes_nothing(admin_api, ns):  # noqa: F811
    admin_api.post(coll(ns.id), {**DOCUMENT, "name": "twin"})
    before = Configuration.objects.count()
    again = admin_api.post(coll(ns.id), {**DOCUMENT, "name": "twin"})
    assert (again.status, again.error_code) == (409, "RESOURCE_CONFLICT")
    assert "name" in again.body["error"]["message"]
    assert Configuration.objects.count() == before
    elsewhere = NamespaceFactory(status=NamespaceStatus.READY)
    assert admin_api.post(coll(elsewhere.id), {**DOCUMENT, "name": "twin"}).status == 201, "unique per Namespace"


def test_a_patch_renames_it_or_keeps_the_name(admin_api, ns):  # noqa: F811
    first = admin_api.post(coll(ns.id), {**DOCUMENT, "name": "old"}).data
    admin_api.post(coll(ns.id), {**DOCUMENT, "name": "taken"})
    path = f"{coll(ns.id)}/{first['id']}"
    kept = admin_api.patch(path, {"values": DOCUMENT["values"]}).data
    assert (kept["name"], kept["generation"]) == ("old", 2)
    renamed = admin_api.patch(path, {"name": "new", "values": DOCUMENT["values"]}).data
    assert renamed["name"] == "new"
    event = AuditEvent.objects.filter(action="openclaw.configurations.update").latest("occurred_at")
    assert (event.details["name"], event.details["previousName"]) == ("new", "old")
    refused = admin_api.patch(path, {"name": "taken", "values": DOCUMENT["values"]})
    assert refused.status == 409
    assert Configuration.objects.get(id=first["id"]).name == "new"


@pytest.mark.parametrize("name", [pytest.param("", id="empty"), pytest.param(" padded ", id="padded"),
                                  pytest.param("x" * 201, id="too-long")])
def test_a_bad_name_is_a_400(admin_api, ns, name):  # noqa: F811
    response = admin_api.post(coll(ns.id), {**DOCUMENT, "name": name})
    assert response.status == 400
    assert response.body["error"]["details"][0]["path"] == "/name"
