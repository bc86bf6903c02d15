"""The pure Configuration validators: no database, every rule, with its JSON pointer."""

from __future__ import annotations

from typing import Any

import pytest

from occ.errors import InvalidRequest
from occ.openclaw.validation import (
    DRIVER_OWNED_GATEWAY_KEYS,
    MAX_VALUES_DEPTH,
    MODEL_PROVIDER_APIS,
    check_configuration_values,
    check_env_name,
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


# --- the environment the runtime reads Secrets from ---------------------------------------------

RESERVED = ["OPENCLAW_GATEWAY_PASSWORD", "CODEX_HOME", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OCC_ANYTHING",
            "KUBERNETES_SERVICE_HOST", "PATH", "HOME", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
            "http_proxy", "https_proxy", "No_Proxy", "all_proxy", "openai_api_key"]


@pytest.mark.parametrize("name", RESERVED)
def test_reserved_destinations_are_refused(name):
    with pytest.raises(InvalidRequest) as exc:
        check_env_name(name, path=f"/secretBindings/{name}")
    assert details(exc) == [{"code": "INVALID_VALUE", "path": f"/secretBindings/{name}"}]
    assert "harnessAuth" in exc.value.message


@pytest.mark.parametrize("name", ["PATHS", "HOMEDIR", "MY_OPENAI_KEY", "OPENAI", "OCC", "XHTTP_PROXY", "_X", "A"])
def test_near_misses_are_not_reserved(name):
    assert reserved_env_name_problem(name) is None
    check_env_name(name, path="/x")


