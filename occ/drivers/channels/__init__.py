"""Channel drivers, selected by the channels a Configuration's native document enables."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from occ.driver_registry import DriverRegistry
from occ.drivers.channels.base import ChannelDriver, SecretReader

# Channel -> its driver. Every channel driver is on: each checks only the channels a document enables.
CHANNEL_DRIVERS: DriverRegistry[ChannelDriver] = DriverRegistry({
    "slack": "occ.drivers.channels.slack.SlackChannelDriver",
})


def channel_drivers() -> Mapping[str, ChannelDriver]:
    return {channel: CHANNEL_DRIVERS.get(channel) for channel in CHANNEL_DRIVERS.ids()}


def check_channel_credentials(*, values: Mapping[str, Any], secret_bindings: Mapping[str, Any],
                              read_secret: SecretReader) -> None:
    """Run every channel driver's credential check over ``values``; called by admission
    before its write transaction (never by the worker)."""
    for driver in channel_drivers().values():
        driver.check_credentials(values=values, secret_bindings=secret_bindings, read_secret=read_secret)


def channel_checks_needed(values: Mapping[str, Any], secret_bindings: Mapping[str, Any]) -> bool:
    """Whether ``check_channel_credentials`` would check anything in the request."""
    return any(driver.requested(values, secret_bindings) for driver in channel_drivers().values())


__all__ = ["CHANNEL_DRIVERS", "ChannelDriver", "SecretReader", "channel_checks_needed", "channel_drivers",
           "check_channel_credentials"]
