"""Each built-in Role in Chromium (issue 26): a person bound with it on the Namespace signs in, walks
the console pages of the Namespace and of one deployed Agent, and finds no enabled control whose
request the server would refuse; then the thing the Role is for works from the page (a Viewer's
refused request is refused all the same). So does a person with no Role whom the Agent was shared
with: they find it in its Namespace and chat with it.

"Would refuse" is what the caller's permission summaries say (``GET …/permissions``, asked with the
person's own session): the engine that authorizes each request answers them, and
``tests/occ/api/test_permissions.py`` and the authorization sweep check that the endpoints agree.
Every write control on a page (a POST form, an ``hx-post``, a dialog that confirms a write, a link to
a page that writes) is matched to the summary entry of the request it makes; a control the table
below does not know fails the test, so a new control cannot slip past unexamined.

OCC runs as ``make run`` runs it with the ``fake`` compute driver (its gateways answer chat with a
fixed reply); one stack for the module, one signed-in page per Role.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest
from playwright.sync_api import expect

from occ.iam.roles import AGENT_USER, DEVELOPER, NAMESPACE_ADMINISTRATOR, VIEWER
from tests.browser.support import Console, Occ, api_caller
from tests.browser.test_console_flow import htmx_idle
from tests.e2e.stack import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PASSWORD = "a-long-role-walk-password-4e1"
WORK_SECONDS = 90
VALUES = {"agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "openai/gpt-5"}}}}
FAKE_CHAT_REPLY = "Fake gateway here. You said:"  # occ.drivers.compute.fake
SHARED = "Agent shared to chat"  # no Role: only a share of the Agent

ROLE_IDS = """
from occ.models import Role
for role in Role.objects.filter(namespace__isnull=True):
    print(f"{role.name}={role.id}")
"""

# Console write URL (below /console/namespaces/{ns}) -> the summary and the entry its request needs.
# ("agent", "configuration", "secret" summaries are of the resource the URL names.)
WRITES: tuple[tuple[str, str, str], ...] = (
    (r"/agents/(start|new)", "namespace", "createAgent"),
    (r"/configurations/new", "namespace", "createConfiguration"),
    (r"/secrets", "namespace", "createSecret"),
    (r"/agents/[^/]+/save-preset", "namespace", "createPreset"),
    (r"/agents/[^/]+/deploy", "agent", "deploy"),
    (r"/agents/[^/]+/revisions/[^/]+/redeploy", "agent", "deploy"),
    (r"/agents/[^/]+/(start|stop)", "agent", "stopStart"),
    (r"/agents/[^/]+/delete", "agent", "delete"),
    (r"/agents/[^/]+/smoke", "agent", "update"),
    (r"/agents/[^/]+/shares(/[^/]+/revoke)?", "agent", "administer"),
    (r"/agents/[^/]+/chat(/new)?", "agent", "chat"),
    (r"/agents/[^/]+/configuration", "configuration", "update"),  # the Agent's own Configuration
    (r"/configurations/[^/]+/(edit|secrets)", "configuration", "update"),
    (r"/configurations/[^/]+/delete", "configuration", "delete"),
    (r"/secrets/[^/]+/value", "secret", "update"),
    (r"/secrets/[^/]+/delete", "secret", "delete"),
)
# Controls that write nothing a Role decides: the shell's own forms.
NOT_WRITES = re.compile(r"/console/(sign-out|switch-namespace|password)$")

# Every enabled control that makes a write request, or opens a dialog or page that does.
ENABLED_WRITES_JS = """
() => {
  const found = [];
  const off = (el) => el.disabled || el.closest('fieldset[disabled]') || el.getAttribute('aria-disabled') === 'true';
  for (const form of document.querySelectorAll('form')) {
    const submit = form.querySelector('button[type=submit], button:not([type]), input[type=submit]');
    if (!submit || off(submit)) continue;
    if ((form.getAttribute('method') || 'get').toLowerCase() === 'post' || form.hasAttribute('hx-post'))
      found.push(form.getAttribute('hx-post') || form.getAttribute('action') || location.pathname);
  }
  for (const el of document.querySelectorAll('[hx-post]:not(form)'))
    if (!off(el)) found.push(el.getAttribute('hx-post'));
  for (const el of document.querySelectorAll('[data-opens-modal][hx-get]'))
    if (!off(el)) found.push(el.getAttribute('hx-get'));
  const writesPage = new RegExp(
    '/(agents/(start|new)|configurations/new|save-preset|edit|configurations/[^/]+/secrets)$');
  for (const a of document.querySelectorAll('a[href]')) {
    const path = new URL(a.href, location.href).pathname;
    if (writesPage.test(path)) found.push(path);
  }
  const chat = document.querySelector('#chat-form');
  if (chat && !off(chat.querySelector('#chat-send'))) found.push(chat.dataset.chatUrl);
  return [...new Set(found.map((url) => new URL(url, location.href).pathname))];
}
"""


@dataclass
class Team:
    ns: str
    agent: str
    configuration: str
    secret: str
    revision: str
    people: dict[str, str]  # Role name -> username
    principals: dict[str, str]  # Role name -> principal id


def deployed_agent(occ: Occ, call: Any, *, name: str, secret_value: str) -> tuple[dict, dict, dict, dict]:
    """Through the API, as its administrator: a model-key Secret, a Configuration and an Agent
    ``name`` that may use the key, deployed until its revision is active. (secret, configuration,
    agent, revision) as the API answered them."""
    ns = occ.namespace_id
    secret = call("POST", f"/namespaces/{ns}/secrets", {"name": f"{name}-model-key", "value": secret_value}, 201)
    configuration = call("POST", f"/namespaces/{ns}/configurations", {"kind": "agent", "values": VALUES}, 201)
    agent = call("POST", f"/namespaces/{ns}/agents", {
        "name": name, "configurationId": configuration["id"],
        "harnessAuth": {"method": "api_key", "source": {"kind": "secret", "namespaceId": ns, "id": secret["id"]}}},
        201)
    path = f"/namespaces/{ns}/agents/{agent['id']}"
    call("POST", f"{path}/secret-access", {"secretIds": [secret["id"]]})
    revision = call("POST", f"{path}/deploy", expect=202)
    wait_until(lambda: call("GET", path).get("activeRevisionId") == revision["id"], timeout=WORK_SECONDS,
               interval=1, what="the Agent to be deployed", diagnose=occ.diagnose)
    return secret, configuration, agent, revision


@pytest.fixture(scope="module")
def team(occ: Occ) -> Team:
    """A deployed Agent, and one person per built-in Role bound on the Namespace (through the API,
    as Members does it)."""
    ns = occ.namespace_id
    roles = dict(line.split("=", 1) for line in occ.stack.manage("shell", "-c", ROLE_IDS).splitlines() if "=" in line)
    with occ.stack.api() as api:
        call = api_caller(api)
        secret, configuration, agent, revision = deployed_agent(occ, call, name="helpdesk",
                                                                secret_value="sk-walk-4e1")
        path = f"/namespaces/{ns}/agents/{agent['id']}"
        people, principals = {}, {}
        for role_name in (VIEWER, AGENT_USER, DEVELOPER, NAMESPACE_ADMINISTRATOR):
            username = "walk-" + role_name.lower().replace(" ", "-")
            account = call("POST", "/api/auth/accounts", {"username": username, "password": PASSWORD,
                                                          "roleId": roles[role_name], "namespaceIds": [ns]}, 201)
            people[role_name], principals[role_name] = username, account["principalId"]
        # A person with no Role at all, the Agent shared with them ("can chat"): issue 26's teammate.
        shared = call("POST", "/api/auth/accounts", {"username": "walk-shared", "password": PASSWORD}, 201)
        call("POST", f"{path}/shares", {"subjectId": shared["principalId"], "level": "chat"})
        people[SHARED] = "walk-shared"
    return Team(ns=ns, agent=agent["id"], configuration=configuration["id"], secret=secret["id"],
                revision=revision["id"], people=people, principals=principals)


def summaries(console: Console, team: Team) -> dict[str, dict[str, bool]]:
    """The signed-in person's permission summaries, asked with their own session."""
    ns = f"/namespaces/{team.ns}"
    paths = {"namespace": f"{ns}/permissions", "agent": f"{ns}/agents/{team.agent}/permissions",
             "configuration": f"{ns}/configurations/{team.configuration}/permissions",
             "secret": f"{ns}/secrets/{team.secret}/permissions"}
    answers = {}
    for name, path in paths.items():
        response = console.page.request.get(console.occ.url(path))
        # No read: the summary is refused like the read, and nothing of it may be offered.
        answers[name] = response.json()["data"]["actions"] if response.status == 200 else {}
    return answers


def required(url: str, team: Team) -> tuple[str, str]:
    """The summary and entry the write at ``url`` needs (an unknown write fails the test)."""
    prefix = f"/console/namespaces/{team.ns}"
    if url == f"/console/namespaces/{team.ns}/delete":
        return "namespace", "delete"
    assert url.startswith(prefix), f"a write control outside the Namespace: {url}"
    rest = url[len(prefix):]
    for pattern, summary, entry in WRITES:
        if re.fullmatch(pattern, rest):
            return summary, entry
    raise AssertionError(f"a write control the walk does not know: {url}")


def pages(team: Team) -> list[str]:
    ns = f"/console/namespaces/{team.ns}"
    agent = f"{ns}/agents/{team.agent}"
    return ["/console/namespaces", f"{ns}/agents", f"{ns}/configurations", f"{ns}/configurations/{team.configuration}",
            f"{ns}/secrets", agent, *(f"{agent}?tab={tab}" for tab in ("chat", "configuration", "revisions",
                                                                         "sharing"))]


def walk(console: Console, team: Team, allowed: dict[str, dict[str, bool]]) -> set[tuple[str, str]]:
    """Every page at 1440 px: each enabled write control is one the summaries allow. What was offered."""
    offered = set()
    for path in pages(team):
        response = console.goto(path)
        assert response is not None, path
        # A page of what the person may not read is refused, and offers nothing.
        readable = "/configurations/" not in path or allowed["configuration"].get("read")
        assert response.status == (200 if readable else 403), f"{path}: {response.status}"
        if not readable:
            continue
        htmx_idle(console.page)
        for url in console.page.evaluate(ENABLED_WRITES_JS):
            if NOT_WRITES.search(url):
                continue
            summary, entry = required(url, team)
            assert allowed[summary].get(entry) is True, (
                f"{path} offers {url} enabled, which needs {summary} {entry}: the server would refuse it "
                f"(summary {allowed[summary]})")
            offered.add((summary, entry))
    return offered


# Role -> what its person must find offered on the walk (every other write: absent or disabled).
OFFERED = {
    VIEWER: set(),
    AGENT_USER: {("agent", "chat")},
    SHARED: {("agent", "chat")},
    DEVELOPER: {("agent", "chat"), ("agent", "deploy"), ("agent", "stopStart"), ("agent", "update"),
                ("namespace", "createAgent"), ("namespace", "createConfiguration"), ("configuration", "update")},
    NAMESPACE_ADMINISTRATOR: {("agent", "chat"), ("agent", "deploy"), ("agent", "stopStart"), ("agent", "update"),
                              ("agent", "delete"),
                              ("agent", "administer"), ("namespace", "createAgent"),
                              ("namespace", "createConfiguration"), ("namespace", "createSecret"),
                              ("configuration", "update"), ("configuration", "delete"), ("secret", "update"),
                              ("secret", "delete")},
}


def csrf(console: Console) -> str:
    return next(c["value"] for c in console.page.context.cookies() if c["name"] == "csrftoken")


def revisions(occ: Occ, team: Team) -> list[str]:
    with occ.stack.api() as api:
        page = api_caller(api)("GET", f"/namespaces/{team.ns}/agents/{team.agent}/revisions")
        return [r["id"] for r in page["revisions"]]


def chat_works(console: Console, team: Team) -> None:
    page = console.page
    console.goto(f"/console/namespaces/{team.ns}/agents/{team.agent}?tab=chat")
    page.get_by_label("Message").fill("is the printer on fire?")
    page.locator("#chat-send").click()
    expect(page.locator("#chat-log")).to_contain_text(f"{FAKE_CHAT_REPLY} is the printer on fire?")


def deploy_works(console: Console, team: Team) -> None:
    before = revisions(console.occ, team)
    console.goto(f"/console/namespaces/{team.ns}/agents/{team.agent}")
    console.page.get_by_role("button", name="Deploy new version").click()
    htmx_idle(console.page)
    wait_until(lambda: len(revisions(console.occ, team)) == len(before) + 1, timeout=30, interval=0.5,
               what="the new revision", diagnose=console.occ.diagnose)


def share_works(console: Console, team: Team) -> None:
    page = console.page
    console.goto(f"/console/namespaces/{team.ns}/agents/{team.agent}?tab=sharing")
    page.locator("#share-subject").select_option(team.principals[VIEWER])
    page.locator("#share-level").select_option("chat")
    page.get_by_role("button", name="Share", exact=True).click()
    shared = page.locator("#agent-access tr", has_text=team.people[VIEWER]).filter(has_text="Can chat")
    expect(shared).to_contain_text("Shared directly")  # beside the Viewer Role's own "Can see" row


def refused_all_the_same(console: Console, team: Team) -> None:
    """The Viewer was offered no Deploy; asked anyway, the server refuses and nothing is deployed."""
    before = revisions(console.occ, team)
    answer = console.page.request.post(
        console.occ.url(f"/console/namespaces/{team.ns}/agents/{team.agent}/deploy"),
        form={"idempotency_key": "walk-refused"}, headers={"X-CSRFToken": csrf(console)})
    assert answer.status == 403
    assert revisions(console.occ, team) == before


WORKS = {VIEWER: refused_all_the_same, AGENT_USER: chat_works, SHARED: chat_works, DEVELOPER: deploy_works,
         NAMESPACE_ADMINISTRATOR: share_works}


@pytest.mark.parametrize("role_name", list(OFFERED))
def test_a_role_is_offered_only_what_the_server_allows(console: Console, team: Team, role_name: str) -> None:
    console.page.set_viewport_size({"width": 1440, "height": 900})
    console.sign_in(team.people[role_name], PASSWORD)
    allowed = summaries(console, team)
    offered = walk(console, team, allowed)
    assert offered == OFFERED[role_name], f"{role_name} was offered {sorted(offered)}"
    WORKS[role_name](console, team)
    # The Agent page and its Configuration tab with their disabled controls and reasons, at both
    # widths (looked at).
    for width, height in ((1440, 900), (390, 844)):
        console.page.set_viewport_size({"width": width, "height": height})
        for tab in ("overview", "configuration"):
            console.goto(f"/console/namespaces/{team.ns}/agents/{team.agent}?tab={tab}")
            htmx_idle(console.page)
            console.shot(f"{role_name} agent {tab} {width}")
            scroll = console.page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
            assert scroll[0] <= scroll[1], f"the Agent page's {tab} scrolls sideways at {width} px: {scroll}"
