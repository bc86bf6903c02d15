#!/usr/bin/env python
"""What checking a Configuration against the pinned runtime's config schema adds to its create.

``POST /namespaces/{ns}/configurations`` in process (Django's test client: the whole
middleware stack, IAM, the service's transaction and audit) with a realistic document (the
Create Agent template with a compatible provider and Slack merged in), in interleaved rounds
of two arms:

    with     the schema check on (as shipped)
    without  the schema check replaced by "no problems" (OCC's own rules still run)

and prints the p50 of each, the p50 added (target: at most 5 ms) and the ratio, plus the
in-process cost of the schema check alone and of loading the validator once per process.

Run: ``.venv/bin/python bench/config_validation.py`` (SQLite in a temporary folder), or with
``DATABASE_URL=postgres://…/<name containing bench>`` (dropped and recreated) for PostgreSQL.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TARGET_ADDED_MS = 5.0


def _project_on_path() -> None:
    # Run as a script, sys.path[0] is bench/ itself; the project root is what imports need.
    if sys.path and Path(sys.path[0]).resolve() == ROOT / "bench":
        sys.path[0] = str(ROOT)
    elif str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))


def document() -> dict[str, Any]:
    from occ.openclaw import document, slack

    values = document.agent_template(provider=document.COMPATIBLE_PROVIDER_ID, model="llama-4",
                                     base_url="http://127.0.0.1:11434/v1")
    return slack.merge_slack_settings(values, slack.SlackSettings(
        channel_ids=("C0123ABCD", "C0123ABCE"), require_mention=True, channel_user_ids=("U0123ABCD",),
        dm_policy="allowlist", dm_user_ids=("U0123ABCD", "U0123ABCE")))


def setup(database_url: str | None, data_dir: Path) -> tuple[str, str]:
    """Migrate, bootstrap, ready ``default``; (API key, Namespace id)."""
    from bench.api_latency import configure_django, mark_namespace_ready, recreate_database

    if database_url:
        recreate_database(database_url)
    else:
        database_url = f"sqlite:///{data_dir / 'bench.sqlite3'}"
    configure_django(database_url, data_dir)
    import secrets

    from django.core.management import call_command

    from occ.models import Namespace
    from occ.services.bootstrap import installation_bootstrap

    call_command("migrate", verbosity=0, interactive=False)
    result = installation_bootstrap(name="OCC bench", admin_username="admin",
                                    admin_password=secrets.token_urlsafe(18), key_days=1)
    assert result.key_token is not None
    namespace = Namespace.objects.get(name="default")
    mark_namespace_ready(namespace.id)
    return result.key_token, namespace.id


@contextmanager
def schema_check(enabled: bool) -> Iterator[None]:
    """The "without" arm: the runtime-schema step of ``check_configuration_values`` finds nothing."""
    from occ.openclaw import validation

    shipped = validation.schema_problems
    if not enabled:
        validation.schema_problems = lambda values: []  # type: ignore[assignment]
    try:
        yield
    finally:
        validation.schema_problems = shipped  # type: ignore[assignment]


def timed(call: Callable[[], object], count: int) -> list[float]:
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def run(args: argparse.Namespace) -> int:
    from bench.api_latency import percentile
    from bench.verdicts import Verdict, print_verdicts

    database_url = os.environ.get("DATABASE_URL") or None
    database = f"PostgreSQL {database_url.rsplit('/', 1)[-1]}" if database_url else "SQLite"
    with tempfile.TemporaryDirectory(prefix="occ-bench-validation-") as folder:
        key, namespace_id = setup(database_url, Path(folder))
        from django.test import Client

        from occ.openclaw.schema import runtime_validator, schema_problems
        from occ.openclaw.validation import check_configuration_values

        values = document()
        assert schema_problems(values) == [], "the bench document must be one the runtime accepts"
        started = time.perf_counter()
        runtime_validator.cache_clear()
        runtime_validator()
        load_ms = (time.perf_counter() - started) * 1000

        client = Client(headers={"x-api-key": key})
        url = f"/namespaces/{namespace_id}/configurations"

        def create() -> None:
            response = client.post(url, {"kind": "agent", "values": values}, content_type="application/json")
            if response.status_code != 201:
                raise SystemExit(f"create answered {response.status_code}: {response.content[:300]!r}")

        for enabled in (True, False):  # warm both arms: imports, connections, caches
            with schema_check(enabled):
                timed(create, 20)
        samples: dict[str, list[float]] = {"with": [], "without": []}
        for round_ in range(args.rounds):
            arms = (("with", True), ("without", False)) if round_ % 2 == 0 else (("without", False), ("with", True))
            for name, enabled in arms:
                with schema_check(enabled):
                    samples[name].extend(timed(create, args.requests))
        check_alone = timed(lambda: check_configuration_values(values), 500)
        schema_alone = timed(lambda: schema_problems(values), 500)

    p50 = {name: percentile(found, 50) for name, found in samples.items()}
    p99 = {name: percentile(found, 99) for name, found in samples.items()}
    added = p50["with"] - p50["without"]
    print("Configuration create with and without the runtime-schema check (in process, "
          f"{database}, {args.rounds} interleaved rounds "
          f"x {args.requests} creates per arm)")
    print(f"  load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    print(f"  {'arm':<10}{'p50 ms':>10}{'p99 ms':>10}")
    for name in ("with", "without"):
        print(f"  {name:<10}{p50[name]:>10.2f}{p99[name]:>10.2f}")
    print(f"  added p50 {added:.2f} ms, with/without {p50['with'] / p50['without']:.3f}")
    print(f"  check_configuration_values alone p50 {percentile(check_alone, 50):.3f} ms; "
          f"the schema step alone p50 {percentile(schema_alone, 50):.3f} ms")
    print(f"  loading the validator (once per process, on first use) {load_ms:.0f} ms")
    print_verdicts([Verdict("Configuration create: runtime-schema check, added p50 ms", added, TARGET_ADDED_MS,
                            at_most=True, detail=f"with/without {p50['with'] / p50['without']:.3f}")])
    return 0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=20, help="interleaved rounds (default 20)")
    parser.add_argument("--requests", type=int, default=25, help="creates per arm per round (default 25)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    _project_on_path()
    return run(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
