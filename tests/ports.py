"""Loopback ports for the servers the tests start, chosen where nothing else takes them.

A port from ``bind(('127.0.0.1', 0))`` lies in the kernel's ephemeral range, where every outgoing
connection (to PostgreSQL, Redis, a stack) takes its local port too: when a test chose a port
that way and a subprocess bound it a moment later, the port was sometimes taken in between
("Address already in use"), more often with the suite on two workers. So ports are chosen below
the ephemeral range, each worker of a parallel run (tests/parallel.py) in a slice of its own:
its first part for servers (``free_port``), the rest for the local gateways' port ranges
(``port_range``). A port is handed out only if it can be bound now, and not twice in a row.
"""

from __future__ import annotations

import random
from collections import deque
from pathlib import Path

from occ.drivers.compute.local_supervisor import port_is_free
from tests.parallel import worker_index

LOWEST = 12000
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
SLICES = 8  # workers of a parallel run, at most (TEST_WORKERS)
SERVER_PORTS = 800  # the first part of a slice; the rest is for gateways' ranges
_recent: deque[int] = deque(maxlen=200)


def _ephemeral_start() -> int:
    try:
        return int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def worker_slice() -> range:
    width = (_ephemeral_start() - LOWEST) // SLICES
    start = LOWEST + (worker_index() % SLICES) * width
    return range(start, start + width)



def free_port() -> int:
    """A loopback port nobody listens on, below the ephemeral range, in this worker's slice."""
    servers = worker_slice()[:SERVER_PORTS]
    for _ in range(500):
        port = random.choice(servers)
        if port not in _recent and port_is_free(port):
            _recent.append(port)
            return port
    raise RuntimeError(f"no free loopback port in {servers.start}-{servers.stop - 1}")


def port_range(width: int = 1200) -> str:
    """``first-last`` for OCC_LOCAL_GATEWAY_PORT_RANGE: a random part of this worker's gateway
    ports (the local driver checks each port before it uses it)."""
    gateways = worker_slice()[SERVER_PORTS:]
    width = min(width, len(gateways) - 1)
    first = random.randrange(gateways.start, gateways.stop - width)
    return f"{first}-{first + width}"
