"""The embedded broker: a consumer never sees a message file before it is completely written.

kombu's own filesystem channel creates the file, then locks and writes it; a consumer that
lists the folder in between reads an empty message (celery/kombu#1551) and the Celery worker
stops. Both tests put a consumer's ``_get`` exactly into that window.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from json import JSONDecodeError
from pathlib import Path
from queue import Empty

import pytest
from kombu import Connection
from kombu.transport import filesystem

from project import kombu_filesystem
from project.data_dir import DataDir

REPO = Path(__file__).resolve().parents[2]
QUEUE = "work"
MESSAGE = {"body": "a nudge", "properties": {"delivery_tag": "1"}}


def channel(folder: Path, transport: str) -> Iterator:
    options = {"data_folder_in": str(folder / "out"), "data_folder_out": str(folder / "out"),
               "processed_folder": str(folder / "processed"), "control_folder": str(folder / "control"),
               "store_processed": False}
    for sub in ("out", "processed", "control"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    with Connection(transport=transport, transport_options=options) as connection:
        yield connection.default_channel


@pytest.fixture
def ours(tmp_path):
    yield from channel(tmp_path, "project.kombu_filesystem:Transport")


@pytest.fixture
def kombus(tmp_path):
    yield from channel(tmp_path, "filesystem")


def test_a_message_is_invisible_until_completely_written(ours, monkeypatch):
    seen_while_writing = []
    real = kombu_filesystem.str_to_bytes

    def write_while_a_consumer_looks(text):
        try:
            seen_while_writing.append(ours._get(QUEUE))
        except Empty:
            seen_while_writing.append("empty")
        return real(text)

    monkeypatch.setattr(kombu_filesystem, "str_to_bytes", write_while_a_consumer_looks)

    ours._put(QUEUE, MESSAGE)

    assert seen_while_writing == ["empty"]
    assert ours._get(QUEUE) == MESSAGE
    assert not list(Path(ours.data_folder_out).iterdir()), "nothing is left behind, staging files included"


def test_kombus_own_channel_hands_out_a_half_written_message(kombus, monkeypatch):
    """Why the transport above exists: the same window with kombu's channel breaks the consumer."""
    real_lock = filesystem.lock
    errors = []

    def lock_while_a_consumer_looks(handle, flags):
        try:
            kombus._get(QUEUE)
        except JSONDecodeError as exc:
            errors.append(exc)
        return real_lock(handle, flags)

    monkeypatch.setattr(filesystem, "lock", lock_while_a_consumer_looks)

    kombus._put(QUEUE, MESSAGE)

    assert len(errors) == 1, "the consumer read the empty file"


def test_the_embedded_broker_uses_it(tmp_path):
    """``make run``'s settings (no CELERY_BROKER_URL) select this transport; checked in a fresh
    process because this run's broker may be another (CI uses Redis)."""
    env = {k: v for k, v in os.environ.items() if k != "CELERY_BROKER_URL"}
    env |= {"OCC_DATA_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "project.settings"}
    DataDir(tmp_path).create()
    probe = ("import django; django.setup(); from project.celery import app; "
             "print(app.connection_for_write().transport_cls)")
    result = subprocess.run([sys.executable, "-c", probe], cwd=REPO, env=env, capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "project.kombu_filesystem:Transport"
