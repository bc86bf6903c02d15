"""Presets through the real HTTP stack: the five endpoints, their per-resource authorization and
audit, template validation, the shared renderer (whose answer the provisioning API admits), the
Installation's defaults and the Namespace deletion exception for untouched ones."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from occ.commands.secrets import SecretCreate
from occ.models import AccessBinding, AgentProvisioningWork, AuditEvent, Namespace, NamespaceStatus, Preset
from occ.openclaw.presets import STANDARD_OPENCLAW, default_presets
from occ.services.secrets import secret_create
from tests.conftest import ApiClient, mark_namespace_ready
from tests.factories import NamespaceFactory, grant, key_for, service_principal

CANARY = "sk-preset-canary-3c1f"


def template(**agent: Any) -> dict[str, Any]:
    return {
        "variables": {"name": {"type": "string"}, "count": {"type": "number", "default": 2},
                      "key": {"type": "password", "description": "Model key"}},
        "agent": {"name": "{{ vars.name }}", "harnessAuth": {"method": "api_key", "secret": "{{ vars.key }}"},
                  **agent},
        "configuration": {"values": {"agents": {"defaults": {
            "skipBootstrap": True, "model": {"primary": "openai/gpt-6-astra"}, "maxConcurrent": "{{ vars.count }}"}}}},
    }


def url(ns: Namespace, *rest: str) -> str:
    return "/".join([f"/namespaces/{ns.id}/presets", *rest])


def caller(*permissions: str, namespace: Namespace | None = None, **scope: str) -> ApiClient:
    principal = service_principal("caller")
    if permissions:
        grant(principal, *permissions, namespace=namespace, **scope)
    return ApiClient(key_for(principal))


def test_create_get_update_delete_round_trip_each_audited_without_the_template(api, ready_namespace):
    created = api.post(url(ready_namespace), {"name": "Team bot", "template": template()})
    assert created.status == 201, created.body
    preset = created.data
    assert preset["id"].startswith("pre_")
    assert preset["namespaceId"] == ready_namespace.id
    assert preset["template"] == template()
    assert api.get(url(ready_namespace, preset["id"])).data == preset
    renamed = api.patch(url(ready_namespace, preset["id"]), {"name": "Team bot 2"})
    assert renamed.status == 200
    assert renamed.data["name"] == "Team bot 2"
    assert renamed.data["template"] == template()  # omitted: kept
    replaced = api.patch(url(ready_namespace, preset["id"]), {"template": {}})
    assert replaced.data["template"] == {}
    assert replaced.data["name"] == "Team bot 2"
    assert api.delete(url(ready_namespace, preset["id"])).status == 204
    assert api.get(url(ready_namespace, preset["id"])).status == 404
    events = AuditEvent.objects.filter(resource_kind="preset", resource_id=preset["id"]).order_by("occurred_at")
    assert [e.action for e in events] == ["openclaw.presets.create", "openclaw.presets.update",
                                          "openclaw.presets.update", "openclaw.presets.delete"]
    assert all("vars." not in json.dumps(e.details) and "gpt-6" not in json.dumps(e.details) for e in events)


def test_omitted_secret_namespaces_are_filled_and_a_bound_credential_is_kept(api, ready_namespace, admin_actor):
    secret = secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                           command=SecretCreate(name="team key", value=CANARY))
    body = {"name": "bound", "template": {
        "agent": {"harnessAuth": {"method": "api_key", "source": {"kind": "secret", "id": secret.id}}},
        "configuration": {"secretBindings": {"TEAM_TOKEN": {"source": {"kind": "secret", "id": secret.id}}}}}}
    response = api.post(url(ready_namespace), body)
    assert response.status == 201, response.body
    stored = response.data["template"]
    assert stored["agent"]["harnessAuth"]["source"]["namespaceId"] == ready_namespace.id
    assert stored["configuration"]["secretBindings"]["TEAM_TOKEN"]["source"]["namespaceId"] == ready_namespace.id
    assert CANARY not in json.dumps(response.body)


BAD_TEMPLATES = [
    pytest.param({"variables": {"key": {"type": "password", "default": "sk-1"}}}, "/template/variables/key/default",
                 "password variable has no default", id="password-default"),
    pytest.param({"variables": {"n": {"type": "number", "default": "two"}}}, "/template/variables/n/default",
                 "must be a number", id="default-wrong-type"),
    pytest.param({"variables": {"1x": {"type": "string"}}}, "/template/variables/1x", "variable name",
                 id="bad-variable-name"),
    pytest.param({"variables": {"x": {"type": "secret"}}}, "/template/variables/x/type", None, id="unknown-type"),
    pytest.param({"agent": {"name": "{{ vars.who }}"}}, "/template/agent/name", "not declared",
                 id="undeclared-variable"),
    pytest.param({"agent": {"name": "{{ vars.a-b }}"}}, "/template/agent/name", "{{ vars.name }}",
                 id="malformed-token"),
    pytest.param({"variables": {"key": {"type": "password"}}, "agent": {"name": "{{ vars.key }}"}},
                 "/template/agent/name", "only for agent.harnessAuth.secret", id="password-elsewhere"),
    pytest.param({"agent": {"harnessAuth": {"method": "api_key", "secret": "sk-literal"}}},
                 "/template/agent/harnessAuth/secret", "never a credential", id="literal-credential"),
    pytest.param({"variables": {"n": {"type": "number"}}, "agent": {"name": "bot-{{ vars.n }}"}},
                 "/template/agent/name", "only a string variable", id="embedded-number"),
    pytest.param({"agent": {"harnessAuth": {"method": "api_key", "source": {
        "kind": "secret", "namespaceId": "ns_other", "id": "sec_x"}}}},
        "/template/agent/harnessAuth/source/namespaceId", "own Namespace", id="foreign-secret"),
    pytest.param({"agent": {"colour": "red"}}, "/template/agent/colour", None, id="unknown-field"),
    pytest.param({"agent": {"initialWorkspaceFiles": {"SOUL.md": "a\u0000b"}}},
                 "/template/agent/initialWorkspaceFiles/SOUL.md", "must not contain NUL", id="workspace-file-nul"),
    pytest.param({"agent": {"initialWorkspaceFiles": {"USER.md": "é" * (8 * 1024 + 1)}}},
                 "/template/agent/initialWorkspaceFiles/USER.md", "at most 16 KiB", id="workspace-file-too-long"),
    pytest.param({"configuration": {"values": {"gateway": {"auth": {"token": "x"}}}}},
                 "/template/configuration/values/gateway", None, id="native-values-checked"),
]


@pytest.mark.parametrize(("bad", "path", "says"), BAD_TEMPLATES)
def test_a_bad_template_is_refused_at_its_path_and_changes_nothing(api, ready_namespace, bad, path, says):
    before = (Preset.objects.count(), AuditEvent.objects.count())
    response = api.post(url(ready_namespace), {"name": "bad", "template": bad})
    assert response.status == 400, response.body
    assert any(d["path"].startswith(path) for d in response.body["error"]["details"]), response.body
    if says:
        assert says in response.body["error"]["message"]
    assert "sk-literal" not in json.dumps(response.body)
    assert "sk-1" not in json.dumps(response.body)
    assert (Preset.objects.count(), AuditEvent.objects.count()) == before


def test_names_are_unique_per_namespace(api, ready_namespace):
    first = api.post(url(ready_namespace), {"name": "one"}).data
    assert api.post(url(ready_namespace), {"name": "one"}).status == 409
    api.post(url(ready_namespace), {"name": "two"})
    assert api.patch(url(ready_namespace, first["id"]), {"name": "two"}).status == 409
    assert api.patch(url(ready_namespace, first["id"]), {"name": None}).status == 400


def test_writes_need_a_ready_namespace(api, bootstrap):
    namespace = NamespaceFactory(status=NamespaceStatus.PROVISIONING)
    response = api.post(url(namespace), {"name": "early"})
    assert response.status == 409
    assert response.error_code == "NAMESPACE_NOT_READY"


def test_pages_walk_every_readable_preset_once_by_name(api, ready_namespace):
    for name in ["delta", "alpha", "echo", "charlie", "bravo"]:
        assert api.post(url(ready_namespace), {"name": name}).status == 201
    hidden = Preset.objects.get(namespace=ready_namespace, name="charlie")
    reader = service_principal("reader")
    grant(reader, "read:namespace", namespace=ready_namespace)
    for preset in Preset.objects.filter(namespace=ready_namespace).exclude(id=hidden.id):
        grant(reader, "read:preset", namespace=ready_namespace, resource_kind="preset", resource_id=preset.id)
    client = ApiClient(key_for(reader))
    seen, cursor = [], ""
    while True:
        page = client.get(url(ready_namespace) + "?limit=2" + (f"&cursor={cursor}" if cursor else ""))
        assert page.status == 200, page.body
        seen += [row["name"] for row in page.data["presets"]]
        cursor = page.data["nextCursor"]
        if cursor is None:
            break
        assert len(page.data["presets"]) == 2
    assert seen == sorted(["alpha", "bravo", "delta", "echo", STANDARD_OPENCLAW])
    assert client.get(url(ready_namespace, hidden.id)).status == 403
    assert client.get(url(ready_namespace) + "?cursor=not-ours").status == 400


def test_each_write_needs_its_exact_permission(api, ready_namespace):
    preset = api.post(url(ready_namespace), {"name": "target"}).data
    other = api.post(url(ready_namespace), {"name": "other"}).data
    editor = service_principal("editor")
    grant(editor, "update:preset", "delete:preset", namespace=ready_namespace, resource_kind="preset",
          resource_id=preset["id"])
    client = ApiClient(key_for(editor))
    assert client.post(url(ready_namespace), {"name": "new"}).status == 403
    assert client.patch(url(ready_namespace, other["id"]), {"name": "x"}).status == 403
    assert client.delete(url(ready_namespace, other["id"])).status == 403
    assert client.patch(url(ready_namespace, preset["id"]), {"name": "renamed"}).status == 200
    assert client.get(url(ready_namespace, preset["id"])).status == 403  # update does not imply read
    assert client.delete(url(ready_namespace, preset["id"])).status == 204
    assert not AccessBinding.objects.filter(resource_kind="preset", resource_id=preset["id"]).exists()
    deleted = AuditEvent.objects.get(action="openclaw.presets.delete", resource_id=preset["id"])
    assert len(deleted.details["removedAccessBindings"]) == 1


# --- rendering ----------------------------------------------------------------------------------


@pytest.fixture
def model_key(ready_namespace, admin_actor):
    return secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                         command=SecretCreate(name="model key", value=CANARY))


def test_render_fills_defaults_and_types_and_the_provisioning_api_admits_it(api, ready_namespace, model_key):
    preset = api.post(url(ready_namespace), {"name": "typed", "template": template()}).data
    rendered = api.post(url(ready_namespace, preset["id"], "render"), {
        "variables": {"name": "rendered-bot"},
        "credentials": {"key": {"kind": "secret", "namespaceId": ready_namespace.id, "id": model_key.id}}})
    assert rendered.status == 200, rendered.body
    request = rendered.data["request"]
    assert rendered.data["needsCredential"] is False
    assert request["name"] == "rendered-bot"
    assert request["configuration"]["values"]["agents"]["defaults"]["maxConcurrent"] == 2  # a number, not "2"
    assert request["harnessAuth"]["source"]["id"] == model_key.id
    admitted = api.post(f"/namespaces/{ready_namespace.id}/agents/provision",
                        {**request, "requestId": "req_presettest01"})
    assert admitted.status == 202, admitted.body
    assert AgentProvisioningWork.objects.count() == 1


def test_render_without_a_credential_names_the_method_and_leaves_harness_auth_out(api, ready_namespace):
    preset = api.post(url(ready_namespace), {"name": "typed", "template": template()}).data
    rendered = api.post(url(ready_namespace, preset["id"], "render"), {"variables": {"name": "b", "count": 0}})
    assert rendered.status == 200
    assert rendered.data["needsCredential"] is True
    assert rendered.data["harnessAuthMethod"] == "api_key"
    assert "harnessAuth" not in rendered.data["request"]
    assert rendered.data["request"]["configuration"]["values"]["agents"]["defaults"]["maxConcurrent"] == 0


@pytest.mark.parametrize(("body", "path"), [
    pytest.param({}, "/variables/name", id="required-variable-missing"),
    pytest.param({"variables": {"name": "b", "count": "3"}}, "/variables/count", id="wrong-type"),
    pytest.param({"variables": {"name": "b", "nope": 1}}, "/variables/nope", id="unknown-variable"),
    pytest.param({"variables": {"name": "b", "key": "sk-typed"}}, "/variables/key", id="password-as-value"),
    pytest.param({"variables": {"name": "b"}, "credentials": {"key": {
        "kind": "secret", "namespaceId": "ns_elsewhere", "id": "sec_00000000-0000-4000-8000-000000000000"}}},
        "/credentials/key/namespaceId", id="foreign-credential"),
])
def test_render_refuses_bad_inputs_at_their_place(api, ready_namespace, body, path):
    preset = api.post(url(ready_namespace), {"name": "typed", "template": template()}).data
    response = api.post(url(ready_namespace, preset["id"], "render"), body)
    assert response.status == 400, response.body
    assert path in [d["path"] for d in response.body["error"]["details"]]
    assert "sk-typed" not in json.dumps(response.body)


def test_a_workspace_file_is_checked_again_after_expansion(api, ready_namespace):
    preset = api.post(url(ready_namespace), {"name": "files", "template": {
        "variables": {"intro": {"type": "string"}},
        "agent": {"initialWorkspaceFiles": {"AGENTS.md": "# Team\n{{ vars.intro }}"}}}})
    assert preset.status == 201, preset.body
    fits = api.post(url(ready_namespace, preset.data["id"], "render"), {"variables": {"intro": "x" * 1000}})
    assert fits.data["request"]["initialWorkspaceFiles"]["AGENTS.md"] == "# Team\n" + "x" * 1000
    too_long = api.post(url(ready_namespace, preset.data["id"], "render"), {"variables": {"intro": "x" * 16384}})
    assert too_long.status == 400, too_long.body
    assert too_long.body["error"]["details"][0]["path"] == "/agent/initialWorkspaceFiles/AGENTS.md"
    assert "at most 16 KiB" in too_long.body["error"]["message"]


def test_render_needs_read_on_the_preset(api, ready_namespace):
    preset = api.post(url(ready_namespace), {"name": "typed", "template": template()}).data
    client = caller("read:namespace", namespace=ready_namespace)
    assert client.post(url(ready_namespace, preset["id"], "render"), {}).status == 403


def test_embedded_keys_and_escapes_render_as_text(api, ready_namespace):
    body = {"name": "keys", "template": {
        "variables": {"provider": {"type": "string", "default": "acme"}},
        "agent": {"name": "\\{{ vars.provider }} ${HOME}"},
        "configuration": {"values": {"models": {"providers": {"{{ vars.provider }}": {
            "baseUrl": "https://{{ vars.provider }}.example", "models": []}}}}}}}
    preset = api.post(url(ready_namespace), body)
    assert preset.status == 201, preset.body
    request = api.post(url(ready_namespace, preset.data["id"], "render"), {}).data["request"]
    assert request["name"] == "{{ vars.provider }} ${HOME}"
    assert request["configuration"]["values"]["models"]["providers"] == {
        "acme": {"baseUrl": "https://acme.example", "models": []}}


# --- the Installation's defaults --------------------------------------------------------------


def test_bootstrap_and_namespace_creation_seed_the_defaults(api, bootstrap):
    default = Namespace.objects.get(name="default")
    assert {p.name: p.template for p in Preset.objects.filter(namespace=default)} == default_presets()
    created = api.post("/namespaces", {"name": "team-b"}).data
    seeded = Preset.objects.filter(namespace_id=created["id"])
    assert [p.name for p in seeded] == [STANDARD_OPENCLAW]
    event = AuditEvent.objects.get(action="openclaw.namespaces.create", resource_id=created["id"])
    assert event.details["presetIds"] == [seeded.get().id]
    bootstrapped = AuditEvent.objects.get(action="openclaw.installation.bootstrap")
    assert bootstrapped.details["presetIds"] == [Preset.objects.get(namespace=default).id]


def test_the_standard_preset_renders_to_an_admissible_request(api, ready_namespace, model_key):
    preset = Preset.objects.get(namespace=ready_namespace, name=STANDARD_OPENCLAW)
    rendered = api.post(url(ready_namespace, preset.id, "render"), {
        "variables": {"name": "standard-bot"},
        "credentials": {"apiKey": {"kind": "secret", "namespaceId": ready_namespace.id, "id": model_key.id}}})
    assert rendered.status == 200, rendered.body
    request = rendered.data["request"]
    assert request["configuration"]["values"]["agents"]["defaults"]["model"]["primary"] == "openai/gpt-6-astra"
    admitted = api.post(f"/namespaces/{ready_namespace.id}/agents/provision",
                        {**request, "requestId": "req_standard0001"})
    assert admitted.status == 202, admitted.body


def test_namespace_deletion_removes_untouched_defaults_and_refuses_edited_ones(api, bootstrap):
    ns = Namespace.objects.get(id=api.post("/namespaces", {"name": "short-lived"}).data["id"])
    mark_namespace_ready(ns)
    standard = Preset.objects.get(namespace=ns, name=STANDARD_OPENCLAW)
    api.patch(url(ns, standard.id), {"template": {}})
    refused = api.delete(f"/namespaces/{ns.id}")
    assert refused.status == 409
    assert refused.error_code == "NAMESPACE_NOT_EMPTY"
    assert "presets" in refused.body["error"]["message"]
    assert standard.id in refused.body["error"]["message"]
    api.patch(url(ns, standard.id), {"template": default_presets()[STANDARD_OPENCLAW]})  # untouched again
    accepted = api.delete(f"/namespaces/{ns.id}")
    assert accepted.status == 202, accepted.body
    assert not Preset.objects.filter(namespace=ns).exists()
    removed = AuditEvent.objects.get(action="openclaw.presets.delete", resource_id=standard.id)
    assert removed.details["withNamespace"] is True


def test_a_namespace_deletion_refused_for_other_reasons_keeps_the_defaults(api, bootstrap):
    ns = Namespace.objects.get(id=api.post("/namespaces", {"name": "still-busy"}).data["id"])
    response = api.delete(f"/namespaces/{ns.id}")  # still provisioning: 409
    assert response.status == 409
    assert Preset.objects.filter(namespace=ns, name=STANDARD_OPENCLAW).exists()


def test_access_bindings_can_target_a_preset(api, ready_namespace):
    preset = api.post(url(ready_namespace), {"name": "bindable"}).data
    viewer = service_principal("viewer", namespace=ready_namespace)
    grant(viewer, "read:namespace", namespace=ready_namespace)
    response = api.post(f"/namespaces/{ready_namespace.id}/iam/access-bindings", {
        "subjectKind": "identity", "subjectId": viewer.id, "roleId": _preset_reader_role(api, ready_namespace),
        "resourceKind": "preset", "resourceId": preset["id"]})
    assert response.status == 201, response.body
    assert ApiClient(key_for(viewer, namespace=ready_namespace)).get(url(ready_namespace, preset["id"])).status == 200


def _preset_reader_role(api: ApiClient, ns: Namespace) -> str:
    response = api.post(f"/namespaces/{ns.id}/iam/roles", {
        "name": "preset reader", "permissions": [{"action": "read", "resourceKind": "preset"}]})
    assert response.status == 201, response.body
    return response.data["id"]


def test_a_template_deeper_than_64_levels_is_refused(api, ready_namespace):
    deep: dict[str, Any] = {}
    inner = deep
    for _ in range(70):
        inner["x"] = {}
        inner = inner["x"]
    inner["name"] = "{{ vars.n }}"
    response = api.post(url(ready_namespace), {"name": "deep", "template": {
        "variables": {"n": {"type": "string"}}, "configuration": {"values": deep}}})
    assert response.status in (400, 413), response.body
    assert response.status != 400 or response.body["error"]["details"][0]["code"] == "TOO_DEEP"


@pytest.mark.parametrize("raw", [b"a\x00|pre_x", b"\xed\xa0\x80|pre_x", b"alpha|", b"alpha|pre\x01",
                                 b"no separator", b'["alpha", "pre_x"]'],
                         ids=["nul", "surrogate", "no-id", "control-in-id", "no-separator", "an-old-json-cursor"])
def test_a_cursor_naming_nothing_a_row_can_hold_is_refused(api, ready_namespace, raw):
    cursor = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    response = api.get(url(ready_namespace) + f"?cursor={cursor}")
    assert response.status == 400, response.body


def test_a_name_holding_the_cursor_separator_pages_on(api, ready_namespace):
    for name in ["a|b", "a|c", "a||"]:
        assert api.post(url(ready_namespace), {"name": name}).status == 201
    seen, cursor = [], ""
    while True:
        page = api.get(url(ready_namespace) + "?limit=1" + (f"&cursor={cursor}" if cursor else ""))
        assert page.status == 200, page.body
        seen += [row["name"] for row in page.data["presets"]]
        cursor = page.data["nextCursor"]
        if cursor is None:
            break
    assert seen == sorted(["a|b", "a|c", "a||", STANDARD_OPENCLAW])
