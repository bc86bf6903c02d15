#!/usr/bin/env python
"""Deploy with one npm plugin on the ``local`` driver, against the bare runtime doing the same.

Both arms use the same Node and openclaw (``runtime/``), the loopback fake model of the tests
and one npm plugin of the curated catalog at its exact version
(``@openclaw/synology-chat@2026.9.4``), each with a fresh Agent folder (its own state and
``HOME``, so its own npm cache):

    bare    ``openclaw plugins install npm:<package>@<version> --pin`` into the folder's state
            directory, then the driver's own gateway argv, config (the same translated
            document) and environment, spawned directly; timed: the install, and the spawn
            to the first ``/readyz`` 200 (polled every 0.1 s).
    deploy  a fresh Agent with the selection, ``agent_deploy``; a real ``celery worker`` and
            ``beat`` run the revision work on the local driver (install, verification, the
            gateway); timed from the service's return (the API's 202) to the work row's
            ``completed_at`` (``REVISION_ACTIVATED``).
    reuse   a second revision of that Agent with the same spec: its install step
            (``installSeconds`` of the revision's ``plugin-status.json``) against the first's.

Targets: deploy ÷ (bare install + bare spawn) <= 1.15; second install step ÷ first <= 0.05.
The arms alternate order over the pairs. The npm registry must be reachable. If
``manage.py occ_runtime check`` fails, the benchmark says so and skips.
Run: ``.venv/bin/python bench/plugins_deploy.py`` (``--help``). ``DATABASE_URL`` (default
``postgres://postgres@127.0.0.1:5432/occ_plugins_bench``) must name a database containing
``bench``: it is dropped and recreated.
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
import secrets
import subprocess
import tempfile
import time
from collections.abc import Sequence
from typing import Any

from bench.activation_local import (
    POLL_SECONDS,
    READY_TIMEOUT_SECONDS,
    STOP_GRACE_SECONDS,
    Activation,
    Gateways,
    deploy_until_active,
    model_document,
    port_slice,
    runtime_check,
    stop_agent,
)
from bench.verdicts import Verdict, print_skip, print_verdicts
from bench.worker_support import (
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
    wait_until,
)

DEFAULT_DATABASE = "occ_plugins_bench"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/12"
SELECTION = "occ-plugin:synology-chat"
DEPLOY_TARGET = 1.15
REUSE_TARGET = 0.05
INSTALL_TIMEOUT_SECONDS = 900.0


def selections() -> dict[str, Any]:
    return {SELECTION: {"enabled": True}}


def bare_install_and_spawn(gateways: Gateways, document: dict[str, Any], folder: Path, port: int
                           ) -> tuple[float, float]:
    """(install seconds, spawn -> ready seconds) of the bare runtime in a fresh Agent folder."""
    from django.conf import settings

    from occ.documents import PluginSelection
    from occ.drivers.compute import local_supervisor as supervisor
    from occ.drivers.compute.files import GATEWAY_TITLES, AgentPaths
    from occ.drivers.compute.local import PASSWORD_ENV, child_environment, render_config
    from occ.drivers.compute.local_plugins import PASSED_THROUGH_ENV
    from occ.drivers.plugins.registry import require_plugin_driver
    from occ.ids import IdPrefix, new_id
    from occ.openclaw.document import CUSTOM_PROVIDER_KEY_ENV
    from occ.runtime import Runtime

    runtime = Runtime(Path(settings.OCC_RUNTIME_DIR))
    node, entry = runtime.require()
    paths = AgentPaths(folder / "agents" / new_id(IdPrefix.AGENT))
    paths.ensure()
    revision_dir = paths.revision_dir(new_id(IdPrefix.REVISION))
    revision_dir.mkdir(mode=0o700, parents=True)
    driver = require_plugin_driver("openclaw")
    spec = driver.resolve({key: PluginSelection.model_validate(value) for key, value in selections().items()})
    npm = spec.natives[SELECTION].npm
    assert npm is not None
    scratch = revision_dir / "install.json"
    scratch.write_text("{}\n")
    install_env = {"PATH": runtime.bin_path(), "HOME": str(paths.home), "LANG": "C.UTF-8",
                   "OPENCLAW_STATE_DIR": str(paths.state), "OPENCLAW_CONFIG_PATH": str(scratch),
                   **{name: os.environ[name] for name in PASSED_THROUGH_ENV if os.environ.get(name)}}
    started = time.time()
    result = subprocess.run([str(node), str(entry), "plugins", "install", npm.spec, "--pin"], env=install_env,
                            cwd=paths.root, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            timeout=INSTALL_TIMEOUT_SECONDS, check=False)
    install = time.time() - started
    if result.returncode != 0:
        raise BenchError(f"the bare install failed ({result.returncode}):\n"
                         f"{result.stdout[-1500:]}{result.stderr[-1500:]}")
    config_path = revision_dir / "openclaw.json"
    config = render_config(driver.translate(spec, document), port=port, paths=paths, deliver_model_key=True)
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
        return install, time.time() - started
    finally:
        supervisor.stop(identity, grace=STOP_GRACE_SECONDS, titles=GATEWAY_TITLES)


def install_seconds(data: Path, agent_id: str, revision_id: str) -> float:
    revisions = data / "agents" / agent_id / "revisions"
    path = revisions / revision_id / "plugin-status.json"
    if not path.exists():
        present = sorted(str(p.relative_to(revisions)) for p in revisions.rglob("*"))
        raise BenchError(f"no plugin status for {revision_id}; the revisions folder holds {present}")
    return float(json.loads(path.read_text())["installSeconds"])


def serving_revision(data: Path, agent_id: str) -> str:
    """The revision the Agent's gateway serves, from the driver's own record."""
    from occ.drivers.compute.files import GatewayRecord

    record = GatewayRecord.read(data / "agents" / agent_id / "gateway.json")
    if record is None:
        raise BenchError(f"no gateway record for {agent_id}")
    return record.revision_id


def deploy_twice(world: World, agent: Any, data: Path) -> tuple[Activation, float, float]:
    """The first deploy (timed), its install step, and a second revision's install step."""
    first = deploy_until_active(world, agent, data)
    first_revision = serving_revision(data, agent.id)
    first_install = install_seconds(data, agent.id, first_revision)  # retired once the second is active
    print(f"  first deploy -> active {first.seconds:.2f} s, its install step {first_install:.2f} s")
    deploy_until_active(world, agent, data)
    second_revision = serving_revision(data, agent.id)
    if second_revision == first_revision:
        raise BenchError("the second deployment did not replace the first")
    return first, first_install, install_seconds(data, agent.id, second_revision)


def report(bare: list[tuple[float, float]], deploys: list[tuple[Activation, float, float]]) -> list[Verdict]:
    print(f"\n{len(bare)} pairs (order alternates); seconds")
    print(f"  {'pair':<6}{'bare install':>13}{'bare spawn':>12}{'deploy->active':>16}{'ratio':>8}"
          f"{'OCC install':>13}{'2nd install':>13}")
    for index, ((install, spawn), (activation, first, second)) in enumerate(zip(bare, deploys, strict=True), 1):
        print(f"  {index:<6}{install:>13.2f}{spawn:>12.2f}{activation.seconds:>16.2f}"
              f"{activation.seconds / (install + spawn):>8.2f}{first:>13.2f}{second:>13.3f}")
    pooled = ratio(sum(a.seconds for a, _, _ in deploys), sum(i + s for i, s in bare))
    reuse = ratio(sum(second for _, _, second in deploys), sum(first for _, first, _ in deploys))
    return [
        Verdict("deploy with one npm plugin / (bare install + bare spawn)", pooled, DEPLOY_TARGET, at_most=True,
                detail="pairs " + " ".join(f"{a.seconds / (i + s):.2f}"
                                           for (i, s), (a, _, _) in zip(bare, deploys, strict=True))),
        Verdict("second revision's install step / the first's", reuse, REUSE_TARGET, at_most=True,
                detail="pairs " + " ".join(f"{second:.3f}/{first:.1f}" for _, first, second in deploys)),
    ]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=1, help="bare/deploy pairs (default 1; ~3-5 minutes each)")
    parser.add_argument("--redis-url", default=os.environ.get("BENCH_REDIS_URL", DEFAULT_REDIS_URL),
                        help=f"this benchmark's own Redis database (default {DEFAULT_REDIS_URL})")
    args = parser.parse_args(argv)
    if not 1 <= args.pairs <= 4:
        parser.error("pairs must be 1-4")
    redis_db_number(args.redis_url)
    return args


def run(args: argparse.Namespace) -> list[Verdict]:
    started = time.monotonic()
    installed, says = runtime_check()
    if not installed:
        print_skip("plugins on the local driver: `manage.py occ_runtime check` failed (run `make runtime`):\n  "
                   + says.replace("\n", "\n  "))
        return []
    database_url = bench_database_url(DEFAULT_DATABASE)
    recreate_database(database_url)
    flush_redis_db(args.redis_url)
    print_facts("OCC deploy with one npm plugin on the local driver vs the bare runtime (real openclaw, npm, "
                "fake model)", machine_facts(database_url))
    from tests.fakes.fake_openai import FakeOpenAI

    processes: list[ManagedProcess] = []
    model = FakeOpenAI().start()
    with tempfile.TemporaryDirectory(prefix="occ-plugins-bench-") as folder:
        data = Path(folder)
        gateways = Gateways(data)
        try:
            first, last = port_slice()
            env = process_env(database_url, data, CELERY_BROKER_URL=args.redis_url, OCC_COMPUTE_DRIVER="local",
                              OCC_PLUGIN_DRIVER="openclaw", OCC_LOCAL_GATEWAY_PORT_RANGE=f"{first}-{last}",
                              OCC_LOCAL_GATEWAY_READY_TIMEOUT_SECONDS=str(READY_TIMEOUT_SECONDS))
            for name in ("OCC_SWEEP_INTERVAL_SECONDS", "OCC_WORKER_DEFER_SECONDS", "OCC_OPENCLAW_PLUGIN_CATALOG"):
                env.pop(name, None)  # the defaults and the committed catalog are what is measured
            configure_django(env)
            document = model_document(model.base_url)
            world = seed_world()
            processes.append(start_beat(env, data))
            processes.append(start_worker(env, data, "bench-plugins"))
            print(f"setup took {time.monotonic() - started:.1f} s; load average {loadavg()}")
            from occ.models import Agent

            bare: list[tuple[float, float]] = []
            deploys: list[tuple[Activation, float, float]] = []
            bare_port = last + 240  # outside the driver's range
            for pair in range(args.pairs):
                for arm in (("bare", "deploy") if pair % 2 == 0 else ("deploy", "bare")):
                    if arm == "bare":
                        bare.append(bare_install_and_spawn(gateways, document, data / f"bare-{pair}", bare_port))
                        print(f"  bare install {bare[-1][0]:.2f} s, bare spawn -> ready {bare[-1][1]:.2f} s")
                    else:
                        agent = add_agent(world, f"plugins-agent-{pair}", document)
                        Agent.objects.filter(id=agent.id).update(plugins=selections())
                        deploys.append(deploy_twice(world, agent, data))
                        stop_agent(world, agent, data)
                    print(f"  pair {pair + 1} {arm} done; load average {loadavg()}")
            verdicts = report(bare, deploys)
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
