"""PluginDriver selection: ``OCC_PLUGIN_DRIVER`` names the one driver of this installation
(``openclaw`` by default, ``codex``, or empty for none: then non-empty selections answer 501)."""

from __future__ import annotations

import importlib
import inspect
import threading

from django.conf import settings

from occ.errors import NotImplementedYet
from plugins.base import PluginDriver

# Driver id -> the module that defines it (imported only when selected).
DRIVER_MODULES: dict[str, str] = {
    "openclaw": "plugins.openclaw",
    "codex": "plugins.codex",
}

_instances: dict[str, PluginDriver] = {}
_lock = threading.Lock()


class NoPluginDriver(NotImplementedYet):
    default_message = "This installation has no plugin driver; send an empty plugins map."


def _driver_class(driver_id: str) -> type[PluginDriver] | None:
    module_name = DRIVER_MODULES.get(driver_id)
    if module_name is None:
        return None
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            return None  # registered, not shipped in this build
        raise
    found = [obj for obj in vars(module).values()
             if inspect.isclass(obj) and issubclass(obj, PluginDriver) and not inspect.isabstract(obj)
             and obj.__module__ == module.__name__ and obj.identity.id == driver_id]
    if len(found) != 1:
        raise RuntimeError(f"{module_name} must define exactly one PluginDriver with id {driver_id}")
    return found[0]


def plugin_driver(driver_id: str | None = None) -> PluginDriver | None:
    """The driver named ``driver_id`` (or the configured one); ``None`` when there is none."""
    chosen = settings.OCC_PLUGIN_DRIVER if driver_id is None else driver_id
    if not chosen:
        return None
    with _lock:
        driver = _instances.get(chosen)
        if driver is None:
            driver_class = _driver_class(chosen)
            if driver_class is None:
                return None
            driver = _instances[chosen] = driver_class()
    return driver


def require_plugin_driver(driver_id: str | None = None) -> PluginDriver:
    """The selected driver, or the documented 501 ``NOT_IMPLEMENTED``."""
    driver = plugin_driver(driver_id)
    if driver is None:
        raise NoPluginDriver()
    return driver


def forget_plugin_drivers() -> None:
    """Drop the cached driver objects (tests that switch ``OCC_PLUGIN_DRIVER``)."""
    with _lock:
        _instances.clear()
