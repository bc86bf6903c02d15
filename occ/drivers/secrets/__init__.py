"""SecretDriver: where Secret values live. Only a driver ever holds a value."""

from occ.drivers.secrets.base import (
    SecretDriver,
    SecretDriverError,
    SecretValueMissing,
    backend_name_for,
    get_secret_driver,
)

__all__ = ["SecretDriver", "SecretDriverError", "SecretValueMissing", "backend_name_for", "get_secret_driver"]
