"""Reachability of the database and the broker, with messages that say what to do.

Used by ``occ_preflight`` (fail at start) and ``/readyz`` (answer 503). Messages name the
service and the setting, never the upstream error text (which may carry credentials).
"""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError
from django.db.backends.base.base import BaseDatabaseWrapper

BROKER_TIMEOUT_SECONDS = 2


def database_problem(connection: BaseDatabaseWrapper) -> str | None:
    """None when a trivial query succeeds, else what is wrong and how to fix it."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError:
        if connection.vendor == "postgresql":
            params = connection.settings_dict
            return (
                f"PostgreSQL (DATABASE_URL) at {params.get('HOST') or 'localhost'}:{params.get('PORT') or 5432} "
                "is not reachable or refused the connection. Start it (for example "
                "`pg_ctlcluster 15 main start`), check the user and database in DATABASE_URL, or unset "
                "DATABASE_URL to use the embedded SQLite database."
            )
        return "The SQLite database could not be opened. Check that OCC_DATA_DIR exists and is writable."
    return None


def broker_problem() -> str | None:
    """None when the Celery broker answers, else what is wrong and how to fix it."""
    url = settings.CELERY_BROKER_URL
    if url.startswith(("redis://", "rediss://")):
        return _redis_problem(url)
    if url.startswith("filesystem://"):
        return _filesystem_problem()
    return None


def _redis_problem(url: str) -> str | None:
    import redis

    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=BROKER_TIMEOUT_SECONDS,
                                      socket_timeout=BROKER_TIMEOUT_SECONDS)
        try:
            client.ping()
        finally:
            client.close()
    except redis.RedisError:
        return (
            "Redis (CELERY_BROKER_URL) is not reachable. Start it (for example "
            "`redis-server --daemonize yes`) or unset CELERY_BROKER_URL to use the embedded "
            "filesystem broker."
        )
    return None


def _filesystem_problem() -> str | None:
    options = getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", {}) or {}
    folders = {options.get("data_folder_in"), options.get("data_folder_out"), options.get("processed_folder")}
    for folder in sorted(f for f in folders if f):
        path = Path(folder)
        if not path.is_dir() or not os.access(path, os.W_OK | os.X_OK):
            return (
                "The embedded filesystem broker's folders under OCC_DATA_DIR/broker are missing or not "
                "writable. Check that OCC_DATA_DIR is writable, or set CELERY_BROKER_URL to a Redis URL."
            )
    return None
