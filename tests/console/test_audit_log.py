"""The Audit log page: the full page and its ``#audit-results`` fragment, filters, pages, links
to each event's resource, and only the events the viewer may read."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from occ.models import AuditEvent
from occ.services.audit import audit_record
from tests.console.conftest import ConsoleClient, fragment_root
from tests.factories import AgentFactory, ConfigurationFactory, NamespaceFactory, grant, human


def test_the_page_and_its_fragment(console, ready_namespace):
    page = console.get("/console/audit")
    assert page.status_code == 200
    html = page.content.decode()
    assert '<form id="audit-filter"' in html
    assert 'id="audit-results"' in html
    # The bootstrap's own event, its action free to wrap after each dot (never inside a word).
    assert '<code class="action">openclaw.<wbr>installation.<wbr>bootstrap</code>' in html
    fragment = console.hx_get("/console/audit", {"action": "bootstrap"})
    assert fragment.status_code == 200
    assert fragment_root(fragment.content.decode()) == "div#audit-results"
    assert "<form" not in fragment.content.decode()


def test_an_event_links_to_its_resources_page(console, ready_namespace):
    agent = AgentFactory(namespace=ready_namespace, name="helper")
    audit_record(actor=None, action="openclaw.agents.deploy", namespace_id=ready_namespace.id,
                 resource_kind="agent", resource_id=agent.id)
    html = console.hx_get("/console/audit", {"resource": agent.id}).content.decode()
    assert f'href="/console/namespaces/{ready_namespace.id}/agents/{agent.id}"' in html
    assert html.count('<tr id="audit-') == 1
    assert '<span class="ref"><span class="ref-name">helper</span>' in html, "the resource by its name"


def test_a_configuration_event_links_to_the_configuration_page(console, ready_namespace):
    configuration = ConfigurationFactory(namespace=ready_namespace)
    audit_record(actor=None, action="openclaw.configurations.create", namespace_id=ready_namespace.id,
                 resource_kind="configuration", resource_id=configuration.id)
    html = console.hx_get("/console/audit", {"resource": configuration.id}).content.decode()
    assert f'href="/console/namespaces/{ready_namespace.id}/configurations/{configuration.id}"' in html


@pytest.mark.parametrize(("kind", "details"), [
    pytest.param("agent", {}, id="agent"),
    pytest.param("agent_revision", {}, id="revision"),
    pytest.param("configuration", {}, id="configuration"),
    pytest.param("service_principal", {}, id="service-principal"),
    pytest.param("service_key", {"servicePrincipalId": "prn_gone"}, id="key-of-a-deleted-principal"),
])
def test_an_event_of_a_deleted_resource_is_plain_text_marked_deleted(console, ready_namespace, kind, details):
    audit_record(actor=None, action=f"openclaw.{kind}.delete", namespace_id=ready_namespace.id,
                 resource_kind=kind, resource_id="gone_1", details=details)
    html = console.hx_get("/console/audit", {"resource": "gone_1"}).content.decode()
    [row] = re.findall(r'<tr id="audit-.*?</tr>', html, re.S)
    assert f'<span class="kind">{kind}</span> <span class="muted">(deleted)</span>' in row
    assert "/console/namespaces/" not in row, "no link to a page that would be a 404"


def test_an_event_of_a_deleted_namespace_links_nowhere(console, ready_namespace):
    gone = NamespaceFactory(name="gone-ns")
    audit_record(actor=None, action="openclaw.namespaces.delete", namespace_id=gone.id,
                 resource_kind="namespace", resource_id=gone.id)
    gone_id = gone.id
    gone.delete()
    html = console.hx_get("/console/audit", {"resource": gone_id}).content.decode()
    assert "(deleted)" in html
    assert f"/console/namespaces/{gone_id}/" not in html


def test_the_deleted_marks_cost_the_same_queries_for_one_row_or_many(console, ready_namespace,
                                                                      django_assert_max_num_queries):
    def event(index: int) -> None:
        for kind in ("agent", "configuration", "service_principal", "agent_revision"):
            audit_record(actor=None, action="openclaw.test", namespace_id=ready_namespace.id,
                         resource_kind=kind, resource_id=f"gone_{kind}_{index}")
    event(0)
    with CaptureQueriesContext(connection) as one:
        console.hx_get("/console/audit", {"action": "openclaw.test"})
    for index in range(1, 10):
        event(index)
    with django_assert_max_num_queries(len(one.captured_queries)):
        html = console.hx_get("/console/audit", {"action": "openclaw.test"}).content.decode()
    assert html.count("(deleted)") == 40


def test_filters_narrow_and_an_empty_result_says_so(console, ready_namespace):
    html = console.hx_get("/console/audit", {"action": "no-such-action"}).content.decode()
    assert "No matching events" in html
    assert '<tr id="audit-' not in html


def test_a_backwards_time_range_is_refused_on_its_field(console):
    response = console.hx_get("/console/audit", {"since": "2026-01-02T00:00", "until": "2026-01-01T00:00"})
    html = response.content.decode()
    assert response.status_code == 200
    assert fragment_root(html) == "div#audit-results"
    assert "Until must be later than From." in html
    full = console.get("/console/audit", {"since": "2026-01-02T00:00", "until": "2026-01-01T00:00"}).content.decode()
    assert re.search(r'<input[^>]*name="until"[^>]*aria-invalid="true"', full)


def test_the_pager_links_keep_the_filters(console, ready_namespace, settings):
    for n in range(55):  # more than one page of 50
        audit_record(actor=None, action=f"openclaw.bulk.{n}", namespace_id=ready_namespace.id)
    html = console.hx_get("/console/audit", {"action": "bulk"}).content.decode()
    assert html.count('<tr id="audit-') == 50
    older = re.search(r'href="\?action=bulk&amp;older=([\w-]+)"', html)
    assert older, "no Older link keeping the filter"
    second = console.hx_get("/console/audit", {"action": "bulk", "older": older.group(1)}).content.decode()
    assert second.count('<tr id="audit-') == 5
    assert 'rel="prev"' in second


def test_a_viewer_reads_only_the_events_of_namespaces_they_may_read(db, bootstrap, ready_namespace):
    other = NamespaceFactory(name="other")
    reader = human("reader")
    grant(reader, "read:namespace", namespace=ready_namespace)
    mine = audit_record(actor=None, action="openclaw.mine", namespace_id=ready_namespace.id)
    theirs = audit_record(actor=None, action="openclaw.theirs", namespace_id=other.id)
    client = ConsoleClient()
    client.sign_in("reader", "a-long-test-password")
    html = client.get("/console/audit").content.decode()
    assert mine.id in html
    assert theirs.id not in html
    assert "openclaw.installation.bootstrap" not in html  # Installation-level: administrators only


def test_someone_who_may_read_nothing_sees_an_empty_log(db, bootstrap):
    human("nobody")
    client = ConsoleClient()
    client.sign_in("nobody", "a-long-test-password")
    response = client.get("/console/audit")
    assert response.status_code == 200
    assert '<tr id="audit-' not in response.content.decode()
    assert "No events yet" in response.content.decode()
    assert AuditEvent.objects.exists()
