"""Plugin selections against the installation's PluginDriver: the checks Agent create, PATCH,
provisioning admission and deploy share, and the deploy snapshot's plugin part.

Static only (the driver's ``validate_policies``): non-empty selections without a driver are
the documented 501; a refused policy is 400 ``INVALID_REQUEST`` with a pointer per problem.
Catalog membership at startup, installs and authentication are the worker's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import TypeAdapter, ValidationError

from occ.commands.base import WIRE, invalid_request, pointer
from occ.commands.plugins import PluginApprover as ApproverCommand
from occ.commands.plugins import PluginSelectionCommand, PluginSelections, approvers_value
from occ.documents import (
    PluginApprover,
    PluginSnapshot,
    Selections,
)
from occ.drivers.plugins.base import (
    PluginDriver,
    PolicyCapabilities,
    PolicyProblem,
)
from occ.drivers.plugins.registry import plugin_driver, require_plugin_driver
from occ.errors import Detail, InvalidRequest, fit_message

_STORED = TypeAdapter(PluginSelections)
MAX_DETAILS = 32


def plugin_capabilities() -> PolicyCapabilities | None:
    """The selected driver's capabilities (``GET /installation``), or ``None`` without one."""
    driver = plugin_driver()
    return None if driver is None else driver.capabilities()


def _refusal(problems: Sequence[PolicyProblem], prefix: tuple[str | int, ...]) -> InvalidRequest:
    message = problems[0].message
    if len(problems) > 1:
        message = f"The request has {len(problems)} problems; see details. First: {message}"
    return InvalidRequest(fit_message(message), details=[Detail(p.code, pointer((*prefix, *p.path)))
                                                         for p in problems[:MAX_DETAILS]])


def check_selections(selections: Selections, approvers: Sequence[PluginApprover] | None = None, *,
                     prefix: tuple[str | int, ...] = ()) -> PluginDriver | None:
    """The driver that accepts ``selections`` (``None`` when there are none), 501 without a
    driver, or 400 naming each refused place (``prefix``: where the body holds ``plugins``)."""
    if not selections:
        return None
    driver = require_plugin_driver()
    problems = driver.validate_policies(selections, approvers)
    if problems:
        raise _refusal(problems, prefix)
    return driver


def check_commands(plugins: Mapping[str, PluginSelectionCommand], approvers: list[ApproverCommand] | None = None,
                   *, prefix: tuple[str | int, ...] = ()) -> dict[str, Any]:
    """Check a command's map; returns it in the stored (wire) shape."""
    selections = {key: selection.value() for key, selection in plugins.items()}
    check_selections(selections, approvers_value(approvers), prefix=prefix)
    return {key: selection.document() for key, selection in selections.items()}


def stored_selections(stored: Mapping[str, Any]) -> Selections:
    """An Agent's stored map as values, its shape checked again (400 if it no longer parses)."""
    try:
        parsed = _STORED.validate_python(dict(stored), context=WIRE)
    except ValidationError as exc:
        raise invalid_request([{**e, "loc": ("plugins", *e["loc"])} for e in exc.errors()]) from None
    return {key: selection.value() for key, selection in parsed.items()}


def stored_approvers(stored: Sequence[Mapping[str, str]] | None) -> tuple[PluginApprover, ...] | None:
    return None if stored is None else tuple(PluginApprover.model_validate(a) for a in stored)


def deploy_plugins_snapshot(selections: Selections, approvers: Sequence[PluginApprover] | None) -> PluginSnapshot:
    """The revision's ``plugins``: the driver that admits them now and the policy-only map.
    Release metadata and the native mapping resolve at startup."""
    driver = check_selections(selections, None if approvers is None else tuple(approvers), prefix=())
    chosen = driver or plugin_driver()
    return PluginSnapshot(driver=None if chosen is None else chosen.identity.pin, plugins=dict(selections))
