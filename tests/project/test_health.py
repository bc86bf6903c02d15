"""/healthz (process alive) and /readyz (database and broker reachable)."""

from __future__ import annotations

import socket

import pytest
from django.db.utils import ConnectionHandler
from django.test import Client, override_settings

from occ.dependencies import broker_problem, database_problem
from project import health
from tests.conftest import service_missing

CI_REDIS = "redis://127.0.0.1:6379/0"


def closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def unreachable_database(engine: str, **params: str):
    handler = ConnectionHandler({"default": {"ENGINE": engine, **params}})
    return handler["default"]


@pytest.fixture
def embedded_broker(tmp_path):
    folders = {name: tmp_path / name for name in ("out", "processed")}
    for folder in folders.values():
        folder.mkdir()
    options = {"data_folder_in": str(folders["out"]), "data_folder_out": str(folders["out"]),
               "processed_folder": str(folders["processed"])}
    with override_settings(CELERY_BROKER_URL="filesystem://", CELERY_BROKER_TRANSPORT_OPTIONS=options):
        yield folders


@pytest.fixture
def broken_postgres(monkeypatch):
    port = closed_port()
    wrapper = unreachable_database("django.db.backends.postgresql", HOST="127.0.0.1", PORT=str(port),
                                   NAME="occ", USER="postgres")
    monkeypatch.setattr(health, "connection", wrapper)
    yield port
    wrapper.close()


def test_healthz_answers_without_touching_the_database(db, django_assert_num_queries):
    with django_assert_num_queries(0):
        response = Client().get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert response.headers["Cache-Control"] == "no-store"


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_probes_take_only_get_and_head(db, path, embedded_broker):
    client = Client()
    assert client.head(path).status_code == 200
    assert client.post(path).status_code == 405


def test_readyz_is_ready_with_the_embedded_broker(db, embedded_broker):
    response = Client().get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ready", "checks": {"database": "ok", "broker": "ok"}}
    assert response.headers["Cache-Control"] == "no-store"


def test_readyz_reports_missing_embedded_broker_folders(db, embedded_broker):
    embedded_broker["processed"].rmdir()
    response = Client().get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["checks"]["database"] == "ok"
    assert "OCC_DATA_DIR" in body["checks"]["broker"]


def test_readyz_names_redis_when_the_broker_is_down(db):
    with override_settings(CELERY_BROKER_URL=f"redis://127.0.0.1:{closed_port()}/0"):
        response = Client().get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["checks"]["database"] == "ok"
    assert "Redis" in body["checks"]["broker"]
    assert "CELERY_BROKER_URL" in body["checks"]["broker"]
    assert "redis-server" in body["checks"]["broker"]


def test_readyz_is_ready_with_a_reachable_redis(db):
    with override_settings(CELERY_BROKER_URL=CI_REDIS):
        if broker_problem() is not None:
            service_missing(f"needs Redis at {CI_REDIS}")
        response = Client().get("/readyz")
    assert response.status_code == 200
    assert response.json()["checks"] == {"database": "ok", "broker": "ok"}


def test_readyz_names_postgresql_when_the_database_is_down(db, embedded_broker, broken_postgres):
    response = Client().get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["checks"]["broker"] == "ok"
    message = body["checks"]["database"]
    assert "PostgreSQL" in message
    assert f"127.0.0.1:{broken_postgres}" in message
    assert "DATABASE_URL" in message
    assert "start" in message.lower()


def test_readyz_reports_both_failures_at_once(db, broken_postgres):
    with override_settings(CELERY_BROKER_URL=f"redis://127.0.0.1:{closed_port()}/0"):
        response = Client().get("/readyz")
    assert response.status_code == 503
    checks = response.json()["checks"]
    assert "PostgreSQL" in checks["database"]
    assert "Redis" in checks["broker"]


def test_database_problem_for_an_unopenable_sqlite_file(db, tmp_path):
    wrapper = unreachable_database("django.db.backends.sqlite3", NAME=str(tmp_path / "missing" / "db.sqlite3"))
    try:
        message = database_problem(wrapper)
    finally:
        wrapper.close()
    assert message is not None
    assert "SQLite" in message
    assert "OCC_DATA_DIR" in message


def test_database_problem_never_echoes_credentials(db):
    wrapper = unreachable_database("django.db.backends.postgresql", HOST="127.0.0.1", PORT=str(closed_port()),
                                   NAME="occ", USER="postgres", PASSWORD="pw-canary-123")
    try:
        message = database_problem(wrapper)
    finally:
        wrapper.close()
    assert message is not None
    assert "pw-canary-123" not in message
