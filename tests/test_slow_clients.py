"""Slow clients cannot starve the web process: ``/healthz`` answers in under a second while 50
connections hang on with unfinished request heads (project/gunicorn_worker.py).

The web process is started as ``make run`` starts it (``devtools.procs`` running the
Procfile's ``web`` line) and attacked on loopback by ``devtools.slow_clients``. A control
run of the Procfile's former web line (gunicorn's two sync workers) shows that the same
attack with only four connections stalls it, so the check can fail.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from devtools import slow_clients
from project import gunicorn_conf, gunicorn_worker
from tests.ports import free_port
from tests.processes import group_running

pytestmark = pytest.mark.slow

STARTUP_TIMEOUT_SECONDS = 120
WARM_PROBES = 6
FORMER_WEB_LINE = ("web: exec gunicorn project.wsgi:application --bind 127.0.0.1:${OCC_PORT:-8000} --workers 2 "
                   "--access-logfile - --no-control-socket")
REMOVED_ENV = {"DATABASE_URL", "CELERY_BROKER_URL", "OCC_TEST_DATABASE_NAME", "OCC_PORT",
               "MAKEFLAGS", "MAKELEVEL", "MFLAGS"}



@contextmanager
def serving(tmp_path: Path, procfile: Path) -> Iterator[str]:
    """The Procfile's web process under devtools.procs, as ``make run`` runs it, warmed up."""
    data_dir = tmp_path / "occ-data"
    port = free_port()
    bin_dir = Path(sys.executable).parent
    env = {k: v for k, v in os.environ.items() if k not in REMOVED_ENV}
    env.update(OCC_DATA_DIR=str(data_dir), OCC_PORT=str(port), PYTHONUNBUFFERED="1",
               PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}")
    subprocess.run([sys.executable, "-m", "project.data_dir"], cwd=settings.BASE_DIR, env=env, check=True,
                   capture_output=True)
    log_path = tmp_path / "web.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "devtools.procs", "start", "-f", str(procfile), "web"],
            cwd=settings.BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    base_url = f"http://127.0.0.1:{port}"
    try:
        # Each worker's first requests load Django's URLs and views: probe until both answer fast.
        fast, deadline = 0, time.monotonic() + STARTUP_TIMEOUT_SECONDS
        while fast < WARM_PROBES:
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the web process did not start:\n{log_path.read_text(errors='replace')[-3000:]}")
            started = time.monotonic()
            try:
                ok = httpx.get(f"{base_url}/healthz", timeout=10, headers={"Connection": "close"}).status_code == 200
            except httpx.TransportError:
                ok = False
            fast = fast + 1 if ok and time.monotonic() - started < 0.2 else 0
            time.sleep(0.1)
        yield base_url
    finally:
        if group_running(process.pid):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=40)
        finally:
            if group_running(process.pid):
                os.killpg(process.pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def occ_web(tmp_path_factory) -> Iterator[str]:
    with serving(tmp_path_factory.mktemp("web"), Path(settings.BASE_DIR) / "Procfile") as base_url:
        yield base_url


def probe_latencies(base_url: str, count: int) -> list[float]:
    latencies = []
    for _ in range(count):
        started = time.monotonic()
        response = httpx.get(f"{base_url}/healthz", timeout=10, headers={"Connection": "close"})
        latencies.append(time.monotonic() - started)
        assert response.status_code == 200
        time.sleep(0.2)
    return latencies


def test_healthz_answers_while_fifty_slow_clients_hang_on(occ_web):
    hold = gunicorn_worker.HEAD_TIMEOUT_SECONDS + 4
    result = slow_clients.run(occ_web, connections=50, hold=hold, interval=0.25, trickle=2.0, bound=1.0)

    assert result.opened == 50
    assert result.probes >= 10, result
    # Every probe answered 200, each in under a second (on a loaded 2-core machine they take ms).
    assert (result.failed, result.over_bound) == (0, 0), (result, result.latencies)
    assert result.passed
    # Trickling one header line every 2 s does not keep a connection: its head is late and closed.
    assert result.open_at_end == 0, result


def test_clients_that_never_hang_up_after_their_answer_hold_no_thread(occ_web):
    """50 complete requests with ``Connection: close`` whose clients neither read nor close."""
    port = int(occ_web.rsplit(":", 1)[1])
    lingering = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(50)]
    try:
        for sock in lingering:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        time.sleep(0.5)
        assert max(probe_latencies(occ_web, 10)) < 1.0
        assert all(sock.recv(4096).startswith(b"HTTP/1.1 200 OK") for sock in lingering)
    finally:
        for sock in lingering:
            sock.close()


def test_healthz_answers_while_two_hundred_bodies_trickle_in(occ_web):
    """The attacker's finding: full heads, then one body byte at a time. The body waits in the
    poller, not on a thread, and is cut off at its deadline however steadily it trickles."""
    hold = gunicorn_worker.BODY_GRACE_SECONDS + 4
    result = slow_clients.run(occ_web, connections=200, hold=hold, interval=0.25, trickle=2.0, bound=1.0, body=True)

    assert result.opened == 200
    assert result.probes >= 10, result
    assert (result.failed, result.over_bound) == (0, 0), (result, result.latencies)
    assert result.open_at_end == 0, result  # past the body's deadline every one was closed


def test_a_body_trickled_past_its_deadline_is_answered_408(occ_web):
    port = int(occ_web.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(b"POST /api/auth/accounts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 50\r\n\r\n{")
        started, answer = time.monotonic(), b""
        while not answer and time.monotonic() - started < gunicorn_worker.BODY_GRACE_SECONDS * 2:
            time.sleep(1.0)  # a byte a second: never idle long enough for the keepalive cut
            with contextlib.suppress(OSError):
                sock.sendall(b" ")
            sock.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                answer = sock.recv(4096)
            sock.setblocking(True)
        waited = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert gunicorn_worker.BODY_GRACE_SECONDS - 1 < waited < gunicorn_worker.BODY_GRACE_SECONDS + 4


def test_a_stalled_body_is_cut_off_and_holds_no_thread(occ_web):
    """A form whose body stops half way waits in the poller and is answered 408 once idle."""
    port = int(occ_web.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=gunicorn_worker.IO_TIMEOUT_SECONDS * 3) as sock:
        sock.sendall(b"POST /console/sign-in HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Cookie: csrftoken=abcdefghijklmnopqrstuvwxyzABCDEF\r\n"
                     b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nusername=")
        started = time.monotonic()
        assert max(probe_latencies(occ_web, 5)) < 1.0  # meanwhile the others are served
        answer = sock.recv(4096)
        waited = time.monotonic() - started
    # Never served from half a body: refused once the client has been idle for keepalive seconds.
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert 3 < waited < gunicorn_worker.BODY_GRACE_SECONDS


def read_answer(sock: socket.socket) -> bytes:
    """One whole response (head and Content-Length body), or what came before the server hung up."""
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(4096)
        if not chunk:
            return received
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    length = int(next((line.split(b":", 1)[1] for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), b"0"))
    while len(body) < length and (chunk := sock.recv(4096)):
        body += chunk
    return head + b"\r\n\r\n" + body


def test_a_kept_alive_connection_outlasts_the_clients_pool(occ_web):
    """A black-box POST on a reused connection once got "Server disconnected without sending a
    response": the server closed idle connections after 5 s, exactly as long as httpx's pool (the
    tests', the CLI's) keeps them, so a request sent as the server's 5 s ran out was lost. The
    server now waits longer than its clients do; the client always gives up first."""
    port = int(occ_web.rsplit(":", 1)[1])
    client_pool_seconds = httpx.Limits().keepalive_expiry
    assert client_pool_seconds is not None
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert read_answer(sock).startswith(b"HTTP/1.1 200 OK")
        time.sleep(client_pool_seconds + 1)  # longer than any httpx client would reuse it
        sock.sendall(b"POST /api/auth/accounts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 2\r\n\r\n{}")
        assert read_answer(sock).startswith(b"HTTP/1.1 401"), "the kept-alive connection still serves"
    # Load balancers and ingress controllers keep idle upstream connections about 60 s.
    assert gunicorn_conf.keepalive > 60


def test_a_connection_that_sends_nothing_is_closed_at_the_request_idle_limit(occ_web):
    """The long wait is for a client between two requests; a connection that owes its first one
    is closed after REQUEST_IDLE_SECONDS, as before."""
    port = int(occ_web.rsplit(":", 1)[1])
    limit = gunicorn_worker.REQUEST_IDLE_SECONDS
    with socket.create_connection(("127.0.0.1", port), timeout=limit * 3) as sock:
        started = time.monotonic()
        assert sock.recv(1) == b""
        waited = time.monotonic() - started
    assert limit - 1 < waited < limit + 3


def test_the_former_sync_workers_stall_under_four_slow_clients(tmp_path):
    procfile = tmp_path / "Procfile"
    procfile.write_text(FORMER_WEB_LINE + "\n")
    with serving(tmp_path, procfile) as base_url:
        result = slow_clients.run(base_url, connections=4, hold=4, interval=0.25, trickle=2.0, bound=1.0)

    assert result.opened == 4
    assert not result.passed
    assert result.failed + result.over_bound >= 1, result


@pytest.mark.parametrize(("received", "complete"), [
    pytest.param(b"", False, id="nothing"),
    pytest.param(b"GET / HTTP/1.1\r\nHost: x\r\n", False, id="head-unfinished"),
    pytest.param(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", True, id="head-ended"),
    pytest.param(b"POST / HTTP/1.1\r\nContent-Length: 9\r\n\r\n{\"a\":", True, id="head-ended-body-started"),
    pytest.param(b"GET / HTTP/1.1\nHost: x\n", True, id="bare-lf-refused-by-the-parser"),
    pytest.param(b"GET /" + b"a" * gunicorn_worker.HEAD_BUFFER_BYTES, True, id="longer-than-the-buffer"),
])
def test_a_thread_takes_a_request_once_its_head_is_complete(received, complete):
    assert gunicorn_worker.head_complete(received) is complete


HEAD = b"POST /x HTTP/1.1\r\nHost: x\r\n"


@pytest.mark.parametrize(("received", "arrived"), [
    pytest.param(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", True, id="no-body"),
    pytest.param(HEAD + b"Content-Length: 9\r\n\r\n{\"a\":", False, id="length-partial"),
    pytest.param(HEAD + b"Content-Length: 9\r\n\r\n{\"a\": 1}", False, id="length-one-short"),
    pytest.param(HEAD + b"Content-Length: 8\r\n\r\n{\"a\": 1}", True, id="length-complete"),
    pytest.param(HEAD + b"Transfer-Encoding: chunked\r\n\r\n8\r\n{\"a\": 1}\r\n", False, id="chunked-partial"),
    pytest.param(HEAD + b"Transfer-Encoding: chunked\r\n\r\n8\r\n{\"a\": 1}\r\n0\r\n\r\n", True, id="chunked-last"),
    pytest.param(HEAD + b"Expect: 100-continue\r\nContent-Length: 9\r\n\r\n", True, id="expect-continue"),
    pytest.param(HEAD + b"Content-Length: nine\r\n\r\n", True, id="bad-length-to-the-parser"),
    pytest.param(HEAD + b"Content-Length: 9999999\r\n\r\n" + b"a" * gunicorn_worker.BODY_BUFFER_BYTES, True,
                 id="larger-than-the-buffer"),
])
def test_a_thread_takes_a_request_once_its_body_has_arrived(received, arrived):
    assert gunicorn_worker.framing(received).body_arrived(received) is arrived
