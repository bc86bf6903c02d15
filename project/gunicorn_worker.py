"""gunicorn's threaded worker, giving a connection a thread only while there is work for one.

gunicorn's ``gthread`` worker hands every accepted connection to a thread, which waits up to
five seconds for a first byte and then reads the head with blocking reads. A client that
sends part of a head and stops (slowloris) holds that thread until it hangs up, so a few
dozen such connections stall the worker, health checks included. After a response that
closes the connection, gthread's main loop lingers up to two seconds per connection for the
client to hang up (RFC 9112 section 9.6), looking at no other connection meanwhile.
gunicorn's own advice is a buffering proxy in front; ``make run`` has none, and production
may not either.

This worker keeps gthread and changes only when a thread works on a connection:

- It reads what has arrived without waiting (into the connection's own read buffer, where
  gunicorn's parser finds it) and, until the blank line that ends the head is there, hands
  the connection back to the worker's poller, which wakes it when more arrives and costs no
  thread. A head not complete within ``HEAD_TIMEOUT_SECONDS`` of its first byte, or a
  connection idle for ``REQUEST_IDLE_SECONDS``, is closed.
- The same holds for the body: a thread takes the request only once its body has arrived too
  (up to ``BODY_BUFFER_BYTES`` of it; a chunked body up to its last chunk), so a client that
  sends its head and then trickles the body costs no thread. The whole body has a deadline,
  ``BODY_GRACE_SECONDS`` plus its length at ``MIN_BODY_BYTES_PER_SECOND``; a body that misses
  it is answered 408 and the connection closed. (Before, the timeout applied per read, so 200
  clients sending one body byte every 10 s held every thread and ``/healthz`` failed.)
- Once the request is in, gthread parses and serves it as before, with each write of the
  response bounded by ``IO_TIMEOUT_SECONDS`` and every read of the body (a body larger than
  the buffer, or one that did not announce itself) by the body's deadline as well.
- A connection to close after its response is half-closed and lingers in the poller, not on
  a thread or the main loop, until the client hangs up or ``REQUEST_IDLE_SECONDS`` pass.
- Two idle limits where gthread has one (``keepalive`` for both): a connection that owes a
  request (new, or part of a head or body sent) may be idle ``REQUEST_IDLE_SECONDS``; one kept
  alive after a complete response waits ``keepalive`` seconds for the client's next request.
  That must outlast the clients' own pools: when the server closes an idle connection just as
  the client reuses it, the request is lost ("Server disconnected without sending a
  response"; httpx and the CLI keep a connection 5 s, load balancers about 60 s), so the
  client must always be the one to give up first.

Plain HTTP/1 only: with gunicorn's own TLS (``certfile``) or HTTP/2 the bytes on the socket are
framed, so this worker behaves exactly like gthread there (TLS ends at a proxy in front).
"""

from __future__ import annotations

import contextlib
import socket
import time
from dataclasses import dataclass
from typing import Any

from gunicorn.workers import gthread

HEAD_TIMEOUT_SECONDS = 10.0
# How long a connection that owes a request (new, or its head or body incomplete) may be idle.
REQUEST_IDLE_SECONDS = 5.0
IO_TIMEOUT_SECONDS = 15.0
# A head longer than this goes to gunicorn's parser as it is, which enforces
# limit_request_line, limit_request_fields and limit_request_field_size.
HEAD_BUFFER_BYTES = 64 * 1024
# A body up to this size arrives before a thread takes its request; a larger one is read by
# the thread, still within the body's deadline.
BODY_BUFFER_BYTES = 256 * 1024
REQUEST_BUFFER_BYTES = HEAD_BUFFER_BYTES + BODY_BUFFER_BYTES
BODY_GRACE_SECONDS = 10.0
MIN_BODY_BYTES_PER_SECOND = 16 * 1024
_LATE_BODY_TEXT = b"The request body did not arrive in time.\n"
REQUEST_TIMEOUT_ANSWER = (b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: text/plain\r\n"
                          b"Content-Length: %d\r\n\r\n%s" % (len(_LATE_BODY_TEXT), _LATE_BODY_TEXT))
# What a closing connection may still send us (an unread body) before it is cut off.
LINGER_DRAIN_BYTES = 64 * 1024


def head_complete(received: bytes) -> bool:
    """Whether gunicorn's parser can take over: the head has ended, is too long to wait for,
    or uses a bare LF (which the parser refuses at once, and which never ends a head)."""
    return (b"\r\n\r\n" in received or len(received) >= HEAD_BUFFER_BYTES
            or received.count(b"\n") != received.count(b"\r\n"))


@dataclass(frozen=True)
class Framing:
    """What a complete request head says about the body that follows it."""

    head_bytes: int  # the head with its blank line
    length: int = 0  # Content-Length, 0 when there is none
    chunked: bool = False
    wait: bool = True  # False: let gunicorn's parser decide (an Expect, a malformed length)

    def body_arrived(self, received: bytes) -> bool:
        """Whether a thread may take the request: its body is here, or as much as we buffer."""
        body = received[self.head_bytes:]
        if not self.wait or len(body) >= BODY_BUFFER_BYTES:
            return True
        if self.chunked:  # the last chunk, no trailers (with trailers: the deadline's thread read)
            return body.endswith(b"0\r\n\r\n") and (body == b"0\r\n\r\n" or b"\r\n0\r\n\r\n" in body)
        return len(body) >= self.length

    def deadline(self, head_arrived: float) -> float:
        expected = self.length if not self.chunked else BODY_BUFFER_BYTES
        return head_arrived + BODY_GRACE_SECONDS + expected / MIN_BODY_BYTES_PER_SECOND


def framing(received: bytes) -> Framing:
    """The body framing of the head at the start of ``received`` (which ``head_complete``)."""
    head, found, _ = received.partition(b"\r\n\r\n")
    if not found:
        return Framing(head_bytes=len(received), wait=False)
    length, chunked, wait = 0, False, True
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name, value = name.strip().lower(), value.strip().lower()
        if name == b"content-length":
            wait = wait and value.isdigit() and length in (0, int(value))
            length = int(value) if value.isdigit() else 0
        elif name == b"transfer-encoding":
            chunked = chunked or value.endswith(b"chunked")
        elif name == b"expect":  # the client waits for "100 Continue", which gunicorn sends
            wait = False
    return Framing(head_bytes=len(head) + 4, length=length, chunked=chunked, wait=wait)


class _BodyDeadlineSocket:
    """The socket as the parser reads it while a request is served: no read waits past the
    body's deadline (a socket timeout bounds one read; this bounds them all)."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock, self.deadline = sock, deadline

    def recv(self, size: int) -> bytes:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the request body did not arrive in time")
        self.sock.settimeout(min(IO_TIMEOUT_SECONDS, remaining))
        try:
            return self.sock.recv(size)
        finally:
            self.sock.settimeout(IO_TIMEOUT_SECONDS)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sock, name)


def _recv_now(sock: socket.socket, limit: int) -> tuple[bytes, bool]:
    """What waits on the socket (at most ``limit`` bytes) without blocking, and whether the
    client has closed its side (or reset the connection). Leaves the socket non-blocking
    (gthread sets the mode it needs before each use): with a timeout set, Python would wait
    for data up to that timeout even with MSG_DONTWAIT."""
    try:
        sock.setblocking(False)
        chunk = sock.recv(limit)
    except (BlockingIOError, InterruptedError):
        return b"", False
    except OSError:
        return b"", True
    return chunk, chunk == b""


class ThreadWorker(gthread.ThreadWorker):
    """``gthread`` whose threads never wait on a slow client."""

    def handle(self, conn: Any) -> Any:
        if self.cfg.is_ssl:
            return super().handle(conn)
        if getattr(conn, "occ_closing", False):
            return self._linger(conn)
        conn.init()  # the parser and its read buffer (once per connection)
        if conn.is_http2:
            return super().handle(conn)
        received, closed = self._take_arrived(conn)
        now = time.monotonic()
        if head_complete(received):
            frame = framing(received)
            if getattr(conn, "occ_body_deadline", None) is None:
                conn.occ_body_deadline = frame.deadline(now)
            if frame.body_arrived(received):
                return self._serve(conn)
            if closed:
                conn.close()  # the client went away mid-body
                return False
            if now > conn.occ_body_deadline:
                return self._refuse_late_body(conn)
            return gthread._DEFER  # to the poller, until more of the body arrives
        if closed:
            conn.close()  # the client went away mid-head
            return False
        if received and getattr(conn, "occ_head_deadline", None) is None:
            conn.occ_head_deadline = now + HEAD_TIMEOUT_SECONDS
        if received and now > conn.occ_head_deadline:
            self.log.info("Closed a connection from %s: its request head took over %.0fs",
                          conn.client, HEAD_TIMEOUT_SECONDS)
            conn.close()  # nothing was answered, so there is nothing to linger for
            return False
        return gthread._DEFER  # to the poller, until more arrives or REQUEST_IDLE_SECONDS pass

    def _serve(self, conn: Any) -> Any:
        """Hand the request, head and body arrived, to gthread on this thread."""
        unreader = conn.parser.unreader
        unreader.sock = _BodyDeadlineSocket(conn.sock, conn.occ_body_deadline)
        conn.occ_head_deadline = conn.occ_body_deadline = None  # the next request starts afresh
        try:
            keep = super().handle(conn)
        finally:
            unreader.sock = conn.sock
        return self._start_closing(conn) if keep is False else keep

    def _refuse_late_body(self, conn: Any) -> Any:
        self.log.info("Closed a connection from %s: its request body missed its deadline", conn.client)
        try:
            conn.sock.setblocking(True)
            conn.sock.settimeout(1.0)
            conn.sock.sendall(REQUEST_TIMEOUT_ANSWER)
        except OSError:
            conn.close()
            return False
        return self._start_closing(conn)

    def finish_request(self, conn: Any, fs: Any) -> None:
        super().finish_request(conn, fs)
        # gthread parks a deferred connection (appended last) for ``keepalive`` seconds, the idle
        # limit between requests; one that owes a request gets the shorter one. Every pending
        # connection gets the same, so the deque stays sorted by timeout.
        if self.pending_conns and self.pending_conns[-1] is conn:
            conn.timeout = min(conn.timeout, time.monotonic() + REQUEST_IDLE_SECONDS)

    def murder_pending(self) -> None:
        # A body that stopped for REQUEST_IDLE_SECONDS is answered 408 before gthread closes it.
        now = time.monotonic()
        for conn in self.pending_conns:
            if conn.timeout > now:
                break
            if getattr(conn, "occ_body_deadline", None) is not None:
                with contextlib.suppress(OSError):  # non-blocking: what fits in the send buffer
                    conn.sock.send(REQUEST_TIMEOUT_ANSWER)
        super().murder_pending()

    def handle_request(self, req: Any, conn: Any) -> Any:
        # gthread made the socket blocking without a timeout: bound the body and the response.
        conn.sock.settimeout(IO_TIMEOUT_SECONDS)
        return super().handle_request(req, conn)

    @staticmethod
    def _take_arrived(conn: Any) -> tuple[bytes, bool]:
        """Move what waits on the socket into the parser's buffer; return the whole buffer and
        whether the client has closed its side."""
        unreader = conn.parser.unreader
        received = unreader.take_buffered()
        closed = False
        if len(received) < REQUEST_BUFFER_BYTES:
            chunk, closed = _recv_now(conn.sock, REQUEST_BUFFER_BYTES - len(received))
            received += chunk
        unreader.unread(received)
        return received, closed

    def _start_closing(self, conn: Any) -> Any:
        """Send FIN after the response and let the connection linger in the poller."""
        try:
            conn.sock.shutdown(socket.SHUT_WR)
        except OSError:  # already closed or reset
            conn.close()
            return False
        conn.occ_closing, conn.occ_drained = True, 0
        return self._linger(conn)

    @staticmethod
    def _linger(conn: Any) -> Any:
        """Read and drop what the closing client still sends; close once it hangs up."""
        while conn.occ_drained < LINGER_DRAIN_BYTES:
            chunk, closed = _recv_now(conn.sock, LINGER_DRAIN_BYTES - conn.occ_drained)
            if closed:
                break
            if not chunk:
                return gthread._DEFER  # nothing yet: wait in the poller (REQUEST_IDLE_SECONDS at most)
            conn.occ_drained += len(chunk)
        conn.close()
        return False
