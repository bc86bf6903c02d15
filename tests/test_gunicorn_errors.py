"""The web process of ``make run`` answers gunicorn's own refusals in the API's JSON envelope.

gunicorn refuses an over-long request line (414), too many or too large headers (431) and a
request it cannot parse (400) before Django runs; ``occ.api.server_errors`` (installed by
``project.wsgi``) writes those answers. Starts the Procfile's web command (gunicorn, as configured
there) on a loopback port with a data directory of its own and talks raw HTTP to it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ports import free_port
from tests.processes import group_running

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT_SECONDS = 120
MARKER = b"echo-marker-5b1c"


def web_command() -> str:
    """The Procfile's web line, from its gunicorn on (preflight is tested elsewhere)."""
    line = next(line for line in (ROOT / "Procfile").read_text().splitlines() if line.startswith("web:"))
    return line[line.index("exec gunicorn"):]



def exchange(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
            if b"\r\n\r\n" in received:
                head, _, body = received.partition(b"\r\n\r\n")
                length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
                if length and len(body) >= int(length.group(1)):
                    break
    return received


def parsed(response: bytes) -> tuple[int, dict[str, str], dict]:
    head, _, body = response.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, json.loads(body)


@pytest.fixture(scope="module")
def web(tmp_path_factory) -> Iterator[int]:
    data_dir = tmp_path_factory.mktemp("occ-data")
    port = free_port()
    env = {**os.environ, "OCC_DATA_DIR": str(data_dir), "OCC_PORT": str(port),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    for name in ("DATABASE_URL", "CELERY_BROKER_URL", "OCC_TEST_DATABASE_NAME"):
        env.pop(name, None)
    subprocess.run([sys.executable, "-m", "project.data_dir"], env=env, cwd=ROOT, check=True, capture_output=True)
    log = data_dir / "web.log"
    with log.open("wb") as out:
        process = subprocess.Popen(["bash", "-c", web_command()], env=env, cwd=ROOT, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while True:
            with contextlib.suppress(OSError):
                if b" 200 " in exchange(port, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"):
                    break
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"gunicorn did not answer /healthz:\n{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.3)
        yield port
    finally:
        if group_running(process.pid):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


HOST = b"Host: 127.0.0.1\r\n"


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        pytest.param(b"GET /namespaces/" + MARKER + b"x" * 9000 + b" HTTP/1.1\r\n" + HOST + b"\r\n", 414,
                     id="request-line-too-long"),
        pytest.param(b"GET /namespaces HTTP/1.1\r\n" + HOST + b"X-Big: " + MARKER + b"x" * 9000 + b"\r\n\r\n", 431,
                     id="header-too-large"),
        pytest.param(b"GET /namespaces HTTP/1.1\r\n" + HOST + b"".join(b"X-H%d: 1\r\n" % i for i in range(120))
                     + b"\r\n", 431, id="too-many-headers"),
        pytest.param(MARKER + b" \x01\r\n\r\n", 400, id="not-http"),
        pytest.param(b"GET /namespaces HTTP/1.1\r\n" + HOST + b"Bad Header" + MARKER + b"\r\n\r\n", 400,
                     id="malformed-header"),
    ],
)
def test_gunicorn_refusals_are_enveloped(web, request_bytes, status):
    got, headers, body = parsed(exchange(web, request_bytes))
    assert got == status
    assert headers["content-type"] == "application/json"
    assert body["error"]["code"] == "INVALID_REQUEST"
    assert body["meta"]["requestId"].startswith("req_")
    assert MARKER.decode() not in json.dumps(body)


@pytest.mark.parametrize(
    ("request_bytes", "status", "code"),
    [
        pytest.param(b"GET /namespaces HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n", 400,
                     "INVALID_REQUEST", id="foreign-host"),
        pytest.param(b"GET //namespaces HTTP/1.1\r\n" + HOST + b"Connection: close\r\n\r\n", 404, "NOT_FOUND",
                     id="double-slash"),
        pytest.param(b"GET /NAMESPACES/ns_x HTTP/1.1\r\n" + HOST + b"Connection: close\r\n\r\n", 404, "NOT_FOUND",
                     id="upper-case"),
        pytest.param(b"GET /namespaces/ns_%00 HTTP/1.1\r\n" + HOST + b"Connection: close\r\n\r\n", 400,
                     "INVALID_REQUEST", id="nul-in-path"),
    ],
)
def test_django_refusals_over_real_http_are_enveloped(web, request_bytes, status, code):
    got, headers, body = parsed(exchange(web, request_bytes.replace(b"HTTP/1.1", b"HTTP/1.0")))
    assert (got, body["error"]["code"]) == (status, code)
    assert headers["content-type"] == "application/json"


def chunked(body: bytes, size: int = 7) -> bytes:
    parts = [body[i:i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in parts) + b"0\r\n\r\n"


def dechunked(response: bytes) -> bytes:
    head, _, rest = response.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" not in head.lower():
        return response
    body = b""
    while True:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return head + b"\r\n\r\n" + body
        body, rest = body + rest[:size], rest[size + 2:]


def test_a_chunked_body_is_read_as_a_body(web):
    """The attacker's finding: a chunked body reached Django as empty. Here the API boundary
    sees it, and refuses a body on a GET as it does one sent with a Content-Length."""
    request = (b"GET /namespaces HTTP/1.1\r\n" + HOST + b"Content-Type: application/json\r\n"
               b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + chunked(b'{"name": "chunked"}'))
    got, _, body = parsed(dechunked(exchange(web, request)))
    assert (got, body["error"]["message"]) == (400, "This request does not take a body.")


def test_a_chunked_body_over_the_limit_is_413(web):
    request = (b"POST /namespaces HTTP/1.1\r\n" + HOST + b"Content-Type: application/json\r\n"
               b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
               + chunked(b'{"name": "' + b"x" * (500 * 1024) + b'"}', size=16 * 1024))
    got, _, body = parsed(dechunked(exchange(web, request)))
    assert (got, body["error"]["code"]) == (413, "PAYLOAD_TOO_LARGE")
