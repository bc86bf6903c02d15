"""Channel drivers, selected by the channels a Configuration's native document enables."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from occ.drivers.channels.base import ChannelDriver, SecretReader
from occ.drivers.channels.slack import SlackChannelDriver

_DRIVERS: dict[str, ChannelDriver] = {}


def register(driver: ChannelDriver) -> None:
    _DRIVERS[driver.channel] = driver


def channel_drivers() -> Mapping[str, ChannelDriver]:
    return dict(_DRIVERS)


def check_channel_credentials(*, values: Mapping[str, Any], secret_bindings: Mapping[str, Any],
                              read_secret: SecretReader) -> None:
    """Run every registered driver's credential check over ``values``; called by admission
    before its write transaction (never by the worker)."""
    for driver in _DRIVERS.values():
        driver.check_credentials(values=values, secret_bindings=secret_bindings, read_secret=read_secret)


def channel_checks_needed(values: Mapping[str, Any]) -> bool:
    """Whether ``check_channel_credentials`` would check anything in ``values``."""
    return any(driver.configured(values) for driver in _DRIVERS.values())


register(SlackChannelDriver())


__all__ = ["ChannelDriver", "SecretReader", "channel_checks_needed", "channel_drivers", "check_channel_credentials",
           "register"]
