"""Every console page in Chromium, at 1440x900 and 390x844 (and a subset in the dark scheme):
axe-core finds no serious or critical violation, nothing scrolls sideways at 390 px, and a
full-page screenshot of each is kept under ``$OCC_BROWSER_ARTIFACTS/every-page/`` (CI artifacts).

One OCC (the ``fake`` compute driver, the Codex plugin catalog fake), one world made through the
API (two Agents with revisions, Secrets, Configurations, a service principal with a key, a Role
and a binding, another Namespace, the audit events all that wrote), one browser, signed in once
as the administrator (the forbidden page as a person who reads the Namespace but may not
administer the Installation).

axe-core is the npm package vendored in ``frontend/`` (its lock); the test evaluates
``node_modules/axe-core/axe.min.js`` in the page through the DevTools protocol, which the
console's Content-Security-Policy does not apply to, so the console neither serves nor budgets it.

The completeness guard (``test_every_console_page_is_swept_or_excused``) walks the console's
URLconf: a page added later fails it until it is in ``PAGES`` or in ``NOT_PAGES`` with a reason.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.browser.support import ARTIFACTS, Console, Occ, api_caller
from tests.browser.test_console_flow import htmx_idle
from tests.e2e.stack import REPO, wait_until

AXE = REPO / "frontend" / "node_modules" / "axe-core" / "axe.min.js"
SHOTS = ARTIFACTS / "every-page"
SIZES = {"1440": (1440, 900), "390": (390, 844)}
BLOCKING = ("serious", "critical")
WORK_SECONDS = 90
CODEX_TOKEN_ENV = {"OCC_PLUGIN_DRIVER": "codex"}

VALUES = {"agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "openai/gpt-5"}}}}

# A second person, without the administrator's Role, bound to a Role of the Namespace: the
# administrator opens their page on Members, and they open their own Change password.
READER = ("reader", "a-long-reader-password")
READER_ID = "prn_sweep-robin-reader"
MAKE_READER = """
from django.contrib.auth import get_user_model
from occ.models import AccessBinding, Principal, PrincipalKind, Role
user = get_user_model().objects.create_user(username={username!r}, password={password!r})
principal = Principal.objects.create(id={principal_id!r}, kind=PrincipalKind.HUMAN, name="Robin Reader", user=user)
role = Role.objects.create(namespace_id={ns!r}, name="namespace-reader", permissions=["read:namespace", "read:agent"])
AccessBinding.objects.create(principal=principal, role=role, namespace_id={ns!r})
"""

# The Installation's own service principal (no Namespace), with a key issued through the API below.
MAKE_INSTALLATION_PRINCIPAL = """
from occ.models import Principal, PrincipalKind
Principal.objects.create(id={principal_id!r}, kind=PrincipalKind.SERVICE, name="fleet-automation")
"""
INSTALLATION_PRINCIPAL_ID = "sp_sweep-fleet-automation"
# Three weeks of an Agent's usage on two models, and a day budget at about 85 % of today's (a banner).
MAKE_USAGE = """
from datetime import timedelta
from decimal import Decimal
from django.utils import timezone
from occ.models import Budget, UsageDay
today = timezone.now().date()
for back in range(21):
    for model, cost in (("gpt-5", Decimal("0.31") * (back % 7 + 1)), ("gpt-5-mini", Decimal("0.04") * (back % 3))):
        UsageDay.objects.create(namespace_id={ns!r}, agent_id={agent!r}, agent_name="support-agent",
                                day=today - timedelta(days=back), provider="openai", model=model,
                                input_tokens=12000 + back * 310, output_tokens=2100 + back * 40,
                                cache_read_tokens=800, cost=cost, collected_at=timezone.now())
Budget.objects.create(namespace_id={ns!r}, period="day", limit=Decimal("0.36"), set_by="sweep")
"""


# --- the world -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def occ_extra_env() -> dict[str, str]:
    return CODEX_TOKEN_ENV


@dataclass
class World:
    ns: str
    ids: dict[str, str] = field(default_factory=dict)


@pytest.fixture(scope="module")
def world(occ: Occ) -> World:
    """A Namespace a team has used for a while, made through the API (so audited as it would be)."""
    ns = occ.namespace_id
    world = World(ns=ns)
    with occ.stack.api() as api:
        call = api_caller(api)

        secret = lambda name, value: call("POST", f"/namespaces/{ns}/secrets", {"name": name, "value": value}, 201)  # noqa: E731
        model_key = secret("openai-api-key", "sk-sweep-model-key-5d2a")
        bot = secret("support-bot-token", "xoxb-sweep-bot-token-1f0c")
        secret("support-app-token", "xapp-sweep-app-token-77aa")
        world.ids["secret"] = model_key["id"]
        unused = call("POST", f"/namespaces/{ns}/configurations", {"kind": "agent", "values": VALUES}, 201)
        world.ids["configuration"] = unused["id"]
        for name, bound in (("support-agent", True), ("research-agent", False)):
            configuration = call("POST", f"/namespaces/{ns}/configurations", {
                "kind": "agent", "values": VALUES,
                "secretBindings": {"SLACK_BOT_TOKEN": {"source": {"kind": "secret", "namespaceId": ns,
                                                                  "id": bot["id"]}}} if bound else {}}, 201)
            agent = call("POST", f"/namespaces/{ns}/agents", {
                "name": name, "configurationId": configuration["id"],
                "harnessAuth": {"method": "api_key",
                                "source": {"kind": "secret", "namespaceId": ns, "id": model_key["id"]}}}, 201)
            path = f"/namespaces/{ns}/agents/{agent['id']}"
            call("POST", f"{path}/secret-access", {"secretIds": [model_key["id"], *([bot["id"]] if bound else [])]})
            world.ids.setdefault("agent", agent["id"])
            for _ in range(2 if bound else 1):  # two revisions of the first Agent
                before = call("GET", path).get("activeRevisionId")
                call("POST", f"{path}/deploy", expect=202)
                wait_until(lambda: call("GET", path).get("activeRevisionId") not in (None, before),  # noqa: B023
                           timeout=WORK_SECONDS, interval=1, what=f"{name} to be deployed", diagnose=occ.diagnose)
                world.ids.setdefault("revision", call("GET", path)["activeRevisionId"])  # the first Agent's v1
        iam = f"/namespaces/{ns}/iam"
        principal = call("POST", f"{iam}/service-principals", {"name": "ci-deployer"}, 201)
        world.ids["principal"] = principal["id"]
        key = call("POST", "/api/auth/service-keys", {"servicePrincipalId": principal["id"], "namespaceId": ns,
                                                      "name": "github-actions"}, 201)
        world.ids["key"] = key["id"]
        role = call("POST", f"{iam}/roles", {"name": "agent-reader", "permissions": [
            {"action": "read", "resourceKind": "agent"}]}, 201)
        world.ids["role"] = role["id"]
        binding = call("POST", f"{iam}/access-bindings", {
            "subjectKind": "identity", "subjectId": principal["id"], "roleId": role["id"],
            "resourceKind": "agent", "resourceId": world.ids["agent"]}, 201)
        world.ids["binding"] = binding["id"]
        world.ids["preset"] = call("GET", f"/namespaces/{ns}/presets")["presets"][0]["id"]  # Standard OpenClaw
        other = call("POST", "/namespaces", {"name": "staging"}, 201)
        world.ids["namespace"] = other["id"]
    occ.stack.manage("shell", "-c", MAKE_INSTALLATION_PRINCIPAL.format(principal_id=INSTALLATION_PRINCIPAL_ID))
    world.ids["iprincipal"] = INSTALLATION_PRINCIPAL_ID
    with occ.stack.api() as api:
        ikey = api_caller(api)("POST", "/api/auth/service-keys", {"servicePrincipalId": INSTALLATION_PRINCIPAL_ID,
                                                                   "name": "fleet-ci"}, 201)
    world.ids["ikey"] = ikey["id"]
    username, password = READER
    occ.stack.manage("shell", "-c", MAKE_READER.format(username=username, password=password, ns=ns,
                                                       principal_id=READER_ID))
    world.ids["person"] = READER_ID
    occ.stack.manage("shell", "-c", MAKE_USAGE.format(ns=ns, agent=world.ids["agent"]))
    return world


# --- the pages -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Page:
    """One screen: the URL name it is reached by, its path, and what to do there first."""

    id: str
    url_name: str
    path: str  # formatted with the world's ids: {ns}, {agent}, …
    then: Callable[[Console], None] | None = None
    signed_in: bool = True
    status: int = 200
    dark: bool = False
    reader: bool = False  # seen by READER instead of the administrator


def open_slack_modal(console: Console) -> None:
    page = console.page
    page.locator("#channels-card").get_by_role("button", name="Configure Slack").click()
    page.get_by_role("dialog", name="Slack setup").wait_for()
    htmx_idle(page)


def browse_plugins(console: Console) -> None:
    from tests.fakes.fake_codex import TOKEN

    page = console.page
    field_ = page.get_by_label("Service account token for browsing plugins")
    field_.fill(TOKEN)
    field_.press("Tab")
    page.locator("#plugin-results .plugin-row").first.wait_for()
    htmx_idle(page)


def failed_sign_in(console: Console) -> None:
    page = console.page
    page.get_by_label("Username").fill("admin")
    page.get_by_label("Password").fill("not-the-password")
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("alert").first.wait_for()
    assert page.get_by_label("Username").input_value() == "admin", "a failed sign-in keeps the username"


AGENT = "/console/namespaces/{ns}/agents/{agent}"
ACCESS = "/console/namespaces/{ns}/access"
INSTALLATION_SP = "/console/members/service-principals"

PAGES = (
    Page("sign-in", "sign-in", "/console/sign-in", signed_in=False, dark=True),
    Page("sign-in-failed", "sign-in", "/console/sign-in", then=failed_sign_in, signed_in=False),
    Page("namespaces", "namespaces", "/console/namespaces", dark=True),
    Page("namespace-delete", "namespace-delete", "/console/namespaces/{namespace}/delete"),
    Page("secrets", "secrets", "/console/namespaces/{ns}/secrets"),
    Page("secret-value", "secret-value", "/console/namespaces/{ns}/secrets/{secret}/value"),
    Page("secret-delete", "secret-delete", "/console/namespaces/{ns}/secrets/{secret}/delete"),
    Page("configurations", "configurations", "/console/namespaces/{ns}/configurations"),
    Page("configuration-new", "configuration-new", "/console/namespaces/{ns}/configurations/new"),
    Page("configuration", "configuration", "/console/namespaces/{ns}/configurations/{configuration}"),
    Page("configuration-edit", "configuration-edit", "/console/namespaces/{ns}/configurations/{configuration}/edit",
         dark=True),
    Page("configuration-secrets", "configuration-bindings",
         "/console/namespaces/{ns}/configurations/{configuration}/secrets"),
    Page("configuration-delete", "configuration-delete",
         "/console/namespaces/{ns}/configurations/{configuration}/delete"),
    Page("agents", "agents", "/console/namespaces/{ns}/agents", dark=True),
    Page("agent-choose", "agent-choose", "/console/namespaces/{ns}/agents/start", dark=True),
    Page("agent-choose-preset", "agent-choose-preset", "/console/namespaces/{ns}/agents/start/{preset}"),
    Page("agent-new", "agent-new", "/console/namespaces/{ns}/agents/new", dark=True),
    Page("agent-new-slack", "slack-modal", "/console/namespaces/{ns}/agents/new", then=open_slack_modal),
    Page("agent-new-plugins", "agent-new-plugins-browse", "/console/namespaces/{ns}/agents/new",
         then=browse_plugins),
    Page("agent-overview", "agent", AGENT, dark=True),
    Page("agent-chat", "agent", AGENT + "?tab=chat", dark=True),
    Page("agent-logs", "agent-logs", AGENT + "?tab=logs"),
    Page("agent-configuration", "agent-configuration", AGENT + "?tab=configuration"),
    Page("agent-credentials", "agent-credentials", AGENT + "?tab=credentials"),
    Page("agent-revisions", "agent", AGENT + "?tab=revisions"),
    Page("agent-plugins", "agent", AGENT + "?tab=plugins"),
    Page("agent-sharing", "agent", AGENT + "?tab=sharing", dark=True),
    Page("agent-revision-redeploy", "agent-revision-redeploy", AGENT + "/revisions/{revision}/redeploy"),
    Page("agent-stop", "agent-stop", AGENT + "/stop"),
    Page("agent-delete", "agent-delete", AGENT + "/delete"),
    Page("agent-save-preset", "agent-save-preset", AGENT + "/save-preset"),
    Page("access", "access", ACCESS, dark=True),
    Page("service-principals", "service-principals", ACCESS + "/service-principals"),
    Page("bindings", "bindings", ACCESS + "/bindings"),
    Page("binding-revoke", "binding-revoke", ACCESS + "/bindings/{binding}/revoke"),
    Page("role-delete", "role-delete", ACCESS + "/roles/{role}/delete"),
    Page("service-principal", "service-principal", ACCESS + "/service-principals/{principal}", dark=True),
    Page("service-key-revoke", "service-key-revoke", ACCESS + "/service-principals/{principal}/keys/{key}/revoke"),
    Page("members", "members", "/console/members"),
    Page("member", "member", "/console/members/people/{person}", dark=True),
    Page("password", "password", "/console/account/password", reader=True),
    Page("installation-principals", "installation-principals", INSTALLATION_SP, dark=True),
    Page("installation-principal", "installation-principal", INSTALLATION_SP + "/{iprincipal}", dark=True),
    Page("installation-key-revoke", "installation-key-revoke", INSTALLATION_SP + "/{iprincipal}/keys/{ikey}/revoke"),
    Page("installation-principal-delete", "installation-principal-delete", INSTALLATION_SP + "/{iprincipal}/delete"),
    Page("installation-principals-forbidden", "installation-principals", INSTALLATION_SP, status=403, reader=True),
    Page("audit", "audit", "/console/audit", dark=True),
    Page("usage", "usage", "/console/namespaces/{ns}/usage", dark=True),
    # The world's gateways are the fake driver's (nothing answers their RPC): no sessions, and the
    # inbox names the Agents whose gateway did not answer. With sessions, a transcript and pending
    # approvals: tests/browser/test_sessions_pages.py.
    Page("sessions", "sessions", "/console/sessions", dark=True),
    Page("approvals", "approvals", "/console/approvals"),
    Page("agent-sessions", "agent", AGENT + "?tab=sessions"),
    Page("not-found", "not-found", "/console/no-such-page", status=404, dark=True),
    Page("forbidden", "members", "/console/members", status=403, dark=True, reader=True),
    Page("agent-not-found", "agent", "/console/namespaces/{ns}/agents/agt_doesnotexist", status=404),
)

# Console URLs that are not pages of their own, each with why (the guard below reads this).
NOT_PAGES = {
    "home": "redirects to the current Namespace's Agents",
    "member-active": "POST only: disable or re-enable an account",
    "member-password": "POST only: set a one-time password",
    "member-delete": "POST only: remove an account",
    "member-single-sign-on": "POST only: a person's single sign-on settings (the card on the member page; "
                             "tests/browser/test_single_sign_on.py)",
    "sign-in-oidc": "redirects to the identity provider (tests/browser/test_single_sign_on.py)",
    "sign-in-oidc-callback": "the provider's redirect back: signs in and redirects, or to sign-in with the refusal",
    "sign-out": "POST only",
    "agent-deployment-diagnostics": "POST only: Run diagnostics answers the deployment panel with its checks "
                                    "(tests/console/test_agent_diagnostics.py)",
    "switch-namespace": "redirects to the chosen Namespace",
    "usage-export": "a CSV download of the Usage page's rows (tests/console/test_usage_page.py)",
    "budget-save": "POST only: the Usage page's budget form (tests/console/test_usage_page.py)",
    "budget-override": "POST only: an administrator's override of a spent budget (tests/console/test_usage_page.py)",
    "budget-delete": "POST only: an administrator removes a budget from its row (tests/console/test_usage_page.py)",
    "namespace-row": "a table row htmx polls while a Namespace provisions",
    "configuration-check-new": "POST only: the editor's as-you-type validation",
    "configuration-check": "POST only: the editor's as-you-type validation",
    "agent-new-form": "the wizard's form re-rendered by htmx on a change (swept as agent-new)",
    "agent-new-models": "POST only: model discovery",
    "agent-new-secret": "POST only: save a key as a Secret",
    "agent-new-submit": "POST only",
    "agent-new-lookup": "POST only: Slack channel lookup",
    "agent-new-provisioning": "the progress panel after submit (swept in test_console_flow)",
    "agent-new-provisioning-retry": "POST only",
    "agent-new-plugins-detail": "a fragment of the plugin picker",
    "agent-new-plugins-tools": "a fragment of the plugin picker",
    "agent-plugins-browse": "the plugin picker on the Agent's Plugins tab (swept as agent-plugins)",
    "agent-plugins-detail": "a fragment of the plugin picker",
    "agent-plugins-tools": "a fragment of the plugin picker",
    "agent-plugins-save": "POST only",
    "slack-token": "POST only",
    "slack-status": "a fragment of the Slack modal",
    "slack-search": "a fragment of the Slack modal",
    "slack-pick": "POST only",
    "slack-apply": "POST only",
    "agent-chat": "POST only: send a chat message",
    "agent-chat-new": "POST only: new conversation",
    "agent-header": "a fragment of the Agent page that htmx polls",
    "agent-deployment": "a fragment of the Agent page that htmx polls",
    "agent-status": "a fragment of the Agent page that htmx polls",
    "agent-runtime": "the Runtime panel fragment of the Agent overview (swept as agent-overview)",
    "agent-deploy": "POST only",
    "agent-start": "a stopped Agent's confirmation; the world's Agents run (swept stop instead)",
    "agent-credentials-grant": "POST only",
    "agent-smoke": "POST only: saves the smoke conversations and the rollback choice (shown on the Configuration tab)",
    "agent-repositories": "POST only: saves the repository access (shown on the Configuration tab)",
    "agent-share": "POST only: share the Agent (swept as agent-sharing)",
    "agent-share-revoke": "POST only: revoke a direct share",
    "agent-transcript": "reads a running gateway's transcript (tests/browser/test_sessions_pages.py sweeps it at "
                        "both sizes against a loopback stand-in of the gateway RPC)",
    "approval-decide": "POST only: approve or deny one approval (tests/console/test_sessions.py)",
    "roles": "POST only: create a Role",
    "service-keys": "POST only: issue a key",
    "installation-keys": "POST only: issue a key",
}


def page_path(page: Page, world: World) -> str:
    return page.path.format(ns=world.ns, **world.ids)


# --- the checks ----------------------------------------------------------------------------------


AXE_RUN = """async () => {
  const result = await axe.run(document, {resultTypes: ['violations']});
  return result.violations
    .filter(v => ['serious', 'critical'].includes(v.impact))
    .map(v => ({id: v.id, impact: v.impact, help: v.help,
                nodes: v.nodes.slice(0, 5).map(n => ({target: n.target.join(' '), summary: n.failureSummary}))}));
}"""

WIDEST = """() => {
  const width = window.innerWidth;
  const past = [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > width + 0.5);
  // The innermost offenders say what to fix; their ancestors only carry them.
  const innermost = past.filter(e => !past.some(other => other !== e && e.contains(other)));
  const classes = e => typeof e.className === 'string' && e.className
    ? '.' + e.className.trim().split(/\\s+/).join('.') : '';
  return innermost.slice(0, 8).map(e => ({el: e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + classes(e),
                right: Math.round(e.getBoundingClientRect().right), text: (e.textContent || '').trim().slice(0, 60)}));
}"""


def axe_violations(page: Any) -> list[dict[str, Any]]:
    page.evaluate(AXE.read_text() + "\n;0")  # the DevTools protocol: not subject to the page's CSP
    result: list[dict[str, Any]] = page.evaluate(AXE_RUN)
    return result


def readable(violations: list[dict[str, Any]]) -> str:
    lines = []
    for v in violations:
        lines.append(f"[{v['impact']}] {v['id']}: {v['help']}")
        lines += [f"    {n['target']}\n      {n['summary'].replace(chr(10), chr(10) + '      ')}" for n in v["nodes"]]
    return "\n".join(lines)


def visit(console: Console, world: World, case: Page, size: str, scheme: str) -> tuple[int, Path]:
    page = console.page
    width, height = SIZES[size]
    page.set_viewport_size({"width": width, "height": height})
    page.emulate_media(color_scheme=scheme)
    response = page.goto(console.occ.url(page_path(case, world)))
    assert response is not None
    page.wait_for_load_state("load")
    if case.then is not None:
        case.then(console)
    htmx_idle(page)
    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = SHOTS / f"{case.id}-{size}{'-dark' if scheme == 'dark' else ''}.png"
    page.screenshot(path=str(shot), full_page=True)
    return response.status, shot


def cases() -> Iterator[Any]:
    for case in PAGES:
        for size in SIZES:
            yield pytest.param(case, size, "light", id=f"{case.id}-{size}")
        if case.dark:
            yield pytest.param(case, "390", "dark", id=f"{case.id}-390-dark")


@pytest.fixture(scope="module")
def session(browser: Any, occ: Occ, world: World) -> Iterator[dict[str, Any]]:
    """One page for the whole sweep, signed in once (the sign-in cases use a page of their own)."""
    page = browser.new_page()
    console = Console(page=page, occ=occ, artifacts=SHOTS)
    console.sign_in()
    yield {"console": console}
    page.close()


pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.mark.parametrize(("case", "size", "scheme"), list(cases()))
def test_page(case: Page, size: str, scheme: str, request: pytest.FixtureRequest, world: World) -> None:
    own_page = not case.signed_in or case.reader
    if own_page:
        browser, occ = request.getfixturevalue("browser"), request.getfixturevalue("occ")
        console = Console(page=browser.new_page(), occ=occ, artifacts=SHOTS)
        console.page.context.clear_cookies()
        if case.reader:
            console.sign_in(*READER)
    else:
        console = request.getfixturevalue("session")["console"]
    try:
        status, shot = visit(console, world, case, size, scheme)
        assert status == case.status, f"{case.id}: HTTP {status}, expected {case.status} (screenshot {shot})"
        if case.signed_in and (case.status == 200 or case.reader):
            selector = console.page.locator("select#namespace-select")
            assert selector.count() == 1, f"{case.id}: the Namespace selector is on every page"
        if case.status != 200:  # an error page says so and leads back
            back = console.page.get_by_role("link", name="Back to the console")
            assert back.count() == 1, f"{case.id}: the error page has its way back (screenshot {shot})"
        problems = axe_violations(console.page)
        assert not problems, f"{case.id} at {size} ({scheme}): axe found\n{readable(problems)}\n(screenshot {shot})"
        if size == "390":
            scroll = console.page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
            assert scroll[0] <= scroll[1], (
                f"{case.id} scrolls sideways at 390 px ({scroll[0]} > {scroll[1]}); past the edge:\n"
                + "\n".join(f"  {o['el']} right={o['right']} {o['text']!r}" for o in console.page.evaluate(WIDEST))
                + f"\n(screenshot {shot})")
    finally:
        if own_page:
            console.page.close()
            # One browser context, so one cookie jar: this case signed the sweep's page out (or
            # in as READER): the administrator signs in again.
            signed_in: Console = request.getfixturevalue("session")["console"]
            signed_in.page.context.clear_cookies()
            signed_in.sign_in()


# --- the design system's small things ------------------------------------------------------------


def at(console: Console, size: str, path: str, scheme: str = "light") -> Any:
    page = console.page
    width, height = SIZES[size]
    page.set_viewport_size({"width": width, "height": height})
    page.emulate_media(color_scheme=scheme)
    console.goto(path)
    return page


def test_navigation_collapses_to_a_menu_below_60rem(session: dict[str, Any], world: World) -> None:
    from playwright.sync_api import expect

    console: Console = session["console"]
    page = at(console, "1440", f"/console/namespaces/{world.ns}/agents")
    nav = page.get_by_role("navigation", name="Console")
    menu = page.get_by_role("button", name="Menu")
    expect(nav).to_be_visible()
    expect(menu).to_be_hidden()
    page.set_viewport_size({"width": 390, "height": 844})
    expect(nav).to_be_hidden()
    expect(menu).to_have_attribute("aria-expanded", "false")
    menu.click()
    expect(menu).to_have_attribute("aria-expanded", "true")
    expect(nav).to_be_visible()
    expect(page.get_by_label("Namespace")).to_be_visible()
    console.page.screenshot(path=str(SHOTS / "menu-open-390.png"), full_page=True)
    menu.click()
    expect(menu).to_have_attribute("aria-expanded", "false")
    expect(nav).to_be_hidden()


# Every tab link whose right edge lies past the viewport (cut off, with nothing saying more exist).
CUT_OFF_TABS = """() => [...document.querySelectorAll('nav.tabs a')]
  .filter((a) => a.getBoundingClientRect().right > document.documentElement.clientWidth)
  .map((a) => a.textContent.trim())"""


def test_every_agent_tab_is_in_sight_at_390(session: dict[str, Any], world: World) -> None:
    """Issue 27 item 9: at 390 px the Agent's tab bar was cut off after "Configuratio"."""
    console: Console = session["console"]
    page = at(console, "390", AGENT.format(ns=world.ns, **world.ids))
    assert page.locator("nav.tabs a").count() >= 7
    assert page.evaluate(CUT_OFF_TABS) == []
    page.locator("nav.tabs").screenshot(path=str(SHOTS / "agent-tabs-390.png"))


def test_a_destructive_dialog_focuses_cancel(session: dict[str, Any], world: World) -> None:
    from playwright.sync_api import expect

    console: Console = session["console"]
    page = at(console, "390", f"/console/namespaces/{world.ns}/secrets")
    page.get_by_role("row").filter(has_text="support-app-token").get_by_role("button", name="Delete").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_role("button", name="Cancel")).to_be_focused()
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()


def test_a_copy_button_copies_and_says_so(session: dict[str, Any], world: World, browser: Any, occ: Occ) -> None:
    from playwright.sync_api import expect

    browser.grant_permissions(["clipboard-read", "clipboard-write"], origin=occ.url(""))
    console: Console = session["console"]
    page = at(console, "1440", f"/console/namespaces/{world.ns}/agents/{world.ids['agent']}")
    button = page.locator("[data-copy]").first
    value = button.get_attribute("data-copy")
    assert value
    button.click()
    expect(page.locator("#toasts")).to_contain_text(f"Copied {value}")
    assert page.evaluate("navigator.clipboard.readText()") == value


def test_dark_mode_follows_the_system(session: dict[str, Any], world: World) -> None:
    console: Console = session["console"]
    background = "getComputedStyle(document.body).backgroundColor"
    light = at(console, "390", f"/console/namespaces/{world.ns}/agents").evaluate(background)
    dark = at(console, "390", f"/console/namespaces/{world.ns}/agents", scheme="dark").evaluate(background)
    assert light != dark, f"prefers-color-scheme: dark changes the background ({light} both)"
    console.page.emulate_media(color_scheme="light")


def test_a_field_error_goes_when_the_field_changes(session: dict[str, Any], world: World) -> None:
    from playwright.sync_api import expect

    console: Console = session["console"]
    page = at(console, "390", f"/console/namespaces/{world.ns}/secrets")
    name = page.get_by_label("Secret name", exact=True)
    name.fill("openai-api-key")  # taken: refused by the server (any text is a valid name)
    page.get_by_label("Secret value", exact=True).fill("x")
    page.get_by_role("button", name="Create Secret").click()
    expect(name).to_have_attribute("aria-invalid", "true")
    errors = page.locator(".field-errors").first
    expect(errors).to_be_visible()
    console.page.screenshot(path=str(SHOTS / "field-error-390.png"), full_page=True)
    name.press_sequentially("x")
    expect(name).not_to_have_attribute("aria-invalid", "true")
    expect(errors).to_be_hidden()


# --- completeness --------------------------------------------------------------------------------


def test_every_console_page_is_swept_or_excused() -> None:
    """Each named console URL is a page of the sweep or excused with a reason: a page added to
    console/urls.py fails this until it is swept (or its reason is written down here)."""
    from console.urls import urlpatterns

    names = {pattern.name for pattern in urlpatterns if pattern.name}
    swept = {case.url_name for case in PAGES}
    assert not swept & set(NOT_PAGES), f"both swept and excused: {sorted(swept & set(NOT_PAGES))}"
    missing = sorted(names - swept - set(NOT_PAGES))
    assert not missing, ("console URLs neither in the sweep (PAGES) nor excused (NOT_PAGES, with a reason): "
                         f"{missing}")
    stale = sorted((swept | set(NOT_PAGES)) - names)
    assert not stale, f"swept or excused names that console/urls.py no longer has: {stale}"
    assert all(reason.strip() for reason in NOT_PAGES.values())


def test_every_page_id_is_unique() -> None:
    ids = [case.id for case in PAGES]
    assert len(ids) == len(set(ids)), ids
    assert all(re.fullmatch(r"[a-z0-9-]+", i) for i in ids)
