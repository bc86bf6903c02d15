"""``manage.py occ_preflight`` fails fast, naming the unreachable service and how to start it."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest
from django.conf import settings

from project.data_dir import DataDir
from tests.conftest import service_missing

PYTHON = Path(settings.BASE_DIR) / ".venv" / "bin" / "python"
CI_POSTGRES = ("127.0.0.1", 5432)
CI_REDIS = ("127.0.0.1", 6379)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def listening(address: tuple[str, int]) -> bool:
    try:
        with socket.create_connection(address, timeout=2):
            return True
    except OSError:
        return False


def preflight(data_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """Run the command as `make run` does, with the embedded defaults unless ``env`` overrides them."""
    environment = {k: v for k, v in os.environ.items()
                   if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "OCC_TEST_DATABASE_NAME"}}
    environment.update(OCC_DATA_DIR=str(data_dir), **env)
    DataDir(data_dir).create()
    return subprocess.run(
        [str(PYTHON), "manage.py", "occ_preflight"], cwd=settings.BASE_DIR, env=environment,
        capture_output=True, text=True, timeout=120, check=False,
    )


def test_embedded_defaults_pass(tmp_path):
    result = preflight(tmp_path)
    assert result.returncode == 0, result.stderr
    assert "database and broker reachable" in result.stdout


def test_unreachable_postgresql_fails_naming_it_and_how_to_start_it(tmp_path):
    port = closed_port()
    result = preflight(tmp_path, DATABASE_URL=f"postgres://postgres:pw-canary-9@127.0.0.1:{port}/occ")
    assert result.returncode == os.EX_TEMPFAIL  # "try again later": make run's supervisor waits for it
    assert "PostgreSQL" in result.stderr
    assert f"127.0.0.1:{port}" in result.stderr
    assert "pg_ctlcluster" in result.stderr
    assert "DATABASE_URL" in result.stderr
    assert "Redis" not in result.stderr
    assert "pw-canary-9" not in result.stderr + result.stdout


def test_unreachable_redis_fails_naming_it_and_how_to_start_it(tmp_path):
    result = preflight(tmp_path, CELERY_BROKER_URL=f"redis://127.0.0.1:{closed_port()}/0")
    assert result.returncode == os.EX_TEMPFAIL
    assert "Redis" in result.stderr
    assert "redis-server" in result.stderr
    assert "CELERY_BROKER_URL" in result.stderr
    assert "PostgreSQL" not in result.stderr


def test_both_unreachable_are_both_named(tmp_path):
    result = preflight(tmp_path, DATABASE_URL=f"postgres://postgres@127.0.0.1:{closed_port()}/occ",
                       CELERY_BROKER_URL=f"redis://127.0.0.1:{closed_port()}/0")
    assert result.returncode != 0
    assert "PostgreSQL" in result.stderr
    assert "Redis" in result.stderr


@pytest.mark.slow
def test_reachable_postgresql_and_redis_pass(tmp_path):
    if not listening(CI_POSTGRES):
        service_missing("needs PostgreSQL at 127.0.0.1:5432")
    if not listening(CI_REDIS):
        service_missing("needs Redis at 127.0.0.1:6379")
    result = preflight(tmp_path, DATABASE_URL="postgres://postgres@127.0.0.1:5432/postgres",
                       CELERY_BROKER_URL="redis://127.0.0.1:6379/0")
    assert result.returncode == 0, result.stderr
