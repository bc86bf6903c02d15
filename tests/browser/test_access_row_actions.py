"""The Access pages' row actions in Chromium at 1440x900 and 390x844, signed in as an
administrator (OCC's web stack in this process, pytest-django's live server): a Namespace's
Access page (its bindings, one revocable and one Namespace-wide, and its Roles), a Namespace
service principal's page and an Installation service principal's page (their keys panel). Each
action cell is a plain cell holding ``div.row-actions``, as on the Usage page: at 1440 px a whole
table cell of its row (a ``display: flex`` cell broke the row's border); at 390 px no column label
beside the action and nothing scrolls sideways; axe-core finds no serious or critical violation.
Screenshots (taken before the checks) go to ``$OCC_BROWSER_ARTIFACTS/access/``."""

from __future__ import annotations

from typing import Any

import pytest

from occ.iam.roles import VIEWER
from occ.models import AccessBinding, Role
from tests.browser.support import ARTIFACTS, signed_in_page
from tests.browser.test_every_page import BLOCKING, SIZES, axe_violations, readable
from tests.factories import AgentFactory, key_for, service_principal

pytestmark = [pytest.mark.browser]
SHOTS = ARTIFACTS / "access"


def _world(namespace: Any) -> dict[str, str]:
    agent = AgentFactory(namespace=namespace, name="support-agent")
    robot = service_principal("ci deploys", namespace)
    key_for(robot, namespace=namespace)
    role = Role.objects.create(namespace=namespace, name="agent reader", permissions=["read:agent"])
    AccessBinding.objects.create(principal=robot, role=role, namespace=namespace, resource_kind="agent",
                                 resource_id=agent.id)
    AccessBinding.objects.create(principal=robot, namespace=namespace,
                                 role=Role.objects.get(name=VIEWER, namespace__isnull=True))
    fleet = service_principal("fleet exports")
    key_for(fleet)
    return {"access": f"/console/namespaces/{namespace.id}/access",
            "principal": f"/console/namespaces/{namespace.id}/access/service-principals/{robot.id}",
            "installation-principal": f"/console/members/service-principals/{fleet.id}"}


def _action_cells(page: Any) -> list[dict[str, Any]]:
    """Each cell holding row actions: its column label as drawn (``::before``), its display and
    height beside its row's, and its class (never ``row-actions`` itself)."""
    return page.evaluate("""() => [...document.querySelectorAll('tbody .row-actions')].map(actions => {
        const cell = actions.closest('td'), row = cell.closest('tr');
        return {row: row.id, cell: cell.className, label: getComputedStyle(cell, '::before').content,
                display: getComputedStyle(cell).display, height: cell.offsetHeight, rowHeight: row.offsetHeight};
    })""")


@pytest.mark.django_db(transaction=True)
def test_the_access_pages_row_actions_at_both_sizes(live_server, ready_namespace, tmp_path):
    world = _world(ready_namespace)  # before Playwright's event loop: the ORM refuses to run inside one
    with signed_in_page(live_server.url, tmp_path / "profile") as page:
        for size, (width, height) in SIZES.items():
            page.set_viewport_size({"width": width, "height": height})
            for name, path in world.items():
                page.goto(f"{live_server.url}{path}")
                SHOTS.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(SHOTS / f"{name}-{size}.png"), full_page=True)
                blocking = [v for v in axe_violations(page) if v.get("impact") in BLOCKING]
                assert not blocking, readable(blocking)
                cells = _action_cells(page)
                assert len(cells) >= (3 if name == "access" else 1), cells  # two bindings and a Role
                for cell in cells:
                    assert "row-actions" not in cell["cell"], cell
                    assert cell["label"] in ("none", "normal"), f"a column label beside the action: {cell}"
                    if size == "1440":
                        assert (cell["display"], cell["height"]) == ("table-cell", cell["rowHeight"]), cell
                if size == "390":
                    fits = page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
                    assert fits, f"{name} scrolls sideways at 390 px"
