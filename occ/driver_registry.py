"""How each kind of driver is named and found: one table of driver id -> the dotted path of its
class, the class imported only when first selected (a build may leave a driver's dependencies
out), and one object per process for each id and set of constructor arguments.

The compute, plugin, secret and channel drivers all use it; settings pick the id
(``OCC_COMPUTE_DRIVER``, ``OCC_PLUGIN_DRIVER``, ``OCC_SECRET_DRIVER``; every channel driver is
always on). A pure leaf: drivers and plugins may import it.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Mapping
from typing import Generic, TypeVar

from django.utils.module_loading import import_string

DriverT = TypeVar("DriverT")


class UnknownDriver(LookupError):
    """No driver of this kind has that id."""


class DriverRegistry(Generic[DriverT]):
    def __init__(self, classes: Mapping[str, str]) -> None:
        self.classes = dict(classes)  # driver id -> "package.module.ClassName"
        self._objects: dict[tuple[str, tuple[tuple[str, Hashable], ...]], DriverT] = {}
        self._lock = threading.Lock()

    def ids(self) -> list[str]:
        return sorted(self.classes)

    def module_of(self, driver_id: str) -> str:
        return self.path_of(driver_id).rpartition(".")[0]

    def path_of(self, driver_id: str) -> str:
        try:
            return self.classes[driver_id]
        except KeyError:
            raise UnknownDriver(driver_id) from None

    def driver_class(self, driver_id: str) -> type[DriverT]:
        """The class, imported now; ImportError when its module (or a dependency) is missing."""
        driver_class: type[DriverT] = import_string(self.path_of(driver_id))
        return driver_class

    def get(self, driver_id: str, **arguments: Hashable) -> DriverT:
        """The process's one driver object for ``driver_id`` built with ``arguments``."""
        key = (driver_id, tuple(sorted(arguments.items())))
        with self._lock:
            driver = self._objects.get(key)
            if driver is None:
                driver = self._objects[key] = self.driver_class(driver_id)(**arguments)
        return driver

    def forget(self) -> None:
        """Drop the driver objects (tests that switch settings; a new process would)."""
        with self._lock:
            self._objects.clear()
