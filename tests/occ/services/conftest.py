"""Fixtures of the usage and budget tests."""

from tests.occ.services.usage_support import usage_driver, usage_gateways  # noqa: F401 - fixtures
