"""The Configuration document's command: secret bindings' shape, names and the Namespace rule."""

from __future__ import annotations

from typing import Any

import pytest

from occ.commands.base import parse, pointer
from occ.commands.configurations import ConfigurationCreate, reserved_env_name_problem
from occ.commands.provisioning import ProvisionCommand
from occ.errors import InvalidRequest

NS = "ns_11111111-1111-4111-8111-111111111111"
OTHER_NS = "ns_22222222-2222-4222-8222-222222222222"
SEC = "sec_33333333-3333-4333-8333-333333333333"
SEC2 = "sec_44444444-4444-4444-8444-444444444444"


def ref(namespace_id: str = NS, secret_id: str = SEC) -> dict[str, Any]:
    return {"source": {"kind": "secret", "namespaceId": namespace_id, "id": secret_id}}


def document(bindings: Any) -> ConfigurationCreate:
    command = parse(ConfigurationCreate, {"kind": "agent", "values": {}, "secretBindings": bindings})
    command.check_namespace(NS)
    return command


def refused(bindings: Any) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as caught:
        document(bindings)
    return caught.value


def details(error: InvalidRequest) -> list[dict[str, str]]:
    return [d.as_wire() for d in error.details]


def test_bindings_resolve_to_secret_ids():
    bindings = {"GITHUB_TOKEN": ref(), "SLACK_TOKEN": {**ref(secret_id=SEC2), "delivery": {"type": "env"}},
                "SAME_SECRET_AGAIN": ref()}
    assert document(bindings).bound == {"GITHUB_TOKEN": SEC, "SLACK_TOKEN": SEC2, "SAME_SECRET_AGAIN": SEC}
    assert document({}).bound == {}
    assert parse(ConfigurationCreate, {"kind": "agent", "values": {}}).bound == {}


def test_sixty_four_bindings_is_the_limit():
    ok = {f"VAR_{i}": ref() for i in range(64)}
    assert len(document(ok).bound) == 64
    assert details(refused({**ok, "VAR_64": ref()})) == [{"code": "TOO_LONG", "path": "/secretBindings"}]


RESERVED = ["OPENCLAW_GATEWAY_PASSWORD", "CODEX_HOME", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OCC_ANYTHING",
            "KUBERNETES_SERVICE_HOST", "PATH", "HOME", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
            "http_proxy", "https_proxy", "No_Proxy", "all_proxy", "openai_api_key"]


@pytest.mark.parametrize("name", RESERVED)
def test_reserved_destinations_are_refused(name):
    error = refused({name: ref()})
    assert details(error) == [{"code": "INVALID_VALUE", "path": f"/secretBindings/{name}"}]
    assert "harnessAuth" in error.message


@pytest.mark.parametrize("name", ["PATHS", "HOMEDIR", "MY_OPENAI_KEY", "OPENAI", "OCC", "XHTTP_PROXY", "_X", "A"])
def test_near_misses_are_not_reserved(name):
    assert reserved_env_name_problem(name) is None
    assert document({name: ref()}).bound == {name: SEC}


@pytest.mark.parametrize("name", ["lower_case", "1STARTS_WITH_DIGIT", "HAS-DASH", "HAS SPACE", "", "A" * 129,
                                  "ÜMLAUT"])
def test_env_name_format(name):
    assert details(refused({name: ref()})) == [{"code": "INVALID_FORMAT", "path": pointer(("secretBindings", name))}]


def test_longest_env_name_is_accepted():
    assert document({"A" * 128: ref()}).bound == {"A" * 128: SEC}


B = "/secretBindings/TOKEN"


@pytest.mark.parametrize(
    ("binding", "code", "path"),
    [
        pytest.param("sec_x", "INVALID_TYPE", B, id="binding-not-object"),
        pytest.param({}, "REQUIRED", f"{B}/source", id="missing-source"),
        pytest.param({**ref(), "extra": 1}, "UNKNOWN_FIELD", f"{B}/extra", id="binding-extra-field"),
        pytest.param({"source": None}, "INVALID_TYPE", f"{B}/source", id="source-null"),
        pytest.param({"source": {"kind": "secret", "namespaceId": NS}}, "REQUIRED", f"{B}/source/id",
                     id="source-missing-id"),
        pytest.param({"source": {"kind": "secret", "id": SEC}}, "REQUIRED", f"{B}/source/namespaceId",
                     id="source-missing-namespace"),
        pytest.param({"source": {"namespaceId": NS, "id": SEC}}, "REQUIRED", f"{B}/source/kind",
                     id="source-missing-kind"),
        pytest.param({"source": {**ref()["source"], "name": "x"}}, "UNKNOWN_FIELD", f"{B}/source/name",
                     id="source-extra-field"),
        pytest.param({"source": {**ref()["source"], "value": "a-secret-value"}}, "UNKNOWN_FIELD",
                     f"{B}/source/value", id="source-inline-value"),
        pytest.param({"source": {**ref()["source"], "kind": "service_account"}}, "INVALID_VALUE",
                     f"{B}/source/kind", id="source-kind"),
        pytest.param({"source": {**ref()["source"], "kind": 1}}, "INVALID_TYPE", f"{B}/source/kind",
                     id="source-kind-type"),
        pytest.param(ref(namespace_id=OTHER_NS), "INVALID_VALUE", f"{B}/source/namespaceId", id="other-namespace"),
        pytest.param({"source": {**ref()["source"], "namespaceId": None}}, "INVALID_TYPE",
                     f"{B}/source/namespaceId", id="namespace-null"),
        pytest.param(ref(secret_id="sec_1"), "INVALID_FORMAT", f"{B}/source/id", id="malformed-id"),
        pytest.param(ref(secret_id="cfg_33333333-3333-4333-8333-333333333333"), "INVALID_FORMAT",
                     f"{B}/source/id", id="wrong-prefix"),
        pytest.param({"source": {**ref()["source"], "id": 7}}, "INVALID_TYPE", f"{B}/source/id", id="id-number"),
        pytest.param({**ref(), "delivery": {"type": "file"}}, "INVALID_VALUE", f"{B}/delivery/type",
                     id="delivery-file"),
        pytest.param({**ref(), "delivery": {}}, "REQUIRED", f"{B}/delivery/type", id="delivery-empty"),
        pytest.param({**ref(), "delivery": {"type": "env", "mount": "/x"}}, "UNKNOWN_FIELD", f"{B}/delivery/mount",
                     id="delivery-extra"),
        pytest.param({**ref(), "delivery": "env"}, "INVALID_TYPE", f"{B}/delivery", id="delivery-string"),
        pytest.param({**ref(), "delivery": {"type": None}}, "INVALID_TYPE", f"{B}/delivery/type",
                     id="delivery-type-null"),
    ],
)
def test_binding_shape_rejected(binding, code, path):
    error = refused({"TOKEN": binding})
    assert details(error) == [{"code": code, "path": path}]
    assert "a-secret-value" not in error.message


@pytest.mark.parametrize("bindings", [pytest.param(None, id="null"), pytest.param([], id="list"),
                                      pytest.param("x", id="string")])
def test_bindings_must_be_an_object(bindings):
    assert details(refused(bindings)) == [{"code": "INVALID_TYPE", "path": "/secretBindings"}]


def test_every_malformed_binding_is_reported_where_the_document_sits():
    body = {"requestId": "req_every-binding", "name": "n",
            "configuration": {"kind": "agent", "values": {},
                              "secretBindings": {"OPENAI_API_KEY": ref(), "GOOD": ref(), "lower": ref()}},
            "harnessAuth": {"method": "api_key", **ref()}}
    with pytest.raises(InvalidRequest) as caught:
        parse(ProvisionCommand, body)
    assert details(caught.value) == [
        {"code": "INVALID_VALUE", "path": "/configuration/secretBindings/OPENAI_API_KEY"},
        {"code": "INVALID_FORMAT", "path": "/configuration/secretBindings/lower"},
    ]
