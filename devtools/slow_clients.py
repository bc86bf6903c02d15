"""Slow clients against a running OCC: does ``/healthz`` keep answering while they hang on?

Opens ``--connections`` sockets to the server, sends each a request line and a first header,
and then, slowloris-style, one more header line every ``--trickle`` seconds, never the blank
line that ends the head; with ``--body``, a complete head of a form ``POST`` and then one
byte of its body every ``--trickle`` seconds. While they are open it asks ``/healthz`` on fresh connections every
``--interval`` seconds for ``--hold`` seconds and prints one JSON line: how many slow
connections were open, the slowest probe, how many probes failed or took ``--bound`` seconds
or more. Exits 0 when every probe answered 200 within the bound, 1 otherwise.

Run: ``python -m devtools.slow_clients --url http://127.0.0.1:8000`` against ``make run``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import sys
import time
from dataclasses import asdict, dataclass, field
from urllib.parse import urlsplit

import httpx


@dataclass
class Result:
    connections: int
    opened: int = 0
    open_at_end: int = 0
    probes: int = 0
    failed: int = 0
    over_bound: int = 0
    slowest_seconds: float = 0.0
    latencies: list[float] = field(default_factory=list, repr=False)

    @property
    def passed(self) -> bool:
        return self.probes > 0 and self.failed == 0 and self.over_bound == 0 and self.opened == self.connections


BODY_PATH = "/console/sign-in"
BODY_LENGTH = 1000


def _open_slow(host: str, port: int, index: int, *, body: bool) -> socket.socket:
    sock = socket.create_connection((host, port), timeout=5)
    if body:
        sock.sendall(f"POST {BODY_PATH}?slow={index} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                     f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {BODY_LENGTH}\r\n\r\n"
                     "username=".encode())
    else:
        sock.sendall(f"GET /healthz?slow={index} HTTP/1.1\r\nHost: {host}:{port}\r\n".encode())
    return sock


def _still_open(sock: socket.socket) -> bool:
    """Whether the server still waits on the connection: it has neither answered nor closed it
    (no data, no EOF, no reset)."""
    try:
        sock.setblocking(False)
        sock.recv(1, socket.MSG_PEEK)
        return False  # an answer (a 408) or EOF
    except BlockingIOError:
        return True  # nothing to read: open and waiting
    except OSError:
        return False
    finally:
        with contextlib.suppress(OSError):
            sock.setblocking(True)


def run(url: str, *, connections: int, hold: float, interval: float, trickle: float, bound: float,
        body: bool = False) -> Result:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    result = Result(connections=connections)
    slow: list[socket.socket] = []
    try:
        for index in range(connections):
            with contextlib.suppress(OSError):
                slow.append(_open_slow(host, port, index, body=body))
        result.opened = len(slow)
        # Let the server take them in (accept, hand to a thread) before the first probe.
        time.sleep(min(1.0, interval))
        end, next_trickle, line = time.monotonic() + hold, time.monotonic() + trickle, 0
        with httpx.Client(base_url=url, timeout=bound * 5, headers={"Connection": "close"}) as client:
            while time.monotonic() < end:
                if time.monotonic() >= next_trickle:
                    line += 1
                    for sock in slow:
                        with contextlib.suppress(OSError):
                            sock.sendall(b"a" if body else f"X-Slow-{line}: {line}\r\n".encode())
                    next_trickle += trickle
                started = time.monotonic()
                try:
                    ok = client.get("/healthz").status_code == 200
                except httpx.HTTPError:
                    ok = False
                elapsed = time.monotonic() - started
                result.probes += 1
                result.latencies.append(round(elapsed, 4))
                result.slowest_seconds = max(result.slowest_seconds, elapsed)
                result.failed += not ok
                result.over_bound += ok and elapsed >= bound
                time.sleep(max(0.0, interval - elapsed))
        result.open_at_end = sum(_still_open(sock) for sock in slow)
    finally:
        for sock in slow:
            sock.close()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="base URL of the server, e.g. http://127.0.0.1:8000")
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--hold", type=float, default=10.0, help="seconds of probing while they are open")
    parser.add_argument("--interval", type=float, default=0.25, help="seconds between probes")
    parser.add_argument("--trickle", type=float, default=2.0, help="seconds between header lines of each")
    parser.add_argument("--body", action="store_true", help="trickle a POST body instead of a head")
    parser.add_argument("--bound", type=float, default=1.0, help="a probe this slow or slower counts against")
    args = parser.parse_args(argv)
    result = run(args.url, connections=args.connections, hold=args.hold, interval=args.interval,
                 trickle=args.trickle, bound=args.bound, body=args.body)
    summary = {key: value for key, value in asdict(result).items() if key != "latencies"}
    summary["slowest_seconds"] = round(result.slowest_seconds, 3)
    summary["passed"] = result.passed
    print(json.dumps(summary))
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())
