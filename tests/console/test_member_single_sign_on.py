"""An administrator's single sign-on settings for a person on their Members page (issue 26): the
email that linking by verified email matches, and the explicit link of the provider's subject;
audited; a subject linked to someone else is refused; absent while single sign-on is off."""

from __future__ import annotations

import pytest

from occ.models import AuditEvent, SingleSignOnIdentity
from tests.console.conftest import fragment_root
from tests.factories import human

ISSUER = "https://id.example.test"


@pytest.fixture
def sso_on(settings):
    settings.OCC_OIDC_ISSUER = ISSUER
    settings.OCC_OIDC_PROVIDER_NAME = "Example ID"


def page(principal_id: str) -> str:
    return f"/console/members/people/{principal_id}"


def test_the_card_is_absent_while_single_sign_on_is_off(console):
    person = human("olga")
    assert 'id="member-sso"' not in console.get(page(person.id)).content.decode()
    refused = console.hx_post(page(person.id) + "/single-sign-on", {"email": "", "subject": "s"})
    assert refused.status_code == 404
    assert not SingleSignOnIdentity.objects.exists()


def test_an_administrator_links_a_subject_and_sets_the_email(console, sso_on):
    person = human("pat")
    body = console.get(page(person.id)).content.decode()
    assert "Single sign-on with Example ID" in body
    assert "Not linked yet" in body
    response = console.hx_post(page(person.id) + "/single-sign-on", {"email": "pat@example.test",
                                                                     "subject": "pat-sub"})
    assert fragment_root(response.content.decode()) == "div#member-panel"
    assert "as subject <code>pat-sub</code>" in response.content.decode()
    link = SingleSignOnIdentity.objects.get(principal=person)
    assert (link.issuer, link.subject) == (ISSUER, "pat-sub")
    person.user.refresh_from_db()
    assert person.user.email == "pat@example.test"
    event = AuditEvent.objects.get(action="openclaw.accounts.sso.update", resource_id=person.id)
    assert event.details["subject"] == "pat-sub"
    assert event.details["emailChanged"] is True
    assert event.details["linkedBy"] == "administrator"

    console.hx_post(page(person.id) + "/single-sign-on", {"email": "pat@example.test", "subject": ""})
    assert not SingleSignOnIdentity.objects.filter(principal=person).exists()
    unlinked = AuditEvent.objects.filter(action="openclaw.accounts.sso.update").order_by("-occurred_at").first()
    assert unlinked.details["previousSubject"] == "pat-sub"
    assert unlinked.details["subject"] is None


def test_a_subject_of_another_account_and_a_bad_email_are_refused(console, sso_on):
    quinn, rae = human("quinn"), human("rae")
    console.hx_post(page(quinn.id) + "/single-sign-on", {"email": "", "subject": "shared-sub"})
    taken = console.hx_post(page(rae.id) + "/single-sign-on", {"email": "", "subject": "shared-sub"})
    assert "already linked to another account" in taken.content.decode()
    bad = console.hx_post(page(rae.id) + "/single-sign-on", {"email": "not-an-email", "subject": ""})
    assert "Enter an email address" in bad.content.decode()
    assert not SingleSignOnIdentity.objects.filter(principal=rae).exists()
    assert not AuditEvent.objects.filter(action="openclaw.accounts.sso.update", resource_id=rae.id).exists()


def test_only_administrators_change_it(sso_on, bootstrap):
    from tests.console.conftest import ConsoleClient

    human("sam")
    target = human("tess")
    client = ConsoleClient()
    client.sign_in("sam", "a-long-test-password")
    refused = client.hx_post(page(target.id) + "/single-sign-on", {"email": "", "subject": "x"})
    assert refused.status_code == 403
    assert not SingleSignOnIdentity.objects.exists()
