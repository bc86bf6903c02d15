"""GET /audit: the console's Audit log through the API (same reader rules, same filters, keyset
pages) and its NDJSON and CSV exports, through the real HTTP stack."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC

import pytest
from django.test import Client

from occ.models import AuditEvent, Namespace, NamespaceStatus
from tests.conftest import ApiClient
from tests.factories import NamespaceFactory, grant, key_for, service_principal
from tests.fakes.compute import deployable_agent


@pytest.fixture
def world(bootstrap):
    """Two Namespaces with four events each and two Installation-level events (the log is
    append-only: the database refuses to change or delete an event), besides the bootstrap's."""
    first = NamespaceFactory(status=NamespaceStatus.READY)
    second = NamespaceFactory(status=NamespaceStatus.READY)
    for index in range(10):
        namespace = (first, second)[index % 2] if index < 8 else None
        AuditEvent.objects.create(
            kind="mutation", outcome="succeeded",
            action=f"openclaw.configurations.{'create' if index % 2 else 'update'}",
            namespace_id=namespace.id if namespace else None, resource_kind="configuration",
            resource_id="=HYPERLINK(x)" if index == 9 else f"cfg_{index:02d}",
            details={"note": "=SUM(A1)" if index == 0 else f"event {index}"})
    newest_first = list(AuditEvent.objects.order_by("-occurred_at", "-id").values_list("id", flat=True))
    return first, second, newest_first


def reader_of(namespace: Namespace) -> ApiClient:
    principal = service_principal("auditor")
    grant(principal, "read:namespace", namespace=namespace)
    return ApiClient(key_for(principal))


def test_pages_walk_back_and_forth_newest_first(api, world):
    _, _, newest_first = world
    seen, cursor, pages = [], "", []
    while True:
        response = api.get("/audit?limit=5" + (f"&older={cursor}" if cursor else ""))
        assert response.status == 200, response.body
        pages.append(response.data)
        seen += [event["id"] for event in response.data["events"]]
        cursor = response.data["olderCursor"]
        if cursor is None:
            break
    assert seen == newest_first
    assert pages[0]["newerCursor"] is None
    back = api.get(f"/audit?limit=5&newer={pages[1]['newerCursor']}").data
    assert [e["id"] for e in back["events"]] == newest_first[:5]
    event = pages[0]["events"][0]
    assert set(event) == {"id", "occurredAt", "kind", "outcome", "action", "actorId", "actorName", "namespaceId",
                          "resourceKind", "resourceId", "resourceName", "agentId", "resourceDeleted", "details"}


def test_a_namespace_reader_sees_its_namespace_only(world):
    first, _, _ = world
    events = reader_of(first).get("/audit").data["events"]
    assert events
    assert {e["namespaceId"] for e in events} == {first.id}


def test_filters_are_the_consoles(api, world):
    first, _, newest_first = world
    by_resource = api.get(f"/audit?resource={first.id}").data["events"]
    assert {e["namespaceId"] for e in by_resource} == {first.id}
    by_action = api.get("/audit?action=configurations.create").data["events"]
    assert by_action
    assert all(e["action"].endswith(".create") for e in by_action)
    recent = AuditEvent.objects.get(id=newest_first[2]).occurred_at
    expected = list(AuditEvent.objects.filter(occurred_at__gte=recent).order_by("-occurred_at", "-id")
                    .values_list("id", flat=True))
    since = recent.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert [e["id"] for e in api.get(f"/audit?since={since}").data["events"]] == expected


def test_ndjson_export_streams_every_event_the_reader_may_read(world):
    first, _, _ = world
    reader = reader_of(first)
    response = Client().get("/audit?format=ndjson", headers={"x-api-key": reader.key})
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-ndjson"
    lines = [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]
    assert [e["id"] for e in lines] == [e["id"] for e in reader.get("/audit?limit=200").data["events"]]
    assert {e["namespaceId"] for e in lines} == {first.id}


def test_csv_export_has_a_header_and_defuses_formulas(api, world):
    response = Client().get("/audit?format=csv", headers={"x-api-key": api.key})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [row["id"] for row in rows] == list(AuditEvent.objects.order_by("-occurred_at", "-id")
                                              .values_list("id", flat=True))
    (planted,) = [row for row in rows if row["resourceId"] == "cfg_00"]
    assert json.loads(planted["details"]) == {"note": "=SUM(A1)"}, "the JSON cell starts with {, not ="
    assert [row["resourceId"] for row in rows if "HYPERLINK" in row["resourceId"]] == ["'=HYPERLINK(x)"]


@pytest.mark.parametrize("query", ["limit=0", "limit=201", "format=xml", "since=yesterday", "other=1",
                                   "limit=2&limit=3", "since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z",
                                   # PostgreSQL refuses NUL in a comparison (the fuzzer's 503): a 400 first.
                                   "actor=%00", "resource=a%00b", "action=%01x", "older=%00"])
def test_bad_queries_are_400(api, world, query):
    response = api.get(f"/audit?{query}")
    assert (response.status, response.error_code) == (400, "INVALID_REQUEST"), query


def test_anonymous_is_401(anon_api, world):
    assert anon_api.get("/audit").status == 401


def test_events_name_their_resources_now_or_as_recorded(api, ready_namespace, fake_compute):
    """Issue 27, item 6: the audit log names resources (an Agent, its revision as "<agent> v<n>",
    a Configuration renamed since by its name now, a deleted Secret by the name its event kept)."""
    agent = deployable_agent(ready_namespace, bound=1)
    revision = api.post(f"/namespaces/{ready_namespace.id}/agents/{agent.id}/deploy").data["id"]
    secret = api.post(f"/namespaces/{ready_namespace.id}/secrets", {"name": "short-lived", "value": "v"}).data
    assert api.delete(f"/namespaces/{ready_namespace.id}/secrets/{secret['id']}").status == 204
    configuration = api.post(f"/namespaces/{ready_namespace.id}/configurations",
                             {"kind": "agent", "values": {}, "name": "before"}).data
    api.patch(f"/namespaces/{ready_namespace.id}/configurations/{configuration['id']}",
              {"values": {}, "name": "after"})

    events = api.get("/audit?limit=200").data["events"]
    named = {(event["action"], event["resourceId"]): event["resourceName"] for event in events}
    assert named[("openclaw.agents.deploy", agent.id)] == agent.name
    assert named[("openclaw.secrets.create", secret["id"])] == "short-lived"
    assert named[("openclaw.configurations.create", configuration["id"])] == "after"
    revision_names = {name for (action, rid), name in named.items() if rid == revision}
    assert revision_names <= {f"{agent.name} v1"}
    csv_rows = list(csv.DictReader(io.StringIO(
        b"".join(Client().get("/audit?format=csv", headers={"x-api-key": api.key}).streaming_content).decode())))
    assert {row["resourceName"] for row in csv_rows if row["resourceId"] == configuration["id"]} == {"after"}
