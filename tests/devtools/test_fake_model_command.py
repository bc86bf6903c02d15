"""``manage.py occ_fake_model``: the loopback fake model, served for people without internet.

Run as a real process (as README has people run it) on a free port; stopped with SIGINT
(Ctrl-C) by its PID, or SIGKILL in ``finally`` if it did not stop.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from devtools.fake_openai import MODEL_ID, REPLY

REPO = Path(__file__).resolve().parents[2]
LISTENING = re.compile(r"on (http://127\.0\.0\.1:\d+/v1) \(model id echo-model\)")
START_TIMEOUT_SECONDS = 90


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def start(*args: str, sigint_ignored: bool = False) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "manage.py", "occ_fake_model", *args], cwd=REPO, text=True,
                            env=os.environ | {"PYTHONUNBUFFERED": "1"}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            preexec_fn=_ignore_sigint if sigint_ignored else None)


@contextlib.contextmanager
def served(*args: str, sigint_ignored: bool = False) -> Iterator[tuple[subprocess.Popen[str], str]]:
    process = start(*args, sigint_ignored=sigint_ignored)
    try:
        line = process.stdout.readline() if process.stdout else ""
        match = LISTENING.search(line)
        assert match, f"no URL announced: {line!r} {process.stderr.read() if process.poll() is not None else ''}"
        yield process, match.group(1)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def test_it_serves_models_and_a_streamed_and_a_plain_reply_until_ctrl_c():
    with served("--port", "0") as (process, base_url):
        models = httpx.get(f"{base_url}/models", timeout=10)
        assert [m["id"] for m in models.json()["data"]] == [MODEL_ID]
        plain = httpx.post(f"{base_url}/chat/completions", timeout=10,
                           json={"model": MODEL_ID, "messages": [{"role": "user", "content": "hi"}]})
        assert plain.json()["choices"][0]["message"]["content"] == REPLY
        with httpx.stream("POST", f"{base_url}/chat/completions", timeout=10,
                          json={"model": MODEL_ID, "stream": True, "messages": []}) as streamed:
            assert streamed.headers["content-type"] == "text/event-stream"
            events = [line.removeprefix("data: ") for line in streamed.iter_lines() if line.startswith("data: ")]
        assert events[-1] == "[DONE]"
        assert "".join(json.loads(e)["choices"][0]["delta"].get("content", "") for e in events[:-1]) == REPLY

        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 0
        assert "fake model stopped" in (process.stdout.read() if process.stdout else "")


def test_the_reply_can_be_chosen():
    with served("--port", "0", "--reply", "OFFLINE-HELLO") as (_, base_url):
        reply = httpx.post(f"{base_url}/chat/completions", timeout=10, json={"messages": []})
        assert reply.json()["choices"][0]["message"]["content"] == "OFFLINE-HELLO"


@pytest.mark.parametrize(("port", "message"), [
    pytest.param("in-use", "Cannot listen on 127.0.0.1:", id="port-in-use"),
    pytest.param("70000", "--port must be between 0 and 65535", id="port-out-of-range"),
])
def test_a_port_it_cannot_use_is_a_clear_error(port, message):
    with contextlib.ExitStack() as stack:
        if port == "in-use":
            with served("--port", "0") as (_, base_url):
                port = base_url.rsplit(":", 1)[1].removesuffix("/v1")
                process = stack.enter_context(start("--port", port))
                _, stderr = process.communicate(timeout=START_TIMEOUT_SECONDS)
        else:
            process = stack.enter_context(start("--port", port))
            _, stderr = process.communicate(timeout=START_TIMEOUT_SECONDS)
    assert process.returncode != 0
    assert message in stderr



def test_ctrl_c_stops_it_even_when_started_with_sigint_ignored():
    # As a background job of a non-interactive shell (CI) is started.
    with served("--port", "0", sigint_ignored=True) as (process, base_url):
        assert httpx.get(f"{base_url}/models", timeout=10).status_code == 200
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 0
