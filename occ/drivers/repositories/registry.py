"""RepositoryDriver selection: ``OCC_REPOSITORY_DRIVER`` names the installation's one driver
(``github_app``), or is empty: then there is none, and repository options and non-empty
bindings answer 503 ``DEPENDENCY_UNAVAILABLE``."""

from __future__ import annotations

from django.conf import settings

from occ.driver_registry import DriverRegistry, UnknownDriver
from occ.drivers.repositories.base import RepositoryDriver
from occ.errors import DependencyUnavailable

REPOSITORY_DRIVERS: DriverRegistry[RepositoryDriver] = DriverRegistry({
    "github_app": "occ.drivers.repositories.github_app.GitHubAppDriver",
})


class NoRepositoryDriver(DependencyUnavailable):
    default_message = ("This installation has no repository driver, so it cannot bind repositories. Send an "
                       "empty repositoryBindings list, or ask an administrator to configure the GitHub App.")


def _arguments(driver_id: str) -> dict[str, str | float | int]:
    if driver_id != "github_app":
        return {}
    return {"api_base_url": settings.OCC_GITHUB_API_BASE_URL, "app_id": settings.OCC_GITHUB_APP_ID,
            "installation_id": settings.OCC_GITHUB_APP_INSTALLATION_ID,
            "private_key_file": settings.OCC_GITHUB_APP_PRIVATE_KEY_FILE,
            "timeout": float(settings.OCC_REPOSITORY_TIMEOUT_SECONDS),
            "max_bytes": int(settings.OCC_REPOSITORY_MAX_RESPONSE_BYTES)}


def repository_driver(driver_id: str | None = None) -> RepositoryDriver | None:
    """The driver named ``driver_id`` (or the configured one); ``None`` when there is none."""
    chosen = settings.OCC_REPOSITORY_DRIVER if driver_id is None else driver_id
    if not chosen:
        return None
    try:
        return REPOSITORY_DRIVERS.get(chosen, **_arguments(chosen))
    except UnknownDriver:
        return None


def require_repository_driver(driver_id: str | None = None) -> RepositoryDriver:
    driver = repository_driver(driver_id)
    if driver is None:
        raise NoRepositoryDriver()
    return driver


def forget_repository_drivers() -> None:
    """Drop the cached driver objects (tests that switch the settings)."""
    REPOSITORY_DRIVERS.forget()
