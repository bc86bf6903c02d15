"""Browser-test fixtures (``tests/browser/support.py`` has the pieces):

- ``occ``: OCC as ``make run`` starts it (web, Celery worker and beat; SQLite, or a PostgreSQL
  database of its own named ``…_browser``) with the ``fake`` compute driver, its Slack and
  model discovery pointed at the loopback ``fake_world`` process. One per test module
  (starting it takes seconds); every process is stopped through its own process group.
- ``browser``: Debian's Chromium driven by Playwright, one fresh temporary profile per module.
- ``console``: a page of that browser, the session's cookies cleared, recording every text
  response and saving step screenshots under ``$OCC_BROWSER_ARTIFACTS`` (default
  ``tests/browser/artifacts/``), plus the page and the servers' logs when the test fails.

Without Chromium the tests skip with the reason (``make test`` installs it when run as root);
in CI (``OCC_REQUIRE_SERVICES=1``) that skip is a failure.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.chromium import CHROMIUM, CHROMIUM_MISSING, launch_chromium
from tests.browser.support import ARTIFACTS, Console, FakeWorld, Occ, browser_stack
from tests.conftest import service_missing
from tests.e2e.stack import stack_database
from tests.processes import group_running

# Web-first assertions and actions wait this long unless told otherwise.
TIMEOUT_MS = 15_000


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before any fixture starts a server: without Chromium, no browser test."""
    if item.get_closest_marker("browser") is not None and not os.access(CHROMIUM, os.X_OK):
        service_missing(CHROMIUM_MISSING)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Keep each phase's report on the item, so ``console`` can save evidence of a failure."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture(scope="module")
def occ_extra_env() -> dict[str, str]:
    """Environment a test module adds to its OCC (override it in the module)."""
    return {}


@pytest.fixture(scope="module")
def occ_process_env() -> dict[str, dict[str, str]]:
    """Environment a test module adds to one of its OCC's processes (``web``, ``worker``)."""
    return {}


@pytest.fixture(scope="module")
def occ(tmp_path_factory: pytest.TempPathFactory, django_db_blocker: Any, occ_extra_env: dict[str, str],
        occ_process_env: dict[str, dict[str, str]]) -> Iterator[Occ]:
    root = tmp_path_factory.mktemp("browser-stack")
    (root / "logs").mkdir()
    with contextlib.ExitStack() as cleanup, django_db_blocker.unblock():
        # Undone in reverse: OCC's processes, its database, then the fakes.
        fakes = FakeWorld(root / "logs")
        cleanup.callback(fakes.stop)
        fakes.wait_ready()
        database = cleanup.enter_context(stack_database(root / "data", suffix="browser"))
        stack = browser_stack(root, database, fakes, occ_extra_env, occ_process_env)
        cleanup.callback(stack.stop)
        stack.start()
        yield Occ(stack=stack, fakes=fakes, namespace_id=stack.default_namespace_id())
    assert not stack.outlived(), f"OCC processes outlived the stop: {stack.outlived()}"
    assert not group_running(fakes.pgid), "the fake world outlived the stop"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A Playwright BrowserContext of Debian's Chromium with a fresh temporary profile."""
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=TIMEOUT_MS)
    with tempfile.TemporaryDirectory(prefix="occ-chromium-") as profile, sync_playwright() as playwright:
        context = launch_chromium(playwright, profile, viewport={"width": 1280, "height": 900}, locale="en-US",
                                  timezone_id="UTC")
        context.set_default_timeout(TIMEOUT_MS)
        try:
            yield context
        finally:
            context.close()


@pytest.fixture
def console(request: pytest.FixtureRequest, browser: Any, occ: Occ) -> Iterator[Console]:
    browser.clear_cookies()
    page = browser.new_page()
    artifacts = ARTIFACTS / re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name)
    artifacts.mkdir(parents=True, exist_ok=True)
    for old in artifacts.glob("*"):
        old.unlink()
    session = Console(page=page, occ=occ, artifacts=artifacts)
    page.on("response", session.record)
    try:
        yield session
    finally:
        report = getattr(request.node, "report_call", None)
        if report is not None and report.failed:
            with contextlib.suppress(Exception):  # evidence only: the page may be gone
                page.screenshot(path=str(artifacts / "failure.png"), full_page=True)
                (artifacts / "failure.html").write_text(page.content())
            (artifacts / "failure-logs.txt").write_text(occ.diagnose())
        page.close()
