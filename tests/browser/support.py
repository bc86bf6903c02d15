"""What the browser tests run against: the loopback outside world, OCC, and a console page.

- ``FakeWorld``: ``tests/browser/fake_world.py`` (fake Slack and model providers) as a process
  of its own, in its own session (process group).
- ``BrowserStack``: ``tests/e2e/stack.py``'s ``OccStack`` (OCC as ``make run`` starts it: web,
  Celery worker and beat) with static files collected, as ``make run`` does (the console
  needs its vendored htmx), and the administrator's password the bootstrap printed.
- ``Console``: one Playwright page, every text response it received (for the canary check),
  and numbered step screenshots.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from cryptography.fernet import Fernet

from tests.browser.fake_world import PORTS_LINE
from tests.e2e.stack import REPO, OccStack, StackDatabase, wait_until
from tests.processes import group_running

ARTIFACTS = Path(os.environ.get("OCC_BROWSER_ARTIFACTS") or REPO / "tests" / "browser" / "artifacts")
NAMESPACE_READY_SECONDS = 180
FAKES_START_SECONDS = 60
STOP_SECONDS = 10


# --- the outside world ---------------------------------------------------------------------------


class FakeWorld:
    """``tests/browser/fake_world.py`` as a process in its own session (group)."""

    def __init__(self, log_dir: Path) -> None:
        # The process binds its own free ports and prints them (wait_ready reads them).
        self.slack_port = self.models_port = self.codex_port = 0
        self.log_path = log_dir / "fake_world.log"
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tests.browser.fake_world"],
                cwd=REPO, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        self.pgid = self.process.pid

    @property
    def slack_base_url(self) -> str:
        return f"http://127.0.0.1:{self.slack_port}/api/"

    def model_base_url(self, provider: str) -> str:
        return f"http://127.0.0.1:{self.models_port}/{provider}"

    @property
    def codex_origin(self) -> str:
        return f"http://127.0.0.1:{self.codex_port}"

    def occ_env(self) -> dict[str, str]:
        """Where OCC's Slack driver, model discovery and the Codex plugin catalog go: here."""
        return {"OCC_SLACK_API_BASE_URL": self.slack_base_url,
                "OCC_CODEX_AUTH_BASE_URL": self.codex_origin,
                "OCC_CODEX_CHATGPT_BASE_URL": f"{self.codex_origin}/backend-api",
                "OCC_MODEL_DISCOVERY_BASE_URLS": ",".join(
                    f"{provider}={self.model_base_url(provider)}" for provider in ("openai", "anthropic"))}

    def wait_ready(self) -> None:
        def ports() -> dict[str, int] | None:
            if self.process.poll() is not None:
                raise AssertionError(f"the fake world exited with {self.process.returncode}:\n{self.log()}")
            line = next((line for line in self.log().splitlines() if line.startswith(PORTS_LINE)), None)
            return None if line is None else json.loads(line.removeprefix(PORTS_LINE))

        bound = wait_until(ports, timeout=FAKES_START_SECONDS, interval=0.1, what="the fake world's ports")
        self.slack_port, self.models_port, self.codex_port = bound["slack"], bound["models"], bound["codex"]

        def answering() -> bool:
            if self.process.poll() is not None:
                raise AssertionError(f"the fake world exited with {self.process.returncode}:\n{self.log()}")
            try:
                slack = httpx.post(self.slack_base_url + "api.test", timeout=2)
                models = httpx.get(self.model_base_url("openai") + "/v1/models", timeout=2)
            except httpx.TransportError:
                return False
            return slack.status_code == 200 and models.status_code == 401  # no key: refused, as it should be

        wait_until(answering, timeout=FAKES_START_SECONDS, interval=0.2, what="the fake Slack and model servers")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pgid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=STOP_SECONDS)
        if group_running(self.pgid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pgid, signal.SIGKILL)
            self.process.wait(timeout=STOP_SECONDS)


# --- OCC -----------------------------------------------------------------------------------------


class BrowserStack(OccStack):
    """``OccStack`` with static files collected and the administrator's printed password."""

    def start(self) -> None:
        self.init()
        self.manage("collectstatic", "--noinput", "-v0")
        super().start()

    @property
    def admin_password(self) -> str:
        return (self.data_dir / "admin-password").read_text().strip()

    def default_namespace_id(self) -> str:
        """The ``default`` Namespace's id once the worker has made it ready."""
        with self.api() as api:
            def ready() -> str | None:
                listed = api.get("/namespaces")
                assert listed.status_code == 200, listed.text[:500]
                default = next(ns for ns in listed.json()["data"]["namespaces"] if ns["name"] == "default")
                return default["id"] if default["status"] == "ready" else None

            return wait_until(ready, timeout=NAMESPACE_READY_SECONDS, what="the default Namespace to be ready",
                              diagnose=self.tails)


def browser_stack(root: Path, database: StackDatabase, fakes: FakeWorld,
                  extra_env: dict[str, str] | None = None,
                  process_env: dict[str, dict[str, str]] | None = None) -> BrowserStack:
    """OCC with the ``fake`` compute driver (its world in one JSON file the worker processes
    share; no gateway ever starts) unless ``extra_env`` chooses another, its outside world
    pointed at ``fakes``; ``process_env`` adds to one process's environment (``web``, ``worker``)."""
    return BrowserStack(root, database=database, secret_key=Fernet.generate_key().decode(),
                        gateway_ports="29000-29099",  # unused with the fake driver
                        extra_env={"OCC_COMPUTE_DRIVER": "fake", "OCC_FAKE_COMPUTE_STATE": "fake-compute.json",
                                   **fakes.occ_env(), **(extra_env or {})}, process_env=process_env)


@dataclass
class Occ:
    stack: BrowserStack
    fakes: FakeWorld
    namespace_id: str

    def url(self, path: str) -> str:
        return self.stack.base_url + path

    def diagnose(self) -> str:
        return self.stack.tails() + "\n--- fake world ---\n" + self.fakes.log()[-2000:]


# --- the browser ---------------------------------------------------------------------------------


@dataclass
class Received:
    url: str
    status: int
    content_type: str
    body: str


@dataclass
class Console:
    """One page of the browser, the text responses it received, and the step screenshots."""

    page: Any
    occ: Occ
    artifacts: Path
    received: list[Received] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    steps: int = 0

    def record(self, response: Any) -> None:
        """``page.on("response")``: keep every text body (HTML pages and fragments, JSON, scripts)."""
        content_type = (response.headers.get("content-type") or "").split(";")[0].strip()
        if not (content_type.startswith("text/") or content_type.endswith(("json", "javascript"))):
            return
        if response.status == 204 or 300 <= response.status < 400 or "hx-redirect" in response.headers:
            return  # no body, or a redirect's (HX-Redirect too), never shown (the browser does not keep it)
        try:
            body = response.text()
        except Exception:  # Playwright's Error: the page moved on before the body was read
            self.unreadable.append(f"{response.status} {response.url}")
            return
        self.received.append(Received(response.url, response.status, content_type, body))

    def html(self) -> list[Received]:
        return [r for r in self.received if r.content_type == "text/html"]

    def write_received(self) -> Path:
        """The list of what was received (no bodies) beside the screenshots."""
        path = self.artifacts / "responses.txt"
        lines = [f"{r.status} {r.content_type} {len(r.body)} B {r.url}" for r in self.received]
        lines += [f"unreadable: {entry}" for entry in self.unreadable]
        path.write_text("\n".join(lines) + "\n")
        return path

    def leaked(self, canaries: tuple[str, ...]) -> list[str]:
        return [f"{canary[:12]}… in {r.status} {r.url}" for r in self.received for canary in canaries
                if canary in r.body]

    def shot(self, name: str) -> Path:
        """A full-page screenshot of this step, numbered in order."""
        self.steps += 1
        path = self.artifacts / f"{self.steps:02d}-{re.sub(r'[^a-z0-9]+', '-', name.lower()).strip('-')}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def goto(self, path: str) -> Any:
        return self.page.goto(self.occ.url(path))

    def sign_in(self, username: str = "admin", password: str | None = None) -> None:
        """As the administrator the bootstrap made, unless told whom."""
        from playwright.sync_api import expect

        self.goto("/console/sign-in")
        self.page.get_by_label("Username").fill(username)
        self.page.get_by_label("Password").fill(password if password is not None else self.occ.stack.admin_password)
        self.page.get_by_role("button", name="Sign in").click()
        # Signed in: off the sign-in page, with a Sign out button in the shell (inside the collapsed
        # menu on a phone-width viewport, so present rather than visible).
        expect(self.page).not_to_have_url(re.compile(r"/console/sign-in"))
        expect(self.page.get_by_role("button", name="Sign out", include_hidden=True)).to_be_attached()


@contextlib.contextmanager
def signed_in_page(base: str, profile: Path) -> Iterator[Any]:
    """A Chromium page (en-US, UTC) signed in as the administrator at OCC's web stack in this
    process (pytest-django's live server at ``base``). Build the test's rows before entering:
    the ORM refuses to run inside Playwright's event loop."""
    from playwright.sync_api import sync_playwright

    from tests.browser.chromium import launch_chromium

    with sync_playwright() as playwright:
        browser = launch_chromium(playwright, profile, locale="en-US", timezone_id="UTC")
        try:
            page = browser.new_page()
            sign_in_in_process(page, base)
            yield page
        finally:
            browser.close()


def sign_in_in_process(page: Any, base: str) -> None:
    """Sign ``page`` in as the bootstrap's administrator at OCC's web stack in this process
    (pytest-django's live server at ``base``; the ``bootstrap`` fixture's password)."""
    from tests.conftest import ADMIN_PASSWORD

    page.goto(f"{base}/console/sign-in")
    page.get_by_label("Username").fill("admin")
    page.get_by_label("Password").fill(ADMIN_PASSWORD)
    page.get_by_role("button", name=re.compile("Sign in")).click()
    page.wait_for_url(re.compile("/console/"))


def api_caller(api: httpx.Client) -> Callable[..., Any]:
    """``call(method, path, body=None, expect=200)`` through ``api``: the status asserted (with the
    response's text on failure), the envelope's ``data`` returned (None for an empty answer)."""
    def call(method: str, path: str, body: Any = None, expect: int = 200) -> Any:
        response = api.request(method, path, json=body)
        assert response.status_code == expect, f"{method} {path}: {response.status_code} {response.text[:500]}"
        return response.json()["data"] if response.content else None
    return call
