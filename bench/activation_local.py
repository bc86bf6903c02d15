#!/usr/bin/env python
"""Activation on the ``local`` driver: (deploy accepted -> revision active) ÷ (bare gateway spawn -> /readyz 200).

Both arms run the same Node and openclaw (``runtime/``) with the loopback fake
OpenAI-compatible model of the tests (tests/fakes/fake_openai.py) as the primary model:

    bare    the driver's own argv (``node openclaw.mjs gateway --port P``), config
            (``render_config``) and environment (``child_environment``), spawned directly
            in a fresh Agent folder; timed from the spawn to the first ``/readyz`` 200
            (polled every 0.1 s).
    deploy  ``agent_deploy`` of a fresh Agent; a real ``celery worker`` and ``celery beat``
            (Redis broker, default sweep 2 s, default defer 2 s) run the revision work on
            the local driver; timed from the service's return (the API's 202) to the work
            row's ``completed_at`` (``REVISION_ACTIVATED``). The same 0.1 s ``/readyz`` poll
            records when its gateway became ready, to split the time into: accepted ->
            spawn, spawn -> ready, ready -> active (the worker noticing: defer + sweep).

Pairs alternate their order (bare first, then deploy first). One gateway runs at a time:
each is stopped (the deployed one through ``agent_stop``, checked, then by its verified PID)
before the next starts. Every process this run starts is stopped by PID in ``finally``.
Each gateway takes about 1.2 GB and 20-30 s of two cores.

Target: activation ÷ bare spawn (pooled over the pairs) <= 1.2.

If ``manage.py occ_runtime check`` fails (runtime not installed: ``make runtime``), the
benchmark says so and skips. Run: ``.venv/bin/python bench/activation_local.py`` (``--help``).
``DATABASE_URL`` (default ``postgres://postgres@127.0.0.1:5432/occ_activation_bench``) must
name a database containing ``bench``: it is dropped and recreated.
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
import random
import secrets
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench.verdicts import Verdict, print_skip, print_verdicts
from bench.worker_support import (
    ROOT,
    BenchError,
    ManagedProcess,
    World,
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
    wait_terminal,
    wait_until,
    work_state,
)

DEFAULT_DATABASE = "occ_activation_bench"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/13"
TARGET = 1.2
READY_TIMEOUT_SECONDS = 240.0
STOP_GRACE_SECONDS = 15.0
POLL_SECONDS = 0.1


def model_document(base_url: str) -> dict[str, Any]:
    """A Configuration whose primary model is the loopback fake (compute-and-runtime.md B6)."""
    return {
        "agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "fake/echo-model", "fallbacks": []},
                                "models": {"fake/echo-model": {"alias": "Echo"}}}},
        "models": {"mode": "merge", "providers": {"fake": {
            "baseUrl": base_url, "apiKey": "replaced-by-the-driver", "api": "openai-completions",
            "models": [{"id": "echo-model", "name": "Echo", "reasoning": False, "input": ["text"],
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                        "contextWindow": 32000, "maxTokens": 1024}],
        }}},
        "tools": {"profile": "coding", "deny": ["browser", "canvas"]},
    }


def runtime_check() -> tuple[bool, str]:
    result = subprocess.run([sys.executable, "manage.py", "occ_runtime", "check"], cwd=ROOT, capture_output=True,
                            text=True, timeout=120, check=False)
    return result.returncode == 0, (result.stdout + result.stderr).strip()


def port_slice(width: int = 1200) -> tuple[int, int]:
    first = random.randrange(30000, 60000 - width, 120)
    return first, first + width


# --- the bare arm --------------------------------------------------------------------------


class Gateways:
    """Every gateway this run spawned or had the driver spawn, stopped by verified PID."""

    def __init__(self, data: Path) -> None:
        self.data = data
        self.bare: list[Any] = []

    def stop_all(self) -> None:
        from occ.drivers.compute import local_supervisor as supervisor
        from occ.drivers.compute.files import GATEWAY_TITLES, GatewayRecord

        identities = list(self.bare)
        for record_path in (self.data / "agents").glob("*/gateway.json"):
            record = GatewayRecord.read(record_path)
            if record is not None and record.process is not None:
                identities.append(record.process)
        for identity in identities:
            supervisor.stop(identity, grace=STOP_GRACE_SECONDS, titles=GATEWAY_TITLES)


def bare_spawn(gateways: Gateways, document: dict[str, Any], folder: Path, port: int) -> float:
    """Spawn a gateway as the driver would, time it to the first /readyz 200, stop it."""
    from django.conf import settings

    from occ.drivers.compute import local_supervisor as supervisor
    from occ.drivers.compute.files import GATEWAY_TITLES, AgentPaths
    from occ.drivers.compute.local import PASSWORD_ENV, child_environment, render_config
    from occ.ids import IdPrefix, new_id
    from occ.openclaw.document import CUSTOM_PROVIDER_KEY_ENV
    from occ.runtime import Runtime

    runtime = Runtime(Path(settings.OCC_RUNTIME_DIR))
    node, entry = runtime.require()
    paths = AgentPaths(folder / "agents" / new_id(IdPrefix.AGENT))
    paths.ensure()
    config_path = paths.config(new_id(IdPrefix.REVISION))
    config_path.parent.mkdir(mode=0o700, parents=True)
    config = render_config(document, port=port, paths=paths, deliver_model_key=True)
    config_path.write_text(json.dumps(config, indent=2))
    env = child_environment(runtime=runtime, paths=paths, config_path=config_path, port=port,
                            secret_values={PASSWORD_ENV: secrets.token_urlsafe(32),
                                           CUSTOM_PROVIDER_KEY_ENV: "sk-bench-" + secrets.token_hex(8)})
    if not supervisor.port_is_free(port):
        raise BenchError(f"port {port} is busy")
    started = time.time()
    identity = supervisor.spawn([str(node), str(entry), "gateway", "--port", str(port)], env=env, cwd=paths.root,
                                log_path=paths.gateway_log)
    gateways.bare.append(identity)
    try:
        def ready() -> bool:
            if not supervisor.is_same_process(identity, titles=GATEWAY_TITLES):
                raise BenchError(f"the bare gateway exited; its log:\n{paths.gateway_log.read_text()[-2000:]}")
            return supervisor.readyz(port, timeout=1.0)

        wait_until(ready, timeout=READY_TIMEOUT_SECONDS, interval=POLL_SECONDS, what="the bare gateway's /readyz")
        return time.time() - started
    finally:
        supervisor.stop(identity, grace=STOP_GRACE_SECONDS, titles=GATEWAY_TITLES)


# --- the deploy arm ------------------------------------------------------------------------


@dataclass(frozen=True)
class Activation:
    accepted: float
    spawned: float
    ready: float
    active: float

    @property
    def seconds(self) -> float:
        return self.active - self.accepted

    def parts(self) -> tuple[float, float, float]:
        """(accepted -> spawn, spawn -> ready, ready -> active), seconds."""
        return self.spawned - self.accepted, self.ready - self.spawned, self.active - self.ready


def deploy_until_active(world: World, agent: Any, data: Path) -> Activation:
    from django.db import close_old_connections

    from occ.drivers.compute import local_supervisor as supervisor
    from occ.drivers.compute.files import GatewayRecord
    from occ.models.work import revision_reconcile_key
    from occ.services.deploy import agent_deploy

    revision = agent_deploy(actor=world.actor, namespace_id=world.namespace_id, agent_id=agent.id)
    accepted = time.time()
    key = revision_reconcile_key(revision.id)
    record_path = data / "agents" / agent.id / "gateway.json"
    seen: dict[str, float] = {}

    def active() -> dict[str, Any] | None:
        close_old_connections()
        record = GatewayRecord.read(record_path)
        if record is not None and "spawned" not in seen:
            seen["spawned"] = record.started_at
        if record is not None and "ready" not in seen and supervisor.readyz(record.port, timeout=1.0):
            seen["ready"] = time.time()
        row = work_state(key)
        return row if row is not None and row["state"] in ("succeeded", "failed_permanent") else None

    row = wait_until(active, timeout=READY_TIMEOUT_SECONDS, interval=POLL_SECONDS, what=f"work {key} to finish")
    if row["state"] != "succeeded" or row["reason_code"] != "REVISION_ACTIVATED":
        raise BenchError(f"work {key} ended {row['state']} {row['reason_code']} (last attempt "
                         f"{row['last_attempt_code']}); see the worker log")
    finished = row["completed_at"].timestamp()
    return Activation(accepted=accepted, spawned=seen.get("spawned", accepted), ready=seen.get("ready", finished),
                      active=finished)


def stop_agent(world: World, agent: Any, data: Path) -> None:
    """Stop through the service and the worker, check the gateway is gone; else stop it by PID."""
    from occ.drivers.compute import local_supervisor as supervisor
    from occ.drivers.compute.files import GATEWAY_TITLES, GatewayRecord
    from occ.models.work import agent_stopped_key
    from occ.services.agent_lifecycle import agent_stop

    agent_stop(actor=world.actor, namespace_id=world.namespace_id, agent_id=agent.id)
    row = wait_terminal(agent_stopped_key(agent.id, 1), STOP_GRACE_SECONDS + 60)
    record = GatewayRecord.read(data / "agents" / agent.id / "gateway.json")
    if record is not None and record.process is not None and supervisor.is_same_process(record.process,
                                                                                          titles=GATEWAY_TITLES):
        supervisor.stop(record.process, grace=STOP_GRACE_SECONDS, titles=GATEWAY_TITLES)
        raise BenchError(f"the stop work ended {row['state']} but the gateway was still running (stopped by PID)")


# --- the run -------------------------------------------------------------------------------


def report(bare: list[float], activations: list[Activation]) -> list[Verdict]:
    print(f"\n{len(bare)} pairs (order alternates); seconds")
    print(f"  {'pair':<6}{'bare spawn->ready':>19}{'deploy->active':>16}{'ratio':>8}"
          f"{'accepted->spawn':>17}{'spawn->ready':>14}{'ready->active':>15}")
    for index, (spawn, activation) in enumerate(zip(bare, activations, strict=True), 1):
        to_spawn, to_ready, to_active = activation.parts()
        print(f"  {index:<6}{spawn:>19.2f}{activation.seconds:>16.2f}{activation.seconds / spawn:>8.2f}"
              f"{to_spawn:>17.2f}{to_ready:>14.2f}{to_active:>15.2f}")
    pooled = ratio(sum(a.seconds for a in activations), sum(bare))
    return [Verdict("activation / bare spawn (pooled)", pooled, TARGET, at_most=True,
                    detail="pairs " + " ".join(f"{a.seconds / b:.2f}" for a, b in zip(activations, bare, strict=True)))]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=2, help="bare/deploy pairs (default 2; ~1 minute each)")
    parser.add_argument("--redis-url", default=os.environ.get("BENCH_REDIS_URL", DEFAULT_REDIS_URL),
                        help=f"this benchmark's own Redis database (default {DEFAULT_REDIS_URL})")
    args = parser.parse_args(argv)
    if not 1 <= args.pairs <= 5:
        parser.error("pairs must be 1-5")
    redis_db_number(args.redis_url)
    return args


def run(args: argparse.Namespace) -> list[Verdict]:
    started = time.monotonic()
    installed, says = runtime_check()
    if not installed:
        print_skip("activation on the local driver: `manage.py occ_runtime check` failed (run `make runtime`):\n  "
                   + says.replace("\n", "\n  "))
        return []
    database_url = bench_database_url(DEFAULT_DATABASE)
    recreate_database(database_url)
    flush_redis_db(args.redis_url)
    print_facts("OCC activation on the local driver vs a bare gateway start (real openclaw, fake model)",
                machine_facts(database_url))
    print("  runtime                 " + says.replace("\n", "\n                          "))
    from tests.fakes.fake_openai import FakeOpenAI

    processes: list[ManagedProcess] = []
    model = FakeOpenAI().start()
    with tempfile.TemporaryDirectory(prefix="occ-activation-bench-") as folder:
        data = Path(folder)
        gateways = Gateways(data)
        try:
            first, last = port_slice()
            env = process_env(database_url, data, CELERY_BROKER_URL=args.redis_url, OCC_COMPUTE_DRIVER="local",
                              OCC_LOCAL_GATEWAY_PORT_RANGE=f"{first}-{last}",
                              OCC_LOCAL_GATEWAY_READY_TIMEOUT_SECONDS=str(READY_TIMEOUT_SECONDS))
            for name in ("OCC_SWEEP_INTERVAL_SECONDS", "OCC_WORKER_DEFER_SECONDS"):
                env.pop(name, None)  # the defaults are what is measured
            configure_django(env)
            document = model_document(model.base_url)
            world = seed_world()
            processes.append(start_beat(env, data))
            processes.append(start_worker(env, data, "bench-activation"))
            print(f"setup took {time.monotonic() - started:.1f} s; load average {loadavg()}")
            bare: list[float] = []
            activations: list[Activation] = []
            bare_port = last + 240  # outside the driver's range
            for pair in range(args.pairs):
                for arm in (("bare", "deploy") if pair % 2 == 0 else ("deploy", "bare")):
                    if arm == "bare":
                        bare.append(bare_spawn(gateways, document, data / f"bare-{pair}", bare_port))
                    else:
                        agent = add_agent(world, f"activation-agent-{pair}", document)
                        activations.append(deploy_until_active(world, agent, data))
                        stop_agent(world, agent, data)
            verdicts = report(bare, activations)
        finally:  # workers first (beat would restart a gateway it finds dead), then every gateway
            for process in reversed(processes):
                process.stop()
            gateways.stop_all()
            model.stop()
            flush_redis_db(args.redis_url)
    print_verdicts(verdicts)
    print_closing(started)
    return verdicts


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(parse_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())
