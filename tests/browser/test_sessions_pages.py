"""The Sessions page, an Agent's Sessions tab, a transcript and the approvals inbox in Chromium at
1440x900 and 390x844: OCC's web stack in this process (pytest-django's live server), the Agents'
gateways loopback stand-ins of the RPC (real WebSockets); axe-core finds no serious or critical
violation, nothing scrolls sideways at 390 px, and a full-page screenshot of each is kept under
``$OCC_BROWSER_ARTIFACTS/sessions/``."""

from __future__ import annotations

import time
from typing import Any

import pytest

from occ.models import Namespace
from occ.services.agent_sessions import agent_sessions_refresh
from tests.browser.support import ARTIFACTS, signed_in_page
from tests.browser.test_every_page import BLOCKING, SIZES, axe_violations, readable
from tests.conftest import mark_namespace_ready
from tests.fakes.fake_gateway_rpc import FakeGateway, fake_gateways, running_agent  # noqa: F401

pytestmark = [pytest.mark.browser]
SHOTS = ARTIFACTS / "sessions"
PASSWORD = "stand-in-gateway-password-browser"
NOW_MS = int(time.time() * 1000)
LONG = "a-very-long-unbroken-argument-" * 6


def _world(fake_compute: Any, fake_gateways: list[FakeGateway]) -> dict[str, str]:  # noqa: F811
    namespace = Namespace.objects.get(name="default")
    mark_namespace_ready(namespace)
    trips = FakeGateway(PASSWORD, sessions=[
        {"key": "agent:main:main", "channel": "webchat", "displayName": "Trip planning", "updatedAt": NOW_MS,
         "inputTokens": 1200, "outputTokens": 340, "totalTokens": 1540, "origin": {"label": "Grace Hopper"}},
        {"key": "agent:main:slack:direct:u04abcdef", "channel": "slack", "updatedAt": NOW_MS - 3_600_000,
         "totalTokens": 88, "origin": {"from": "slack:U04ABCDEF"}}],
        histories={"agent:main:main": [
            {"role": "user", "content": "Plan a three-day trip to Lisbon in May.", "timestamp": NOW_MS - 60_000},
            {"role": "assistant", "timestamp": NOW_MS - 55_000, "content": [
                {"type": "text", "text": "Let me look at flights and the weather first."},
                {"type": "toolCall", "name": "web_search", "arguments": {"query": "Lisbon weather May", "n": 5}},
                {"type": "toolCall", "name": "exec", "arguments": {"command": f"curl {LONG}"}}]},
            {"role": "toolResult", "toolName": "web_search", "content": [{"type": "text", "text": "Sunny, 22 °C."}]},
            {"role": "assistant", "content": "May is sunny (about 22 °C). Day 1: Alfama and the castle; day 2: "
                                             "Belém; day 3: Sintra.", "timestamp": NOW_MS - 50_000}]},
        approvals={"exec": [{"id": "7f3c9a", "createdAtMs": NOW_MS, "expiresAtMs": NOW_MS + 110_000, "request": {
            "command": f"rsync -a ./site/ deploy@web-01:/srv/www --delete {LONG}",
            "commandArgv": ["rsync", "-a", "./site/", "deploy@web-01:/srv/www", "--delete"],
            "cwd": "/home/agent/workspace", "sessionKey": "agent:main:main"}}],
            "plugin": [{"id": "plugin:4be1", "createdAtMs": NOW_MS, "expiresAtMs": NOW_MS + 50_000, "request": {
                "pluginId": "github", "title": "Merge pull request #42", "description": "Merge into main",
                "toolName": "github_merge", "sessionKey": "agent:main:slack:direct:u04abcdef"}}]}).start()
    support = FakeGateway(PASSWORD, sessions=[
        {"key": f"agent:main:webchat:{n}", "channel": "webchat", "updatedAt": NOW_MS - n * 600_000,
         "totalTokens": 40 * n, "origin": {"label": f"Customer {n}"}} for n in range(1, 4)]).start()
    fake_gateways.extend([trips, support])
    travel = running_agent(namespace, trips, fake_compute, name="travel-bot")
    helpdesk = running_agent(namespace, support, fake_compute, name="helpdesk")
    for agent in (travel, helpdesk):
        agent_sessions_refresh(agent_id=agent.id)
    return {"ns": namespace.id, "agent": travel.id}


def _check(page: Any, name: str, size: str) -> None:
    blocking = [v for v in axe_violations(page) if v.get("impact") in BLOCKING]
    assert not blocking, readable(blocking)
    if size == "390":
        fits = page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
        assert fits, f"{name} scrolls sideways"
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}-{size}.png"), full_page=True)


@pytest.mark.django_db(transaction=True)
def test_sessions_pages_at_both_sizes(live_server, bootstrap, fake_compute, fake_gateways, tmp_path):  # noqa: F811
    world = _world(fake_compute, fake_gateways)  # before Playwright's event loop: the ORM refuses to run inside one
    with signed_in_page(live_server.url, tmp_path / "profile") as page:
        _visit(page, live_server.url, world)


def _visit(page: Any, base: str, world: dict[str, str]) -> None:
    agent = f"/console/namespaces/{world['ns']}/agents/{world['agent']}"
    for size, (width, height) in SIZES.items():
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"{base}/console/sessions")
        assert page.get_by_role("link", name="Trip planning").is_visible()
        _check(page, "sessions", size)
        page.goto(f"{base}{agent}?tab=sessions")
        _check(page, "agent-sessions", size)
        page.goto(f"{base}/console/sessions")
        page.get_by_role("link", name="Trip planning").click()
        page.wait_for_selector("#transcript-entries")
        _check(page, "transcript", size)
        page.get_by_label("Search this transcript").fill("sintra")
        page.get_by_role("button", name="Search").click()
        page.wait_for_selector("text=1 of 4 messages match")
        _check(page, "transcript-search", size)
        page.goto(f"{base}/console/approvals")
        assert page.get_by_text("github_merge: Merge pull request #42").is_visible()
        _check(page, "approvals", size)
