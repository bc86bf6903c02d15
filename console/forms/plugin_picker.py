"""What the plugin picker posts: the selections JSON (the single source of truth, a form field
both Create Agent and the Plugins tab post; its keys are the Agent's plugins document as the
API shows it), the browsing state (view, query, cursor stack) and the catalog entry a row carries
to the detail pane. ``console.pages.plugin_picker`` renders them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django import forms

from occ.drivers.plugins.base import CatalogEntry

SELECTIONS_MAX = 200_000
CURSORS_MAX = 50
KNOWN_MAX = 200  # entries the picker remembers across pages (names for the Configured view)
APPROVERS_TEXT_MAX = 20_000


class PickerForm(forms.Form):
    """What every picker request posts. Each field normalizes and never refuses: a bad value
    falls back (a cursor stack that is not a list is an empty one)."""

    plugins = forms.CharField(required=False, max_length=SELECTIONS_MAX, strip=False)
    view = forms.CharField(required=False, max_length=16)
    q = forms.CharField(required=False, max_length=1024)
    cursor = forms.CharField(required=False, max_length=2048)
    cursors = forms.CharField(required=False, max_length=120_000)
    entry = forms.CharField(required=False, max_length=50_000)
    plugin_id = forms.CharField(required=False, max_length=300)
    remote_id = forms.CharField(required=False, max_length=300)
    plugin_access_token = forms.CharField(required=False, max_length=8192)
    plugin_secret_id = forms.CharField(required=False, max_length=128)
    known = forms.CharField(required=False, max_length=400_000)

    def clean_known(self) -> dict[str, str]:
        """Names of the entries seen on earlier pages (id -> name), for the Configured view."""
        try:
            value = json.loads(self.cleaned_data.get("known") or "{}")
        except ValueError:
            return {}
        if not isinstance(value, dict):
            return {}
        return {str(k)[:300]: v[:300] for k, v in list(value.items())[:KNOWN_MAX]
                if isinstance(v, str) and v}

    def clean_view(self) -> str:
        return "configured" if self.cleaned_data.get("view") == "configured" else "available"

    def clean_cursors(self) -> list[str]:
        try:
            value = json.loads(self.cleaned_data.get("cursors") or "[]")
        except ValueError:
            return []
        if not isinstance(value, list) or not all(isinstance(c, str) for c in value):
            return []
        return value[-CURSORS_MAX:]


def parse_selections(text: str) -> dict[str, Any] | None:
    """The selections map, or None when the JSON is not a map of objects (the picker then
    keeps the text and asks for it to be fixed)."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        return None
    return value


def dump_selections(selections: Mapping[str, Any]) -> str:
    return json.dumps(selections, indent=2, ensure_ascii=False, sort_keys=True) if selections else "{}"


def approvers_from_text(text: str) -> list[dict[str, str]]:
    """``U456, W456 team:T1:user:U2`` -> the wire list of Slack approvers (order kept, repeats
    dropped); the command checks each id."""
    ids = [part for part in text.replace(",", " ").split() if part]
    return [{"channel": "slack", "id": approver} for approver in dict.fromkeys(ids)]


def approvers_text(approvers: Any) -> str:
    if not isinstance(approvers, list):
        return ""
    return ", ".join(str(a.get("id")) for a in approvers if isinstance(a, dict) and a.get("channel") == "slack")


# --- entries --------------------------------------------------------------------------------------


def entry_document(entry: CatalogEntry) -> dict[str, Any]:
    """What a row carries to the detail pane (the entry without tools): rendered by us, posted
    back by the browser, read again by ``entry_from``."""
    return {"id": entry.id, "remoteId": entry.remote_id, "name": entry.name, "description": entry.description,
            "logoUrl": entry.logo_url, "websiteUrl": entry.website_url, "privacyPolicyUrl": entry.privacy_policy_url,
            "termsOfServiceUrl": entry.terms_of_service_url, "available": entry.available,
            "unavailableReason": entry.unavailable_reason, "selectableWithoutTools": entry.selectable_without_tools,
            "toolsKnown": entry.tools is not None}


def _https(value: Any) -> str | None:
    return value if isinstance(value, str) and value.startswith("https://") and len(value) < 2048 else None


def _short(value: Any, limit: int = 2000) -> str | None:
    return value[:limit] if isinstance(value, str) and value else None


def entry_from(text: str, plugin_id: str) -> CatalogEntry:
    """The entry a row posted, or a bare one for ``plugin_id`` (a configured plugin not on
    this page). Only the fields we render are kept, each checked again."""
    try:
        document = json.loads(text) if text else {}
    except ValueError:
        document = {}
    if not isinstance(document, dict) or not isinstance(document.get("id"), str):
        return CatalogEntry(id=plugin_id, remote_id="", name=plugin_id, tools=None)
    return CatalogEntry(
        id=document["id"][:300], remote_id=_short(document.get("remoteId"), 300) or "",
        name=_short(document.get("name"), 300) or document["id"][:300],
        description=_short(document.get("description")), logo_url=_https(document.get("logoUrl")),
        website_url=_https(document.get("websiteUrl")), privacy_policy_url=_https(document.get("privacyPolicyUrl")),
        terms_of_service_url=_https(document.get("termsOfServiceUrl")),
        available=document.get("available") is not False, unavailable_reason=_short(document.get("unavailableReason")),
        selectable_without_tools=document.get("selectableWithoutTools") is True,
        tools=None if not document.get("toolsKnown") else (),
    )
