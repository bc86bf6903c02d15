#!/usr/bin/env python
"""Chat through OCC ÷ straight to the gateway: first token and full reply, median of N pairs.

One real OpenClaw gateway on the ``local`` driver (deployed through ``agent_deploy`` and a real
Celery worker and beat), its primary model the loopback fake OpenAI-compatible server of the
tests. Each pair sends the same one-turn conversation two ways, order alternating:

    direct  httpx streaming POST to the gateway's ``/v1/chat/completions`` on loopback with
            its password (what a client with the gateway's address and password would do);
    occ     the console's ``POST …/chat`` (``console.views.agent_chat``) through Django's whole
            request path in this process (middleware, session, sign-in, ``invoke:agent``,
            the conversation's audit event, the compute driver's proxy), read as it streams.
            No HTTP server hop in front of Django: it measures what OCC adds, not gunicorn.

A third arm, ``occ-new``, is a turn that starts a new conversation (one audit event committed
first); ``occ`` is a later turn of one conversation (as the browser sends after its first).
Times: first token = the first non-empty text delta; full = the end of the stream. Target:
median(occ) ÷ median(direct) <= 1.1 for both.

Run: ``.venv/bin/python bench/chat_proxy.py`` (``--help``). ``DATABASE_URL`` (default
``postgres://postgres@127.0.0.1:5432/occ_chat_bench``) must name a database containing
``bench``: it is dropped and recreated. Skips when the runtime is not installed.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the project root first
    _root = str(Path(__file__).resolve().parent.parent)
    if _root not in sys.path:
        sys.path.insert(0, _root)

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Sequence
from typing import Any

import httpx
from httpx_sse import connect_sse

from bench.activation_local import READY_TIMEOUT_SECONDS, deploy_until_active, model_document, port_slice, runtime_check
from bench.verdicts import Verdict, print_skip, print_verdicts
from bench.worker_support import (
    ManagedProcess,
    add_agent,
    bench_database_url,
    bench_main,
    configure_django,
    flush_redis_db,
    loadavg,
    machine_facts,
    print_closing,
    print_facts,
    process_env,
    ratio,
    recreate_database,
    redis_db_number,
    seed_world,
    start_beat,
    start_worker,
)

DEFAULT_DATABASE = "occ_chat_bench"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/12"
TARGET = 1.1
MESSAGE = "hello"


def direct(port: int, password: str) -> tuple[float, float, str]:
    started = time.perf_counter()
    first, text = None, ""
    with httpx.Client(timeout=120) as client, connect_sse(
            client, "POST", f"http://127.0.0.1:{port}/v1/chat/completions",
            headers={"Authorization": f"Bearer {password}"},
            json={"model": "openclaw", "stream": True, "messages": [{"role": "user", "content": MESSAGE}]}) as source:
        for event in source.iter_sse():
            if event.data.strip() == "[DONE]":
                break
            choices = json.loads(event.data).get("choices") or [{}]
            piece = (choices[0].get("delta") or {}).get("content") or ""
            if piece and first is None:
                first = time.perf_counter()
            text += piece
    end = time.perf_counter()
    return (first or end) - started, end - started, text


def through_occ(client: Any, url: str, conversation: dict[str, str | None]) -> tuple[float, float, str]:
    """One turn; ``conversation["id"]`` None starts a new conversation (its audit event)."""
    started = time.perf_counter()
    body = {"conversationId": conversation["id"], "messages": [{"role": "user", "content": MESSAGE}]}
    response = client.post(url, json.dumps(body), content_type="application/json", HTTP_HOST="127.0.0.1")
    if response.status_code != 200:
        raise RuntimeError(f"OCC answered {response.status_code}: {response.content[:300]!r}")
    first, text, buffer = None, "", ""
    for chunk in response.streaming_content:
        buffer += chunk.decode()
        while "\n\n" in buffer:
            block, buffer = buffer.split("\n\n", 1)
            lines = dict(line.split(": ", 1) for line in block.split("\n"))
            if lines["event"] == "conversation":
                conversation["id"] = json.loads(lines["data"])["id"]
            elif lines["event"] == "token":
                if first is None:
                    first = time.perf_counter()
                text += json.loads(lines["data"])["text"]
            elif lines["event"] == "error":
                raise RuntimeError(f"OCC streamed an error: {lines['data']}")
    end = time.perf_counter()
    return (first or end) - started, end - started, text


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=20, help="direct/occ pairs (default 20)")
    parser.add_argument("--redis-url", default=os.environ.get("BENCH_REDIS_URL", DEFAULT_REDIS_URL),
                        help=f"this benchmark's own Redis database (default {DEFAULT_REDIS_URL})")
    args = parser.parse_args(argv)
    redis_db_number(args.redis_url)
    return args


def run(args: argparse.Namespace) -> list[Verdict]:
    started = time.monotonic()
    installed, says = runtime_check()
    if not installed:
        print_skip("chat through OCC: `manage.py occ_runtime check` failed (run `make runtime`):\n  " + says)
        return []
    database_url = bench_database_url(DEFAULT_DATABASE)
    recreate_database(database_url)
    flush_redis_db(args.redis_url)
    print_facts("Chat through OCC vs straight to the gateway (real openclaw, fake model)", machine_facts(database_url))
    from tests.fakes.fake_openai import REPLY, FakeOpenAI

    processes: list[ManagedProcess] = []
    model = FakeOpenAI().start()
    with tempfile.TemporaryDirectory(prefix="occ-chat-bench-") as folder:
        data = Path(folder)
        agent = None
        try:
            first_port, last_port = port_slice()
            env = process_env(database_url, data, CELERY_BROKER_URL=args.redis_url, OCC_COMPUTE_DRIVER="local",
                              OCC_LOCAL_GATEWAY_PORT_RANGE=f"{first_port}-{last_port}",
                              OCC_LOCAL_GATEWAY_READY_TIMEOUT_SECONDS=str(READY_TIMEOUT_SECONDS))
            configure_django(env)
            from django.contrib.auth import get_user_model
            from django.test import Client
            from django.urls import reverse

            from occ.drivers.compute.base import GATEWAY_PASSWORD_PURPOSE
            from occ.drivers.compute.files import GatewayRecord
            from occ.drivers.secrets import get_secret_driver
            from occ.models import Secret

            world = seed_world()
            processes.append(start_beat(env, data))
            processes.append(start_worker(env, data, "bench-chat"))
            agent = add_agent(world, "chat-agent", model_document(model.base_url))
            deploy_until_active(world, agent, data)
            record = GatewayRecord.read(data / "agents" / agent.id / "gateway.json")
            assert record is not None
            secret = Secret.objects.get(owner_agent_id=agent.id, purpose=GATEWAY_PASSWORD_PURPOSE)
            password = get_secret_driver(secret.driver_id).with_value(secret.backend_name, str)
            client = Client()
            client.force_login(get_user_model().objects.get(username="admin"))
            url = reverse("console:agent-chat", args=[world.namespace_id, agent.id])
            print(f"setup took {time.monotonic() - started:.1f} s; load average {loadavg()}")
            ongoing: dict[str, str | None] = {"id": None}
            direct(record.port, password)  # one warm-up each (the gateway's first turn loads its session)
            through_occ(client, url, ongoing)
            samples: dict[str, list[tuple[float, float]]] = {"direct": [], "occ": [], "occ-new": []}
            arms = ("direct", "occ", "occ-new")
            for pair in range(args.pairs):
                for arm in arms[pair % 3:] + arms[:pair % 3]:  # the order rotates
                    if arm == "direct":
                        first, full, text = direct(record.port, password)
                    else:
                        first, full, text = through_occ(client, url, ongoing if arm == "occ" else {"id": None})
                    if text != REPLY:
                        raise RuntimeError(f"{arm} got {text!r}, not the fake model's reply")
                    samples[arm].append((first, full))
            print(f"\n{args.pairs} rounds (order rotates), median ms; load average {loadavg()}")
            print("  occ = a later turn of a conversation; occ-new = a turn that starts one (its audit commit)")
            verdicts = []
            for index, name in ((0, "first token"), (1, "full reply")):
                d = statistics.median(s[index] for s in samples["direct"])
                o = statistics.median(s[index] for s in samples["occ"])
                n = statistics.median(s[index] for s in samples["occ-new"])
                print(f"  {name:<12} direct {d * 1000:8.1f}  occ {o * 1000:8.1f}  occ-new {n * 1000:8.1f}")
                verdicts.append(Verdict(f"chat {name}: occ / direct (median)", ratio(o, d), TARGET, at_most=True,
                                        detail=f"{o * 1000:.1f} ms / {d * 1000:.1f} ms"))
                verdicts.append(Verdict(f"chat {name}, new conversation: occ / direct", ratio(n, d), TARGET,
                                        at_most=True, detail=f"{n * 1000:.1f} ms / {d * 1000:.1f} ms"))
        finally:
            for process in reversed(processes):
                process.stop()
            from occ.drivers.compute import local_supervisor as supervisor
            from occ.drivers.compute.files import GATEWAY_TITLES, GatewayRecord

            for path in data.glob("agents/*/gateway.json"):
                found = GatewayRecord.read(path)
                if found is not None and found.process is not None:
                    supervisor.stop(found.process, grace=5.0, titles=GATEWAY_TITLES)
            model.stop()
            flush_redis_db(args.redis_url)
    print_verdicts(verdicts)
    print_closing(started)
    return verdicts


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(parse_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())
