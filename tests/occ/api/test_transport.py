"""The API boundary: envelope, headers, content types, sizes, methods, query strings."""

from __future__ import annotations

import json

import pytest

from occ.models import AuditEvent, Namespace


def test_unknown_route_is_enveloped_404(api):
    response = api.get("/namespaces/ns_x/nothing-here")
    assert response.status == 404
    assert response.error_code == "NOT_FOUND"
    assert response.headers["Cache-Control"] == "no-store"
    assert response.body["meta"]["requestId"] == response.headers["X-Request-Id"]


def test_wrong_method_is_405_with_allow(api):
    response = api.request("PUT", "/namespaces")
    assert response.status == 405
    assert response.error_code == "METHOD_NOT_ALLOWED"
    assert set(response.headers["Allow"].replace(" ", "").split(",")) == {"GET", "POST"}


def test_non_json_body_is_415(api):
    before = Namespace.objects.count()
    response = api.post("/namespaces", raw=b"name=x", content_type="application/x-www-form-urlencoded")
    assert response.status == 415
    assert response.error_code == "UNSUPPORTED_MEDIA_TYPE"
    assert Namespace.objects.count() == before


@pytest.mark.parametrize("content_type", [
    "application/json; charset=utf-8",
    'application/json; charset="utf-8"',
    "Application/JSON;charset=UTF-8",
    'application/json ; charset="UTF-8"',
])
def test_json_with_charset_is_accepted(api, content_type):
    response = api.post("/namespaces", raw=b'{"name":"charset"}', content_type=content_type)
    assert response.status == 201, response.body


@pytest.mark.parametrize("content_type", [
    "application/json; charset=latin-1",
    'application/json; charset="utf-16"',
    "application/json; charset=utf-8; boundary=x",
    "application/jsonx",
    "text/json",
])
def test_json_with_another_charset_or_parameter_is_415(api, content_type):
    response = api.post("/namespaces", raw=b'{"name":"charset"}', content_type=content_type)
    assert (response.status, response.error_code) == (415, "UNSUPPORTED_MEDIA_TYPE")


def test_oversize_body_is_413(api):
    body = {"name": "big", "existingNamespace": "x" * (65 * 1024)}
    response = api.post("/namespaces", body)
    assert response.status == 413
    assert response.error_code == "PAYLOAD_TOO_LARGE"


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b"{", id="truncated"),
        pytest.param(b'{"name": NaN}', id="nan"),
        pytest.param(b"\xff\xfe", id="not-utf8"),
    ],
)
def test_malformed_json_is_400(api, raw):
    before = (Namespace.objects.count(), AuditEvent.objects.count())
    response = api.post("/namespaces", raw=raw)
    assert response.status == 400
    assert response.error_code == "INVALID_REQUEST"
    assert (Namespace.objects.count(), AuditEvent.objects.count()) == before


@pytest.mark.parametrize(("raw", "path"), [
    pytest.param(b'{"name": "a", "name": "b"}', "/name", id="top-level"),
    pytest.param(b'{"name": "a", "labels": [{}, {"k": 1, "k": 2}]}', "/labels/1/k", id="nested"),
    pytest.param(b'{"name": "a", "x/y": {"a~b": 1, "a~b": 2}}', "/x~1y/a~0b", id="escaped-pointer"),
])
def test_a_key_named_twice_is_400_at_its_pointer(api, raw, path):
    """The attacker's finding: a repeated key was accepted and the last one won."""
    before = (Namespace.objects.count(), AuditEvent.objects.count())
    response = api.post("/namespaces", raw=raw)
    assert (response.status, response.error_code) == (400, "INVALID_REQUEST")
    assert response.body["error"]["details"] == [{"code": "INVALID_FORMAT", "path": path}]
    assert "twice" in response.body["error"]["message"]
    assert (Namespace.objects.count(), AuditEvent.objects.count()) == before


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        pytest.param(b"[]", "INVALID_TYPE", id="array"),
        pytest.param(b"null", "INVALID_TYPE", id="null"),
        pytest.param(b"", "REQUIRED", id="empty"),
    ],
)
def test_body_of_wrong_shape_is_400(api, raw, code):
    response = api.post("/namespaces", raw=raw)
    assert response.status == 400
    assert response.body["error"]["details"][0]["code"] == code


def test_query_parameters_are_rejected(api):
    response = api.get("/namespaces/ns_x?limit=5")
    assert response.status == 400
    assert response.error_code == "INVALID_REQUEST"


def test_body_on_get_is_rejected(api):
    response = api.request("GET", "/namespaces", {"x": 1})
    assert response.status == 400


def test_no_type_coercion(api):
    response = api.post("/namespaces", {"name": ["a"]})
    assert response.status == 400
    assert response.body["error"]["details"] == [{"code": "INVALID_TYPE", "path": "/name"}]


def test_error_messages_never_echo_input(api):
    marker = "echo-marker-123"
    response = api.post("/namespaces", {"name": f" {marker}", marker: 1})
    assert response.status == 400
    assert marker not in response.body["error"]["message"]
    # the pointer names the unknown field; that is the field name, not a value
    assert all(marker not in d["path"] or d["code"] == "UNKNOWN_FIELD" for d in response.body["error"]["details"])


def test_absurdly_deep_body_is_too_deep(api):
    raw = b'{"name": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    response = api.post("/namespaces", raw=raw)
    assert response.status == 400
    assert response.body["error"]["details"] == [{"code": "TOO_DEEP", "path": ""}]


@pytest.mark.parametrize(
    ("method", "path", "host", "status", "code"),
    [
        pytest.param("GET", "/namespaces", "evil.example", 400, "INVALID_REQUEST", id="foreign-host"),
        pytest.param("POST", "/namespaces", "evil.example", 400, "INVALID_REQUEST", id="foreign-host-post"),
        pytest.param("GET", "//namespaces", None, 404, "NOT_FOUND", id="double-slash"),
        pytest.param("GET", "//namespaces/ns_x/configurations", None, 404, "NOT_FOUND", id="double-slash-item"),
        pytest.param("GET", "/NAMESPACES", None, 404, "NOT_FOUND", id="upper-case"),
        pytest.param("GET", "/Namespaces/ns_x", None, 404, "NOT_FOUND", id="mixed-case"),
        pytest.param("GET", "///api/openapi.json", None, 404, "NOT_FOUND", id="triple-slash-openapi"),
    ],
)
def test_django_error_pages_on_api_paths_are_enveloped(api, method, path, host, status, code):
    headers = {"x-api-key": api.key, **({"host": host} if host else {})}
    body = '{"name": "x"}' if method == "POST" else ""
    # PATH_INFO as sent: the test client would read `//namespaces` as a host name.
    response = api.client.generic(method, "/", data=body, content_type="application/json", headers=headers,
                                  PATH_INFO=path)
    assert response.status_code == status
    assert response.headers["Content-Type"] == "application/json"
    payload = json.loads(response.content)
    assert payload["error"]["code"] == code
    assert payload["meta"]["requestId"] == response.headers["X-Request-Id"]


def test_a_control_character_outside_the_api_is_400_too(api):
    response = api.client.get("/console/namespaces/ns_%00/agents")
    assert response.status_code == 400
