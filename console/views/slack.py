"""The Slack setup modal of the Create Agent form (issue 5 item 6; reference §1.7).

The Channels card in ``#create-agent-form`` opens the modal (``slack-modal``). Inside it every
control talks to a small endpoint that answers one fragment: a token saved as a Namespace
Secret straight away (``slack-token``), directory search (``slack-search``), the chips of a
picker (``slack-pick``), the directory hint (``slack-status``). **Apply** (``slack-apply``)
checks the drawer rules and stages the result in the Create form: the card with hidden Secret
bindings and the Configuration JSON with the merged Slack settings, both swapped out of band,
and ``occ:close-modal``. Nothing but the token Secrets is written before the Agent exists.

Token values arrive in one POST each, go to ``secret_create`` and are never rendered back:
every fragment renders the password inputs empty. Directory errors are shown in our words by
their code, never Slack's text. Without ``HX-Request`` each URL renders the full Slack setup
page instead of the fragment.

One module of ~500 lines: the modal's endpoints are one dialog; they share the ``Modal``
view model posted back with every request, and each view is a few lines around it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.http import HttpResponse, QueryDict
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import path, reverse
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.http import reswap

from console.common import CLOSE_MODAL_EVENT, ConsoleRequest, console_view, current, trigger
from console.forms.agent_choices import configuration_edited, dump_configuration, parse_json_object
from console.forms.agent_create import AgentForm
from console.forms.slack import (
    BAD_CONFIGURATION,
    CHANNEL_ACCESS,
    DM_POLICIES,
    DM_POLICIES_WITH_PEOPLE,
    LIST_FIELDS,
    LIST_KEYS,
    ListKey,
    Pick,
    Role,
    SlackDraft,
    SlackInputError,
    add_picks,
    check_draft,
    check_token,
    free_secret_name,
    merge_slack_settings,
    parse_exact_ids,
    parse_id,
    pick_label,
    pick_ref,
    picks_json,
    read_modal,
    remove_pick,
    staged_draft,
    token_secret_names,
)
from console.pages.agent_create import configuration_field_context
from occ.commands.base import build
from occ.commands.channel_directory import DirectoryLookup
from occ.commands.secrets import SecretCreate
from occ.drivers.channels.base import DirectoryKind, DirectoryPage
from occ.errors import Conflict, Forbidden, InvalidRequest, NotFound, OccError
from occ.models import Secret
from occ.selectors.secrets import secret_list, user_secrets
from occ.services.channel_directory import channel_directory_lookup
from occ.services.secrets import secret_create

PAGE_TEMPLATE = "console/slack/page.html"
MODAL_TEMPLATE = "console/slack/modal.html"
BODY_TEMPLATE = f"{MODAL_TEMPLATE}#slack-modal-body"
TOKEN_TEMPLATE = f"{MODAL_TEMPLATE}#slack-token-field"
STATUS_TEMPLATE = f"{MODAL_TEMPLATE}#slack-directory-status"
RESULTS_TEMPLATE = f"{MODAL_TEMPLATE}#slack-results"
SELECTION_TEMPLATE = f"{MODAL_TEMPLATE}#slack-selection"
CARD_TEMPLATE = "console/components/slack_card.html"
# The Create Agent page's Configuration JSON field (owned by the Create page): context
# ``configuration_json`` (the text) and ``oob``.
CONFIGURATION_JSON_TEMPLATE = "console/agents/create/page.html#configuration-json-field"

QUERY_MAX_CHARS = 100
CURSOR_MAX_CHARS = 1000

NO_BOT_TOKEN = "Select or save a Slack bot token to search by name. You can still paste exact IDs."
CAN_SEARCH = "Search Slack by name, or paste exact IDs."
SECRET_UNAVAILABLE = "The selected Secret is not available. Choose another one."

# Directory errors by code (reference §1.7): what happened and what to do, in our words.
DIRECTORY_MESSAGES = {
    "CHANNEL_DIRECTORY_CREDENTIALS_REJECTED":
        "Slack did not accept the selected Secret as a bot token. Choose or save a valid bot token (xoxb-…), "
        "or paste exact IDs.",
    "CHANNEL_DIRECTORY_MISSING_SCOPE":
        "The Slack app lacks a permission the search needs (users:read for people; channels:read and "
        "groups:read for channels). Add the scope and reinstall the app, or paste exact IDs.",
    "CHANNEL_DIRECTORY_RATE_LIMITED": "Slack is limiting requests right now. Wait a minute, then search again.",
    "CHANNEL_DIRECTORY_UNAVAILABLE": "OCC could not reach Slack. Try again shortly, or paste exact IDs.",
    "CHANNEL_DIRECTORY_INVALID_RESPONSE":
        "Slack answered in a way OCC does not understand. Paste exact IDs instead.",
}
DIRECTORY_BY_STATUS = {
    403: "Searching Slack needs permission to create Agents here and to use the selected Secret. "
         "Paste exact IDs instead.",
    404: "The selected bot token Secret is not available any more. Choose another one, or paste exact IDs.",
    501: "Slack search is not available on this installation. Paste exact IDs instead.",
}
DIRECTORY_FAILED = "The Slack search did not work. Try again, or paste exact IDs."


@dataclass(frozen=True)
class PickerSpec:
    """One directory picker of the modal: its list, its controls' ids and labels."""

    key: ListKey
    kind: DirectoryKind
    slug: str             # DOM ids: slack-<slug>-picker / -results / -selection
    search_id: str
    search_label: str
    exact_id: str
    exact_label: str
    exact_button: str
    placeholder: str
    chips_label: str
    empty: str
    no_match: str


PICKERS: dict[ListKey, PickerSpec] = {
    "channels": PickerSpec("channels", "channels", "channels", "slack-channel-search", "Search channels",
                           "slack-channel-id", "Channel ID", "Add channel ID", "C0123ABCD",
                           "Selected channels", "No channels selected yet.", "No matching channels."),
    "users": PickerSpec("users", "users", "users", "slack-user-search", "Search people",
                        "slack-user-id", "Member ID", "Add member ID", "U0123ABCD",
                        "Allowed people in these channels", "No people selected yet.", "No matching people."),
    "dm_users": PickerSpec("dm_users", "users", "dm-users", "slack-dm-user-search",
                           "Find people for direct messages", "slack-dm-user-id", "DM sender ID",
                           "Add DM sender ID", "U0123ABCD", "Allowed people in direct messages",
                           "No people selected yet.", "No matching people."),
}


def _urls(namespace_id: str) -> dict[str, str]:
    return {name: reverse(f"console:slack-{name}", args=[namespace_id])
            for name in ("modal", "token", "search", "pick", "status", "apply")}


def _vals(**values: str) -> str:
    """An ``hx-vals`` JSON object (the template escapes it into the attribute)."""
    return json.dumps(values, ensure_ascii=False)


def _list_key(value: object) -> ListKey:
    for key in LIST_KEYS:
        if value == key:
            return key
    raise InvalidRequest("Choose which Slack list to change.")


def _role(value: object) -> Role:
    if value == "bot":
        return "bot"
    if value == "app":
        return "app"
    raise InvalidRequest("Choose which Slack token to save.")


# --- the modal's view model ---------------------------------------------------------------


class Modal:
    """Everything the modal's templates show for one draft: Secrets, pickers, options, errors."""

    def __init__(self, request: ConsoleRequest, draft: SlackDraft, *, agent_name: str = "") -> None:
        self.console = current(request)
        self.draft = draft
        self.agent_name = agent_name.strip()
        self.errors: dict[str, list[str]] = {}  # Apply's problems by field
        self.urls = _urls(self.console.namespace_id)
        self._secrets: list[Secret] | None = None
        # What the last action left on a token field or a picker (shown in its fragment, or
        # on the full page without HTMX).
        self.token_notes: dict[Role, dict[str, Any]] = {}
        self.picker_notes: dict[ListKey, dict[str, Any]] = {}

    @property
    def secrets(self) -> list[Secret]:
        if self._secrets is None:
            self._secrets = secret_list(actor=self.console.actor, namespace_id=self.console.namespace_id)
        return self._secrets

    def forget_secrets(self) -> None:
        self._secrets = None

    def token(self, role: Role) -> dict[str, Any]:
        notes = self.token_notes.get(role, {})
        selected = self.draft.bot_secret_id if role == "bot" else self.draft.app_secret_id
        options = [{"id": s.id, "label": f"{s.name} · {s.id}", "selected": s.id == selected} for s in self.secrets]
        if selected and not any(option["selected"] for option in options):
            options.insert(0, {"id": selected, "label": f"Unavailable Secret · {selected}", "selected": True})
        field_name = f"{role}_secret_id"
        return {
            "role": role, "word": "Bot" if role == "bot" else "App", "label": f"Slack {role} token",
            "field": f"slack-{role}-token-field", "input_id": f"slack-{role}-token", "input_name": f"{role}_token",
            "select_id": f"slack-{role}-secret", "select_name": field_name, "options": options,
            "status": notes.get("status", ""), "errors": [*notes.get("errors", []), *self.errors.get(field_name, [])],
            "vals": _vals(role=role),
        }

    @property
    def directory_status(self) -> str:
        return CAN_SEARCH if self.draft.bot_secret_id else NO_BOT_TOKEN

    def picker(self, key: ListKey) -> dict[str, Any]:
        notes = self.picker_notes.get(key, {})
        spec = PICKERS[key]
        picks = self.draft.picks(key)
        return {
            "spec": spec, "key": key, "field": LIST_FIELDS[key], "json": picks_json(picks),
            "picker_id": f"slack-{spec.slug}-picker", "results_id": f"slack-{spec.slug}-results",
            "selection_id": f"slack-{spec.slug}-selection", "errors_id": f"slack-{spec.slug}-errors",
            "chips": [{"id": p.id, "label": pick_label(key, p), "ref": pick_ref(key, p),
                       "vals": _vals(list=key, op="remove", id=p.id)} for p in picks],
            "errors": [*notes.get("errors", []), *self.errors.get(key, [])],
            "exact_value": notes.get("exact_value", ""), "results": notes.get("results"),
            "exact_vals": _vals(list=key, op="add_exact"), "search_vals": _vals(list=key),
        }

    def context(self) -> dict[str, Any]:
        draft = self.draft
        return {
            "console": self.console, "namespace": self.console.namespace, "urls": self.urls,
            "agent_name": self.agent_name, "tokens": [self.token("bot"), self.token("app")],
            "directory_status": self.directory_status,
            "pickers": {key: self.picker(key) for key in LIST_KEYS},
            "channel_access": draft.channel_access, "access_options": CHANNEL_ACCESS.items(),
            "require_mention": draft.require_mention,
            "dm_policy": draft.dm_policy if draft.dm_policy in DM_POLICIES else "",
            "dm_options": DM_POLICIES.items(), "dm_policy_errors": self.errors.get("dm_policy", []),
            "form_errors": self.errors.get("__all__", []),
        }


def _page(request: ConsoleRequest, modal: Modal, **extra: Any) -> HttpResponse:
    """The full Slack setup page (requests without ``HX-Request``)."""
    return render(request, PAGE_TEMPLATE, {**modal.context(), "nav": "agents", **extra})


def _fragment(request: ConsoleRequest, modal: Modal, template: str, context: Mapping[str, Any]) -> HttpResponse:
    if not request.htmx:
        return _page(request, modal)
    return render(request, template, {"urls": modal.urls, "namespace": modal.console.namespace, **context})


def _posted_modal(request: ConsoleRequest) -> tuple[Modal, dict[str, list[str]]]:
    read = read_modal(request.POST)
    return Modal(request, read.draft, agent_name=request.POST.get("agent_name", "")), read.errors


# --- opening the modal ----------------------------------------------------------------------


@console_view
@require_http_methods(["GET", "POST"])
def slack_modal(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    """The modal, filled from the Create form's staged settings (``slack_state`` + bindings)."""
    data: QueryDict = request.POST if request.method == "POST" else request.GET
    modal = Modal(request, staged_draft(data) or SlackDraft(), agent_name=data.get("name", ""))
    if not request.htmx:
        return _page(request, modal)
    return render(request, MODAL_TEMPLATE, modal.context())


# --- tokens ---------------------------------------------------------------------------------


def _token_error(exc: OccError) -> str:
    if isinstance(exc, Forbidden):
        return "You may not create Secrets in this Namespace. Choose an existing Secret, or ask an administrator."
    if isinstance(exc, (InvalidRequest, Conflict, NotFound)):
        return f"The token was not saved. {exc.message}"
    return ("OCC could not confirm whether the token was saved. Check the Secrets list before saving it again, "
            "or choose the Secret there.")


def _save_token(request: ConsoleRequest, role: Role, agent_name: str, token: str) -> Secret:
    """Store ``token`` as a new Namespace Secret named after the Agent; a taken name gets a
    number (a name taken between the check and the write is retried with the next one)."""
    console = current(request)
    base = next(iter(token_secret_names(role, agent_name)))
    taken = set(user_secrets().filter(namespace_id=console.namespace_id, name__startswith=base)
                .values_list("name", flat=True))
    for _attempt in range(3):
        name = free_secret_name(role, agent_name, taken)
        try:
            return secret_create(actor=console.actor, namespace_id=console.namespace_id,
                                 command=build(SecretCreate, name=name, value=token))
        except Conflict as exc:
            if exc.code != Conflict.code:  # not a taken name (e.g. the Namespace is not ready)
                raise
            taken.add(name)
    raise Conflict("Another Secret took the name at the same moment. Save the token again.")


@console_view
@require_POST
def slack_token(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    """Save one token as a Secret now, and answer its field: input empty, Secret selected."""
    role = _role(request.POST.get("role"))
    modal, _ = _posted_modal(request)
    status, errors = "", []
    try:
        secret = _save_token(request, role, modal.agent_name, check_token(role, request.POST.get(f"{role}_token", "")))
    except SlackInputError as exc:
        errors.append(exc.message)
    except OccError as exc:
        errors.append(_token_error(exc))
    else:
        modal.draft = modal.draft.with_secret(role, secret.id)
        modal.forget_secrets()  # the list now holds the new Secret
        # Announced by the field's own role=status line; a toast would repeat the same words.
        status = f"{'Bot' if role == 'bot' else 'App'} token saved as Secret {secret.name}"
    modal.token_notes[role] = {"status": status, "errors": errors}
    return _fragment(request, modal, TOKEN_TEMPLATE, {
        "token": modal.token(role),
        "directory_status": modal.directory_status, "status_oob": role == "bot"})


@console_view
@require_POST
def slack_status(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    """The directory hint, after the bot token Secret select changed."""
    modal, _ = _posted_modal(request)
    return _fragment(request, modal, STATUS_TEMPLATE, {"directory_status": modal.directory_status})


# --- the directory --------------------------------------------------------------------------


def _lookup(request: ConsoleRequest, secret_id: str, kind: DirectoryKind, *, query: str | None = None,
            cursor: str | None = None, ids: list[str] | None = None) -> DirectoryPage:
    console = current(request)
    command = build(DirectoryLookup, secret_id=secret_id, kind=kind, query=query, cursor=cursor, ids=ids)
    return channel_directory_lookup(actor=console.actor, namespace_id=console.namespace_id, command=command)


def directory_message(exc: OccError) -> str:
    """Our words for a failed lookup, by code then status; never the exception's own text."""
    return DIRECTORY_MESSAGES.get(exc.code) or DIRECTORY_BY_STATUS.get(exc.status) or DIRECTORY_FAILED


def _search_results(request: ConsoleRequest, modal: Modal, key: ListKey, query: str,
                    cursor: str | None) -> dict[str, Any]:
    spec = PICKERS[key]
    if not modal.draft.bot_secret_id:
        return {"hint": NO_BOT_TOKEN, "candidates": []}
    try:
        page = _lookup(request, modal.draft.bot_secret_id, spec.kind, query=query or None, cursor=cursor)
    except OccError as exc:
        return {"error": directory_message(exc), "candidates": []}
    candidates = []
    for candidate in page.candidates:
        pick = Pick(candidate.id, candidate.name, candidate.display_name or "")
        candidates.append({
            "id": pick.id, "ref": pick_ref(key, pick),
            "detail": pick.display if pick.display and pick.display != pick.name else "",
            "vals": _vals(list=key, op="add", **pick.as_json()),
        })
    return {
        "candidates": candidates, "searched": True, "no_match": spec.no_match, "paged": bool(cursor),
        "workspace": page.workspace_name or page.workspace_id,
        "more_vals": _vals(list=key, query=query, cursor=page.next_cursor) if page.next_cursor else "",
    }


@console_view
@require_POST
def slack_search(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    """One page of channels or people from Slack (``cursor``: the next page, "More results")."""
    key = _list_key(request.POST.get("list"))
    modal, _ = _posted_modal(request)
    query = request.POST.get("query", "").strip()[:QUERY_MAX_CHARS]
    cursor = request.POST.get("cursor", "").strip()[:CURSOR_MAX_CHARS] or None
    modal.picker_notes[key] = {"results": _search_results(request, modal, key, query, cursor)}
    return _fragment(request, modal, RESULTS_TEMPLATE, {"picker": modal.picker(key)})


def _resolve(request: ConsoleRequest, secret_id: str, key: ListKey, ids: list[str]) -> dict[str, Pick]:
    """Names for exact ids when a bot token is selected; without one, or on any directory
    error, the ids stay unnamed (an exact id is valid on its own)."""
    if not secret_id:
        return {}
    try:
        page = _lookup(request, secret_id, PICKERS[key].kind, ids=ids[:20])
    except OccError:
        return {}
    return {c.id: Pick(c.id, c.name, c.display_name or "") for c in page.candidates}


@console_view
@require_POST
def slack_pick(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    """Add a search result, remove a chip, or add exact ids; answers the picker's selection."""
    key = _list_key(request.POST.get("list"))
    op = request.POST.get("op")
    modal, read_errors = _posted_modal(request)
    errors = list(read_errors.get(key, []))
    picks = modal.draft.picks(key)
    exact_value = ""
    try:
        if op == "add":
            pick_id = parse_id(key, request.POST.get("id", ""))
            picks = add_picks(picks, [Pick(pick_id, request.POST.get("name", "")[:200],
                                           request.POST.get("display", "")[:200])])
        elif op == "remove":
            picks = tuple(remove_pick(picks, request.POST.get("id", "")))
        elif op == "add_exact":
            exact_value = request.POST.get("exact_id", "")[:2000]
            ids = parse_exact_ids(key, exact_value)
            named = _resolve(request, modal.draft.bot_secret_id, key, ids)
            picks = add_picks(picks, [named.get(pick_id, Pick(pick_id)) for pick_id in ids])
            exact_value = ""
        else:
            raise InvalidRequest("Choose whether to add or remove.")
    except SlackInputError as exc:
        errors.append(exc.message)
    modal.draft = modal.draft.with_picks(key, picks)
    modal.picker_notes[key] = {"errors": errors, "exact_value": exact_value}
    return _fragment(request, modal, SELECTION_TEMPLATE, {"picker": modal.picker(key)})


# --- apply ----------------------------------------------------------------------------------


def _apply_errors(modal: Modal, read_errors: Mapping[str, list[str]]) -> dict[str, list[str]]:
    draft = modal.draft
    errors = {key: list(messages_) for key, messages_ in read_errors.items()
              if not (key == "users" and draft.everyone)
              and not (key == "dm_users" and draft.dm_policy not in DM_POLICIES_WITH_PEOPLE)}
    for key, found in check_draft(draft).items():
        errors.setdefault(key, []).extend(m for m in found if m not in errors[key])
    readable = {secret.id for secret in modal.secrets}
    for field_name, secret_id in (("bot_secret_id", draft.bot_secret_id), ("app_secret_id", draft.app_secret_id)):
        if secret_id and secret_id not in readable:
            errors.setdefault(field_name, []).append(SECRET_UNAVAILABLE)
    return errors


def _configuration_field(request: ConsoleRequest, configuration_json: str) -> dict[str, Any]:
    """The Create page's Configuration JSON field context for the new text, out of band
    (whether the person edited the JSON is the Create form's own rule: channel keys do not count)."""
    form = AgentForm.choices_of(request.POST)
    form.configuration_json = configuration_json
    return {**configuration_field_context(configuration_json, edited=configuration_edited(form), oob=True),
            "namespace": current(request).namespace}


@console_view
@require_POST
def slack_apply(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    """Check the modal and stage it in the Create form (card + Configuration JSON, out of band)."""
    modal, read_errors = _posted_modal(request)
    errors = _apply_errors(modal, read_errors)
    values = parse_json_object(request.POST.get("configuration_json"))
    if values is None:
        errors.setdefault("__all__", []).append(BAD_CONFIGURATION)
    if errors or values is None:
        modal.errors = errors
        if not request.htmx:
            return _page(request, modal)
        return render(request, BODY_TEMPLATE, modal.context())
    configuration_json = dump_configuration(merge_slack_settings(values, modal.draft))
    messages.success(request, "Slack settings staged in the form. They are saved when you create the Agent.")
    staged = {"slack": modal.draft, "namespace": modal.console.namespace, "configuration_json": configuration_json}
    if not request.htmx:
        return _page(request, modal, staged=staged)
    html = (render_to_string(CARD_TEMPLATE, {**staged, "oob": True}, request=request)
            + render_to_string(CONFIGURATION_JSON_TEMPLATE, _configuration_field(request, configuration_json),
                               request=request))
    response = HttpResponse(html)
    reswap(response, "none")  # only the out-of-band parts swap; the modal closes
    return trigger(response, CLOSE_MODAL_EVENT)


_BASE = "namespaces/<str:namespace_id>/agents/new/slack"

urlpatterns = [
    path(_BASE, slack_modal, name="slack-modal"),
    path(f"{_BASE}/token", slack_token, name="slack-token"),
    path(f"{_BASE}/status", slack_status, name="slack-status"),
    path(f"{_BASE}/search", slack_search, name="slack-search"),
    path(f"{_BASE}/pick", slack_pick, name="slack-pick"),
    path(f"{_BASE}/apply", slack_apply, name="slack-apply"),
]
