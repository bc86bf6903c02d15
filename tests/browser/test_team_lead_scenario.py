"""Issue 26's "Done when" as one scenario in Chromium: a team lead (a Namespace administrator, not
the Installation administrator) finds three colleagues holding Viewer, Agent user and Developer on
their Namespace, shares one deployed Agent with a fourth person at "can chat" from the Agent's
Sharing tab, and then each of the four signs in (the Agent user through the loopback OpenID
Connect provider, tests/fakes/oidc_provider.py, linked to their account) and finds exactly what
their Role says: the decisive controls (Deploy, Delete, Chat, the Access page) enabled or not as
their permission summaries (``GET …/permissions`` with their own session) say, one allowed action
working, and one forbidden direct POST refused 403 with nothing changed.

What the other tests already prove is not repeated: ``test_roles_walk.py`` checks every write
control of every page per Role, ``test_single_sign_on.py`` the provider's sign-in and its refusals,
and the authorization sweep every route per Role and share. This one is the team's story, end to end.

The team lead cannot bind a built-in Role: ``POST /namespaces/{ns}/iam/access-bindings`` (and the
Access page's grant form, which offers the same Roles) takes only a Role of the Namespace, and
accounts are the Installation administrator's (``/api/auth/accounts``). So the colleagues are added
with their Role by the Installation administrator, as Members does it; the lead then sees them on
the Access page. The single-sign-on link is the Installation administrator's too (Members).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from occ.iam.roles import AGENT_USER, DEVELOPER, NAMESPACE_ADMINISTRATOR, VIEWER
from tests.browser.support import Console, Occ, api_caller
from tests.browser.test_console_flow import htmx_idle
from tests.browser.test_roles_walk import (
    ENABLED_WRITES_JS,
    NOT_WRITES,
    PASSWORD,
    ROLE_IDS,
    Team,
    chat_works,
    csrf,
    deploy_works,
    deployed_agent,
    required,
    revisions,
    summaries,
)
from tests.fakes.oidc_provider import OidcProvider

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PROVIDER = "Example ID"
LEAD = "Team lead"
SHARED = "Shared at can chat"
SUBJECT = "team-agent-user-subject"
SIZES = ((1440, 900), (390, 844))
USERNAMES = {LEAD: "lena-lead", VIEWER: "vic-viewer", AGENT_USER: "ada-agent-user", DEVELOPER: "dev-developer",
             SHARED: "sam-shared"}

# Who -> the decisive things their Role (or share) allows, on the Agent: Deploy, Delete, Chat; and
# whether they manage the Namespace's access (the Access page).
DECISIVE = {
    LEAD: {"deploy": True, "delete": True, "chat": True, "access": True},
    VIEWER: {"deploy": False, "delete": False, "chat": False, "access": False},
    AGENT_USER: {"deploy": False, "delete": False, "chat": True, "access": False},
    DEVELOPER: {"deploy": True, "delete": False, "chat": True, "access": False},
    SHARED: {"deploy": False, "delete": False, "chat": True, "access": False},
}


@pytest.fixture(scope="module")
def provider() -> Iterator[OidcProvider]:
    with OidcProvider(client_id="occ-team", client_secret="team-scenario-client-secret-9c2") as running:
        yield running


@pytest.fixture(scope="module")
def occ_extra_env(provider: OidcProvider) -> dict[str, str]:
    return provider.settings(PROVIDER)


@pytest.fixture(scope="module")
def team(occ: Occ) -> Team:
    """The Installation administrator's part: a deployed Agent, the lead bound as Namespace
    administrator, the three colleagues with their Roles, the fourth with none."""
    ns = occ.namespace_id
    roles = dict(line.split("=", 1) for line in occ.stack.manage("shell", "-c", ROLE_IDS).splitlines() if "=" in line)
    with occ.stack.api() as api:
        call = api_caller(api)
        secret, configuration, agent, revision = deployed_agent(occ, call, name="team-helpdesk",
                                                                secret_value="sk-team-9c2")
        people, principals = {}, {}
        for who, role_name in ((LEAD, NAMESPACE_ADMINISTRATOR), (VIEWER, VIEWER), (AGENT_USER, AGENT_USER),
                               (DEVELOPER, DEVELOPER), (SHARED, None)):
            username = USERNAMES[who]
            body = {"username": username, "password": PASSWORD}
            if role_name is not None:
                body |= {"roleId": roles[role_name], "namespaceIds": [ns]}
            account = call("POST", "/api/auth/accounts", body, 201)
            people[who], principals[who] = username, account["principalId"]
    return Team(ns=ns, agent=agent["id"], configuration=configuration["id"], secret=secret["id"],
                revision=revision["id"], people=people, principals=principals)


def sign_out(console: Console) -> None:
    console.page.context.clear_cookies()


def link_single_sign_on(console: Console, team: Team) -> None:
    """The Installation administrator links the Agent user's subject at the provider (Members)."""
    console.sign_in()
    console.goto(f"/console/members/people/{team.principals[AGENT_USER]}")
    card = console.page.locator("#member-sso")
    card.get_by_label("Subject at the provider").fill(SUBJECT)
    card.get_by_role("button", name="Save single sign-on").click()
    expect(console.page.locator("#member-sso")).to_contain_text(f"as subject {SUBJECT}")
    sign_out(console)


def sign_in_with_provider(console: Console, provider: OidcProvider) -> None:
    provider.sign_in_as(sub=SUBJECT, email="agent-user@example.test", email_verified=True)
    console.goto("/console/sign-in")
    console.page.get_by_role("link", name=f"Sign in with {PROVIDER}").click()
    expect(console.page).not_to_have_url(re.compile(r"/console/sign-in"))
    expect(console.page.get_by_role("button", name="Sign out", include_hidden=True)).to_be_attached()
    assert [e["outcome"] for e in provider.events() if e["endpoint"] == "token"][-1] == "issued"


def look(console: Console, name: str) -> None:
    """The page at both widths, screenshotted (looked at), with no sideways scroll."""
    for width, height in SIZES:
        console.page.set_viewport_size({"width": width, "height": height})
        htmx_idle(console.page)
        console.shot(f"{name} {width}")
        scroll = console.page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert scroll[0] <= scroll[1], f"{name} scrolls sideways at {width} px: {scroll}"
    console.page.set_viewport_size({"width": 1440, "height": 900})


def share_with_the_fourth(console: Console, team: Team) -> None:
    """The lead shares the Agent at "can chat" from its Sharing tab."""
    page = console.page
    console.goto(f"/console/namespaces/{team.ns}/agents/{team.agent}?tab=sharing")
    page.locator("#share-subject").select_option(team.principals[SHARED])
    page.locator("#share-level").select_option("chat")
    page.get_by_role("button", name="Share", exact=True).click()
    row = page.locator("#agent-access tr", has_text=team.people[SHARED]).filter(has_text="Can chat")
    expect(row).to_contain_text("Shared directly")
    # A colleague's Namespace-wide Role is not the lead's to change here, and the tab says whose it is.
    colleague = page.locator("#agent-access tr", has_text=team.people[VIEWER])
    expect(colleague).to_contain_text("An Installation administrator changes it on Members")
    look(console, f"{LEAD} agent sharing")


def offered_on_the_agent(console: Console, team: Team, who: str) -> set[str]:
    """The Agent entries whose controls are enabled on its overview and chat tab."""
    offered = set()
    for tab in ("overview", "chat"):
        response = console.goto(f"/console/namespaces/{team.ns}/agents/{team.agent}?tab={tab}")
        assert response is not None, f"{who}: the Agent's {tab}"
        assert response.status == 200, f"{who}: the Agent's {tab}: {response.status}"
        htmx_idle(console.page)
        for url in console.page.evaluate(ENABLED_WRITES_JS):
            if NOT_WRITES.search(url):
                continue
            summary, entry = required(url, team)
            if summary == "agent":
                offered.add(entry)
        look(console, f"{who} agent {tab}")
    return offered


def access_page(console: Console, team: Team, who: str) -> bool:
    response = console.goto(f"/console/namespaces/{team.ns}/access")
    assert response is not None
    assert response.status in (200, 403), f"{who}: the Access page answered {response.status}"
    if response.status == 200:
        look(console, f"{who} access")
    return response.status == 200


def refused(console: Console, path: str, team: Team) -> None:
    """A POST the person was not offered: refused 403 by the server, nothing deployed or deleted."""
    before = revisions(console.occ, team)
    answer = console.page.request.post(console.occ.url(path), form={"idempotency_key": "team-refused"},
                                       headers={"X-CSRFToken": csrf(console)})
    assert answer.status == 403, f"{path}: {answer.status}"
    assert revisions(console.occ, team) == before  # the Agent is still there, with no new revision


def viewer_reads(console: Console, team: Team) -> None:
    """A Viewer's allowed action: reading the Agent's revisions."""
    console.goto(f"/console/namespaces/{team.ns}/agents/{team.agent}?tab=revisions")
    expect(console.page.locator("main")).to_contain_text(team.revision[:8])


def test_a_team_lead_adds_colleagues_and_each_finds_what_their_role_says(
        console: Console, team: Team, provider: OidcProvider) -> None:
    console.page.set_viewport_size({"width": 1440, "height": 900})
    link_single_sign_on(console, team)
    agent = f"/console/namespaces/{team.ns}/agents/{team.agent}"

    # The lead: sees the three colleagues on Access with their Roles, shares the Agent with the fourth.
    console.sign_in(team.people[LEAD], PASSWORD)
    assert access_page(console, team, LEAD)
    bindings = console.page.locator("#bindings-panel")
    for role_name in (VIEWER, AGENT_USER, DEVELOPER):
        expect(bindings.locator("tr", has_text=team.people[role_name])).to_contain_text(role_name)
    share_with_the_fourth(console, team)

    allowed_actions = {LEAD: lambda: None, VIEWER: lambda: viewer_reads(console, team),
                       AGENT_USER: lambda: chat_works(console, team), DEVELOPER: lambda: deploy_works(console, team),
                       SHARED: lambda: chat_works(console, team)}
    forbidden_posts = {LEAD: "/console/members", VIEWER: f"{agent}/deploy", AGENT_USER: f"{agent}/delete",
                       DEVELOPER: f"{agent}/delete", SHARED: f"{agent}/deploy"}
    for who in (LEAD, VIEWER, AGENT_USER, DEVELOPER, SHARED):
        if who != LEAD:
            sign_out(console)
            if who == AGENT_USER:
                sign_in_with_provider(console, provider)
            else:
                console.sign_in(team.people[who], PASSWORD)
        expected = DECISIVE[who]
        agent_summary = summaries(console, team)["agent"]
        assert {entry: agent_summary.get(entry, False) for entry in ("deploy", "delete", "chat")} == {
            entry: expected[entry] for entry in ("deploy", "delete", "chat")}, f"{who}: {agent_summary}"
        offered = offered_on_the_agent(console, team, who)
        if who in (AGENT_USER, SHARED):  # they read no revision: the header says so, not "none"
            expect(console.page.locator(".agent-facts")).to_contain_text("Latest deployment: hidden")
        assert {entry: entry in offered for entry in ("deploy", "delete", "chat")} == {
            entry: expected[entry] for entry in ("deploy", "delete", "chat")}, f"{who} was offered {sorted(offered)}"
        assert access_page(console, team, who) is expected["access"], who
        allowed_actions[who]()
        refused(console, forbidden_posts[who], team)
