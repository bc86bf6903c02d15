"""PluginDriver selection: ``OCC_PLUGIN_DRIVER`` names the one driver of this installation
(``openclaw`` by default, ``codex``, or empty for none: then non-empty selections answer 501)."""

from __future__ import annotations

from django.conf import settings

from occ.driver_registry import DriverRegistry, UnknownDriver
from occ.drivers.plugins.base import PluginDriver
from occ.errors import NotImplementedYet

PLUGIN_DRIVERS: DriverRegistry[PluginDriver] = DriverRegistry({
    "openclaw": "occ.drivers.plugins.openclaw.OpenClawPluginDriver",
    "codex": "occ.drivers.plugins.codex.CodexPluginDriver",
})


class NoPluginDriver(NotImplementedYet):
    default_message = "This installation has no plugin driver; send an empty plugins map."


def plugin_driver(driver_id: str | None = None) -> PluginDriver | None:
    """The driver named ``driver_id`` (or the configured one); ``None`` when there is none."""
    chosen = settings.OCC_PLUGIN_DRIVER if driver_id is None else driver_id
    if not chosen:
        return None
    try:
        return PLUGIN_DRIVERS.get(chosen)
    except UnknownDriver:
        return None
    except ModuleNotFoundError as exc:
        if exc.name == PLUGIN_DRIVERS.module_of(chosen):
            return None  # registered, not shipped in this build
        raise


def require_plugin_driver(driver_id: str | None = None) -> PluginDriver:
    """The selected driver, or the documented 501 ``NOT_IMPLEMENTED``."""
    driver = plugin_driver(driver_id)
    if driver is None:
        raise NoPluginDriver()
    return driver


def forget_plugin_drivers() -> None:
    """Drop the cached driver objects (tests that switch ``OCC_PLUGIN_DRIVER``)."""
    PLUGIN_DRIVERS.forget()
