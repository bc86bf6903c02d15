"""The bundled Codex default Presets ("default-codex", "Standard Codex"): valid templates the
Preset API itself accepts, not seeded while this OCC has no dedicated Codex harness, seeded at
Namespace creation with it, and removed with the Namespace while untouched."""

from __future__ import annotations

import pytest

from occ.models import Namespace, Preset
from occ.openclaw import presets as bundled
from occ.openclaw.presets import DEFAULT_CODEX, STANDARD_CODEX, STANDARD_OPENCLAW, bundled_presets
from tests.conftest import mark_namespace_ready


@pytest.mark.parametrize("name", [DEFAULT_CODEX, STANDARD_CODEX])
def test_each_codex_default_is_a_template_the_preset_api_accepts_as_it_is(api, ready_namespace, name):
    template = bundled_presets()[name]
    response = api.post(f"/namespaces/{ready_namespace.id}/presets", {"name": f"copy of {name}", "template": template})
    assert response.status == 201, response.body
    assert response.data["template"] == template  # nothing to fill in: stored exactly as bundled


def test_without_the_dedicated_codex_harness_only_standard_openclaw_is_seeded(api, bootstrap):
    created = api.post("/namespaces", {"name": "no-codex"}).data
    assert [p.name for p in Preset.objects.filter(namespace_id=created["id"])] == [STANDARD_OPENCLAW]


def test_with_the_dedicated_codex_harness_the_codex_defaults_are_seeded_and_leave_untouched(api, bootstrap,
                                                                                           monkeypatch):
    monkeypatch.setattr(bundled, "DEDICATED_CODEX_HARNESS", True)
    ns = Namespace.objects.get(id=api.post("/namespaces", {"name": "with-codex"}).data["id"])
    seeded = {p.name: p.template for p in Preset.objects.filter(namespace=ns)}
    assert seeded == bundled_presets()
    mark_namespace_ready(ns)
    assert api.delete(f"/namespaces/{ns.id}").status == 202
    assert not Preset.objects.filter(namespace=ns).exists()


def test_an_edited_codex_default_blocks_the_namespace_deletion(api, bootstrap, monkeypatch):
    monkeypatch.setattr(bundled, "DEDICATED_CODEX_HARNESS", True)
    ns = Namespace.objects.get(id=api.post("/namespaces", {"name": "edited-codex"}).data["id"])
    mark_namespace_ready(ns)
    codex = Preset.objects.get(namespace=ns, name=DEFAULT_CODEX)
    assert api.patch(f"/namespaces/{ns.id}/presets/{codex.id}", {"name": "our codex"}).status == 200
    refused = api.delete(f"/namespaces/{ns.id}")
    assert (refused.status, refused.error_code) == (409, "NAMESPACE_NOT_EMPTY")
    assert codex.id in refused.body["error"]["message"]
