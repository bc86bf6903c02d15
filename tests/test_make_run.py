"""`make run` on a fresh data directory serves the console, the admin and the API, and its
worker and beat make the `default` Namespace ready.

Starts the real command (preflight, migrate, bootstrap, then honcho running web, worker and
beat) with the embedded defaults, talks to it over HTTP, and stops exactly the process groups
it started: make's own, and the one honcho gives each process (it reports their pids). The
stop must be graceful (devtools.procs).
"""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from tests.ports import free_port
from tests.processes import group_running

STARTUP_TIMEOUT_SECONDS = 240
NAMESPACE_READY_TIMEOUT_SECONDS = 180
HONCHO_STARTED = re.compile(r"\| (\w+)\.1 started \(pid=(\d+)\)")
STOP_TIMEOUT_SECONDS = 40  # above devtools.procs.STOP_WAIT_SECONDS
# The embedded defaults: no PostgreSQL, no Redis, a generated admin password.
REMOVED_ENV = {"DATABASE_URL", "CELERY_BROKER_URL", "OCC_ADMIN_PASSWORD", "OCC_TEST_DATABASE_NAME", "OCC_PORT",
               "MAKEFLAGS", "MAKELEVEL", "MFLAGS"}

pytestmark = pytest.mark.slow



def stop_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the group we started, then SIGKILL whatever is left after a timeout."""
    pgid = process.pid  # start_new_session: the group id is make's own pid
    if group_running(pgid):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
    while time.monotonic() < deadline and (process.poll() is None or group_running(pgid)):
        time.sleep(0.2)
    if group_running(pgid):
        os.killpg(pgid, signal.SIGKILL)
    process.wait(timeout=STOP_TIMEOUT_SECONDS)


def log_tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def honcho_processes(log_path: Path) -> dict[str, int]:
    """name -> pid of each Procfile process; honcho starts each in its own session."""
    return {name: int(pid) for name, pid in HONCHO_STARTED.findall(log_path.read_text(errors="replace"))}


@pytest.fixture
def running_occ(tmp_path) -> Iterator[tuple[str, Path]]:
    data_dir = tmp_path / "occ-data"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in REMOVED_ENV}
    env.update(OCC_DATA_DIR=str(data_dir), OCC_PORT=str(port))
    log_path = tmp_path / "make-run.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            ["make", "run"], cwd=settings.BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )
    base_url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
        while True:
            if process.poll() is not None:
                pytest.fail(f"make run exited with {process.returncode}:\n{log_tail(log_path)}")
            try:
                if httpx.get(f"{base_url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"/healthz did not answer within {STARTUP_TIMEOUT_SECONDS}s:\n{log_tail(log_path)}")
            time.sleep(0.5)
        yield base_url, data_dir
    finally:
        stop_group(process)
        leftover = {name: pid for name, pid in honcho_processes(log_path).items() if group_running(pid)}
        for pid in leftover.values():
            os.killpg(pid, signal.SIGKILL)
    assert not group_running(process.pid)
    assert not leftover, f"processes outlived make run: {leftover}"
    # A graceful stop: each process got SIGTERM alone and exited by itself (the worker after
    # its warm shutdown), none was SIGKILLed, and no pool child was signalled behind its parent.
    log = log_path.read_text(errors="replace")
    assert "sending SIGKILL" not in log, log_tail(log_path)
    assert "exited with 'signal" not in log, log_tail(log_path)
    assert all(f"{name}.1 stopped (rc=0)" in log for name in ("web", "worker", "beat")), log_tail(log_path)


def test_make_run_serves_console_admin_and_api(running_occ):
    base_url, data_dir = running_occ
    key_path, password_path = data_dir / "bootstrap-admin-key.json", data_dir / "admin-password"
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(password_path.stat().st_mode) == 0o600
    # The generated password is only in its file: never in make run's output (occ_bootstrap).
    assert password_path.read_text().strip() not in (data_dir.parent / "make-run.log").read_text(errors="replace")

    with httpx.Client(base_url=base_url, follow_redirects=False, timeout=15) as browser:
        assert browser.get("/readyz").json()["status"] == "ready"

        console = browser.get("/console/")
        assert console.status_code == 302
        assert console.headers["Location"] == "/console/sign-in?next=/console/"
        page = browser.get(console.headers["Location"])
        assert page.status_code == 200
        assert 'name="password"' in page.text
        token = browser.cookies["csrftoken"]

        signed_in = browser.post("/console/sign-in", data={
            "username": "admin", "password": password_path.read_text().strip(),
            "csrfmiddlewaretoken": token, "next": "/console/",
        })
        assert signed_in.status_code == 302, signed_in.text[:500]
        assert signed_in.headers["Location"] == "/console/"
        # The console lands on the Agents list of the default Namespace (the only one).
        home = browser.get("/console/")
        assert home.status_code == 302
        match = re.fullmatch(r"/console/namespaces/([^/]+)/agents", home.headers["Location"])
        assert match, home.headers["Location"]
        agents = browser.get(home.headers["Location"])
        assert agents.status_code == 200
        assert re.search(r"<h1[^>]*>Agents</h1>", agents.text)
        assert "No Agents yet" in agents.text
        assert '<option value="' + match.group(1) + '" selected>default' in agents.text
        landing_namespace_id = match.group(1)

        admin_index = browser.get("/admin/")
        assert admin_index.status_code == 200
        assert "OCC operators" in admin_index.text

        # Static files are served by the same process (whitenoise), with and without DEBUG.
        for asset in ("/static/console/build/console.css", "/static/admin/css/base.css"):
            assert browser.get(asset).status_code == 200, asset

    document = json.loads(key_path.read_text())
    headers = {"x-api-key": document["data"]["key"]}
    installation = httpx.get(f"{base_url}/installation", headers=headers, timeout=15)
    assert installation.status_code == 200
    assert installation.json()["data"]["id"] == document["meta"]["installationId"]

    # The worker (nudged on commit through the filesystem broker, or by beat's sweep) runs the
    # default Namespace's ready work.
    status, deadline = None, time.monotonic() + NAMESPACE_READY_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        listed = httpx.get(f"{base_url}/namespaces", headers=headers, timeout=15).json()["data"]["namespaces"]
        status = next(ns["status"] for ns in listed if ns["name"] == "default")
        if status != "provisioning":
            break
        time.sleep(0.5)
    assert status == "ready", f"default Namespace is {status!r}"
    assert next(ns["id"] for ns in listed if ns["name"] == "default") == landing_namespace_id
    assert {"web", "worker", "beat"} <= set(honcho_processes(data_dir.parent / "make-run.log"))


def test_a_killed_worker_is_restarted_and_the_work_queued_meanwhile_completes(running_occ):
    """SIGKILL the Celery worker by its pid: web and beat keep running, /healthz keeps answering,
    the supervisor (devtools.procs) starts the worker again, and a Namespace created while
    it was down becomes ready."""
    base_url, data_dir = running_occ
    log_path = data_dir.parent / "make-run.log"
    document = json.loads((data_dir / "bootstrap-admin-key.json").read_text())
    headers = {"x-api-key": document["data"]["key"]}
    before = honcho_processes(log_path)

    os.kill(before["worker"], signal.SIGKILL)
    created = httpx.post(f"{base_url}/namespaces", json={"name": "after-crash"}, headers=headers, timeout=15)
    assert created.status_code in (201, 202), created.text
    namespace_id = created.json()["data"]["id"]

    # Meanwhile web answers, and neither web nor beat was stopped or restarted.
    deadline = time.monotonic() + NAMESPACE_READY_TIMEOUT_SECONDS
    while (restarted := honcho_processes(log_path)["worker"]) == before["worker"]:
        assert time.monotonic() < deadline, log_tail(log_path)
        started = time.monotonic()
        assert httpx.get(f"{base_url}/healthz", timeout=5).status_code == 200
        assert time.monotonic() - started < 1.0
        time.sleep(0.2)
    log = log_path.read_text(errors="replace")
    assert "worker.1 killed by SIGKILL" in log, log_tail(log_path)
    assert "restarting it in 1 s" in log, log_tail(log_path)
    current = honcho_processes(log_path)
    assert (current["web"], current["beat"]) == (before["web"], before["beat"])
    assert all(group_running(pid) for pid in (current["web"], current["beat"], restarted))

    status = None
    while time.monotonic() < deadline:
        namespace = httpx.get(f"{base_url}/namespaces/{namespace_id}", headers=headers, timeout=15)
        status = namespace.json()["data"]["status"]
        if status != "provisioning":
            break
        assert httpx.get(f"{base_url}/healthz", timeout=5).status_code == 200
        time.sleep(0.5)
    assert status == "ready", f"the Namespace created while the worker was down is {status!r}"
