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
  connection idle for gunicorn's ``keepalive`` seconds, is closed.
- Once the head is in, gthread parses and serves the request as before, with each read of
  the body and each write of the response bounded by ``IO_TIMEOUT_SECONDS``.
- A connection to close after its response is half-closed and lingers in the poller, not on
  a thread or the main loop, until the client hangs up or ``keepalive`` seconds pass.

Plain HTTP/1 only: with gunicorn's own TLS (``certfile``) or HTTP/2 the bytes on the socket are
framed, so this worker behaves exactly like gthread there (TLS ends at a proxy in front).
"""

from __future__ import annotations

import socket
import time
from typing import Any

from gunicorn.workers import gthread

HEAD_TIMEOUT_SECONDS = 10.0
IO_TIMEOUT_SECONDS = 15.0
# A head longer than this goes to gunicorn's parser as it is, which enforces
# limit_request_line, limit_request_fields and limit_request_field_size.
HEAD_BUFFER_BYTES = 64 * 1024
# What a closing connection may still send us (an unread body) before it is cut off.
LINGER_DRAIN_BYTES = 64 * 1024


def head_complete(received: bytes) -> bool:
    """Whether gunicorn's parser can take over: the head has ended, is too long to wait for,
    or uses a bare LF (which the parser refuses at once, and which never ends a head)."""
    return (b"\r\n\r\n" in received or len(received) >= HEAD_BUFFER_BYTES
            or received.count(b"\n") != received.count(b"\r\n"))


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
        if head_complete(received):
            conn.occ_head_deadline = None  # the next request on this connection starts afresh
            keep = super().handle(conn)
            return self._start_closing(conn) if keep is False else keep
        if closed:
            conn.close()  # the client went away mid-head
            return False
        now = time.monotonic()
        if received and getattr(conn, "occ_head_deadline", None) is None:
            conn.occ_head_deadline = now + HEAD_TIMEOUT_SECONDS
        if received and now > conn.occ_head_deadline:
            self.log.info("Closed a connection from %s: its request head took over %.0fs",
                          conn.client, HEAD_TIMEOUT_SECONDS)
            conn.close()  # nothing was answered, so there is nothing to linger for
            return False
        return gthread._DEFER  # to the poller, until more arrives or keepalive expires

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
        if len(received) < HEAD_BUFFER_BYTES:
            chunk, closed = _recv_now(conn.sock, HEAD_BUFFER_BYTES - len(received))
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
                return gthread._DEFER  # nothing yet: wait in the poller (keepalive at most)
            conn.occ_drained += len(chunk)
        conn.close()
        return False
