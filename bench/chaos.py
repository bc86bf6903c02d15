#!/usr/bin/env python
"""The chaos soak (``make chaos``): provisionings, deploys, stops and deletes while workers,
Redis and PostgreSQL are killed under them; then every invariant is checked and printed.

On a PostgreSQL and a Redis of its own (bench/chaos_services.py), with ``--workers`` real Celery
workers, celery beat and the fake ComputeDriver (its world in one file every process shares), it
creates ``--namespaces`` Namespaces and walks ``--agents`` Agents in each through:

    provision (v1) -> deploy (v2) -> update the Configuration, deploy (v3) -> stop [-> delete]

every fourth Agent being deleted at the end; each step waits for the Agent's work before it.
Meanwhile, every ``--fault-every`` seconds one fault, each kind once in every round of four (a
short soak goes on until each has happened): SIGKILL a random worker (a new one
starts), SIGSTOP one past its lease and SIGCONT it, SIGKILL Redis and start it empty, or crash
PostgreSQL (immediate stop) and start it. The driver retries what a database error
interrupted; every step is safe to repeat (request ids, idempotency keys, a check first).

When the driver has done every step, the faults stop and the soak waits for quiet (every work
row terminal). Checked and printed: every job terminal and none failed; each Agent with its
Configuration at generation 2, revisions 1-3 from generations 1, 1 and 2, v3 the active pointer
when the stop came (the stop clears it) and the last activated, desired stopped and stopped in
the compute world; each deleted Agent gone; one Configuration per provisioning; zero duplicate
compute effects (each gateway started once); zero writes committed by a fenced worker (each
completion's audit event, written in its fenced transaction, at most once per resource); the
time from the last fault to quiet. Exit status 1 when any check fails.

Run: ``make chaos`` or ``.venv/bin/python bench/chaos.py`` (``--help``); tests/bench/test_chaos.py
runs a short one.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the project root first
    _root = str(Path(__file__).resolve().parent.parent)
    if _root not in sys.path:
        sys.path.insert(0, _root)

import argparse
import contextlib
import logging
import os
import random
import signal
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

from bench.chaos_checks import Check, agent_checks, effect_checks, print_checks, work_checks
from bench.chaos_services import OwnPostgres, OwnRedis
from bench.worker_support import (
    FAKE_DOCUMENT,
    BenchError,
    ManagedProcess,
    bench_main,
    configure_django,
    loadavg,
    print_closing,
    process_env,
    seed_world,
    start_beat,
    start_worker,
    wait_until,
)

T = TypeVar("T")
LEASE_SECONDS, HEARTBEAT_SECONDS, SWEEP_SECONDS = 3.0, 1.0, 1.0
OUTAGE_SECONDS = 2.0  # how long Redis and PostgreSQL stay down
RETRY_SECONDS = 180.0  # how long one driver step may keep meeting database errors
QUIET_TIMEOUT_SECONDS = 600.0
FAULTS = ("kill-worker", "pause-worker", "redis", "postgres")
UPDATED_DOCUMENT: dict[str, Any] = {"agents": {"defaults": {"skipBootstrap": True,
                                                            "model": {"primary": "openai/gpt-5-mini"}}}}
STEPS = ("provision", "deploy v2", "update, deploy v3", "stop", "delete")


@dataclass
class Plan:
    """One Agent's path through the soak."""

    index: int
    namespace_id: str
    secret_id: str
    deleted_at_end: bool
    step: int = 0
    agent_id: str | None = None
    configuration_id: str | None = None
    revision_ids: list[str] = field(default_factory=list)
    active_before_stop: str | None = None
    failed: str | None = None

    @property
    def last_step(self) -> int:
        return len(STEPS) if self.deleted_at_end else len(STEPS) - 1

    @property
    def done(self) -> bool:
        return self.step >= self.last_step or self.failed is not None


# --- the driver: services called in this process, retried across database errors -------------


def durable(call: Callable[[], T], *, what: str) -> T:
    """``call`` until it answers: a database error (PostgreSQL crashed) closes the connections
    and the call is made again, for at most ``RETRY_SECONDS``."""
    from django.db import InterfaceError, OperationalError, connections

    deadline = time.monotonic() + RETRY_SECONDS
    while True:
        try:
            return call()
        except (OperationalError, InterfaceError) as exc:
            connections.close_all()
            if time.monotonic() > deadline:
                raise BenchError(f"{what}: the database stayed unavailable ({type(exc).__name__})") from exc
            time.sleep(0.5)


def settled(agent_id: str) -> str | None:
    """None while the Agent has work in flight; "ok" once all of it ended, or why it failed."""
    from occ.models import ControllerWork, WorkState
    from occ.models.work import TERMINAL_STATES

    rows = list(ControllerWork.objects.filter(agent_id=agent_id).values_list("state", "reason_code"))
    if not rows or any(state not in TERMINAL_STATES for state, _code in rows):
        return None
    failed = [code for state, code in rows if state == WorkState.FAILED_PERMANENT]
    return f"work failed: {', '.join(sorted(set(map(str, failed))))}" if failed else "ok"


def take_step(world: Any, plan: Plan) -> None:
    """Plan's next step, if the Agent's earlier work has ended."""
    from occ.commands.configurations import ConfigurationUpdate
    from occ.commands.provisioning import ProvisionCommand
    from occ.errors import Conflict, NotFound
    from occ.models import Agent, Configuration, DesiredRuntimeState
    from occ.services.agent_lifecycle import agent_delete, agent_stop
    from occ.services.configurations import configuration_update
    from occ.services.deploy import agent_deploy
    from occ.services.provisioning import provision_admit

    actor, ns = world.actor, plan.namespace_id
    if plan.agent_id is None or plan.configuration_id is None:  # the first step
        ref = {"kind": "secret", "namespaceId": ns, "id": plan.secret_id}
        row, _created = provision_admit(actor=actor, namespace_id=ns, command=ProvisionCommand.model_validate({
            "requestId": f"req_chaos-{plan.index:05d}", "name": f"chaos-{plan.index:05d}",
            "configuration": {"kind": "agent", "values": FAKE_DOCUMENT}, "executionMode": "embedded",
            "harnessAuth": {"method": "api_key", "source": ref}}))
        plan.agent_id, plan.configuration_id = row.agent_id, row.configuration_id
        plan.step += 1
        return
    agent_id = plan.agent_id
    state = settled(agent_id)
    if state is None:
        return
    if state != "ok":
        plan.failed = state
        return
    name = STEPS[plan.step]
    if name == "deploy v2":
        plan.revision_ids.append(agent_deploy(actor=actor, namespace_id=ns, agent_id=agent_id,
                                              idempotency_key=f"chaos-{plan.index}-v2").id)
    elif name == "update, deploy v3":
        try:
            configuration_update(actor=actor, namespace_id=ns, configuration_id=plan.configuration_id,
                                 command=ConfigurationUpdate(values=UPDATED_DOCUMENT), expected_generation=1)
        except Conflict:  # a repeat after a lost answer: the first one saved it
            if Configuration.objects.get(id=plan.configuration_id).generation != 2:
                raise
        plan.revision_ids.append(agent_deploy(actor=actor, namespace_id=ns, agent_id=agent_id,
                                              idempotency_key=f"chaos-{plan.index}-v3").id)
    elif name == "stop":
        agent = Agent.objects.get(id=agent_id)
        if agent.desired_runtime_state != DesiredRuntimeState.STOPPED:
            plan.active_before_stop = agent.active_revision_id  # the pointer v3's work left
            agent_stop(actor=actor, namespace_id=ns, agent_id=agent_id)
    elif name == "delete":
        with contextlib.suppress(NotFound):  # a repeat after the deletion finished
            agent_delete(actor=actor, namespace_id=ns, agent_id=agent_id)
    plan.step += 1


def create_namespaces(world: Any, count: int) -> list[tuple[str, str]]:
    """``count`` Namespaces made ready by the workers, each with the model key Secret its
    Agents use: (Namespace id, Secret id)."""
    from occ.commands.namespaces import NamespaceCreate
    from occ.commands.secrets import SecretCreate
    from occ.errors import Conflict
    from occ.models import Namespace, NamespaceStatus, Secret
    from occ.services.namespaces import namespace_create
    from occ.services.secrets import secret_create

    names = [f"chaos-{index:02d}" for index in range(count)]
    for name in names:
        def create(name: str = name) -> None:
            with contextlib.suppress(Conflict):  # a repeat after a lost answer
                namespace_create(actor=world.actor, command=NamespaceCreate(name=name))
        durable(create, what=f"create Namespace {name}")

    def ready() -> bool:
        return Namespace.objects.filter(name__in=names, status=NamespaceStatus.READY).count() == count

    wait_until(lambda: durable(ready, what="read the Namespaces"), timeout=QUIET_TIMEOUT_SECONDS, interval=0.5,
               what="every Namespace to be ready")
    made = []
    for name in names:
        namespace = durable(partial(Namespace.objects.get, name=name), what="read a Namespace")

        def secret(namespace: Any = namespace) -> str:
            try:
                return secret_create(actor=world.actor, namespace_id=namespace.id,
                                     command=SecretCreate(name="chaos-model-key", value="sk-chaos-not-a-key")).id
            except Conflict:
                return Secret.objects.get(namespace=namespace, name="chaos-model-key").id
        made.append((namespace.id, durable(secret, what=f"create the model key Secret of {name}")))
    return made


# --- the faults -----------------------------------------------------------------------------


class Faults(threading.Thread):
    """One fault every ``every`` seconds until ``stop``; what happened, counted."""

    def __init__(self, *, every: float, rng: random.Random, workers: list[ManagedProcess], env: dict[str, str],
                 data: Path, redis: OwnRedis, postgres: OwnPostgres) -> None:
        super().__init__(name="chaos-faults", daemon=True)
        self.every, self.rng, self.workers, self.env, self.data = every, rng, workers, env, data
        self.redis, self.postgres = redis, postgres
        self.counts: Counter[str] = Counter()
        self.last_fault_at = time.monotonic()
        self.stopping = threading.Event()
        self.error: BaseException | None = None
        self.started_workers = len(workers)

    def run(self) -> None:
        try:
            while True:
                for fault in self.rng.sample(FAULTS, len(FAULTS)):  # each kind once per round
                    if self.stopping.wait(self.every):
                        return
                    getattr(self, "fault_" + fault.replace("-", "_"))()
                    self.counts[fault] += 1
                    self.last_fault_at = time.monotonic()
        except BaseException as exc:  # reported by the driver, which stops at once
            self.error = exc

    def fault_kill_worker(self) -> None:
        victim = self.rng.randrange(len(self.workers))
        self.workers[victim].kill()
        self.started_workers += 1
        self.workers[victim] = start_worker(self.env, self.data, f"chaos-worker-{self.started_workers}")

    def fault_pause_worker(self) -> None:
        """SIGSTOP past the lease (the sweep requeues its work), then SIGCONT: it must not write."""
        worker = self.rng.choice(self.workers)
        os.killpg(worker.pgid, signal.SIGSTOP)
        try:
            time.sleep(LEASE_SECONDS + SWEEP_SECONDS + 1.0)
        finally:
            os.killpg(worker.pgid, signal.SIGCONT)

    def fault_redis(self) -> None:
        self.redis.crash()
        time.sleep(OUTAGE_SECONDS)
        self.redis.start()

    def fault_postgres(self) -> None:
        self.postgres.crash()
        time.sleep(OUTAGE_SECONDS)
        self.postgres.start()

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=120)


# --- the run --------------------------------------------------------------------------------


def drive(world: Any, plans: list[Plan], faults: Faults) -> None:
    """Every plan's steps, as each Agent's earlier work ends; progress every 15 s."""
    from occ.errors import OccError

    shown = time.monotonic()
    while not all(plan.done for plan in plans):
        if faults.error is not None:
            raise BenchError(f"a fault could not be injected: {faults.error!r}")
        for plan in plans:
            if plan.done:
                continue
            try:
                durable(partial(take_step, world, plan), what=f"chaos-{plan.index:05d} {STEPS[plan.step]}")
            except OccError as exc:  # OCC refused the step: the Agent is off its path
                plan.failed = f"{STEPS[plan.step]} refused: {type(exc).__name__}: {exc}"
        if time.monotonic() - shown > 15:
            shown = time.monotonic()
            steps = sum(plan.step for plan in plans)
            print(f"  {steps} of {sum(plan.last_step for plan in plans)} steps; faults {dict(faults.counts)}; "
                  f"load {loadavg()}", flush=True)
        time.sleep(0.2)


def quiet() -> bool:
    from occ.models import ControllerWork
    from occ.models.work import TERMINAL_STATES

    return not ControllerWork.objects.exclude(state__in=TERMINAL_STATES).exists()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--namespaces", type=int, default=20, help="Namespaces (default 20)")
    parser.add_argument("--agents", type=int, default=6, help="Agents per Namespace (default 6: 510 operations)")
    parser.add_argument("--workers", type=int, default=3, help="Celery worker processes (default 3)")
    parser.add_argument("--fault-every", type=float, default=3.0, help="seconds between faults (default 3)")
    parser.add_argument("--seed", type=int, default=None, help="the faults' random seed (default: a new one)")
    args = parser.parse_args(argv)
    if not (1 <= args.namespaces <= 100 and 1 <= args.agents <= 100 and 1 <= args.workers <= 8):
        parser.error("namespaces and agents must be 1-100, workers 1-8")
    if args.fault_every < 0.5:
        parser.error("fault-every must be at least 0.5 seconds")
    args.seed = random.SystemRandom().randrange(2**32) if args.seed is None else args.seed
    return args


def run(args: argparse.Namespace) -> list[Check]:
    from bench.api_latency import recreate_database
    from occ.drivers.compute import get_compute_driver

    started = time.monotonic()
    agents = args.namespaces * args.agents
    operations = agents * 4 + agents // 4  # provision, two deploys, stop; every fourth deleted
    print(f"OCC chaos soak: {args.namespaces} Namespaces x {args.agents} Agents ({operations} provisionings, "
          f"deploys, stops and deletes), "
          f"{args.workers} workers, a fault every {args.fault_every:g} s, seed {args.seed}; load {loadavg()}")
    processes: list[ManagedProcess] = []
    faults: Faults | None = None
    with tempfile.TemporaryDirectory(prefix="occ-chaos-") as folder:
        root = Path(folder)
        postgres, redis = OwnPostgres(root), OwnRedis(root)
        try:
            postgres.init()
            postgres.start()
            redis.start()
            url = postgres.url("occ_chaos_bench")
            recreate_database(url)
            data = root / "data"
            env = process_env(
                url, data, CELERY_BROKER_URL=redis.url, OCC_COMPUTE_DRIVER="fake",
                OCC_FAKE_COMPUTE_STATE=str(data / "fake-compute.json"), OCC_WORKER_LEASE_SECONDS=str(LEASE_SECONDS),
                OCC_WORKER_HEARTBEAT_SECONDS=str(HEARTBEAT_SECONDS), OCC_SWEEP_INTERVAL_SECONDS=str(SWEEP_SECONDS))
            configure_django(env)
            # This process's nudges fail while Redis is down (the sweep sends them later): each
            # would be a warning line between the soak's own.
            logging.getLogger("provisioning.worker").setLevel(logging.ERROR)
            world = seed_world()
            workers = [start_worker(env, data, f"chaos-worker-{n + 1}") for n in range(args.workers)]
            processes.extend(workers)
            processes.append(start_beat(env, data))
            faults = Faults(every=args.fault_every, rng=random.Random(args.seed), workers=workers, env=env,
                            data=data, redis=redis, postgres=postgres)
            faults.start()
            print(f"setup took {time.monotonic() - started:.1f} s; faults start now")
            namespaces = create_namespaces(world, args.namespaces)
            plans = [Plan(index=n, namespace_id=namespaces[n % args.namespaces][0],
                          secret_id=namespaces[n % args.namespaces][1], deleted_at_end=n % 4 == 3)
                     for n in range(args.namespaces * args.agents)]
            drive(world, plans, faults)
            wait_until(lambda: faults.error is not None or all(faults.counts[kind] for kind in FAULTS),
                       timeout=len(FAULTS) * (args.fault_every + 30), interval=0.2, what="every kind of fault once")
            faults.stop()
            processes.extend(worker for worker in faults.workers if worker not in processes)
            if faults.error is not None:
                raise BenchError(f"a fault could not be injected: {faults.error!r}")
            last_fault = faults.last_fault_at
            print(f"every step taken; faults {dict(faults.counts)}; waiting for quiet")
            wait_until(lambda: durable(quiet, what="read the work"), timeout=QUIET_TIMEOUT_SECONDS, interval=0.2,
                       what="every job to end")
            to_quiet = time.monotonic() - last_fault
            world_state = get_compute_driver().world()  # type: ignore[attr-defined]
            logs = sorted(data.glob("chaos-worker-*.log"))
            checks = [*work_checks(), *agent_checks(plans, world_state), *effect_checks(plans, world_state, logs),
                      Check("faults injected", "each kind", ", ".join(f"{k} {faults.counts[k]}" for k in FAULTS),
                            all(faults.counts[k] for k in FAULTS)),
                      Check("last fault to quiet", "report", f"{to_quiet:.1f} s", True)]
        finally:  # every process this run started, by its group id, then the services
            if faults is not None:
                faults.stop()
                processes.extend(worker for worker in faults.workers if worker not in processes)
            for process in reversed(processes):
                process.stop()
            redis.stop()
            postgres.stop()
    print_checks(checks)
    print_closing(started)
    if not all(check.ok for check in checks):
        raise BenchError("the soak broke an invariant (FAIL above)")
    return checks


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(parse_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())
