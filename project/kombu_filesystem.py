"""kombu's filesystem transport with atomic message files: the embedded broker of ``make run``.

kombu's ``filesystem`` Channel creates a message file, then locks it, then writes it, while a
consumer renames away any message file it lists without looking at the lock. A consumer that
lists the folder between the create and the write reads an empty message, and the Celery
worker stops with ``Unrecoverable error: JSONDecodeError`` (celery/kombu#1551) — which ends
``make run`` (honcho stops every process when one exits). It happens most when the machine is
busy, as while a gateway starts. Here a message is written under a name no consumer picks up
(``.incoming-…``) and renamed into place once complete, so a consumer sees whole messages only.

Selected by ``CELERY_BROKER_TRANSPORT`` in project/settings.py when the broker is ``filesystem://``.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps

STAGING_PREFIX = ".incoming-"


class Channel(filesystem.Channel):
    # kombu's filesystem Channel and its virtual base name the second argument differently.
    def _put(self, queue: Any, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]
        """Put ``payload`` onto ``queue``: written aside, then renamed in (same folder, atomic)."""
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        staging = os.path.join(self.data_folder_out, f"{STAGING_PREFIX}{uuid.uuid4()}")
        try:
            with open(staging, "wb") as handle:
                handle.write(str_to_bytes(dumps(payload)))
            os.replace(staging, final)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(staging)
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    Channel = Channel

    @property
    def default_connection_params(self) -> dict[str, Any]:
        # Folders, not a host: kombu's virtual base claims hostname "localhost" by default, so
        # every connection from a URL without one ("filesystem://") warned "No hostname was
        # supplied. Reverting to default 'localhost'" and named a host that does not exist.
        return {"port": self.default_port}
