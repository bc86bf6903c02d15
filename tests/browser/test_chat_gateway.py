"""The Chat tab against a real OpenClaw gateway: the fake model's reply, streamed through OCC,
in Chromium — at 1440 and 390 wide.

OCC runs as ``make run`` runs it (web, worker, beat) with the ``local`` compute driver; the
Agent's primary model is the loopback fake OpenAI-compatible server. The Agent is made and
deployed through the JSON API (the console's own create flow is ``test_console_flow.py``); the
conversation happens in the browser. Nothing the browser received names the gateway's port or
holds its password or the model key. Every gateway is stopped by verified PID afterwards.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet
from django.conf import settings as django_settings
from playwright.sync_api import expect

from occ.runtime import Runtime
from tests.browser.support import BrowserStack, Console, FakeWorld, Occ, api_caller
from tests.conftest import service_missing
from tests.e2e.stack import stack_database, wait_until
from tests.e2e.test_gateway_api import fake_model_configuration, gateway_password, stop_gateways
from tests.fakes.fake_openai import REPLY, FakeOpenAI
from tests.occ.drivers.compute.local_support import port_range

pytestmark = [pytest.mark.browser, pytest.mark.gateway, pytest.mark.slow]

MODEL_KEY = "sk-browser-chat-model-key-2c7e"
DEPLOYMENT_SECONDS = 300
REPLY_MS = 180_000  # a gateway's first answer on a loaded 2-core machine


@pytest.fixture(scope="module")
def occ(tmp_path_factory: pytest.TempPathFactory, django_db_blocker: Any) -> Iterator[Occ]:
    """OCC with the local compute driver and the fake model; one Agent deployed and serving."""
    runtime = Runtime(Path(django_settings.OCC_RUNTIME_DIR))
    if not runtime.is_installed():
        service_missing("OpenClaw runtime not installed: run make runtime")
    root = tmp_path_factory.mktemp("chat-stack")
    (root / "logs").mkdir()
    secret_key = Fernet.generate_key().decode()
    with contextlib.ExitStack() as cleanup, django_db_blocker.unblock():
        model = FakeOpenAI().start()
        cleanup.callback(model.stop)
        fakes = FakeWorld(root / "logs")
        cleanup.callback(fakes.stop)
        fakes.wait_ready()
        database = cleanup.enter_context(stack_database(root / "data", suffix="chat"))
        stack = BrowserStack(root, database=database, secret_key=secret_key, gateway_ports=port_range(),
                             extra_env=fakes.occ_env())
        cleanup.callback(stop_gateways, stack.data_dir, [])
        cleanup.callback(stack.stop)
        stack.start()
        ns = stack.default_namespace_id()
        with stack.api() as api:
            call = api_caller(api)

            harness = call("POST", f"/namespaces/{ns}/secrets", {"name": "model-key", "value": MODEL_KEY}, 201)
            configuration = call("POST", f"/namespaces/{ns}/configurations",
                                 {"kind": "agent", "values": fake_model_configuration(model.base_url)}, 201)
            agent = call("POST", f"/namespaces/{ns}/agents", {
                "name": "chat-agent", "configurationId": configuration["id"],
                "harnessAuth": {"method": "api_key",
                                "source": {"kind": "secret", "namespaceId": ns, "id": harness["id"]}}}, 201)
            agent_path = f"/namespaces/{ns}/agents/{agent['id']}"
            call("POST", f"{agent_path}/secret-access", {"secretIds": [harness["id"]]})
            revision = call("POST", f"{agent_path}/deploy", expect=202)

            def deployed() -> bool:
                status = call("GET", f"{agent_path}/deployments/{revision['id']}")
                assert status["status"] != "failed", f"deployment failed: {status}\n{stack.tails()}"
                return status["status"] == "succeeded"

            wait_until(deployed, timeout=DEPLOYMENT_SECONDS, interval=1.0, diagnose=stack.tails,
                       what="the deployment to succeed")
        occ = Occ(stack=stack, fakes=fakes, namespace_id=ns)
        occ.agent_id = agent["id"]  # type: ignore[attr-defined]
        occ.model = model  # type: ignore[attr-defined]
        occ.database = database  # type: ignore[attr-defined]
        occ.secret_key = secret_key  # type: ignore[attr-defined]
        yield occ


def talk(console: Console, text: str) -> None:
    page = console.page
    page.get_by_label("Message").fill(text)
    page.get_by_role("button", name="Send").click()


@pytest.mark.parametrize(("width", "height"), [(1440, 900), (390, 844)], ids=["1440", "390"])
def test_the_fake_models_reply_arrives_through_the_console(console: Console, occ: Occ, settings, width, height):
    page = console.page
    page.set_viewport_size({"width": width, "height": height})
    console.sign_in()
    agent_id = occ.agent_id  # type: ignore[attr-defined]
    console.goto(f"/console/namespaces/{occ.namespace_id}/agents/{agent_id}")
    page.get_by_role("navigation", name="Agent sections").get_by_role("link", name="Chat").click()
    expect(page.get_by_role("heading", name="Chat with chat-agent")).to_be_visible()
    console.shot(f"chat-empty-{width}")

    talk(console, "hello from the browser")
    log = page.get_by_role("list", name="Conversation")
    expect(log.locator(".chat-assistant .chat-text")).to_have_text(REPLY, timeout=REPLY_MS)
    expect(log.locator(".chat-user .chat-text")).to_have_text("hello from the browser")
    expect(page.locator("#chat-status")).to_have_text("Answered.")
    assert page.evaluate("document.documentElement.scrollWidth") <= width, "no horizontal scroll"
    console.shot(f"chat-answered-{width}")

    model = occ.model  # type: ignore[attr-defined]
    assert any(r["path"].endswith("/chat/completions") and r["stream"] and r["authorized"] for r in model.requests)

    # A second turn carries the first (the browser keeps the conversation), then New conversation clears it.
    talk(console, "and again")
    expect(log.locator(".chat-assistant .chat-text")).to_have_count(2, timeout=REPLY_MS)
    expect(log.locator(".chat-assistant .chat-text").nth(1)).to_have_text(REPLY, timeout=REPLY_MS)
    page.get_by_role("button", name="New conversation").click()
    expect(log.locator(".chat-turn")).to_have_count(0)

    # The browser never saw where the gateway is, its password, or the model key.
    settings.OCC_SECRET_KEYS = [occ.secret_key]  # type: ignore[attr-defined]
    # (in a thread: Playwright's event loop runs in this one, and Django refuses the database there)
    with ThreadPoolExecutor(1) as reader:
        password = reader.submit(gateway_password, occ.database, agent_id).result()  # type: ignore[attr-defined]
    assert console.leaked((password, MODEL_KEY)) == []
    port = json.loads((occ.stack.data_dir / "agents" / agent_id / "gateway.json").read_text())["port"]
    address = f"127.0.0.1:{port}"
    assert [r.url for r in console.received if address in r.body or address in r.url] == []
    assert [r.url for r in console.received if "ws://" in r.body] == []
