"""The local driver's chat (``local_chat.stream_chat`` and ``LocalComputeDriver.chat``) over real
loopback HTTP: the fake OpenAI-compatible server stands where the gateway's endpoint is."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from occ.drivers.compute import CHAT_GATEWAY_NOT_RUNNING, CHAT_MODEL_REFUSED, CHAT_TIMEOUT, ChatMessage, ComputeError
from occ.drivers.compute.local import LocalComputeDriver
from occ.drivers.compute.local_chat import reply_deltas, sse_events, stream_chat
from occ.ids import IdPrefix, new_id
from tests.fakes.fake_openai import REPLY, FakeOpenAI
from tests.occ.drivers.compute.local_support import port_range
from tests.ports import free_port

TURNS = [ChatMessage(role="user", content="hello")]



def test_the_reply_streams_from_an_openai_compatible_endpoint_with_the_password():
    with FakeOpenAI() as model:
        pieces = list(stream_chat(port=model.port, password="the-gateway-password", messages=TURNS, timeout=10))
        assert "".join(pieces) == REPLY
        request = model.requests[-1]
        assert request["path"] == "/v1/chat/completions"
        assert request["stream"]
        assert request["authorized"]


def test_server_sent_events_are_read_across_chunk_boundaries_as_they_arrive():
    """``sse_events`` (the Kubernetes driver reads the service proxy's stream with it): an event
    split over chunks, CRLF line ends, comments, multi-line data, the end marker."""
    stream = [b'data: {"choices": [{"delta": {"content": "DETER', b'MINISTIC"}}]}\r\n\r\n: a comment\n',
              b"event: message\ndata: {\"choices\": [{\"delta\": {\"content\": \"-REPLY\"}}]}\n\n",
              b'data: {"choices": [{"delta":\ndata: {"content": "-42"}}]}\n\ndata: [DONE]\n\n',
              b'data: {"choices": [{"delta": {"content": "after the end"}}]}\n\n']
    assert [event for event, _ in sse_events(iter(stream))] == ["message"] * 5
    assert "".join(reply_deltas(sse_events(iter(stream)))) == "DETERMINISTIC-REPLY-42"


def test_an_error_event_is_the_model_refusing():
    with pytest.raises(ComputeError) as refused:
        list(reply_deltas(sse_events([b"event: error\ndata: {}\n\n"])))
    assert refused.value.code == CHAT_MODEL_REFUSED


def test_nothing_listening_is_gateway_not_running():
    with pytest.raises(ComputeError) as failed:
        list(stream_chat(port=free_port(), password="p", messages=TURNS, timeout=5))
    assert failed.value.code == CHAT_GATEWAY_NOT_RUNNING
    assert failed.value.retryable is False


class _Answer(BaseHTTPRequestHandler):
    mode = "status"

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.server.mode == "silent":  # type: ignore[attr-defined]
            self.server.release.wait(10)  # type: ignore[attr-defined]
            return
        self.send_response(502 if self.server.mode == "status" else 200)  # type: ignore[attr-defined]
        self.send_header("Content-Type", "application/json" if self.server.mode == "status" else "text/event-stream")  # type: ignore[attr-defined]
        self.end_headers()
        if self.server.mode == "stream-error":  # type: ignore[attr-defined]
            self.wfile.write(b'data: {"error": {"message": "the provider refused"}}\n\n')
        else:
            self.wfile.write(b'{"error": {"message": "upstream failed"}}')


@pytest.fixture
def answering():
    servers = []

    def start(mode: str) -> int:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
        server.mode = mode  # type: ignore[attr-defined]
        server.release = threading.Event()  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server.server_address[1]

    yield start
    for server in servers:
        server.release.set()  # type: ignore[attr-defined]
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("mode", ["status", "stream-error"])
def test_an_error_answer_is_model_refused(answering, mode):
    with pytest.raises(ComputeError) as failed:
        list(stream_chat(port=answering(mode), password="p", messages=TURNS, timeout=5))
    assert failed.value.code == CHAT_MODEL_REFUSED


def test_silence_is_a_timeout(answering):
    with pytest.raises(ComputeError) as failed:
        list(stream_chat(port=answering("silent"), password="p", messages=TURNS, timeout=0.5))
    assert failed.value.code == CHAT_TIMEOUT


def test_the_driver_without_a_gateway_record_says_not_running(tmp_path):
    driver = LocalComputeDriver(data_dir=tmp_path, port_range=port_range())
    with pytest.raises(ComputeError) as failed:
        list(driver.chat(namespace_id=new_id(IdPrefix.NAMESPACE), agent_id=new_id(IdPrefix.AGENT),
                         revision_id=new_id(IdPrefix.REVISION),
                         gateway_password=None, messages=TURNS, timeout=5))
    assert failed.value.code == CHAT_GATEWAY_NOT_RUNNING
