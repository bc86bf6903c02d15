"""Reachability of the database and the broker, with messages that say what to do."""

from __future__ import annotations

from django.conf import settings
from django.db import DatabaseError
from django.db.backends.base.base import BaseDatabaseWrapper


def database_problem(connection: BaseDatabaseWrapper) -> str | None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError:
        if connection.vendor == "postgresql":
            params = connection.settings_dict
            return (
                f"PostgreSQL at {params.get('HOST') or 'localhost'}:{params.get('PORT') or 5432} is not "
                "reachable. Start it (for example `pg_ctlcluster 15 main start`) or unset DATABASE_URL "
                "to use the embedded SQLite database."
            )
        return "The SQLite database could not be opened. Check that OCC_DATA_DIR is writable."
    return None


def broker_problem() -> str | None:
    url = settings.CELERY_BROKER_URL
    if not url.startswith(("redis://", "rediss://")):
        return None
    import redis

    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
        client.ping()
    except redis.RedisError:
        return (
            "Redis (CELERY_BROKER_URL) is not reachable. Start it (for example "
            "`redis-server --daemonize yes`) or unset CELERY_BROKER_URL to use the embedded "
            "filesystem broker."
        )
    return None
