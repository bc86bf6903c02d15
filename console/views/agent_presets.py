"""Presets in the console: the chooser Create Agent starts from, a Preset's variables, and
"Save as preset" for an Agent.

URLs:

- ``console:agent-choose``       GET   the chooser: the default Preset, start without one, the
                                       Namespace's saved Presets (those the person may read), by name
- ``console:agent-choose-preset`` GET   a Preset's variables (none: applied at once);
                                 POST  "Use preset": the shared renderer (``preset_render``), then
                                       the ordinary Create Agent form filled with the result
- ``console:agent-save-preset``  GET   the name of a Preset made from the Agent;
                                 POST  ``preset_create_from_agent`` (the API's and the CLI's too)
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import path, reverse
from django.views.decorators.http import require_GET, require_http_methods

from console.common import ConsoleRequest, console_view, current, is_known_failure, redirect_or_hx
from console.forms.presets import PresetVariablesForm, SavePresetForm, choices_from_launch
from console.pages.agent_create import PAGE, form_context
from console.pages.refusals import CREATE_AGENT_REFUSED
from occ.commands.base import build
from occ.commands.common import SecretRef
from occ.commands.presets import PresetFromAgent, PresetRender
from occ.errors import OccError
from occ.models import Preset
from occ.openclaw.presets import STANDARD_OPENCLAW
from occ.selectors.agents import agent_get
from occ.selectors.permissions import may_provision
from occ.selectors.presets import preset_get, preset_list, preset_render
from occ.selectors.secrets import secret_list
from occ.services.presets import preset_create_from_agent

T = "console/agents/create/"


@require_GET
@console_view
def agent_start(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    console = current(request)
    if not may_provision(console.actor, console.namespace_id):
        return _refused(request)
    presets = preset_list(actor=console.actor, namespace_id=console.namespace_id)
    default = next((preset for preset in presets if preset.name == STANDARD_OPENCLAW), None)
    return render(request, T + "chooser.html", {"nav": "agents", "namespace": console.namespace,
                                                "presets": presets, "default_preset": default})


def _refused(request: ConsoleRequest) -> HttpResponse:
    """Why, instead of a chooser whose every way ends in a refusal (Create Agent's own words)."""
    return render(request, PAGE, {"nav": "agents", "namespace": current(request).namespace,
                                  "create_refused": CREATE_AGENT_REFUSED})


def _variables_page(request: ConsoleRequest, preset: Preset, form: PresetVariablesForm,
                    error: str = "") -> HttpResponse:
    return render(request, T + "preset_start.html", {"nav": "agents", "namespace": current(request).namespace,
                                                     "preset": preset, "form": form, "render_error": error})


def _secret_choices(request: ConsoleRequest) -> list[tuple[str, str]]:
    console = current(request)
    return [(secret.id, secret.name) for secret in secret_list(actor=console.actor, namespace_id=console.namespace_id)]


@require_http_methods(["GET", "POST"])
@console_view
def agent_start_preset(request: ConsoleRequest, namespace_id: str, preset_id: str) -> HttpResponse:
    console = current(request)
    if not may_provision(console.actor, console.namespace_id):
        return _refused(request)
    preset = preset_get(actor=console.actor, namespace_id=console.namespace_id, preset_id=preset_id)
    template = preset.spec
    secrets = _secret_choices(request) if template.password_variables() else []
    if request.method == "GET" and template.variables:
        return _variables_page(request, preset, PresetVariablesForm(template, secrets))
    form = PresetVariablesForm(template, secrets, request.POST if request.method == "POST" else {})
    if not form.is_valid():
        return _variables_page(request, preset, form)
    credentials = {name: SecretRef.to(console.namespace_id, secret_id)
                   for name, secret_id in form.credentials().items()}
    try:
        launch = preset_render(actor=console.actor, namespace_id=console.namespace_id, preset_id=preset.id,
                               command=build(PresetRender, variables=form.inputs(), credentials=credentials))
    except OccError as exc:
        if not is_known_failure(exc):
            raise
        return _variables_page(request, preset, form, error=exc.message)
    choices = choices_from_launch(launch, preset_name=preset.name,
                                  bound_by_preset=template.bound_credential() is not None)
    context: dict[str, Any] = form_context(request, choices, started_from=preset.name)
    return render(request, PAGE, context)


@require_http_methods(["GET", "POST"])
@console_view
def agent_save_preset(request: ConsoleRequest, namespace_id: str, agent_id: str) -> HttpResponse:
    console = current(request)
    agent = agent_get(actor=console.actor, namespace_id=console.namespace_id, agent_id=agent_id)
    form = SavePresetForm(request.POST if request.method == "POST" else None,
                          initial={"name": f"{agent.name} preset"})
    if request.method == "POST" and form.is_valid():
        try:
            preset = preset_create_from_agent(actor=console.actor, namespace_id=console.namespace_id,
                                              agent_id=agent.id, command=form.command())
        except OccError as exc:
            if not is_known_failure(exc):
                raise
            if exc.status == 409:
                form.add_error("name", exc.message)
            else:
                form.refuse(exc, PresetFromAgent)
        else:
            messages.success(request, f"Preset “{preset.name}” saved. Create Agent offers it.")
            return redirect_or_hx(request, reverse("console:agent", args=[console.namespace_id, agent.id]))
    return render(request, "console/agent/save_preset.html", {"nav": "agents", "namespace": console.namespace,
                                                               "agent": agent, "form": form})


urlpatterns = [
    path("namespaces/<str:namespace_id>/agents/start", agent_start, name="agent-choose"),
    path("namespaces/<str:namespace_id>/agents/start/<str:preset_id>", agent_start_preset,
         name="agent-choose-preset"),
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/save-preset", agent_save_preset,
         name="agent-save-preset"),
]
