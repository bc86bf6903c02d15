"""The data directory is created by ``make init`` (``python -m project.data_dir``) and nothing else.

Every other command run without it, or without the keys it holds, stops with one message
that says what to do, instead of a traceback after quietly creating a second installation
(an empty database, a new encryption key that cannot decrypt the Secrets already stored).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from project.data_dir import DJANGO_KEY_FILE, ENCRYPTION_KEY_FILE, DataDir

REPO = Path(__file__).resolve().parents[2]
# Importing Django and OCC takes a few seconds on an idle 2-core machine; room for a loaded one.
COMMAND_TIMEOUT_SECONDS = 180
# Each is one a person runs by hand, from the README and docs/first-agent.md.
COMMANDS = [
    pytest.param(["occ_gateway", "info", "agt_x"], id="occ_gateway"),
    pytest.param(["migrate", "--noinput"], id="migrate"),
    pytest.param(["collectstatic", "--noinput"], id="collectstatic"),
]
KEY_VARIABLES = ("OCC_DATA_DIR", "OCC_SECRET_KEYS", "OCC_DJANGO_SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL",
                 "OCC_TEST_DATABASE_NAME", "PYTEST_ADDOPTS")


def environment(**variables: str) -> dict[str, str]:
    """This run's environment without OCC_DATA_DIR and the keys: the embedded defaults."""
    return {k: v for k, v in os.environ.items() if k not in KEY_VARIABLES} | variables


def run(checkout: Path, *argv: str, **variables: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *argv], cwd=checkout, env=environment(**variables), capture_output=True,
                          text=True, timeout=COMMAND_TIMEOUT_SECONDS, check=False)


@pytest.fixture
def checkout(tmp_path) -> Path:
    """A project folder without ``.occ/``: a copy of the ``project`` package (its settings place
    the default data directory next to themselves) with the rest linked in."""
    root = tmp_path / "checkout"
    root.mkdir()
    shutil.copytree(REPO / "project", root / "project", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(REPO / "manage.py", root / "manage.py")
    for path in REPO.iterdir():  # the apps (every package beside project) and the shared folders
        if path.name not in {"project", "tests", "bench"} and (
                (path / "__init__.py").exists() or path.name in {"templates", "static"}):
            (root / path.name).symlink_to(path)
    return root


def installation_state(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*")) if folder.exists() else []


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
def test_a_command_without_the_default_data_dir_says_what_to_do_and_creates_nothing(checkout, command):
    result = run(checkout, "manage.py", *command)

    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert f"the default data directory {checkout / '.occ'} does not exist" in result.stderr
    assert "set OCC_DATA_DIR to that folder" in result.stderr
    assert "make init" in result.stderr
    assert not (checkout / ".occ").exists(), "nothing was created"


@pytest.mark.slow
def test_a_command_with_a_missing_data_dir_names_it_and_creates_nothing(checkout, tmp_path):
    missing = tmp_path / "elsewhere" / "data"

    result = run(checkout, "manage.py", "migrate", "--noinput", OCC_DATA_DIR=str(missing))

    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert f"OCC_DATA_DIR is {missing}, which does not exist" in result.stderr
    assert not missing.parent.exists()


@pytest.mark.slow
def test_no_command_replaces_a_lost_encryption_key_of_an_installation(checkout, tmp_path):
    data = tmp_path / "data"
    assert run(checkout, "-m", "project.data_dir", OCC_DATA_DIR=str(data)).returncode == 0
    assert run(checkout, "manage.py", "migrate", "--noinput", "-v0", OCC_DATA_DIR=str(data)).returncode == 0
    (data / ENCRYPTION_KEY_FILE).unlink()

    command = run(checkout, "manage.py", "occ_gateway", "info", "agt_x", OCC_DATA_DIR=str(data))
    init = run(checkout, "-m", "project.data_dir", OCC_DATA_DIR=str(data))

    for result in (command, init):
        assert result.returncode != 0
        assert "Traceback" not in result.stderr
        assert f"{ENCRYPTION_KEY_FILE} is missing from the data directory {data}, which holds an installation" in (
            result.stderr)
        assert "OCC_SECRET_KEYS" in result.stderr
    assert not (data / ENCRYPTION_KEY_FILE).exists()


@pytest.mark.slow
def test_init_creates_the_data_dir_once_and_make_runs_steps_then_work(checkout):
    data = checkout / ".occ"

    first = run(checkout, "-m", "project.data_dir")
    assert first.returncode == 0, first.stderr
    assert f"Data directory {data}: created" in first.stdout
    keys = {name: (data / name).read_text() for name in (DJANGO_KEY_FILE, ENCRYPTION_KEY_FILE)}
    Fernet(keys[ENCRYPTION_KEY_FILE].encode())  # a valid key
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert {stat.S_IMODE((data / name).stat().st_mode) for name in keys} == {0o600}
    assert {"broker/out", "broker/processed", "broker/control", "staticfiles"} <= set(installation_state(data))

    again = run(checkout, "-m", "project.data_dir")
    assert again.returncode == 0, again.stderr
    assert "nothing to create" in again.stdout
    assert {name: (data / name).read_text() for name in keys} == keys, "existing keys are kept"

    for step in (["occ_preflight"], ["migrate", "--noinput", "-v0"], ["occ_bootstrap"]):
        result = run(checkout, "manage.py", *step)
        assert result.returncode == 0, result.stderr[-2000:]
    assert (data / "bootstrap-admin-key.json").exists()


# --- the rules, without a process ------------------------------------------------------------------------


def test_keys_the_environment_provides_are_neither_required_nor_generated(tmp_path):
    data = DataDir(tmp_path / "data", keys=(DJANGO_KEY_FILE,))
    data.create()
    assert not (data.path / ENCRYPTION_KEY_FILE).exists()
    assert data.problem() is None


def test_a_new_empty_directory_gets_its_keys(tmp_path):
    """CI's ``OCC_DATA_DIR=$(mktemp -d)``: the folder exists, nothing is in it yet."""
    data = DataDir(tmp_path)
    assert "Run `make init` to generate it" in (data.problem() or "")
    data.create()
    assert data.problem() is None


def test_a_file_is_not_a_data_directory(tmp_path):
    (tmp_path / "file").write_text("")
    assert DataDir(tmp_path / "file").problem() == f"OCC_DATA_DIR is {tmp_path / 'file'}, which is not a directory."
