"""Issue 4's "Done when", end to end: a newcomer provisions a Slack Agent through the JSON API alone.

OCC runs as ``make run`` runs it (web, Celery worker and beat, the filesystem broker, the
``local`` compute driver; SQLite, or a PostgreSQL database of its own when the suite runs
there). The outside world is loopback fakes speaking real HTTP: one fake OpenAI-compatible
server is both the model-discovery endpoint (``OCC_MODEL_DISCOVERY_BASE_URLS``) and the model
the gateway chats with; a fake Slack Web API (``OCC_SLACK_API_BASE_URL``) answers OCC's token
checks and directory lookups; and a second fake Slack (``tests/fakes/fake_slack_socket.mjs``,
run with the runtime's Node) is the Slack the gateway itself talks to: the Web API and Socket
Mode. With the bootstrap key only: wait for ``default``, save the model key, discover models
with it, save the Slack bot and app tokens and the gateway's Slack URL, look up a channel,
provision (one request), watch the phases, follow the first deployment, mention the Agent in
Slack and read its answer there, talk to the gateway, resend the request, delete the Agent —
and find no secret value in any file.

Slack with no internet: the runtime does not bundle the Slack channel plugin. A gateway whose
configuration has ``channels.slack`` installs ``@openclaw/slack`` from the npm registry as it
starts (into the Agent's state folder, ~20 s) and runs it only when
``plugins.entries.slack.enabled`` trusts it. (Without the registry the install fails after ~80 s
of npm retries and the gateway serves without Slack: "no-channel-owner".) The plugin calls the
Slack Web API at ``SLACK_API_URL`` when its environment has one (default
``https://slack.com/api/``), Socket Mode included: ``apps.connections.open`` there hands out the
``ws://`` URL. So the request binds ``SLACK_API_URL`` to a Secret holding the fake's
``http://127.0.0.1:<port>/api/``, like the tokens, and the test checks the whole path: Socket
Mode opens with the app token, an ``app_mention`` in the allowlisted channel is acknowledged, and
the gateway answers with ``chat.postMessage`` in that channel carrying the fake model's exact
reply, once, with the bot token. OCC itself only reads Slack (its own fake): ``auth.test`` at
admission and the directory lookups, never a message.

Each gateway takes ~1.2 GB and 20 to 40 s to start; this test runs one at a time. Every process
it started is stopped by PID (or its own process group) in ``finally``.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

import pytest
from cryptography.fernet import Fernet

from occ.drivers.compute import local_supervisor as supervisor
from occ.drivers.compute.files import GATEWAY_TITLES
from occ.models import EncryptedSecretValue, Secret
from tests.e2e.stack import OccStack, attached, stack_database, wait_until
from tests.e2e.test_gateway_api import (
    NAMESPACE_READY_SECONDS,
    Run,
    chat,
    fake_model_configuration,
    gateway_password,
    reply_of,
    runtime,  # noqa: F401 (fixture)
    stop_gateways,
)
from tests.fakes.fake_openai import MODEL_ID, REPLY, FakeOpenAI
from tests.fakes.fake_slack import READ_METHODS, FakeSlack, channel, user
from tests.fakes.fake_slack_socket import BOT_USER_ID, FakeSlackSocket
from tests.occ.drivers.compute.local_support import files_containing, port_range

pytestmark = [pytest.mark.gateway, pytest.mark.slow]

MODEL_KEY = "sk-e2e-provisioning-model-key-5e21"
BOT_TOKEN = "xoxb-e2e-provisioning-bot-CANARY-7c4d"
APP_TOKEN = "xapp-e2e-provisioning-app-CANARY-0a9f"
REQUEST_ID = "req_e2e-provisioning-0001"
CHANNEL_ID = "C0E2EGENERAL"
PHASES = ("admitted", "configuration", "transport", "handoff")
# Generous: each wait returns once its condition holds. A gateway takes 20-40 s of two idle
# cores to become ready and several times that on a loaded machine (load average about 10).
PROVISIONING_SECONDS = 300
SLACK_PROVIDER_SECONDS = 180
SOCKET_MODE_SECONDS = 120
SLACK_REPLY_SECONDS = 180
DELETE_SECONDS = 240
# The gateway log line of a Slack channel plugin that was installed, trusted and started.
SLACK_PROVIDER_STARTED = "[slack] [default] starting provider"


def env_ref(name: str) -> dict[str, str]:
    return {"source": "env", "provider": "default", "id": name}


def secret_source(namespace_id: str, secret_id: str) -> dict[str, Any]:
    return {"source": {"kind": "secret", "namespaceId": namespace_id, "id": secret_id}}


def slack_world(slack: FakeSlack) -> None:
    slack.add_token(BOT_TOKEN, team_name="E2E Workspace")
    slack.world.channels = [channel("C0E2ERANDOM", "random"), channel(CHANNEL_ID, "general"),
                            channel("G0E2EPRIVATE", "private-team", private=True)]
    slack.world.users = [user("U0E2EALICE", "alice", display_name="Alice")]


def provision_request(ns: str, *, model_base_url: str, model_key_id: str, bot_id: str, app_id: str,
                      api_url_id: str, channel_id: str) -> dict[str, Any]:
    """The fake model is the primary; Slack in Socket Mode, its tokens only env references bound
    to Secrets; the channel the lookup found, mention-gated; the plugin trusted explicitly; and
    ``SLACK_API_URL`` bound to a Secret too, so the gateway's Slack is the loopback fake."""
    values = fake_model_configuration(model_base_url)
    values["channels"] = {"slack": {
        "enabled": True, "mode": "socket", "botToken": env_ref("SLACK_BOT_TOKEN"),
        "appToken": env_ref("SLACK_APP_TOKEN"), "groupPolicy": "allowlist", "joinIntro": False,
        "channels": {channel_id: {"enabled": True, "requireMention": True}},
    }}
    values["plugins"] = {"entries": {"slack": {"enabled": True}}}
    return {
        "requestId": REQUEST_ID,
        "name": "slack-agent",
        "configuration": {"kind": "agent", "values": values, "secretBindings": {
            "SLACK_BOT_TOKEN": secret_source(ns, bot_id), "SLACK_APP_TOKEN": secret_source(ns, app_id),
            "SLACK_API_URL": secret_source(ns, api_url_id)}},
        "harnessAuth": {"method": "api_key", **secret_source(ns, model_key_id)},
        "initialWorkspaceFiles": {"USER.md": "The user likes short answers.\n"},
    }


def watch_provisioning(run: Run, url: str, admitted: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Poll the status until it is terminal; every phase observed, in order, without repeats."""
    phases = [admitted["phase"]]
    statuses = {admitted["status"]}

    def terminal() -> dict[str, Any] | None:
        status = run.call("GET", url, expect=200)
        statuses.add(status["status"])
        if status["phase"] != phases[-1]:
            phases.append(status["phase"])
        assert status["status"] != "failed", f"provisioning failed: {status}\n{run.stack.tails()}"
        return status if status["status"] == "succeeded" else None

    final = wait_until(terminal, timeout=PROVISIONING_SECONDS, interval=0.05, diagnose=run.stack.tails,
                       what="provisioning to succeed")
    assert statuses <= {"queued", "running", "succeeded"}, statuses
    return final, phases


def slack_provider_started(log: Any) -> bool:
    return log.exists() and SLACK_PROVIDER_STARTED in log.read_text(errors="replace")


def test_a_newcomer_provisions_a_slack_agent_and_talks_to_it_through_the_api(
        runtime, tmp_path, settings, django_db_blocker, capsys):  # noqa: F811
    secret_key = Fernet.generate_key().decode()
    settings.OCC_SECRET_KEYS = [secret_key]  # this process reads the stack's Secrets with the stack's key
    model = FakeOpenAI().start()
    slack = FakeSlack().start()
    slack_world(slack)
    figures: dict[str, float] = {}
    gateways: list[supervisor.ProcessIdentity] = []
    with contextlib.ExitStack() as cleanup, django_db_blocker.unblock():
        # Undone in reverse: the stack's processes, then gateways, the database, the fakes.
        cleanup.callback(slack.stop)
        cleanup.callback(model.stop)
        database = cleanup.enter_context(stack_database(tmp_path / "stack" / "data", suffix="prov"))
        stack = OccStack(tmp_path / "stack", database=database, secret_key=secret_key, gateway_ports=port_range(),
                         extra_env={"OCC_MODEL_DISCOVERY_BASE_URLS": f"openai={model.base_url.removesuffix('/v1')}",
                                    "OCC_SLACK_API_BASE_URL": slack.base_url})
        # The gateway's Slack (Web API and Socket Mode), knowing only the two bound tokens; its
        # log sits with the stack's, so the secret scan covers it too.
        gateway_slack = FakeSlackSocket(runtime, log_path=stack.log_dir / "fake-slack-socket.log",
                                        bot_token=BOT_TOKEN, app_token=APP_TOKEN).start()
        cleanup.callback(gateway_slack.stop)
        cleanup.callback(stop_gateways, stack.data_dir, gateways)
        cleanup.callback(stack.stop)
        stack.start()
        run = Run(stack, cleanup.enter_context(stack.api()), gateways)

        default = next(ns for ns in run.call("GET", "/namespaces", expect=200)["namespaces"] if ns["name"] == "default")
        ns = default["id"]
        wait_until(lambda: run.call("GET", f"/namespaces/{ns}", expect=200)["status"] == "ready",
                   timeout=NAMESPACE_READY_SECONDS, what="the default Namespace to be ready", diagnose=stack.tails)

        # The model key, then the models it can use, discovered through the allowlisted fake.
        model_key = run.call("POST", f"/namespaces/{ns}/secrets", {"name": "model-key", "value": MODEL_KEY},
                             expect=201)
        discovered = run.call("POST", f"/namespaces/{ns}/agents/models", {
            "provider": "openai", "secretRef": {"kind": "secret", "namespaceId": ns, "id": model_key["id"]},
        }, expect=200)
        assert (discovered["provider"], [m["id"] for m in discovered["models"]]) == ("openai", [MODEL_ID])
        assert [(r["path"], r["authorized"]) for r in model.requests] == [("/v1/models", True)]

        # The Slack tokens as Secrets, and a channel picked through the directory lookup.
        bot = run.call("POST", f"/namespaces/{ns}/secrets", {"name": "slack-bot", "value": BOT_TOKEN}, expect=201)
        app = run.call("POST", f"/namespaces/{ns}/secrets", {"name": "slack-app", "value": APP_TOKEN}, expect=201)
        api_url = run.call("POST", f"/namespaces/{ns}/secrets",
                           {"name": "slack-api-url", "value": gateway_slack.base_url}, expect=201)
        page = run.call("POST", f"/namespaces/{ns}/channel-directory/lookup",
                        {"secretId": bot["id"], "kind": "channels", "query": "gener"}, expect=200)
        assert (page["workspaceName"], page["complete"]) == ("E2E Workspace", True)
        assert [(c["id"], c["name"]) for c in page["candidates"]] == [(CHANNEL_ID, "general")]

        # One request provisions; the phases only move forward and end at handoff.
        body = provision_request(ns, model_base_url=model.base_url, model_key_id=model_key["id"],
                                 bot_id=bot["id"], app_id=app["id"], api_url_id=api_url["id"],
                                 channel_id=page["candidates"][0]["id"])
        slack_calls_before = len(slack.requests)
        accepted = time.monotonic()
        admitted = run.call("POST", f"/namespaces/{ns}/agents/provision", body, expect=202)["provisioning"]
        assert (admitted["status"], admitted["phase"]) == ("queued", "admitted"), admitted
        assert not {"configurationId", "agentId", "revisionId"} & set(admitted)
        assert slack.methods_called()[slack_calls_before:] == ["auth.test"], "admission checks the bot token"
        final, phases = watch_provisioning(run, admitted["url"], admitted)
        figures["provisioning accepted -> succeeded"] = time.monotonic() - accepted
        assert phases == sorted(phases, key=PHASES.index), f"phases went backwards: {phases}"
        assert (phases[0], final["phase"], final["workId"]) == ("admitted", "handoff", admitted["workId"])
        assert {"configurationId", "agentId", "revisionId"} <= set(final), final
        assert "error" not in final, final
        agt, revision_id = final["agentId"], final["revisionId"]

        # The same request again is the same work: no second job, no second token check.
        slack_calls_before = len(slack.requests)
        again = run.call("POST", f"/namespaces/{ns}/agents/provision", body, expect=202)["provisioning"]
        assert (again["workId"], again["status"], again["revisionId"]) == (admitted["workId"], "succeeded",
                                                                           revision_id)
        assert len(slack.requests) == slack_calls_before

        # The first revision deploys onto the local driver and becomes the Agent's active one.
        agent_path = f"/namespaces/{ns}/agents/{agt}"
        run.deployment(agent_path, revision_id)
        figures["provisioning accepted -> deployment succeeded"] = time.monotonic() - accepted
        agent = run.call("GET", agent_path, expect=200)
        assert (agent["name"], agent["activeRevisionId"], agent["configurationId"]) == (
            "slack-agent", revision_id, final["configurationId"])
        assert agent["harnessAuth"]["source"]["id"] == model_key["id"]
        configuration = run.call("GET", f"/namespaces/{ns}/configurations/{final['configurationId']}", expect=200)
        assert {name: binding["source"]["id"] for name, binding in configuration["secretBindings"].items()} == {
            "SLACK_BOT_TOKEN": bot["id"], "SLACK_APP_TOKEN": app["id"], "SLACK_API_URL": api_url["id"]}
        serving = run.record(agt)
        assert (serving.revision_id, serving.state) == (revision_id, "running")
        info = run.gateway_info(agt)
        assert (info["activeRevisionId"], info["ready"]) == (revision_id, True)

        # The gateway runs its Slack channel with the bound tokens against the fake the bound
        # SLACK_API_URL names: Socket Mode opens, a mention in the channel is answered there with
        # the fake model's exact reply.
        gateway_log = stack.data_dir / "agents" / agt / "logs" / "gateway.log"

        def gateway_diagnosis() -> str:
            gateway = gateway_log.read_text(errors="replace")[-3000:] if gateway_log.exists() else ""
            return f"--- gateway ---\n{gateway}\n--- fake Slack ---\n{gateway_slack.log()[-2000:]}"

        wait_until(lambda: slack_provider_started(gateway_log), timeout=SLACK_PROVIDER_SECONDS,
                   what="the gateway to start its Slack channel (the plugin comes from the npm registry)",
                   diagnose=gateway_diagnosis)
        wait_until(lambda: gateway_slack.state()["connections"] >= 1, timeout=SOCKET_MODE_SECONDS, interval=0.2,
                   what="the gateway to open its Socket Mode connection", diagnose=gateway_diagnosis)
        mentioned_at = time.monotonic()
        mentioned = gateway_slack.mention(CHANNEL_ID, f"<@{BOT_USER_ID}> hello")

        def posted() -> list[tuple[str | None, str | None]]:
            return [(r["channel"], r["text"]) for r in gateway_slack.requests() if r["method"] == "chat.postMessage"]

        assert wait_until(posted, timeout=SLACK_REPLY_SECONDS, interval=0.2, diagnose=gateway_diagnosis,
                          what="the gateway to answer the mention in Slack") == [(CHANNEL_ID, REPLY)]
        figures["mention -> reply in Slack"] = time.monotonic() - mentioned_at
        assert mentioned["envelopeId"] in gateway_slack.state()["acks"], "the gateway acknowledged the event"
        gateway_calls = gateway_slack.requests()
        assert {(r["method"], r["token"]) for r in gateway_calls if r["method"] == "apps.connections.open"} == {
            ("apps.connections.open", "app")}
        assert {r["token"] for r in gateway_calls if r["method"] != "apps.connections.open"} == {"bot"}, (
            "the gateway used exactly the bound tokens")
        password = gateway_password(database, agt)
        assert reply_of(chat(info["gateway"]["url"], password, "hello")) == REPLY
        assert chat(info["gateway"]["url"], "not-the-password", "hello").status_code == 401
        assert any(r["path"].endswith("/chat/completions") and r["stream"] and r["authorized"]
                   for r in model.requests), "the gateway streams from the fake model, with a key"
        assert supervisor.readyz(serving.port), "its Slack channel leaves the gateway ready"

        # OCC only ever read Slack, with the bot token: never a message, never the app token.
        assert set(slack.methods_called()) <= READ_METHODS, slack.methods_called()
        assert {"auth.test", "conversations.list"} <= set(slack.methods_called())
        assert {r["token"] for r in slack.requests} == {"xoxb-"}
        assert posted() == [(CHANNEL_ID, REPLY)], "the gateway answered the mention once"
        # The Slack URL is no credential, but bound as a Secret it is handled as one: only the
        # gateway's environment holds it, no file (the gateway logs neither it nor a token).
        secrets = [MODEL_KEY, BOT_TOKEN, APP_TOKEN, password, gateway_slack.base_url]
        assert files_containing(stack.data_dir, secrets) + files_containing(stack.log_dir, secrets) == [], (
            "a secret value reached a file")

        # Delete: the gateway, its files and the runtime credential go; the four Secrets stay.
        assert run.call("DELETE", agent_path, expect=202)["status"] == "deleting"
        wait_until(lambda: run.api.get(agent_path).status_code == 404, timeout=DELETE_SECONDS,
                   what="the Agent to be deleted", diagnose=stack.tails)
        folder = stack.data_dir / "agents" / agt
        assert not folder.exists(), ("the Agent's files are gone", sorted(
            str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else [])
        assert [p.pid for p in run.gateways if supervisor.is_same_process(p, titles=GATEWAY_TITLES)] == []
        assert not supervisor.port_is_open(serving.port)
        kept = sorted([model_key["id"], bot["id"], app["id"], api_url["id"]])
        listed = run.call("GET", f"/namespaces/{ns}/secrets", expect=200)
        assert sorted(s["id"] for s in listed["secrets"]) == kept
        assert listed["nextCursor"] is None
        with attached(database):
            assert sorted(Secret.objects.filter(namespace_id=ns).values_list("id", flat=True)) == kept
            backends = Secret.objects.filter(id__in=kept).values_list("backend_name", flat=True)
            assert sorted(EncryptedSecretValue.objects.values_list("backend_name", flat=True)) == sorted(backends)
        assert files_containing(stack.data_dir, secrets) + files_containing(stack.log_dir, secrets) == [], (
            "a secret value reached a file")

    assert stack.outlived() == [], "a process of the stack outlived the test"
    assert [p.pid for p in gateways if supervisor.is_same_process(p, titles=GATEWAY_TITLES)] == []
    with capsys.disabled():
        print("\n[e2e provisioning] phases " + " -> ".join(phases) + "; "
              + "; ".join(f"{name} {seconds:.1f} s" for name, seconds in figures.items()))
