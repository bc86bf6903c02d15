#!/usr/bin/env python
"""Plugin discovery latency through OCC against the upstream's own, measured side by side in one run.

gunicorn (2 sync workers) serves OCC on PostgreSQL with the ``codex`` PluginDriver pointed at
the loopback fake Codex catalog (``tests/fakes/fake_codex.py``, real HTTP, in this process).
Rounds of two arms are interleaved at concurrency 1, each walking the catalog's three pages:

    upstream  GET  {fake}/backend-api/ps/plugins/list?scope=GLOBAL&limit=20[&pageToken=…]
              (a fresh connection per page, as OCC opens one per call)
    occ       POST /namespaces/{ns}/agents/plugins {accessToken, cursor}
              (API key, IAM, the driver, the same upstream call, rendering)

The fake answers after ``latency`` seconds per request. At 0 it is pure loopback (the ratio
then shows OCC's whole fixed cost against a ~1 ms upstream); at 50 ms it behaves like a real
catalog across a network. The script prints p50/p99 of both arms and occ ÷ upstream for each
latency; the target (≤ 1.5x) is on the p50 ratio. OCC hydrates the identity once per token
(cached five minutes), so a page costs one upstream call after the first.

Run: ``.venv/bin/python bench/plugin_discovery.py`` (under ``flock /tmp/occ-heavy.lock`` on a
shared machine). ``DATABASE_URL`` names a PostgreSQL database whose name contains ``bench``;
it is dropped and recreated.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if sys.path and Path(sys.path[0]).resolve() == ROOT / "bench":
    sys.path[0] = str(ROOT)
elif str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from bench.api_latency import (  # noqa: E402
    DEFAULT_DATABASE_URL,
    BenchError,
    configure_django,
    free_port,
    gunicorn_server,
    machine_facts,
    percentile,
    ratio,
    recreate_database,
    seed,
)
from bench.verdicts import Verdict, print_verdicts  # noqa: E402
from tests.fakes.fake_codex import ACCOUNT_ID, TOKEN, FakeCodex  # noqa: E402

TARGET = 1.5
LATENCIES = (0.0, 0.05)
PAGES = 3


def upstream_page(fake: FakeCodex, page_token: str | None) -> str | None:
    params = {"scope": "GLOBAL", "limit": "20", **({"pageToken": page_token} if page_token else {})}
    response = httpx.get(f"{fake.chatgpt_base_url}/ps/plugins/list", params=params, timeout=30,
                         headers={"authorization": f"Bearer {TOKEN}", "chatgpt-account-id": ACCOUNT_ID,
                                  "oai-product-sku": "codex"})
    if response.status_code != 200:
        raise BenchError(f"the fake answered {response.status_code}")
    return response.json()["pagination"].get("next_page_token")


def occ_page(client: httpx.Client, namespace_id: str, cursor: str | None) -> str | None:
    body = {"accessToken": TOKEN, **({"cursor": cursor} if cursor else {})}
    response = client.post(f"/namespaces/{namespace_id}/agents/plugins", json=body)
    if response.status_code != 200:
        raise BenchError(f"OCC answered {response.status_code}: {response.text[:300]}")
    return response.json()["data"]["nextCursor"]


def walk(step: object, *args: object) -> list[float]:
    """Time each page of one walk through the catalog."""
    times: list[float] = []
    cursor: str | None = None
    for _ in range(PAGES):
        started = time.perf_counter()
        cursor = step(*args, cursor)  # type: ignore[operator]
        times.append(time.perf_counter() - started)
        if cursor is None:
            break
    return times


def measure(fake: FakeCodex, base_url: str, key: str, namespace_id: str, rounds: int,
            walks: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"upstream": [], "occ": []}
    with httpx.Client(base_url=base_url, headers={"x-api-key": key}, timeout=60) as client:
        occ_page(client, namespace_id, None)  # warm: imports, the identity cache, connections
        for _ in range(rounds):
            for _ in range(walks):
                samples["upstream"] += walk(upstream_page, fake)
                samples["occ"] += walk(occ_page, client, namespace_id)
    return samples


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--walks", type=int, default=10, help="catalog walks (three pages) per arm per round")
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> list[Verdict]:
    database_url = os.environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL
    recreate_database(database_url)
    verdicts = []
    with tempfile.TemporaryDirectory(prefix="occ-bench-") as data_dir, FakeCodex() as fake:
        os.environ.update(OCC_PLUGIN_DRIVER="codex", OCC_CODEX_AUTH_BASE_URL=fake.auth_base_url,
                          OCC_CODEX_CHATGPT_BASE_URL=fake.chatgpt_base_url)
        configure_django(database_url, Path(data_dir))
        print("OCC plugin discovery benchmark (a catalog page through OCC ÷ the same page from the upstream)")
        for name, value in machine_facts(database_url).items():
            print(f"  {name:<22}{value}")
        seeded = seed([1])
        with gunicorn_server(free_port(), Path(data_dir) / "gunicorn.log") as base_url:
            print(f"\n{'latency':>8} {'arm':>9} {'n':>5} {'p50 ms':>8} {'p99 ms':>8}   occ ÷ upstream (p50)")
            for latency in LATENCIES:
                fake.configure(latency=latency)
                samples = measure(fake, base_url, seeded.key, seeded.namespace_id, args.rounds, args.walks)
                p50 = {arm: percentile(values, 50) for arm, values in samples.items()}
                for arm, values in samples.items():
                    print(f"{latency * 1000:>6.0f}ms {arm:>9} {len(values):>5} {p50[arm] * 1000:>8.2f} "
                          f"{percentile(values, 99) * 1000:>8.2f}")
                figure = ratio(p50["occ"], p50["upstream"])
                print(f"{'':>35}{figure:.2f}x")
                verdicts.append(Verdict(f"catalog page, upstream {latency * 1000:.0f} ms: OCC ÷ upstream p50", figure,
                                        TARGET, at_most=True))
    loadavg = os.getloadavg()[0]
    print(f"\nload average now {loadavg:.2f} on {os.cpu_count()} CPUs; only the ratios mean anything.")
    print_verdicts(verdicts)
    return verdicts


def main(argv: Sequence[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        run(parse_args(argv))
    except BenchError as exc:
        print(f"benchmark failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
