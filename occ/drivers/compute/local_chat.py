"""A conversation with a gateway's OpenAI-compatible chat endpoint, streamed (``stream: true``,
server-sent events): the local driver's on loopback with the password as a bearer token
(``stream_chat``), and the pieces the Kubernetes driver shares (``chat_body``, ``stream_chat_at``
for a gateway reached at a URL, ``sse_events`` and ``reply_deltas`` for a stream read another
way).

Only plain values come in (address, credentials, turns); text deltas come out. Every failure is a
``ComputeError`` with one of the ``CHAT_*`` codes, so the caller can say what went wrong in
plain words without ever seeing the gateway's address or password.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence

import httpx
from httpx_sse import SSEError, connect_sse

from occ.drivers.compute.base import (
    CHAT_GATEWAY_NOT_RUNNING,
    CHAT_MODEL_REFUSED,
    CHAT_TIMEOUT,
    ChatMessage,
    ComputeError,
)

CHAT_PATH = "/v1/chat/completions"
# The gateway routes ``openclaw`` to the Agent's configured primary model.
GATEWAY_MODEL = "openclaw"


def _refused(message: str) -> ComputeError:
    return ComputeError(CHAT_MODEL_REFUSED, retryable=False, message=message)


def _delta(data: str) -> str:
    """The text of one streamed chunk (``choices[0].delta.content``); an error chunk raises."""
    try:
        chunk = json.loads(data)
    except ValueError as exc:
        raise _refused("the gateway streamed something that is not JSON") from exc
    if not isinstance(chunk, dict):
        return ""
    if chunk.get("error"):
        raise _refused("the model returned an error")
    choices = chunk.get("choices") or []
    if not choices or not isinstance(choices[0], dict):
        return ""
    delta = choices[0].get("delta") or {}
    content = delta.get("content") if isinstance(delta, dict) else None
    return content if isinstance(content, str) else ""


def chat_body(messages: Sequence[ChatMessage]) -> dict[str, object]:
    return {"model": GATEWAY_MODEL, "stream": True,
            "messages": [{"role": m.role, "content": m.content} for m in messages]}


def reply_deltas(events: Iterable[tuple[str, str]]) -> Iterator[str]:
    """The reply's text from the stream's (event, data) pairs, up to ``[DONE]``."""
    for event, data in events:
        if data.strip() == "[DONE]":
            return
        if event == "error":
            raise _refused("the gateway reported an error")
        text = _delta(data)
        if text:
            yield text


def sse_events(chunks: Iterable[bytes]) -> Iterator[tuple[str, str]]:
    """Server-sent events (event name, data) from the raw bytes of a stream, as they arrive
    (the fields a chat stream uses: ``event`` and ``data``; comments and ``id`` are skipped)."""
    buffer = b""
    event = ""
    data: list[str] = []
    for chunk in chunks:
        buffer += chunk
        *lines, buffer = buffer.replace(b"\r\n", b"\n").split(b"\n")
        for raw in lines:
            line = raw.decode("utf-8", errors="replace")
            if not line:
                if data:
                    yield event or "message", "\n".join(data)
                event, data = "", []
                continue
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "data":
                data.append(value)
            elif name == "event":
                event = value
    if data:
        yield event or "message", "\n".join(data)


def stream_chat(*, port: int, password: str, messages: Sequence[ChatMessage], timeout: float,
                client: httpx.Client | None = None) -> Iterator[str]:
    """Yield the reply's text deltas from the gateway on ``127.0.0.1:port``."""
    yield from stream_chat_at(f"http://127.0.0.1:{port}{CHAT_PATH}", headers={"Authorization": f"Bearer {password}"},
                              messages=messages, timeout=timeout, client=client)


def stream_chat_at(url: str, *, headers: Mapping[str, str], messages: Sequence[ChatMessage], timeout: float,
                   client: httpx.Client | None = None) -> Iterator[str]:
    """Yield the reply's text deltas from the chat endpoint at ``url``, sending ``headers``."""
    owned = client is None
    http = client or httpx.Client(timeout=httpx.Timeout(timeout, connect=5.0))
    try:
        with connect_sse(http, "POST", url, json=chat_body(messages), headers=dict(headers)) as source:
            response = source.response
            if response.status_code in (401, 403):
                raise ComputeError(CHAT_GATEWAY_NOT_RUNNING, retryable=False,
                                   message="the gateway refused OCC's credentials")
            if response.status_code != 200:
                response.read()
                raise _refused(f"the gateway answered {response.status_code}")
            yield from reply_deltas((event.event, event.data) for event in source.iter_sse())
    except httpx.TimeoutException as exc:
        raise ComputeError(CHAT_TIMEOUT, retryable=False, message="the gateway did not answer in time") from exc
    except (httpx.ConnectError, httpx.RemoteProtocolError) as exc:
        raise ComputeError(CHAT_GATEWAY_NOT_RUNNING, retryable=False,
                           message="the gateway is not answering") from exc
    except SSEError as exc:
        raise _refused("the gateway did not stream a reply") from exc
    except httpx.HTTPError as exc:
        raise ComputeError(CHAT_GATEWAY_NOT_RUNNING, retryable=False, message="the gateway connection failed") from exc
    finally:
        if owned:
            http.close()
