"""The pure Configuration validators: no database, every rule, with its JSON pointer."""

from __future__ import annotations

from typing import Any

import pytest

from occ.errors import InvalidRequest
from occ.openclaw.validation import (
    DRIVER_OWNED_GATEWAY_KEYS,
    MAX_VALUES_DEPTH,
    MODEL_PROVIDER_APIS,
    check_configuration_kind,
    check_configuration_values,
    check_env_name,
    check_secret_bindings,
    is_absolute_http_url,
    pointer,
    reserved_env_name_problem,
)

NS = "ns_11111111-1111-4111-8111-111111111111"
OTHER_NS = "ns_22222222-2222-4222-8222-222222222222"
SEC = "sec_33333333-3333-4333-8333-333333333333"
SEC2 = "sec_44444444-4444-4444-8444-444444444444"


def nested(depth: int) -> dict[str, Any]:
    """An object nested ``depth`` levels deep, counting itself."""
    doc: dict[str, Any] = {}
    for _ in range(depth - 1):
        doc = {"x": doc}
    return doc


def params(value: Any) -> dict[str, Any]:
    """A runtime-valid document carrying ``value`` in a free-form spot (the model's params),
    three levels below the document itself."""
    return {"agents": {"defaults": {"params": value}}}


def provider(**fields: Any) -> dict[str, Any]:
    return {"models": {"providers": {"fake": fields}}}


def details(exc: pytest.ExceptionInfo[InvalidRequest]) -> list[dict[str, str]]:
    return [d.as_wire() for d in exc.value.details]


def ref(namespace_id: str = NS, secret_id: str = SEC) -> dict[str, Any]:
    return {"source": {"kind": "secret", "namespaceId": namespace_id, "id": secret_id}}


# --- kind ---------------------------------------------------------------------------------------

def test_kind_agent_is_accepted():
    check_configuration_kind("agent")


@pytest.mark.parametrize(
    ("kind", "code"),
    [
        pytest.param("preset", "INVALID_VALUE", id="other-kind"),
        pytest.param("Agent", "INVALID_VALUE", id="wrong-case"),
        pytest.param(None, "INVALID_TYPE", id="null"),
        pytest.param(["agent"], "INVALID_TYPE", id="list"),
    ],
)
def test_kind_rejected(kind, code):
    with pytest.raises(InvalidRequest) as exc:
        check_configuration_kind(kind)
    assert details(exc) == [{"code": code, "path": "/kind"}]


# --- values -------------------------------------------------------------------------------------

REALISTIC_VALUES = {
    "gateway": {"http": {"endpoints": {"chatCompletions": {"enabled": True}}}, "allowRealIpFallback": True},
    "agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "fake/echo-model", "fallbacks": []}}},
    "models": {"mode": "merge", "providers": {"fake": {
        "baseUrl": "http://127.0.0.1:18555/v1", "apiKey": "not-a-real-key", "api": "openai-completions",
        "models": [{"id": "echo-model", "name": "echo-model", "input": ["text"], "contextWindow": 32000}],
    }}},
    "tools": {"profile": "coding", "deny": ["browser", "canvas"]},
}


@pytest.mark.parametrize(
    "values",
    [
        pytest.param({}, id="empty"),
        pytest.param(REALISTIC_VALUES, id="realistic"),
        pytest.param(params(nested(MAX_VALUES_DEPTH - 3)), id="exactly-max-depth"),
        pytest.param(params({"a": [[[[1]]]]}), id="lists-count-as-levels-but-shallow"),
        pytest.param(provider(baseUrl=""), id="blank-base-url"),
        pytest.param(provider(baseUrl="   "), id="whitespace-base-url"),
        pytest.param(provider(baseUrl="${OPENAI_BASE_URL}"), id="env-reference"),
        pytest.param(provider(baseUrl="${PROXY_HOST}/v1"), id="env-reference-in-url"),
        pytest.param(provider(baseUrl="https://api.example.com/v1"), id="https"),
        pytest.param(provider(baseUrl="http://[::1]:8080/v1"), id="ipv6-loopback"),
        pytest.param({"models": {"mode": "merge"}}, id="models-without-providers"),
        pytest.param({"models": {"providers": {}}}, id="no-providers"),
        pytest.param(provider(models=[]), id="provider-without-base-url-or-api"),
        pytest.param({"gateway": {}}, id="empty-gateway"),
        pytest.param(params({"notes": "prototype constructor __proto__"}), id="forbidden-words-as-values"),
        *[pytest.param(provider(api=api), id=f"api-{api}") for api in MODEL_PROVIDER_APIS],
    ],
)
def test_values_accepted(values):
    check_configuration_values(values)


@pytest.mark.parametrize(
    ("values", "code", "path"),
    [
        pytest.param(nested(MAX_VALUES_DEPTH + 1), "TOO_DEEP", "/values" + "/x" * MAX_VALUES_DEPTH, id="too-deep"),
        pytest.param({"a": [nested(MAX_VALUES_DEPTH - 1)]}, "TOO_DEEP",
                     "/values/a/0" + "/x" * (MAX_VALUES_DEPTH - 2), id="too-deep-through-list"),
        pytest.param({"__proto__": {}}, "INVALID_VALUE", "/values/__proto__", id="proto-top"),
        pytest.param({"agents": {"prototype": 1}}, "INVALID_VALUE", "/values/agents/prototype", id="prototype"),
        pytest.param({"a": [{"constructor": 1}]}, "INVALID_VALUE", "/values/a/0/constructor", id="constructor-in-list"),
        pytest.param({"models": []}, "INVALID_TYPE", "/values/models", id="models-not-object"),
        pytest.param({"models": {"providers": []}}, "INVALID_TYPE", "/values/models/providers", id="providers-list"),
        pytest.param({"models": {"providers": {"p": "x"}}}, "INVALID_TYPE", "/values/models/providers/p",
                     id="provider-not-object"),
        pytest.param(provider(baseUrl="/v1"), "INVALID_FORMAT", "/values/models/providers/fake/baseUrl",
                     id="relative-url"),
        pytest.param(provider(baseUrl="ftp://example.com"), "INVALID_FORMAT",
                     "/values/models/providers/fake/baseUrl", id="ftp"),
        pytest.param(provider(baseUrl="http://"), "INVALID_FORMAT", "/values/models/providers/fake/baseUrl",
                     id="no-host"),
        pytest.param(provider(baseUrl="https://exa mple.com"), "INVALID_FORMAT",
                     "/values/models/providers/fake/baseUrl", id="space-in-host"),
        pytest.param(provider(baseUrl="http://example.com:99999"), "INVALID_FORMAT",
                     "/values/models/providers/fake/baseUrl", id="bad-port"),
        pytest.param(provider(baseUrl="example.com/v1"), "INVALID_FORMAT",
                     "/values/models/providers/fake/baseUrl", id="no-scheme"),
        pytest.param(provider(baseUrl="$HOST/v1"), "INVALID_FORMAT", "/values/models/providers/fake/baseUrl",
                     id="dollar-without-braces"),
        pytest.param(provider(baseUrl=5), "INVALID_TYPE", "/values/models/providers/fake/baseUrl",
                     id="base-url-number"),
        pytest.param(provider(api="grpc"), "INVALID_VALUE", "/values/models/providers/fake/api", id="unknown-api"),
        pytest.param(provider(api="OPENAI-RESPONSES"), "INVALID_VALUE", "/values/models/providers/fake/api",
                     id="api-wrong-case"),
        pytest.param(provider(api=None), "INVALID_TYPE", "/values/models/providers/fake/api", id="api-null"),
        pytest.param({"models": {"providers": {"a/b~c": {"api": "x"}}}}, "INVALID_VALUE",
                     "/values/models/providers/a~1b~0c/api", id="pointer-escaping"),
        pytest.param({"gateway": "local"}, "INVALID_TYPE", "/values/gateway", id="gateway-not-object"),
        *[pytest.param({"gateway": {key: None}}, "INVALID_VALUE", f"/values/gateway/{key}", id=f"gateway-{key}")
          for key in DRIVER_OWNED_GATEWAY_KEYS],
    ],
)
def test_values_rejected(values, code, path):
    with pytest.raises(InvalidRequest) as exc:
        check_configuration_values(values)
    assert details(exc) == [{"code": code, "path": path}]
    assert exc.value.status == 400
    assert exc.value.code == "INVALID_REQUEST"


@pytest.mark.parametrize("values", [pytest.param([], id="list"), pytest.param("x", id="string"),
                                    pytest.param(None, id="null")])
def test_values_must_be_an_object(values):
    with pytest.raises(InvalidRequest) as exc:
        check_configuration_values(values)
    assert details(exc) == [{"code": "INVALID_TYPE", "path": "/values"}]


def test_every_problem_is_reported_with_its_pointer():
    values = {"gateway": {"auth": {}, "port": 1}, **provider(baseUrl="nope", api="nope")}
    with pytest.raises(InvalidRequest) as exc:
        check_configuration_values(values)
    assert {d["path"] for d in details(exc)} == {
        "/values/gateway/auth", "/values/gateway/port",
        "/values/models/providers/fake/baseUrl", "/values/models/providers/fake/api",
    }
    assert "4 problems" in exc.value.message


def test_path_prefix_is_the_callers():
    with pytest.raises(InvalidRequest) as exc:
        check_configuration_values({"gateway": {"bind": "lan"}}, path="/configuration/values")
    assert details(exc) == [{"code": "INVALID_VALUE", "path": "/configuration/values/gateway/bind"}]


def test_hostile_depth_stops_early():
    # Far deeper than the limit: reported once, at the first level past it, without recursing further.
    with pytest.raises(InvalidRequest) as exc:
        check_configuration_values(nested(500))
    assert details(exc) == [{"code": "TOO_DEEP", "path": "/values" + "/x" * MAX_VALUES_DEPTH}]


def test_messages_never_echo_input():
    canary = "https-canary-Zq9"
    with pytest.raises(InvalidRequest) as exc:
        check_configuration_values(provider(baseUrl=canary, api=canary))
    assert canary not in exc.value.message


@pytest.mark.parametrize(
    ("url", "ok"),
    [("https://a.example", True), ("http://localhost:1/x?y=1", True), ("https://a.example\n", False),
     ("mailto:x@example.com", False), ("https:///path", False), ("", False)],
)
def test_is_absolute_http_url(url, ok):
    assert is_absolute_http_url(url) is ok


def test_pointer_escapes():
    assert pointer("a/b", "c~d", 0) == "/a~1b/c~0d/0"


# --- secret bindings ----------------------------------------------------------------------------

def test_bindings_resolve_to_secret_ids():
    bindings = {"GITHUB_TOKEN": ref(), "SLACK_TOKEN": {**ref(secret_id=SEC2), "delivery": {"type": "env"}},
                "SAME_SECRET_AGAIN": ref()}
    assert check_secret_bindings(bindings, namespace_id=NS) == {
        "GITHUB_TOKEN": SEC, "SLACK_TOKEN": SEC2, "SAME_SECRET_AGAIN": SEC}


def test_empty_bindings_are_fine():
    assert check_secret_bindings({}, namespace_id=NS) == {}


def test_sixty_four_bindings_is_the_limit():
    ok = {f"VAR_{i}": ref() for i in range(64)}
    assert len(check_secret_bindings(ok, namespace_id=NS)) == 64
    with pytest.raises(InvalidRequest) as exc:
        check_secret_bindings({**ok, "VAR_64": ref()}, namespace_id=NS)
    assert details(exc) == [{"code": "TOO_LONG", "path": "/secretBindings"}]


RESERVED = ["OPENCLAW_GATEWAY_PASSWORD", "CODEX_HOME", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OCC_ANYTHING",
            "KUBERNETES_SERVICE_HOST", "PATH", "HOME", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
            "http_proxy", "https_proxy", "No_Proxy", "all_proxy", "openai_api_key"]


@pytest.mark.parametrize("name", RESERVED)
def test_reserved_destinations_are_refused(name):
    with pytest.raises(InvalidRequest) as exc:
        check_secret_bindings({name: ref()}, namespace_id=NS)
    assert details(exc) == [{"code": "INVALID_VALUE", "path": f"/secretBindings/{name}"}]
    assert "harnessAuth" in exc.value.message


@pytest.mark.parametrize("name", ["PATHS", "HOMEDIR", "MY_OPENAI_KEY", "OPENAI", "OCC", "XHTTP_PROXY", "_X", "A"])
def test_near_misses_are_not_reserved(name):
    assert reserved_env_name_problem(name) is None
    check_env_name(name, path="/x")


@pytest.mark.parametrize("name", ["lower_case", "1STARTS_WITH_DIGIT", "HAS-DASH", "HAS SPACE", "", "A" * 129,
                                  "ÜMLAUT"])
def test_env_name_format(name):
    with pytest.raises(InvalidRequest) as exc:
        check_secret_bindings({name: ref()}, namespace_id=NS)
    assert details(exc) == [{"code": "INVALID_FORMAT", "path": pointer("secretBindings", name)}]


def test_longest_env_name_is_accepted():
    assert check_secret_bindings({"A" * 128: ref()}, namespace_id=NS) == {"A" * 128: SEC}


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
    with pytest.raises(InvalidRequest) as exc:
        check_secret_bindings({"TOKEN": binding}, namespace_id=NS)
    assert details(exc) == [{"code": code, "path": path}]


@pytest.mark.parametrize("bindings", [pytest.param(None, id="null"), pytest.param([], id="list"),
                                      pytest.param("x", id="string")])
def test_bindings_must_be_an_object(bindings):
    with pytest.raises(InvalidRequest) as exc:
        check_secret_bindings(bindings, namespace_id=NS)
    assert details(exc) == [{"code": "INVALID_TYPE", "path": "/secretBindings"}]


def test_every_bad_binding_is_reported():
    bindings = {"OPENAI_API_KEY": ref(), "GOOD": ref(), "BAD": ref(namespace_id=OTHER_NS)}
    with pytest.raises(InvalidRequest) as exc:
        check_secret_bindings(bindings, namespace_id=NS, path="/configuration/secretBindings")
    assert details(exc) == [
        {"code": "INVALID_VALUE", "path": "/configuration/secretBindings/OPENAI_API_KEY"},
        {"code": "INVALID_VALUE", "path": "/configuration/secretBindings/BAD/source/namespaceId"},
    ]
