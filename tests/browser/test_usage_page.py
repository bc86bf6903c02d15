"""The Usage page with budgets, signed in as an administrator, in Chromium at 1440x900 and 390x844:
OCC's web stack in this process (pytest-django's live server). axe-core finds no serious or
critical violation, nothing scrolls sideways at 390 px, and the budgets table's action cell
reads as row actions: a whole cell of its row at 1440 px; at 390 px no column label beside the
Override and Remove buttons, and a row with nothing to override shows Remove alone, from the row's
left edge too. Screenshots (taken before those checks) go to
``$OCC_BROWSER_ARTIFACTS/usage/``."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.utils import timezone

from occ.models import Budget, UsageDay
from tests.browser.support import ARTIFACTS, signed_in_page
from tests.browser.test_every_page import BLOCKING, SIZES, axe_violations, readable
from tests.factories import AgentFactory

pytestmark = [pytest.mark.browser]
SHOTS = ARTIFACTS / "usage"


def _world(namespace: Any) -> dict[str, str]:
    agent = AgentFactory(namespace=namespace, name="support-agent")
    today = timezone.now().date()
    for back in range(10):
        UsageDay.objects.create(namespace_id=namespace.id, agent_id=agent.id, agent_name=agent.name,
                                day=today - timedelta(days=back), provider="openai", model="gpt-5",
                                input_tokens=12000, output_tokens=2100, cache_read_tokens=800,
                                cost=Decimal("0.40"), collected_at=timezone.now())
    spent = Budget.objects.create(namespace=namespace, agent_id=agent.id, period="day", limit=Decimal("0.30"),
                                  set_by="test")
    Budget.objects.create(namespace=namespace, period="month", limit=Decimal("500"), set_by="test")
    return {"ns": namespace.id, "spent": spent.id}


def _action_cells(page: Any) -> list[dict[str, Any]]:
    """Each budget row's last cell: its column label as drawn (``::before``), its display and
    height beside the row's, where it and its button start beside where the row starts."""
    return page.evaluate("""() => [...document.querySelectorAll('#budgets-table tbody tr')].map(row => {
        const cell = row.lastElementChild;
        return {row: row.id, label: getComputedStyle(cell, '::before').content, height: cell.offsetHeight,
                display: getComputedStyle(cell).display, rowHeight: row.offsetHeight,
                left: cell.getBoundingClientRect().left, rowLeft: row.getBoundingClientRect().left,
                button: cell.querySelector('button')?.getBoundingClientRect().left ?? null,
                buttons: [...cell.querySelectorAll('button')].map(button => button.textContent.trim())};
    })""")


@pytest.mark.django_db(transaction=True)
def test_the_usage_page_with_budgets_at_both_sizes(live_server, ready_namespace, tmp_path):
    world = _world(ready_namespace)  # before Playwright's event loop: the ORM refuses to run inside one
    with signed_in_page(live_server.url, tmp_path / "profile") as page:
        for size, (width, height) in SIZES.items():
            page.set_viewport_size({"width": width, "height": height})
            page.goto(f"{live_server.url}/console/namespaces/{world['ns']}/usage")
            assert page.get_by_role("button", name=re.compile("Override until the day ends")).is_visible()
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / f"usage-{size}.png"), full_page=True)
            page.locator("#budgets-table").screenshot(path=str(SHOTS / f"usage-budgets-{size}.png"))
            blocking = [v for v in axe_violations(page) if v.get("impact") in BLOCKING]
            assert not blocking, readable(blocking)
            cells = {cell["row"]: cell for cell in _action_cells(page)}
            spent = cells.pop(f"budget-{world['spent']}")
            (other,) = cells.values()
            assert spent["label"] in ("none", "normal"), f"a column label beside the button: {spent['label']}"
            if size == "1440":
                assert (spent["display"], spent["height"]) == ("table-cell", spent["rowHeight"]), spent
                assert (other["display"], other["height"]) == ("table-cell", other["rowHeight"]), other
            if size == "390":
                fits = page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
                assert fits, "the Usage page scrolls sideways"
                assert spent["button"] - spent["rowLeft"] < 30, "the button starts at the row's left edge"
                assert other["button"] - other["rowLeft"] < 30, "Remove starts at the row's left edge"
            assert other["label"] in ("none", "normal"), f"a column label beside Remove: {other['label']}"
            assert other["buttons"] == ["Remove"], other
            assert spent["buttons"] == ["Override until the day ends", "Remove"], spent
