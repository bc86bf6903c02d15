"""``occ.selectors.audit``: who reads which events, the filters, and keyset pages that stay put
while the log grows."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from occ.iam.actor import Actor, Source
from occ.models import AuditEvent
from occ.selectors.audit import AuditQuery, audit_event_page, decode_cursor, readable_events
from occ.services.audit import audit_record
from tests.factories import NamespaceFactory, grant, human


def person(principal) -> Actor:
    return Actor(principal=principal, source=Source.CONSOLE)


def record(action: str, *, namespace=None, actor=None, kind=None, rid=None) -> AuditEvent:
    return audit_record(actor=actor, action=action, namespace_id=namespace.id if namespace else None,
                        resource_kind=kind, resource_id=rid)


@pytest.fixture
def two_namespaces(db):
    return NamespaceFactory(name="alpha"), NamespaceFactory(name="beta")


def test_an_installation_reader_reads_every_event(bootstrap, two_namespaces, admin_actor):
    alpha, beta = two_namespaces
    events = {record("x.alpha", namespace=alpha).id, record("x.beta", namespace=beta).id,
              record("x.installation").id}
    assert events <= set(readable_events(actor=admin_actor).values_list("id", flat=True))


def test_a_namespace_reader_reads_only_its_namespaces_events(bootstrap, two_namespaces):
    alpha, beta = two_namespaces
    reader = human("reader")
    grant(reader, "read:namespace", namespace=alpha)
    mine, theirs, installation = (record("x.alpha", namespace=alpha), record("x.beta", namespace=beta),
                                  record("x.installation"))
    seen = set(readable_events(actor=person(reader)).values_list("id", flat=True))
    assert mine.id in seen
    assert theirs.id not in seen
    assert installation.id not in seen


def test_someone_bound_to_one_agent_only_reads_nothing_of_the_namespace(bootstrap, two_namespaces):
    alpha, _ = two_namespaces
    holder = human("holder")
    grant(holder, "read:agent", namespace=alpha, resource_kind="agent", resource_id="agt_x")
    record("x.alpha", namespace=alpha)
    assert list(readable_events(actor=person(holder))) == []


@pytest.mark.parametrize(("field", "value", "expected"), [
    pytest.param("actor", "Ada", {"ada-event"}, id="actor-by-name"),
    pytest.param("actor", "ada_user", {"ada-event"}, id="actor-by-username"),
    pytest.param("resource", "agt_42", {"agent-event"}, id="resource-by-id"),
    pytest.param("resource", "secret", {"secret-event"}, id="resource-by-kind"),
    pytest.param("action", "SERVICE_KEYS", {"key-event"}, id="action-part-any-case"),
])
def test_filters(bootstrap, two_namespaces, admin_actor, field, value, expected):
    alpha, _ = two_namespaces
    ada = human("ada_user")
    ada.name = "Ada Lovelace"
    ada.save()
    made = {
        "ada-event": record("openclaw.x", namespace=alpha, actor=person(ada)),
        "agent-event": record("openclaw.agents.deploy", namespace=alpha, kind="agent", rid="agt_42"),
        "secret-event": record("openclaw.secrets.create", namespace=alpha, kind="secret", rid="sec_1"),
        "key-event": record("openclaw.service_keys.create", namespace=alpha, kind="service_key", rid="key_1"),
    }
    page = audit_event_page(actor=admin_actor, query=AuditQuery(**{field: value}))
    found = {name for name, event in made.items() if event.id in {r.event.id for r in page.rows}}
    assert found == expected


def test_the_time_range_is_from_inclusive_until_exclusive(bootstrap, admin_actor):
    event = record("openclaw.timed")
    at = AuditEvent.objects.get(id=event.id).occurred_at

    def ids(**bounds):
        return {r.event.id for r in audit_event_page(actor=admin_actor, query=AuditQuery(**bounds)).rows}

    assert event.id in ids(since=at)
    assert event.id not in ids(until=at)
    assert event.id in ids(since=at - timedelta(minutes=1), until=at + timedelta(seconds=1))
    assert event.id not in ids(since=timezone.now() + timedelta(minutes=1))


def test_keyset_pages_walk_back_and_forth_and_stay_put_while_events_arrive(bootstrap, admin_actor):
    made = [record(f"openclaw.paged.{n}").id for n in range(7)]
    newest_first = list(AuditEvent.objects.filter(id__in=made).order_by("-occurred_at", "-id")
                        .values_list("id", flat=True))
    query = AuditQuery(action="openclaw.paged")
    first = audit_event_page(actor=admin_actor, query=query, page_size=3)
    assert [r.event.id for r in first.rows] == newest_first[:3]
    assert first.newer is None
    second = audit_event_page(actor=admin_actor, query=query, older_than=first.older, page_size=3)
    assert [r.event.id for r in second.rows] == newest_first[3:6]
    record("openclaw.paged.late")  # a new event at the top does not shift older pages
    again = audit_event_page(actor=admin_actor, query=query, older_than=first.older, page_size=3)
    assert [r.event.id for r in again.rows] == [r.event.id for r in second.rows]
    last = audit_event_page(actor=admin_actor, query=query, older_than=second.older, page_size=3)
    assert [r.event.id for r in last.rows] == newest_first[6:]
    assert last.older is None
    back = audit_event_page(actor=admin_actor, query=query, newer_than=second.newer, page_size=3)
    assert [r.event.id for r in back.rows] == newest_first[:3]
    assert back.newer is not None  # the late event is newer still
    assert back.older is not None


@pytest.mark.parametrize("cursor", ["", "garbage", "!!!", "bm90LWEtY3Vyc29y"])
def test_a_cursor_that_is_not_ours_starts_at_the_newest_page(bootstrap, admin_actor, cursor):
    newest = record("openclaw.cursor")
    page = audit_event_page(actor=admin_actor, query=AuditQuery(), older_than=cursor)
    assert page.rows[0].event.id == newest.id
    assert decode_cursor(cursor) is None


def test_rows_carry_the_actors_name(bootstrap, admin_actor):
    ada = human("ada")
    event = record("openclaw.named", actor=person(ada))
    row = next(r for r in audit_event_page(actor=admin_actor, query=AuditQuery()).rows if r.event.id == event.id)
    assert row.actor_name == "ada"
