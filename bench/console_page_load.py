#!/usr/bin/env python
"""Create Agent page load in Chromium ÷ a static file of the same size, side by side in one run.

gunicorn (2 sync workers, ``bench.settings``) serves OCC on SQLite in a temporary data folder
(or PostgreSQL: ``--database-url``, a database whose name contains ``bench``; it is dropped and
recreated) with the ``default`` Namespace ready and a few Secrets. Debian's Chromium, driven
by Playwright with the browser tests' flags, signs in once, then loads, interleaved (ABBA, so a
drift of the machine weighs on both arms alike), many times:

    page     GET /console/namespaces/{ns}/agents/new       (rendered by Django for each load)
    static   GET /static/bench/create-agent-snapshot.html   (whitenoise, the same gunicorn)

The static file is that very page rendered once before the server starts (the same bytes
within a CSRF token, so the same size, the same stylesheet and scripts, the same parsing,
layout and htmx start-up): the two arms differ only in who produces the document, Django
(session, Namespace check, queries, templates) or whitenoise from memory. Both come from the
same server and origin, over loopback, with the same cookies, and every load has a fresh query
string so the document itself is never served from the browser's cache (the stylesheet and
scripts are cached alike for both). A load's time is the Navigation Timing entry's
``loadEventEnd`` (navigation start → the end of the ``load`` event). The script also prints,
as context only, a third arm: a plain static file of the same size without any stylesheet or
script (``plain``).

Target (issue 5): p50(page) ÷ p50(static) ≤ 2. Only ratios mean anything here: absolute
times on these machines swing by 40%.

Run: ``.venv/bin/python bench/console_page_load.py [--rounds 100]`` (Chromium from
``/usr/bin/chromium``, launched as the browser tests launch it: ``tests/browser/chromium.py``;
``make test`` installs it as root).
"""

from __future__ import annotations

import argparse
import contextlib
import html
import os
import platform
import re
import secrets
import shlex
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script, sys.path[0] is bench/ itself
    sys.path.insert(0, str(ROOT))

from bench.api_latency import (  # noqa: E402
    BenchError,
    database_name,
    free_port,
    gunicorn_server,
    mark_namespace_ready,
    percentile,
    ratio,
    recreate_database,
)
from bench.verdicts import Verdict, print_verdicts  # noqa: E402
from bench.worker_support import bench_main, loadavg, print_closing, print_facts  # noqa: E402
from occ.commands.secrets import SecretCreate  # noqa: E402
from project.data_dir import DataDir  # noqa: E402
from tests.browser.chromium import CHROMIUM, CHROMIUM_MISSING, launch_chromium  # noqa: E402

TARGET = 2.0
ADMIN = "admin"
SECRETS_SEEDED = 5
SNAPSHOT = "bench/create-agent-snapshot.html"
PLAIN = "bench/plain-same-size.html"
ARMS = ("page", "static", "plain")
LOAD_TIMEOUT_MS = 30_000
NAVIGATION_TIMING = """() => {
  const [entry] = performance.getEntriesByType("navigation");
  const app = (entry.serverTiming || []).find(t => t.name === "app");
  return {load: entry.loadEventEnd, responseEnd: entry.responseEnd, ttfb: entry.responseStart - entry.requestStart,
          status: entry.responseStatus, bytes: entry.decodedBodySize, app: app ? app.duration : null};
}"""


# --- the server's data --------------------------------------------------------------------


@dataclass
class Seeded:
    namespace_id: str
    password: str
    page_path: str
    page_bytes: int


def configure_django(data_dir: Path, database_url: str | None) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"
    os.environ["OCC_DATA_DIR"] = str(data_dir)
    DataDir(data_dir).create()
    os.environ.setdefault("OCC_LOG_LEVEL", "ERROR")  # (the broker nobody consumes here warns once)
    os.environ.setdefault("OCC_HTTPS", "false")  # plain http on loopback
    os.environ.pop("DATABASE_URL", None)
    if database_url:
        os.environ["DATABASE_URL"] = database_url
    import django

    django.setup()


def seed(page: str) -> Seeded:
    """Migrate, bootstrap, make ``default`` ready (what the worker does), add a few Secrets for
    the page's pickers, collect static files, and write the two static files of the page's size."""
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connections
    from django.test import Client

    from occ.iam.actor import Actor, Source
    from occ.models import Namespace, Principal
    from occ.services.bootstrap import installation_bootstrap
    from occ.services.secrets import secret_create

    call_command("migrate", verbosity=0, interactive=False)
    password = secrets.token_urlsafe(18)
    result = installation_bootstrap(name="OCC bench", admin_username=ADMIN, admin_password=password, key_days=1)
    if not result.created:
        raise BenchError("Bootstrap did not create a fresh Installation.")
    namespace = Namespace.objects.get(name="default")
    mark_namespace_ready(namespace.id)
    admin = Principal.objects.get(user__username=ADMIN)
    actor = Actor(principal=admin, source=Source.CONSOLE)
    for index in range(SECRETS_SEEDED):
        secret_create(actor=actor, namespace_id=namespace.id,
                      command=SecretCreate(name=f"bench-secret-{index}", value=secrets.token_urlsafe(24)))
    call_command("collectstatic", interactive=False, verbosity=0)

    page_path = f"/console/namespaces/{namespace.id}/{page}"
    client = Client()
    if admin.user is None:
        raise BenchError("the bootstrap administrator has no console user")
    client.force_login(admin.user)
    response = client.get(page_path)
    if response.status_code != 200:
        raise BenchError(f"GET {page_path} answered {response.status_code} in-process; is the page built?")
    document = response.content
    static_root = Path(settings.STATIC_ROOT)
    (static_root / SNAPSHOT).parent.mkdir(parents=True, exist_ok=True)
    (static_root / SNAPSHOT).write_bytes(document)
    (static_root / PLAIN).write_bytes(plain_document(len(document)))
    connections.close_all()
    return Seeded(namespace_id=namespace.id, password=password, page_path=page_path, page_bytes=len(document))


def plain_document(size: int) -> bytes:
    """A valid HTML page of exactly ``size`` bytes: paragraphs, no stylesheet, no script."""
    head = b'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Static</title></head><body>\n'
    tail = b"</body></html>\n"
    paragraph = html.escape("Static text of the same size as the page. " * 4).encode()
    body = b""
    while len(head) + len(body) + len(tail) + len(paragraph) + 8 <= size:
        body += b"<p>" + paragraph + b"</p>\n"
    filler = size - len(head) - len(body) - len(tail)
    return head + body + b" " * max(filler, 0) + tail


# --- the browser --------------------------------------------------------------------------


@dataclass
class Samples:
    load_ms: dict[str, list[float]] = field(default_factory=lambda: {arm: [] for arm in ARMS})
    ttfb_ms: dict[str, list[float]] = field(default_factory=lambda: {arm: [] for arm in ARMS})
    app_ms: list[float] = field(default_factory=list)
    bytes: dict[str, int] = field(default_factory=dict)
    pair_ratios: list[float] = field(default_factory=list)


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    if not os.access(CHROMIUM, os.X_OK):
        raise BenchError(f"{CHROMIUM_MISSING}.")
    with tempfile.TemporaryDirectory(prefix="occ-bench-chromium-") as profile, sync_playwright() as playwright:
        context = launch_chromium(playwright, profile, viewport={"width": 1280, "height": 900})
        try:
            yield context
        finally:
            context.close()


def sign_in(page: Any, base_url: str, password: str) -> None:
    page.goto(f"{base_url}/console/sign-in")
    page.get_by_label("Username").fill(ADMIN)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("button", name="Sign out").wait_for(timeout=LOAD_TIMEOUT_MS)


class Loader:
    def __init__(self, page: Any, base_url: str, paths: dict[str, str]) -> None:
        self.page, self.base_url, self.paths = page, base_url, paths
        self.serial = 0

    def load(self, arm: str) -> dict[str, Any]:
        """One navigation; a fresh query string keeps the document out of the browser's cache."""
        self.serial += 1
        url = f"{self.base_url}{self.paths[arm]}?load={self.serial}"
        response = self.page.goto(url, wait_until="load", timeout=LOAD_TIMEOUT_MS)
        if response is None or response.status != 200:
            raise BenchError(f"{arm}: GET {url} answered {response.status if response else 'nothing'}")
        timing = self.page.evaluate(NAVIGATION_TIMING)
        if not timing["load"]:
            raise BenchError(f"{arm}: no load event timing for {url}")
        return timing


def measure(loader: Loader, *, rounds: int, warmup: int) -> Samples:
    for _ in range(warmup):  # gunicorn workers import and connect; the browser caches the assets
        for arm in ARMS:
            loader.load(arm)
    samples = Samples()
    for index in range(rounds):
        order = ARMS if index % 2 == 0 else tuple(reversed(ARMS))  # ABBA: drift weighs on both
        pair: dict[str, float] = {}
        for arm in order:
            timing = loader.load(arm)
            samples.load_ms[arm].append(timing["load"])
            samples.ttfb_ms[arm].append(timing["ttfb"])
            samples.bytes[arm] = timing["bytes"]
            if arm == "page" and timing["app"] is not None:
                samples.app_ms.append(timing["app"])
            pair[arm] = timing["load"]
        samples.pair_ratios.append(ratio(pair["page"], pair["static"]))
    return samples


# --- the report ---------------------------------------------------------------------------


def machine_facts(database_url: str | None, browser_version: str) -> dict[str, str]:
    from importlib.metadata import version

    import django
    import gunicorn

    facts = {"cpus": str(os.cpu_count()), "cpu": platform.processor() or "unknown", "kernel": platform.release(),
             "python": platform.python_version(), "django": django.get_version(), "gunicorn": gunicorn.__version__,
             "playwright": version("playwright"), "chromium": browser_version,
             "database": f"PostgreSQL ({database_name(database_url)})" if database_url else "SQLite (WAL)",
             "loadavg": loadavg()}
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                facts["cpu"] = line.split(":", 1)[1].strip()
                break
    return facts


def print_table(samples: Samples, seeded: Seeded, rounds: int) -> None:
    labels = {"page": f"page    GET {seeded.page_path}", "static": f"static  GET /static/{SNAPSHOT}",
              "plain": f"plain   GET /static/{PLAIN}"}
    print(f"\n{rounds} interleaved rounds; document {seeded.page_bytes} bytes rendered "
          f"(received: {', '.join(f'{arm} {samples.bytes.get(arm, 0)}' for arm in ARMS)})")
    print(f"  {'arm':<78}{'load p50':>10}{'p90':>9}{'TTFB p50':>10}  (ms)")
    for arm in ARMS:
        loads, ttfbs = samples.load_ms[arm], samples.ttfb_ms[arm]
        print(f"  {labels[arm]:<78}{percentile(loads, 50):>10.1f}{percentile(loads, 90):>9.1f}"
              f"{percentile(ttfbs, 50):>10.1f}")
    if samples.app_ms:
        print(f"  Django's own time for the page (Server-Timing app) p50 {percentile(samples.app_ms, 50):.1f} ms")
    spread = sorted(samples.pair_ratios)
    print(f"  page/static per round: median {percentile(spread, 50):.2f}x, "
          f"p10-p90 {percentile(spread, 10):.2f}-{percentile(spread, 90):.2f}x")
    print(f"  page/plain (context: no stylesheet or script in the static arm) "
          f"{ratio(percentile(samples.load_ms['page'], 50), percentile(samples.load_ms['plain'], 50)):.2f}x")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=100, help="interleaved rounds (default 100)")
    parser.add_argument("--warmup", type=int, default=5, help="unmeasured rounds first (default 5)")
    parser.add_argument("--page", default="agents/new",
                        help="the console page under the Namespace (default agents/new: Create Agent)")
    parser.add_argument("--database-url", default=None,
                        help="PostgreSQL instead of SQLite (a database whose name contains 'bench'; recreated)")
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if not (1 <= args.rounds <= 2000 and 0 <= args.warmup <= 100):
        parser.error("rounds must be 1-2000, warmup 0-100")
    if not re.fullmatch(r"[a-z0-9/_-]+", args.page):
        parser.error("--page is a path under /console/namespaces/<ns>/, e.g. agents/new")
    return args


def serve_and_measure(args: argparse.Namespace) -> tuple[Samples, Seeded]:
    with tempfile.TemporaryDirectory(prefix="occ-bench-console-") as data:
        data_dir = Path(data)
        configure_django(data_dir, args.database_url)
        seeded = seed(args.page)
        with gunicorn_server(free_port(), data_dir / "gunicorn.log") as base_url, chromium() as browser:
            version = browser.browser.version if browser.browser else "?"
            print_facts("OCC console page load in Chromium (÷ the same document as a static file, same server)",
                        machine_facts(args.database_url, version))
            page = browser.new_page()
            sign_in(page, base_url, seeded.password)
            loader = Loader(page, base_url, {"page": seeded.page_path, "static": f"/static/{SNAPSHOT}",
                                             "plain": f"/static/{PLAIN}"})
            return measure(loader, rounds=args.rounds, warmup=args.warmup), seeded


def drop_database(url: str) -> None:
    import psycopg
    from psycopg import sql

    maintenance = urlunsplit(urlsplit(url)._replace(scheme="postgresql", path="/postgres"))
    with contextlib.suppress(psycopg.OperationalError), psycopg.connect(maintenance, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database_name(url))))


def run(args: argparse.Namespace) -> None:
    started = time.monotonic()
    if args.database_url:
        recreate_database(args.database_url)
    try:
        samples, seeded = serve_and_measure(args)
    finally:
        if args.database_url:
            drop_database(args.database_url)
    print_table(samples, seeded, args.rounds)
    value = ratio(percentile(samples.load_ms["page"], 50), percentile(samples.load_ms["static"], 50))
    print_verdicts([Verdict("Create Agent load p50 / static p50" if args.page == "agents/new"
                            else f"{args.page} load p50 / static p50", value, TARGET, at_most=True)])
    command = " ".join(shlex.quote(part) for part in [".venv/bin/python", "bench/console_page_load.py", *args.argv])
    print(f"\nrerun: {command}")
    print_closing(started)


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(parse_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())
