"""The console navigation: Access and Members for operators only; the audit log and the API
reference for everyone signed in."""

from __future__ import annotations

from tests.console.conftest import ConsoleClient
from tests.factories import grant, human


def test_an_operator_sees_access_members_audit_and_the_api_reference(console, ready_namespace):
    html = console.get(f"/console/namespaces/{ready_namespace.id}/agents").content.decode()
    assert f'href="/console/namespaces/{ready_namespace.id}/access"' in html
    assert 'href="/console/members"' in html
    assert 'href="/console/audit"' in html
    assert 'href="/api/docs"' in html


def test_a_namespace_reader_sees_no_access_or_members_link(db, bootstrap, ready_namespace):
    grant(human("reader"), "read:namespace", "read:agent", namespace=ready_namespace)
    client = ConsoleClient()
    client.sign_in("reader", "a-long-test-password")
    html = client.get(f"/console/namespaces/{ready_namespace.id}/agents").content.decode()
    assert "/access\"" not in html
    assert 'href="/console/members"' not in html
    assert 'href="/console/audit"' in html
    assert 'href="/api/docs"' in html
