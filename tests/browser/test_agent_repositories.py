"""The Agent page's Repository access in Chromium (Configuration tab), with OCC's GitHub App
driver pointed at a loopback fake of GitHub: a repeated repository is refused next to its field,
a valid choice is saved through htmx (the toast says so and the API shows it). Screenshots at
1440x900 and 390x844, no horizontal scroll on the phone."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.support import Console, Occ, api_caller
from tests.browser.test_configuration_editor import VALUES, shots
from tests.fakes.fake_github import FakeGitHub

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        yield fake


@pytest.fixture(scope="module")
def occ_extra_env(github: FakeGitHub) -> dict[str, str]:
    return {"OCC_REPOSITORY_DRIVER": "github_app", "OCC_GITHUB_API_BASE_URL": github.origin,
            "OCC_GITHUB_APP_ID": github.app_id, "OCC_GITHUB_APP_INSTALLATION_ID": github.installation_id,
            "OCC_GITHUB_APP_PRIVATE_KEY_FILE": str(github.key_file)}


@pytest.fixture(scope="module")
def agent(occ: Occ) -> dict[str, Any]:
    ns = occ.namespace_id
    with occ.stack.api() as api:
        call = api_caller(api)
        configuration = call("POST", f"/namespaces/{ns}/configurations", {"kind": "agent", "values": VALUES}, 201)
        return call("POST", f"/namespaces/{ns}/agents", {"name": "repo-agent", "configurationId": configuration["id"]},
                    201)


def test_repository_access_is_refused_then_saved(console: Console, occ: Occ, agent: dict[str, Any]) -> None:
    page = console.page
    console.sign_in()
    console.goto(f"/console/namespaces/{occ.namespace_id}/agents/{agent['id']}?tab=configuration")
    section = page.locator("#agent-repositories")
    expect(section.get_by_role("heading", name="Repository access")).to_be_visible()
    section.scroll_into_view_if_needed()
    shots(console, "repositories empty")

    page.get_by_label("Repository 1", exact=True).select_option("acme/widgets")
    page.get_by_label("Repository 2", exact=True).select_option("acme/widgets")
    section.get_by_role("button", name="Save repository access").click()
    expect(page.locator("#repositories-repository-2-error")).to_contain_text("can be bound once")
    shots(console, "repositories refused")

    page.get_by_label("Repository 2", exact=True).select_option("acme/docs")
    page.get_by_label("Access 2", exact=True).select_option("git-full")
    section.get_by_role("button", name="Save repository access").click()
    expect(page.get_by_text("Repository access saved: 2 repositories.")).to_be_visible()
    expect(section).to_contain_text("Contributor (git-full)")
    shots(console, "repositories saved")

    with occ.stack.api() as api:
        saved = api_caller(api)("GET", f"/namespaces/{occ.namespace_id}/agents/{agent['id']}")
    assert saved["repositoryBindings"] == [{"repositoryRef": "acme/widgets", "profile": "git-read"},
                                           {"repositoryRef": "acme/docs", "profile": "git-full"}]
