"""The console lists that read keyset pages (issue 31), on their second page, in Chromium at
1440x900 and 390x844: Secrets, Configurations, Namespaces, an Agent's Revisions tab, the Access
page's and the Installation's service principals, Members, plus the
Namespace selector's "More Namespaces…". OCC's web stack in this process (pytest-django's live
server), pages of 3 rows. Each page shows its rows, First (Newest) and Next (Older) pager links,
nothing scrolls sideways at 390 px, and axe-core finds no serious or critical violation.
Screenshots go to ``$OCC_BROWSER_ARTIFACTS/keyset-pages/``."""

from __future__ import annotations

import re

import pytest

from console.pages import agent_revisions
from occ.commands.iam import ServicePrincipalCreate
from occ.services.iam_policy import service_principal_create
from tests.browser.support import ARTIFACTS, signed_in_page
from tests.browser.test_every_page import BLOCKING, SIZES, axe_violations, readable
from tests.console.test_agent_detail import deploy, make_world
from tests.factories import ConfigurationFactory, NamespaceFactory, SecretFactory, human

pytestmark = [pytest.mark.browser]
SHOTS = ARTIFACTS / "keyset-pages"
PAGE_SIZE = 3


@pytest.fixture
def small_pages(monkeypatch) -> None:
    for module in ("secrets", "configurations", "namespaces"):
        monkeypatch.setattr(f"console.views.{module}.PAGE_SIZE", PAGE_SIZE)
    monkeypatch.setattr(agent_revisions, "PAGE_SIZE", PAGE_SIZE)
    monkeypatch.setattr("console.common.SWITCHER_SIZE", 3)
    for module in ("access", "installation_principals", "members"):
        monkeypatch.setattr(f"console.views.{module}.PAGE_SIZE", PAGE_SIZE)


def test_the_keyset_lists_on_their_second_page_at_both_sizes(live_server, ready_namespace, admin_actor,
                                                             fake_compute, small_pages, tmp_path):
    # Rows first: the ORM refuses to run inside Playwright's event loop.
    world = make_world(ready_namespace, admin_actor)
    for _ in range(5):
        deploy(world, admin_actor)
    for index in range(5):
        SecretFactory(namespace=ready_namespace, name=f"Service token {index}")
        ConfigurationFactory(namespace=ready_namespace, values={}, name=f"support-config-{index}")
        NamespaceFactory(name=f"team-{index}")
        human(f"person-{index}")
        for scope in (ready_namespace.id, None):
            service_principal_create(actor=admin_actor, namespace_id=scope,
                                     command=ServicePrincipalCreate(name=f"robot {index}"))
    ns = ready_namespace.id
    lists = {
        "secrets": (f"/console/namespaces/{ns}/secrets", "First", "Next"),
        "configurations": (f"/console/namespaces/{ns}/configurations", "First", "Next"),
        "namespaces": ("/console/namespaces", "First", "Next"),
        "access": (f"/console/namespaces/{ns}/access", "First", "Next"),
        "members": ("/console/members", "First", "Next"),
        "installation-principals": ("/console/members/service-principals", "First", "Next"),
        "revisions": (f"/console/namespaces/{ns}/agents/{world.agent.id}?tab=revisions", "Newest", "Older"),
    }
    SHOTS.mkdir(parents=True, exist_ok=True)
    with signed_in_page(live_server.url, tmp_path / "profile") as page:
        for size, (width, height) in SIZES.items():
            page.set_viewport_size({"width": width, "height": height})
            for name, (path, first, following) in lists.items():
                page.goto(f"{live_server.url}{path}")
                page.get_by_role("link", name=following, exact=True).click()
                page.wait_for_url(re.compile(r"after="))
                page.get_by_role("link", name=first, exact=True).wait_for()
                page.screenshot(path=str(SHOTS / f"{name}-{size}.png"), full_page=True)
                fits = page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
                assert fits, f"the {name} page scrolls sideways at {size}"
                blocking = [v for v in axe_violations(page) if v["impact"] in BLOCKING]
                assert not blocking, f"{name} at {size}:\n{readable(blocking)}"
            assert page.locator("#namespace-select option[value='*']").inner_text() == "More Namespaces…"
            page.goto(f"{live_server.url}/console/namespaces/{ns}/secrets?after=garbage!")
            assert page.get_by_text("That page link was edited or is out of date").is_visible()
            page.screenshot(path=str(SHOTS / f"secrets-tampered-{size}.png"), full_page=True)
