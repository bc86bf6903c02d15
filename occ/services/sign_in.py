"""What a failed sign-in records: django-axes' attempt row and, when that failure starts a
lockout, one audit event, committed together (``AXES_HANDLER`` names this handler).

A lockout is a security event an operator should find in OCC's audit log beside the denials:
who was locked (the account, if it exists, by id; the client address) and until when. The
typed username of an account that does not exist is not recorded: people type passwords
into that field.
"""

from __future__ import annotations

from typing import Any

from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_cool_off
from django.contrib.auth import get_user_model
from django.db import transaction
from django.http import HttpRequest

from occ.models import AuditKind, AuditOutcome
from occ.services.audit import audit_record
from occ.timestamps import rfc3339

LOCKOUT_ACTION = "openclaw.auth.sign_in.lockout"


def _face(request: HttpRequest) -> str:
    return "admin" if request.path.startswith("/admin/") else "console"


def sign_in_lockout_audit(*, request: HttpRequest, username: str | None) -> None:
    """Append the lockout event; call inside the transaction that records the failure."""
    user_id = None
    if username:
        user_id = get_user_model().objects.filter(username=username).values_list("pk", flat=True).first()
    cool_off = get_cool_off(request)
    details: dict[str, Any] = {
        "clientAddress": getattr(request, "axes_ip_address", None),
        "failures": getattr(request, "axes_failures_since_start", None),
        "lockedUntil": rfc3339(request.axes_attempt_time + cool_off) if cool_off else None,  # type: ignore[attr-defined]
    }
    if user_id is None:
        details["unknownAccount"] = True
    else:
        details["userId"] = str(user_id)
    audit_record(actor=None, action=LOCKOUT_ACTION, resource_kind="account",
                 resource_id=None if user_id is None else str(user_id), details=details,
                 kind=AuditKind.ACCESS, outcome=AuditOutcome.DENIED, source=_face(request))


class AuditedAxesHandler(AxesDatabaseHandler):
    """Axes' database handler, with the failure's rows and the lockout's audit event in one
    transaction: if the audit cannot be written, the failure is not counted either, and the
    sign-in fails with the database error (fail closed) instead of locking unaudited."""

    def user_login_failed(self, sender: Any, credentials: dict[str, Any], request: HttpRequest | None = None,
                          **kwargs: Any) -> None:
        if request is None:
            super().user_login_failed(sender, credentials, request, **kwargs)
            return
        # The backend marks a request it refused because a lockout is already running.
        already_locked = bool(getattr(request, "axes_locked_out", False))
        try:
            with transaction.atomic():
                super().user_login_failed(sender, credentials, request, **kwargs)
                if getattr(request, "axes_locked_out", False) and not already_locked:
                    sign_in_lockout_audit(request=request, username=(credentials or {}).get("username"))
        except Exception:
            request.axes_locked_out = already_locked  # type: ignore[attr-defined]  # nothing was recorded: no lockout page
            raise
