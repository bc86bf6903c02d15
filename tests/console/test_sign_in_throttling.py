"""Sign-in throttling (django-axes) in the console and the admin: per account and client
address (through trusted proxies), a lockout that expires and says how long it lasts, cleared by a success, audited."""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import get_user_model
from django.db import DatabaseError
from django.test import Client
from django.utils import timezone

from occ.models import AuditEvent
from occ.services import audit as audit_service
from occ.services.sign_in import LOCKOUT_ACTION
from tests.conftest import ADMIN_PASSWORD

LIMIT = 3
LOCKOUT = timedelta(minutes=10)
CONSOLE = "/console/sign-in"
ADMIN = "/admin/login/"
WRONG = "not-the-password-at-all"


@pytest.fixture(autouse=True)
def _throttle(settings):
    settings.AXES_FAILURE_LIMIT = LIMIT
    settings.AXES_COOLOFF_TIME = LOCKOUT


def attempt(path: str, username: str, password: str, *, address: str = "203.0.113.7", **headers: str):
    client = Client(REMOTE_ADDR=address)  # a fresh visitor each time: no cookie carries the count
    return client.post(path, {"username": username, "password": password}, headers=headers)


def lockouts() -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action=LOCKOUT_ACTION).order_by("occurred_at"))


def locked_page(response) -> bool:
    return response.status_code == 429 and "Sign-in is locked for" in response.content.decode()


@pytest.mark.parametrize("path", [pytest.param(CONSOLE, id="console"), pytest.param(ADMIN, id="admin")])
def test_an_account_is_locked_for_an_address_after_the_limit(bootstrap, path):
    for _ in range(LIMIT - 1):
        response = attempt(path, "admin", WRONG, address="198.51.100.99")
        assert response.status_code == 200, "below the limit a wrong password is only wrong"
        assert "Sign-in is locked" not in response.content.decode()
    assert locked_page(attempt(path, "admin", WRONG, address="198.51.100.99"))
    # Locked: even the right password, from that address, is refused and says so.
    refused = attempt(path, "admin", ADMIN_PASSWORD, address="198.51.100.99")
    assert locked_page(refused)
    assert "_auth_user_id" not in refused.client.session
    assert "10 minutes" in refused.content.decode()
    assert 'value="admin"' in refused.content.decode(), "the username stays in the form"
    [event] = lockouts()  # one event for the lockout, none for the refusals during it
    assert (event.kind, event.outcome, event.resource_kind) == ("access", "denied", "account")
    assert event.resource_id == str(get_user_model().objects.get(username="admin").pk)
    assert event.details["clientAddress"] == "198.51.100.99"
    assert event.details["__occAuditMetadata"]["source"] == ("admin" if path == ADMIN else "console")
    assert WRONG not in str(event.details)
    assert ADMIN_PASSWORD not in str(event.details)


@pytest.mark.parametrize("path", [pytest.param(CONSOLE, id="console"), pytest.param(ADMIN, id="admin")])
def test_a_name_that_is_no_account_is_counted_but_not_recorded(bootstrap, path):
    for _ in range(LIMIT):
        response = attempt(path, "guess-who", WRONG, address="203.0.113.9")
    assert locked_page(response)
    # Other accounts from that address are not locked.
    assert attempt(path, "admin", ADMIN_PASSWORD, address="203.0.113.9").status_code == 302
    [event] = lockouts()
    assert event.details["unknownAccount"] is True, "a typed name that is no account is not recorded"
    assert "guess-" not in str(event.details)


def test_a_forwarded_header_does_not_give_a_guesser_a_new_address(bootstrap):
    for n in range(LIMIT):
        attempt(CONSOLE, "admin", WRONG, address="203.0.113.9", x_forwarded_for=f"10.0.0.{n}")
    assert locked_page(attempt(CONSOLE, "admin", ADMIN_PASSWORD, address="203.0.113.9", x_forwarded_for="10.9.9.9"))


def test_the_lockout_expires(bootstrap):
    for _ in range(LIMIT):
        attempt(CONSOLE, "admin", WRONG)
    assert locked_page(attempt(CONSOLE, "admin", ADMIN_PASSWORD))
    # The cool-off passes (the counted failures grow old; nothing else changes).
    AccessAttempt.objects.update(attempt_time=timezone.now() - LOCKOUT - timedelta(seconds=1))
    assert attempt(CONSOLE, "admin", ADMIN_PASSWORD).status_code == 302


def test_a_lockout_is_not_extended_by_refused_attempts(bootstrap):
    for _ in range(LIMIT):
        attempt(CONSOLE, "admin", WRONG)
    locked_at = AccessAttempt.objects.get().attempt_time
    for _ in range(3):
        assert locked_page(attempt(CONSOLE, "admin", WRONG))
    assert AccessAttempt.objects.get().attempt_time == locked_at, "the page's 'until' stays true"


def test_a_success_clears_the_count(bootstrap):
    for _ in range(LIMIT - 1):
        attempt(CONSOLE, "admin", WRONG)
    assert attempt(CONSOLE, "admin", ADMIN_PASSWORD).status_code == 302
    for _ in range(LIMIT - 1):
        assert attempt(CONSOLE, "admin", WRONG).status_code == 200
    assert attempt(CONSOLE, "admin", ADMIN_PASSWORD).status_code == 302
    assert lockouts() == []


def test_a_lockout_that_cannot_be_audited_is_not_counted_either(bootstrap, monkeypatch):
    for _ in range(LIMIT - 1):
        attempt(CONSOLE, "admin", WRONG)
    counted = AccessAttempt.objects.get().failures_since_start

    def unavailable(**kwargs):
        raise audit_service.DependencyUnavailable("The audit log is unavailable; nothing was changed.")

    monkeypatch.setattr("occ.services.sign_in.audit_record", unavailable)
    client = Client(REMOTE_ADDR="203.0.113.7", raise_request_exception=False)
    response = client.post(CONSOLE, {"username": "admin", "password": WRONG})
    assert response.status_code >= 500
    assert AccessAttempt.objects.get().failures_since_start == counted, "rolled back with the audit"
    assert lockouts() == []


def test_an_error_after_the_lockout_audit_rolls_the_audit_back(bootstrap, monkeypatch):
    """The event is written in the transaction of the failure it records, not on its own."""
    for _ in range(LIMIT - 1):
        attempt(CONSOLE, "admin", WRONG)
    real_audit = audit_service.audit_record

    def audit_then_fail(**kwargs):
        real_audit(**kwargs)
        raise DatabaseError("the write after the audit fails")

    monkeypatch.setattr("occ.services.sign_in.audit_record", audit_then_fail)
    client = Client(REMOTE_ADDR="203.0.113.7", raise_request_exception=False)
    assert client.post(CONSOLE, {"username": "admin", "password": WRONG}).status_code >= 500
    assert lockouts() == []


# --- issue 26: per account and address, through trusted proxies ----------------------------

PROXY = "10.1.2.3"


def test_wrong_passwords_from_one_address_do_not_lock_the_account_elsewhere(bootstrap):
    for _ in range(LIMIT):
        attempt(CONSOLE, "admin", WRONG, address="198.51.100.66")
    assert locked_page(attempt(CONSOLE, "admin", ADMIN_PASSWORD, address="198.51.100.66"))
    assert attempt(CONSOLE, "admin", ADMIN_PASSWORD, address="192.0.2.50").status_code == 302


def test_behind_a_trusted_proxy_each_client_is_counted_apart(bootstrap, settings):
    settings.OCC_TRUSTED_PROXIES = ["10.0.0.0/8"]
    for _ in range(LIMIT):  # a guesser's requests, all through the proxy
        attempt(CONSOLE, "admin", WRONG, address=PROXY, x_forwarded_for="198.51.100.7")
    assert locked_page(attempt(CONSOLE, "admin", ADMIN_PASSWORD, address=PROXY, x_forwarded_for="198.51.100.7"))
    # The administrator, through the same proxy from their own address, still signs in.
    assert attempt(CONSOLE, "admin", ADMIN_PASSWORD, address=PROXY, x_forwarded_for="192.0.2.8").status_code == 302
    [event] = lockouts()
    assert event.details["clientAddress"] == "198.51.100.7"


def test_without_the_setting_everything_behind_a_proxy_is_one_client(bootstrap):
    for n in range(LIMIT):
        attempt(CONSOLE, "admin", WRONG, address=PROXY, x_forwarded_for=f"198.51.100.{n}")
    assert locked_page(attempt(CONSOLE, "admin", ADMIN_PASSWORD, address=PROXY, x_forwarded_for="192.0.2.8"))


@pytest.mark.parametrize(("remote", "forwarded", "counted"), [
    pytest.param(PROXY, "192.0.2.8", "192.0.2.8", id="one-proxy"),
    pytest.param(PROXY, "192.0.2.8, 10.9.9.9", "192.0.2.8", id="two-trusted-hops"),
    pytest.param(PROXY, "6.6.6.6, 192.0.2.8", "192.0.2.8", id="client-written-hops-ignored"),
    pytest.param(PROXY, "not-an-address", PROXY, id="garbage-stops-at-the-proxy"),
    pytest.param(PROXY, "", PROXY, id="no-header"),
    pytest.param("198.51.100.1", "192.0.2.8", "198.51.100.1", id="untrusted-sender-header-ignored"),
])
def test_the_counted_address(settings, remote, forwarded, counted):
    from django.test import RequestFactory

    from occ.iam.sign_in import client_address

    settings.OCC_TRUSTED_PROXIES = ["10.0.0.0/8"]
    request = RequestFactory().get("/", REMOTE_ADDR=remote, HTTP_X_FORWARDED_FOR=forwarded)
    assert client_address(request) == counted
