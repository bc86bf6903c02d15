"""Console fixtures: a signed-in browser-like client (CSRF enforced) and an HTMX variant."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from occ.commands.agents import AgentCreate, AgentSecretAccess
from occ.commands.configurations import ConfigurationCreate
from occ.commands.secrets import SecretCreate
from occ.iam.actor import Actor, Source
from occ.models import Agent, Principal
from occ.models.work import revision_reconcile_key
from occ.services.agent_secret_access import agent_secret_access_grant
from occ.services.agents import agent_create
from occ.services.configurations import configuration_create
from occ.services.deploy import agent_deploy
from occ.services.secrets import secret_create
from tests.conftest import ADMIN_PASSWORD
from tests.fakes.compute import run_work

AGENT_VALUES = {"agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "openai/gpt-5"}}}}


class ConsoleClient(Client):
    """Django's test client signed in as a console user, CSRF enforced like a browser.

    ``hx_get``/``hx_post`` send the headers htmx sends (``HX-Request``, the CSRF header);
    ``post`` sends a form with the CSRF token as a real form does.
    """

    def __init__(self) -> None:
        super().__init__(enforce_csrf_checks=True)

    def token(self) -> str:
        if "csrftoken" not in self.cookies:
            self.get("/console/sign-in")
        return self.cookies["csrftoken"].value

    def sign_in(self, username: str, password: str) -> None:
        response = super().post("/console/sign-in", {"username": username, "password": password,
                                                      "csrfmiddlewaretoken": self.token()})
        assert response.status_code == 302, "sign-in failed"

    def post(self, path, data=None, **extra):  # type: ignore[override]
        data = dict(data or {})
        data.setdefault("csrfmiddlewaretoken", self.token())
        return super().post(path, data, **extra)

    def hx_get(self, path, data=None, **extra):
        return self.get(path, data, headers={"HX-Request": "true", **extra.pop("headers", {})}, **extra)

    def hx_post(self, path, data=None, **extra):
        headers = {"HX-Request": "true", "X-CSRFToken": self.token(), **extra.pop("headers", {})}
        return super().post(path, dict(data or {}), headers=headers, **extra)


@pytest.fixture
def console(bootstrap) -> ConsoleClient:
    """Signed in as the bootstrap administrator (Installation-wide authority)."""
    client = ConsoleClient()
    client.sign_in("admin", ADMIN_PASSWORD)
    return client


@pytest.fixture
def console_actor(bootstrap) -> Actor:
    """The administrator's human Actor, for arranging state through the services."""
    principal = Principal.objects.get(user__username="admin")
    return Actor(principal=principal, source=Source.CONSOLE)


def fragment_root(html: str) -> str:
    """The first element's tag and id, e.g. ``section#agents-table`` (asserts a fragment's root)."""
    match = re.search(r"<([a-zA-Z][\w-]*)\b([^>]*)>", html.lstrip())
    assert match, "no element in the response"
    found = re.search(r'\bid="([^"]+)"', match.group(2))
    return f"{match.group(1)}#{found.group(1)}" if found else match.group(1)


def is_error_toast(response) -> bool:
    """An htmx error answer of ours: the error fragment, retargeted into the shell's toasts."""
    return (response.headers.get("HX-Retarget"), response.headers.get("HX-Reswap")) == ("#toasts", "beforeend") and \
        'class="toast toast-error"' in response.content.decode()


def current_nav(html: str) -> str:
    """The label of the shell navigation's link marked ``aria-current="page"`` (its icon aside)."""
    nav = html[html.index('aria-label="Console"'):]
    nav = nav[:nav.index("</nav>")]
    found = re.findall(r'<a href="[^"]*" aria-current="page">(?:<svg .*?</svg>)?<span>([^<]*)</span></a>', nav)
    assert len(found) == 1, f"expected one current navigation link, found {found}"
    return found[0]


def agent_with_secrets(actor: Actor, namespace_id: str, *, name: str, model_key: str,
                       bound: dict[str, tuple[str, str]] | None = None) -> Agent:
    """An Agent as the Create Agent page leaves it: its model key in the Secret ``model-key``,
    each of ``bound`` (variable -> (Secret name, value)) bound in its Configuration, and the
    Agent granted all of them."""
    harness = secret_create(actor=actor, namespace_id=namespace_id,
                            command=SecretCreate(name="model-key", value=model_key))
    secrets = {variable: secret_create(actor=actor, namespace_id=namespace_id,
                                       command=SecretCreate(name=secret_name, value=value))
               for variable, (secret_name, value) in (bound or {}).items()}
    configuration = configuration_create(actor=actor, namespace_id=namespace_id, command=ConfigurationCreate(
        kind="agent", values=AGENT_VALUES, secret_bindings={
            variable: {"source": {"kind": "secret", "namespaceId": namespace_id, "id": secret.id}}
            for variable, secret in secrets.items()}))
    created = agent_create(actor=actor, namespace_id=namespace_id, command=AgentCreate(
        name=name, configuration_id=configuration.id, harness_auth={
            "method": "api_key", "source": {"kind": "secret", "namespaceId": namespace_id, "id": harness.id}}))
    agent_secret_access_grant(actor=actor, namespace_id=namespace_id, agent_id=created.id, command=AgentSecretAccess(
        secret_ids=[harness.id, *(secret.id for secret in secrets.values())]))
    return created


@pytest.fixture
def running(agent: Agent, console_actor: Actor) -> Agent:
    """The module's ``agent`` deployed and activated on the fake compute driver (its gateway
    serves the revision)."""
    revision = agent_deploy(actor=console_actor, namespace_id=agent.namespace_id, agent_id=agent.id)
    run_work(revision_reconcile_key(revision.id))
    agent.refresh_from_db()
    assert agent.active_revision_id == revision.id
    return agent
