"""The plugin picker, in Create Agent and on an Agent's Plugins tab.

Every fragment is a partial of ``console/plugins/picker.html`` named by its root id:

- ``plugin-results``: the Available page (search ``q``, Previous / Next by a cursor stack the
  page posts back) or the Configured list (read from the selections JSON), with the tab bar
  out of band;
- ``plugin-detail``: one plugin: identity, links, Add / Remove, and the policy controls
  generated from the driver's capabilities;
- ``plugin-tools``: its tools, loaded on demand (a details call), with per-tool controls;
- ``plugin-save``: the Plugins tab's save result.

The selections JSON (``plugins``, a field of the page's form) is the single source of truth:
every request posts it, the controls' edits are written into it by ``plugins.js``, and
nothing here stores it except Save. Discovery failures become our fixed messages in the
results, never an error page: the selections stay editable.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from django.db import DatabaseError
from django.http import HttpResponse
from django.urls import path
from django.views.decorators.http import require_POST

from console.common import ConsoleRequest, console_view, current, known_failure_message, render_page
from console.forms.plugin_picker import (
    APPROVERS_TEXT_MAX,
    PickerForm,
    approvers_from_text,
    approvers_text,
    dump_selections,
    entry_document,
    entry_from,
    parse_selections,
)
from console.pages.plugin_picker import CODE_MESSAGES, badge, detail_of, picker_urls, tool_rows
from occ.commands.agents import AgentUpdate
from occ.commands.base import build
from occ.commands.common import SecretRef
from occ.commands.plugin_discovery import (
    AgentPluginDetailsDiscovery,
    AgentPluginDiscovery,
    PluginDetailsDiscovery,
    PluginDiscovery,
)
from occ.drivers.plugins.base import CatalogEntry, CatalogPage, PolicyCapabilities
from occ.errors import OccError
from occ.selectors.agents import agent_get
from occ.services.agents import agent_update
from occ.services.plugin_discovery import (
    agent_plugin_capabilities,
    agent_plugin_details_discover,
    agent_plugins_discover,
    installation_known_plugins,
    installation_plugin_capabilities,
    plugin_details_discover,
    plugins_discover,
)

logger = logging.getLogger(__name__)

PAGE = "console/plugins/picker.html"


class Scope:
    """Where the picker is: Create Agent (``agent_id`` empty, the credential posted) or an
    existing Agent (its bound credential, server-side)."""

    def __init__(self, request: ConsoleRequest, namespace_id: str, agent_id: str = "") -> None:
        self.request = request
        self.namespace_id = namespace_id
        self.agent_id = agent_id
        self.form = PickerForm(request.POST or None)
        self.form.is_valid()
        self.data: dict[str, Any] = self.form.cleaned_data if hasattr(self.form, "cleaned_data") else {}

    def value(self, name: str, default: Any = "") -> Any:
        value = self.data.get(name)
        return default if value in (None, "") else value

    @property
    def actor(self) -> Any:
        return current(self.request).actor

    def capabilities(self) -> PolicyCapabilities | None:
        try:
            if self.agent_id:
                return agent_plugin_capabilities(actor=self.actor, namespace_id=self.namespace_id,
                                                 agent_id=self.agent_id)
            return installation_plugin_capabilities()
        except OccError:
            return None

    @property
    def _token(self) -> str:
        return str(self.value("plugin_access_token")).strip()

    @property
    def _secret_id(self) -> str:
        return str(self.value("plugin_secret_id"))

    def _credential(self) -> dict[str, Any]:
        """The typed token, or the chosen Secret (``InvalidRequest`` when that is not a Secret id)."""
        if self._token:
            return {"access_token": self._token}
        if self._secret_id:
            return {"secret_ref": SecretRef.to(self.namespace_id, self._secret_id)}
        return {}

    def discover(self, q: str, cursor: str | None) -> CatalogPage:
        cursor = cursor or None
        if self.agent_id:
            return agent_plugins_discover(actor=self.actor, namespace_id=self.namespace_id, agent_id=self.agent_id,
                                          command=build(AgentPluginDiscovery, q=q, cursor=cursor))
        return plugins_discover(actor=self.actor, namespace_id=self.namespace_id,
                                command=build(PluginDiscovery, q=q, cursor=cursor, **self._credential()))

    def details(self, remote_id: str) -> CatalogEntry:
        if self.agent_id:
            return agent_plugin_details_discover(actor=self.actor, namespace_id=self.namespace_id,
                                                 agent_id=self.agent_id,
                                                 command=build(AgentPluginDetailsDiscovery, plugin_id=remote_id))
        return plugin_details_discover(actor=self.actor, namespace_id=self.namespace_id,
                                       command=build(PluginDetailsDiscovery, plugin_id=remote_id, **self._credential()))

    def urls(self) -> dict[str, str]:
        return picker_urls(self.namespace_id, self.agent_id)

    @property
    def needs_credential(self) -> bool:
        return not self.agent_id and not (self._token or self._secret_id)


def _failure_message(exc: OccError) -> str:
    return CODE_MESSAGES.get(exc.code) or known_failure_message(exc)


def _render(scope: Scope, partial: str, context: dict[str, Any], status: int = 200) -> HttpResponse:
    context.setdefault("picker_urls", scope.urls())
    context.setdefault("agent_id", scope.agent_id)
    return render_page(scope.request, PAGE, context, partial=partial, status=status)


# --- the results pane -------------------------------------------------------------------------------


def _browse(scope: Scope) -> HttpResponse:
    selections = parse_selections(str(scope.value("plugins"))) or {}
    view = scope.value("view", "available")
    q = str(scope.value("q")).strip()
    cursor = str(scope.value("cursor")) or None
    stack: list[str] = scope.value("cursors", [])
    context: dict[str, Any] = {"view": view, "q": q, "cursor": cursor or "", "page_number": len(stack) + 1,
                               "prev_cursor": stack[-1] if stack else None,
                               "prev_stack_json": json.dumps(stack[:-1]),
                               "next_stack_json": json.dumps([*stack, cursor or ""]),
                               "rows": [], "status": "", "error": "",
                               "next_cursor": None, "setup": None}
    if view == "configured":
        # Names: what the driver tells without a credential (a curated catalog), else what the
        # picker saw on earlier pages; an entry known by neither shows its id.
        known_names: dict[str, str] = scope.value("known", {})
        configured = {key: CatalogEntry(id=key, remote_id="", name=known_names.get(key) or key, tools=None)
                      for key in selections}
        configured.update(installation_known_plugins(sorted(selections)))
        needle = q.lower()
        by_name = [(key, configured[key]) for key in sorted(selections, key=lambda k: (configured[k].name.lower(), k))]
        context["rows"] = [
            {"entry": entry, "json": json.dumps(entry_document(entry)) if entry.remote_id else "",
             "badge": badge(selections, key), "show_id": entry.name != key}
            for key, entry in by_name if needle in key.lower() or needle in entry.name.lower()]
        context["status"] = f"{len(context['rows'])} configured plugin(s)"
        return _render(scope, "plugin-results", context)
    capabilities = scope.capabilities()
    if scope.needs_credential and capabilities is not None and capabilities.discovery_credential == "required":
        context["status"] = ("Enter a service account token or choose its Secret to load the plugins it can use. "
                             "Saved selections can still be edited.")
        return _render(scope, "plugin-results", context)
    try:
        page = scope.discover(q, cursor)
    except OccError as exc:
        context["error"] = _failure_message(exc)
        return _render(scope, "plugin-results", context)
    except DatabaseError:
        logger.exception("plugin discovery failed in the database")
        context["error"] = "Plugins could not be loaded. Try again."
        return _render(scope, "plugin-results", context)
    entries = sorted(page.plugins, key=lambda e: (not e.available, e.name.lower()))
    context.update(
        rows=[{"entry": e, "json": json.dumps(entry_document(e)), "badge": badge(selections, e.id, e.available)}
              for e in entries],
        next_cursor=page.next_cursor, setup=page.setup,
        status=f"Page {len(stack) + 1} · {len(entries)} plugins" if entries else "No plugins match.",
    )
    return _render(scope, "plugin-results", context)


# --- the detail pane and its tools -------------------------------------------------------------------


def _detail(scope: Scope) -> HttpResponse:
    selections = parse_selections(str(scope.value("plugins"))) or {}
    entry = entry_from(str(scope.value("entry")), str(scope.value("plugin_id")))
    detail = detail_of(entry, selections, scope.capabilities())
    # The tools (and their controls) load with every render of the pane: a re-render after Add
    # or an enablement change would otherwise drop them.
    return _render(scope, "plugin-detail", {"detail": detail, "auto_tools": bool(entry.remote_id)})


def _tools(scope: Scope) -> HttpResponse:
    selections = parse_selections(str(scope.value("plugins"))) or {}
    capabilities = scope.capabilities()
    entry = entry_from(str(scope.value("entry")), str(scope.value("plugin_id")))
    context: dict[str, Any] = {"entry": entry, "rows": [], "error": "", "loaded": False}
    remote_id = str(scope.value("remote_id")) or entry.remote_id
    if not remote_id:
        context["error"] = "Tool list unavailable: find this plugin under Available to load its tools."
        return _render(scope, "plugin-tools", context)
    try:
        loaded = scope.details(remote_id)
    except OccError as exc:
        context["error"] = ("Tool list unavailable. Existing tool overrides are preserved; this does not mean "
                            "the plugin has no tools. " + _failure_message(exc))
        return _render(scope, "plugin-tools", context)
    detail = detail_of(loaded, selections, capabilities)
    context.update(entry=loaded, loaded=True, rows=tool_rows(loaded, selections.get(loaded.id), capabilities),
                   detail=detail)
    return _render(scope, "plugin-tools", context)


# --- saving (the Plugins tab) ---------------------------------------------------------------------


def _save(scope: Scope) -> HttpResponse:
    text = str(scope.value("plugins"))
    selections = parse_selections(text)
    context: dict[str, Any] = {"saved": False, "errors": []}
    if selections is None:
        context["errors"] = ["Fix Plugin selections JSON: it must be an object of plugin ids to selections."]
        return _render(scope, "plugin-save", context, status=400)
    approvers_posted = scope.request.POST.get("plugin_approvers")
    changes: dict[str, Any] = {"plugins": selections}
    if approvers_posted is not None:  # the field is there only when the driver takes default approvers
        changes["plugin_approvers"] = approvers_from_text(approvers_posted[:APPROVERS_TEXT_MAX])
    try:
        agent = agent_get(actor=scope.actor, namespace_id=scope.namespace_id, agent_id=scope.agent_id)
        agent_update(actor=scope.actor, namespace_id=scope.namespace_id, agent_id=scope.agent_id,
                     command=build(AgentUpdate, configuration_id=agent.configuration_id, **changes))
    except OccError as exc:
        context["errors"] = [known_failure_message(exc)]
        return _render(scope, "plugin-save", context, status=exc.status)
    except DatabaseError:
        logger.exception("saving plugin selections failed in the database")
        context["errors"] = ["Outcome unknown: the selections may or may not have been saved. Reload the tab."]
        return _render(scope, "plugin-save", context, status=503)
    context.update(saved=True, selections_json=dump_selections(selections),
                   plugin_approvers=approvers_text(changes.get("plugin_approvers")))
    return _render(scope, "plugin-save", context)


# --- views ------------------------------------------------------------------------------------------


@require_POST
@console_view
def new_browse(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    return _browse(Scope(request, namespace_id))


@require_POST
@console_view
def new_detail(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    return _detail(Scope(request, namespace_id))


@require_POST
@console_view
def new_tools(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    return _tools(Scope(request, namespace_id))


@require_POST
@console_view
def agent_browse(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    return _browse(Scope(request, namespace_id, agent_id))


@require_POST
@console_view
def agent_detail(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    return _detail(Scope(request, namespace_id, agent_id))


@require_POST
@console_view
def agent_tools(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    return _tools(Scope(request, namespace_id, agent_id))


@require_POST
@console_view
def agent_save(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    return _save(Scope(request, namespace_id, agent_id))


AGENT = "namespaces/<str:namespace_id>/agents/<str:agent_id>/plugins"
NEW = "namespaces/<str:namespace_id>/agents/new/plugins"
urlpatterns = [
    path(f"{NEW}/browse", new_browse, name="agent-new-plugins-browse"),
    path(f"{NEW}/detail", new_detail, name="agent-new-plugins-detail"),
    path(f"{NEW}/tools", new_tools, name="agent-new-plugins-tools"),
    path(f"{AGENT}/browse", agent_browse, name="agent-plugins-browse"),
    path(f"{AGENT}/detail", agent_detail, name="agent-plugins-detail"),
    path(f"{AGENT}/tools", agent_tools, name="agent-plugins-tools"),
    path(f"{AGENT}/save", agent_save, name="agent-plugins-save"),
]
