"""How the console shows values: status pills, human times, short ids with a copy button.

One place for each, used by the template tags (``console/templatetags/ui.py``) and by views that
name a state in words (a toast names the pill beside it). docs/console.md, "Components", lists them.

**Status pills.** Every domain state maps to one of five tones, each with one meaning:

- ``ok`` (green): working as intended, or done (a ready Namespace, a running gateway, a
  succeeded deployment);
- ``progress`` (blue): OCC is working on it and it will change by itself (queued, starting,
  provisioning, deleting);
- ``warn`` (amber): needs attention but may recover by itself (retrying, unknown);
- ``danger`` (red): failed, or needs someone to act;
- ``neutral`` (grey): inactive on purpose, or not applicable (stopped, cancelled, superseded).

A state appears in a pill only through ``STATUS_PILLS``: the same word never gets two colours.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape

from django.conf import settings
from django.templatetags.static import static
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.safestring import SafeString

from occ.timestamps import rfc3339

TONES = ("ok", "progress", "warn", "danger", "neutral")

# (kind of thing, its state) -> (tone, label). ``kind`` keeps apart words that mean different
# things in different places: a deployment that is "running" is in progress, a runtime that
# is "running" is healthy.
STATUS_PILLS: dict[str, dict[str, tuple[str, str]]] = {
    "namespace": {
        "provisioning": ("progress", "Provisioning"),
        "ready": ("ok", "Ready"),
        "failed": ("danger", "Failed"),
        "deleting": ("progress", "Deleting"),
    },
    "agent": {
        "active": ("ok", "Active"),
        "deleting": ("progress", "Deleting"),
    },
    # What the gateway is doing (occ.selectors.deployments.agent_runtime and the drivers).
    "runtime": {
        "running": ("ok", "Running"),
        "starting": ("progress", "Starting"),
        "stopping": ("progress", "Stopping"),
        "stopped": ("neutral", "Stopped"),
        # Stopped by a budget at 100 %: it stays so until an administrator acts (issue 29).
        "paused": ("danger", "Paused: budget exceeded"),
        "none": ("neutral", "Not deployed"),
        "crashed": ("danger", "Crashed"),
        "failed": ("danger", "Not running"),
        "retrying": ("warn", "Retrying"),
        "unknown": ("warn", "Unknown"),
        "deleting": ("progress", "Deleting"),
    },
    # A revision's deployment (occ.selectors.deployments).
    "deployment": {
        "queued": ("progress", "Queued"),
        "running": ("progress", "Deploying"),
        "succeeded": ("ok", "Succeeded"),
        "failed": ("danger", "Failed"),
        "superseded": ("neutral", "Superseded"),
        "unknown": ("warn", "Unknown"),
    },
    # An audit event's outcome (occ.models.audit.AuditOutcome).
    "audit": {
        "succeeded": ("ok", "Succeeded"),
        "denied": ("danger", "Denied"),
        "failed": ("danger", "Failed"),
    },
    # A service API key (occ.selectors.access.KeyView).
    "service_key": {
        "active": ("ok", "Active"),
        "expired": ("neutral", "Expired"),
    },
    # An Agent provisioning request (occ.models.work.ProvisioningStatus).
    "provisioning": {
        "queued": ("progress", "Queued"),
        "running": ("progress", "Provisioning"),
        "succeeded": ("ok", "Succeeded"),
        "failed": ("danger", "Failed"),
        "cancelled": ("neutral", "Cancelled"),
    },
    # Whether an Agent may use a Secret it names.
    "access": {
        "granted": ("ok", "Granted"),
        "missing": ("danger", "Missing"),
    },
}


@dataclass(frozen=True)
class Pill:
    tone: str
    label: str
    state: str


def pill_for(kind: str, state: str | None) -> Pill:
    """The pill of ``state`` in ``kind``; an unmapped state is neutral, its words as they are."""
    state = state or "unknown"
    tone, label = STATUS_PILLS.get(kind, {}).get(state) or ("neutral", state.replace("_", " ").capitalize())
    return Pill(tone=tone, label=label, state=state)


def pill_html(kind: str, state: str | None, *, live: bool = False) -> SafeString:
    pill = pill_for(kind, state)
    role = ' role="status"' if live else ""
    return SafeString(f'<span class="pill pill-{pill.tone}" data-status="{escape(pill.state)}"{role}>'
                      f"{escape(pill.label)}</span>")


# The HTML builders below use f-strings and ``html.escape`` (quotes too, as autoescape does)
# rather than format_html: a list page calls their tags in each of hundreds of rows.

EMPTY = SafeString('<span class="muted">—</span>')


# --- times -------------------------------------------------------------------------------------

def as_datetime(value: datetime | str | None) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        parsed = parse_datetime(value)
        if parsed is None:
            return None
        value = parsed
    if timezone.is_naive(value):
        value = timezone.make_aware(value, UTC)
    return value.astimezone(UTC)


def human_time(value: datetime, *, now: datetime | None = None) -> str:
    """``just now``, ``3 min ago``, ``5 h ago``, ``2 days ago``, ``in 4 min``; the date after a week.
    console.js applies the same rules to keep the text current on an open page."""
    now = now or timezone.now()
    seconds = (now - value).total_seconds()
    future = seconds < 0
    seconds = abs(seconds)
    if seconds < 45:
        return "just now" if not future else "in a moment"
    if seconds < 3600:
        amount = f"{max(1, round(seconds / 60))} min"
    elif seconds < 86400:
        amount = f"{round(seconds / 3600)} h"
    elif seconds < 7 * 86400:
        days = round(seconds / 86400)
        amount = f"{days} day{'s' if days != 1 else ''}"
    else:
        return value.strftime("%Y-%m-%d")
    return f"in {amount}" if future else f"{amount} ago"


def exact_time(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S UTC")


def time_html(value: datetime | str | None, *, now: datetime | None = None) -> SafeString:
    """``<time>`` with the exact time in ``datetime`` and ``title``, the human time as text."""
    moment = as_datetime(value)
    if moment is None:
        return EMPTY
    return SafeString(f'<time datetime="{rfc3339(moment)}" title="{exact_time(moment)}" data-relative>'
                      f"{human_time(moment, now=now)}</time>")


# --- icons and ids ---

ICON_SPRITE = "console/build/icons.svg"


def sprite_url() -> str:
    """The URL of the icon sprite ``make assets`` builds (``{% icon %}`` uses it)."""
    return _static_url(ICON_SPRITE, settings.STATIC_URL)


@functools.cache
def _static_url(name: str, _static_base: str) -> str:
    """``static(name)`` once per process (and per STATIC_URL, which tests may change): a list
    page names the sprite in every row, and each ``static()`` costs as much as rendering a cell."""
    return static(name)


SHORT_ID_CHARS = 8


def short_id(value: str) -> str:
    """``agt_1f3c9a2b`` for ``agt_1f3c9a2b-…``: the prefix and the first 8 characters after it."""
    prefix, sep, rest = value.partition("_")
    if not sep:
        return value[:SHORT_ID_CHARS + 4]
    return f"{prefix}_{rest[:SHORT_ID_CHARS]}"


def id_html(value: str | None, *, sprite: str, url: str | None = None) -> SafeString:
    """The short id (the full one in ``title``; a link when ``url``, for a resource that has no
    name) and a button that copies the full id."""
    if not value:
        return EMPTY
    full, short = escape(value), escape(short_id(value))
    code = f'<code title="{full}">{short}</code>'
    if url:
        code = f'<a href="{escape(url)}">{code}</a>'
    return SafeString(
        f'<span class="id-chip">{code}'
        f'<button type="button" class="copy-button" data-copy="{full}" aria-label="Copy ID {short}" title="Copy ID">'
        f'<svg class="icon" aria-hidden="true" focusable="false"><use href="{escape(sprite)}#copy"></use></svg>'
        "</button></span>")


def ref_html(name: str | None, value: str | None, *, sprite: str, url: str | None = None) -> SafeString:
    """A resource by its name first (a link when ``url``), then its short id with copy."""
    chip = id_html(value, sprite=sprite)
    if not name:
        return SafeString(f'<span class="ref">{chip}</span>')
    shown = (f'<a class="ref-name" href="{escape(url)}">{escape(name)}</a>' if url
             else f'<span class="ref-name">{escape(name)}</span>')
    return SafeString(f'<span class="ref">{shown} {chip}</span>')
