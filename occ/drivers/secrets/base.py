"""The SecretDriver contract.

A driver stores values under backend names that OCC derives from its own ids, so the same
Secret always maps to the same backend object and no caller can choose another one. The
value leaves a driver only through ``with_value``, for the duration of one call.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import ClassVar, TypeVar

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from occ.driver_registry import DriverRegistry, UnknownDriver
from occ.errors import DependencyUnavailable
from occ.ids import IdPrefix, is_valid_id

T = TypeVar("T")


class SecretDriverError(DependencyUnavailable):
    """The secret store could not do what was asked. Messages never carry values."""

    default_message = "The secret store is unavailable. Try again shortly."


class SecretValueMissing(SecretDriverError):
    default_message = "The Secret's value is missing from the secret store."


class SecretDriver(ABC):
    driver_id: ClassVar[str]

    def backend_name(self, secret_id: str, *, namespace_id: str, existing_namespace: str | None = None) -> str:
        """Where the Secret ``secret_id`` of the Namespace ``namespace_id`` lives in this
        backend: derived from OCC's ids only, never chosen by a caller. A driver that places
        values per tenant (the Kubernetes driver: the tenant namespace) says so here."""
        return backend_name_for(secret_id)

    @abstractmethod
    def put(self, backend_name: str, value: str) -> None:
        """Create the backend object, or replace its value."""

    @abstractmethod
    def delete(self, backend_name: str) -> None:
        """Remove the backend object. A missing object is success."""

    @abstractmethod
    def with_value(self, backend_name: str, consumer: Callable[[str], T]) -> T:
        """Call ``consumer`` with the value and return what it returns.

        The only way to read a value: callers never hold it beyond the consumer's call.
        Raises SecretValueMissing when there is no such object.
        """


def backend_name_for(secret_id: str) -> str:
    """The deterministic backend name of a Secret: lowercase, DNS-label safe, from our id."""
    if not is_valid_id(secret_id, IdPrefix.SECRET):
        raise ValueError("backend names derive from Secret ids only")
    return "occ-" + secret_id.replace("_", "-")


# The id is stored on every Secret row, so a Secret is always read back through the driver
# that wrote it, whatever OCC_SECRET_DRIVER says today.
SECRET_DRIVERS: DriverRegistry[SecretDriver] = DriverRegistry({
    "database": "occ.drivers.secrets.database.DatabaseSecretDriver",
    "kubernetes": "occ.drivers.kube.secrets.KubernetesSecretDriver",
})


def get_secret_driver(driver_id: str | None = None) -> SecretDriver:
    """The driver named ``driver_id``, or the configured one (``OCC_SECRET_DRIVER``).

    A new object for each use, unlike the other kinds' one per process: the database driver
    takes ``OCC_SECRET_KEYS`` as it is when built, and a changed key list applies at once."""
    chosen = driver_id if driver_id is not None else settings.OCC_SECRET_DRIVER
    try:
        driver_class = SECRET_DRIVERS.driver_class(chosen)
    except UnknownDriver:
        known = ", ".join(SECRET_DRIVERS.ids())
        raise ImproperlyConfigured(
            f"Unknown secret driver {chosen!r}: OCC_SECRET_DRIVER must be one of {known}.") from None
    return driver_class()
