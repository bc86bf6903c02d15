"""``manage.py occ_bootstrap``: what the first run creates and writes, and that re-runs issue nothing."""

from __future__ import annotations

import contextlib
import io
import json
import os
import pty
import re
import stat
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import override_settings

from occ.iam.permissions import ADMINISTRATOR_PERMISSIONS
from occ.management.commands import occ_bootstrap
from occ.models import (
    AccessBinding,
    AuditEvent,
    ControllerWork,
    Installation,
    Namespace,
    Principal,
    PrincipalKind,
    Role,
    ServiceKey,
)
from tests.conftest import ApiClient

KEY_FILE = "bootstrap-admin-key.json"
PASSWORD_FILE = "admin-password"
TABLES = (Installation, Namespace, Principal, Role, AccessBinding, ServiceKey, ControllerWork, AuditEvent)
RFC3339_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


@pytest.fixture
def data_dir(tmp_path, db):
    with override_settings(OCC_DATA_DIR=tmp_path, OCC_ADMIN_PASSWORD="", OCC_ADMIN_USERNAME="admin"):
        yield tmp_path


def run_bootstrap() -> str:
    out = io.StringIO()
    call_command("occ_bootstrap", stdout=out)
    return out.getvalue()


def counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in TABLES}


def mode_of(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_first_run_creates_the_installation_and_its_administrators(data_dir):
    output = run_bootstrap()
    installation = Installation.objects.get()
    user = get_user_model().objects.get(username="admin")
    assert not user.is_staff
    assert not user.is_superuser
    human = Principal.objects.get(user=user)
    assert human.kind == PrincipalKind.HUMAN
    service = Principal.objects.get(kind=PrincipalKind.SERVICE)
    assert service.namespace_id is None
    assert service.agent_id is None
    role = Role.objects.get(name="administrator")
    assert role.system
    assert role.namespace_id is None
    assert sorted(role.permissions) == sorted(ADMINISTRATOR_PERMISSIONS)
    bindings = AccessBinding.objects.filter(role=role)
    assert {b.principal_id for b in bindings} == {human.id, service.id}
    assert all(b.namespace_id is None and b.resource_id is None for b in bindings)
    namespace = Namespace.objects.get()
    assert (namespace.name, namespace.status) == ("default", "provisioning")
    work = ControllerWork.objects.get()
    assert work.idempotency_key == f"namespace:{namespace.id}:ready"
    assert (work.state, work.namespace_target, work.actor_id) == ("queued", "ready", human.id)
    assert installation.id in output


@pytest.mark.parametrize("terminal", [pytest.param(True, id="with-a-terminal"), pytest.param(False, id="without")])
def test_generated_password_goes_to_the_terminal_once_and_the_private_file_never_stdout(data_dir, monkeypatch,
                                                                                        terminal):
    shown: list[str] = []
    monkeypatch.setattr(occ_bootstrap, "show_on_terminal", lambda text: shown.append(text) or terminal)
    output = run_bootstrap()
    path = data_dir / PASSWORD_FILE
    assert mode_of(path) == 0o600
    password = path.read_text().strip()
    assert len(password) >= 16
    assert get_user_model().objects.get(username="admin").check_password(password)
    assert password not in output
    assert f"kept in {path} (mode 0600)" in output
    assert ("shown once on the terminal" in output) is terminal
    assert [text.count(password) for text in shown] == [1]


@pytest.mark.slow
def test_with_make_runs_output_in_a_log_the_password_reaches_only_the_terminal(tmp_path):
    """The real command in a pseudo-terminal with stdout and stderr redirected to a file, as
    ``make run > occ.log`` runs it: the terminal shows the password, the log does not."""
    env = {**os.environ, "OCC_DATA_DIR": str(tmp_path / "data"), "OCC_ADMIN_PASSWORD": ""}
    for name in ("DATABASE_URL", "OCC_TEST_DATABASE_NAME"):
        env.pop(name, None)
    manage = [sys.executable, str(settings.BASE_DIR / "manage.py")]
    subprocess.run([sys.executable, "-m", "project.data_dir"], env=env, cwd=settings.BASE_DIR, check=True,
                   capture_output=True)
    subprocess.run([*manage, "migrate", "-v0"], env=env, cwd=settings.BASE_DIR, check=True, capture_output=True)
    log_path = tmp_path / "make-run.log"
    pid, terminal = pty.fork()  # the child's controlling terminal is this pseudo-terminal
    if pid == 0:
        log = os.open(log_path, os.O_WRONLY | os.O_CREAT, 0o600)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.chdir(settings.BASE_DIR)
        os.execve(sys.executable, [*manage, "occ_bootstrap"], env)
    shown = b""
    with contextlib.suppress(OSError):  # EIO once the child has exited
        while chunk := os.read(terminal, 4096):
            shown += chunk
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, log_path.read_text()
    password = (tmp_path / "data" / PASSWORD_FILE).read_text().strip()
    log = log_path.read_text()
    assert "created" in log
    assert password not in log
    assert "shown once on the terminal, not in this output" in log
    assert shown.decode().count(password) == 1


def test_configured_password_is_used_and_neither_printed_nor_stored(data_dir):
    with override_settings(OCC_ADMIN_PASSWORD="configured-password-0123"):
        output = run_bootstrap()
    assert not (data_dir / PASSWORD_FILE).exists()
    assert "configured-password-0123" not in output
    assert get_user_model().objects.get(username="admin").check_password("configured-password-0123")


def test_key_file_is_private_exactly_shaped_and_authenticates(data_dir):
    before = datetime.now(UTC)
    run_bootstrap()
    path = data_dir / KEY_FILE
    assert mode_of(path) == 0o600
    document = json.loads(path.read_text())
    assert set(document) == {"data", "meta"}
    assert set(document["data"]) == {"id", "servicePrincipalId", "name", "expiresAt", "key"}
    assert document["meta"] == {"installationId": Installation.objects.get().id}
    data = document["data"]
    key = ServiceKey.objects.get()
    service = Principal.objects.get(kind=PrincipalKind.SERVICE)
    assert (data["id"], data["servicePrincipalId"], data["name"]) == (key.id, service.id, "bootstrap-admin")
    assert key.namespace_id is None
    assert RFC3339_MS.match(data["expiresAt"])
    expires = datetime.strptime(data["expiresAt"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    assert before + timedelta(days=30) - timedelta(seconds=1) <= expires <= datetime.now(UTC) + timedelta(days=30)
    # Only a digest of the token is stored.
    assert data["key"] not in {key.digest, key.id}
    response = ApiClient(data["key"]).get("/installation")
    assert response.status == 200
    assert response.data["id"] == document["meta"]["installationId"]


def test_one_bootstrap_audit_event_without_credentials(data_dir):
    run_bootstrap()
    events = list(AuditEvent.objects.all())
    assert [(e.kind, e.action, e.outcome) for e in events] == [
        ("bootstrap", "openclaw.installation.bootstrap", "succeeded")]
    stored = json.dumps(events[0].details)
    token = json.loads((data_dir / KEY_FILE).read_text())["data"]["key"]
    assert token not in stored
    assert (data_dir / PASSWORD_FILE).read_text().strip() not in stored


def test_rerun_verifies_and_issues_nothing(data_dir):
    first_output = run_bootstrap()
    files = {name: ((data_dir / name).read_bytes(), (data_dir / name).stat().st_mtime_ns)
             for name in (KEY_FILE, PASSWORD_FILE)}
    before = counts()
    password = (data_dir / PASSWORD_FILE).read_text().strip()
    second_output = run_bootstrap()
    assert counts() == before
    assert {name: ((data_dir / name).read_bytes(), (data_dir / name).stat().st_mtime_ns)
            for name in (KEY_FILE, PASSWORD_FILE)} == files
    assert "verified; nothing issued" in second_output
    assert password not in first_output
    assert password not in second_output
    assert sorted(p.name for p in data_dir.iterdir() if p.name in (KEY_FILE, PASSWORD_FILE)) == sorted(files)


@pytest.mark.parametrize("leftover", [KEY_FILE, PASSWORD_FILE])
def test_leftover_files_without_an_installation_refuse_to_bootstrap(data_dir, leftover):
    (data_dir / leftover).write_text("from an earlier installation\n")
    with pytest.raises(CommandError, match="move the file away"):
        run_bootstrap()
    assert counts() == dict.fromkeys(counts(), 0)
    assert (data_dir / leftover).read_text() == "from an earlier installation\n"


def test_an_installation_that_does_not_verify_is_reported(data_dir):
    run_bootstrap()
    AccessBinding.objects.filter(principal__kind=PrincipalKind.HUMAN).delete()
    before = counts()
    with pytest.raises(CommandError, match="does not verify"):
        run_bootstrap()
    assert counts() == before
