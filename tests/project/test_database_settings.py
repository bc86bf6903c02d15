"""``OCC_DATABASE_PREPARED_STATEMENTS``: the database options the settings derive from it.

Each case reads the settings in a fresh process (they are evaluated once, at import) with its
own environment; nothing connects to a database.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from project.data_dir import DataDir

REPO = Path(__file__).resolve().parents[2]
POSTGRES_URL = "postgres://occ@db.invalid:5432/occ"
PREPARED = {"server_side_binding": True, "prepare_threshold": 5, "options": "-c plan_cache_mode=force_custom_plan"}


def database_options(tmp_path: Path, **variables: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "OCC_DATABASE_PREPARED_STATEMENTS"}}
    env |= {"OCC_DATA_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "project.settings"} | variables
    DataDir(tmp_path).create()
    probe = ("import json; from project import settings; "
             "print(json.dumps(settings.DATABASES['default'].get('OPTIONS', {}), default=str))")
    result = subprocess.run([sys.executable, "-c", probe], cwd=REPO, env=env, capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout)


@pytest.mark.parametrize(("variables", "expected"), [
    pytest.param({"DATABASE_URL": POSTGRES_URL}, PREPARED, id="postgresql-default-on"),
    pytest.param({"DATABASE_URL": POSTGRES_URL, "OCC_DATABASE_PREPARED_STATEMENTS": "true"}, PREPARED,
                 id="postgresql-on"),
    pytest.param({"DATABASE_URL": POSTGRES_URL, "OCC_DATABASE_PREPARED_STATEMENTS": "false"}, {},
                 id="postgresql-off-for-a-transaction-pooler"),
])
def test_postgresql_prepares_statements_unless_turned_off(tmp_path, variables, expected):
    assert database_options(tmp_path, **variables) == expected


def test_sqlite_ignores_the_switch(tmp_path):
    options = database_options(tmp_path, OCC_DATABASE_PREPARED_STATEMENTS="true")
    assert options["transaction_mode"] == "IMMEDIATE"
    assert "server_side_binding" not in options
    assert "prepare_threshold" not in options
